//! Unit tests of the plan compiler: the SQL text and parameters of selects, keyset pages,
//! updates, deletes and permission predicates on both dialects.

use super::*;
use ardacat_core::query::ast::OrderItem;
use ardacat_core::types::AttrType;

fn col(table: usize, column: Column, vtype: ValueType) -> Expr<Term> {
    Expr::Ref(Term::Column { table, column, vtype })
}

fn plan() -> SelectPlan {
    SelectPlan {
        tables: vec![5, 7],
        columns: vec![col(0, Column::File, ValueType::Text), col(1, Column::Attr(3), ValueType::Int)],
        column_types: vec![ValueType::Text, ValueType::Int],
        filter: Some(Expr::Binary(
            BinOp::Gt,
            Box::new(col(1, Column::Attr(3), ValueType::Int)),
            Box::new(Expr::Ref(Term::Const(Value::Int(10), ValueType::Int))),
        )),
        name_patterns: vec![(0, "t%".into()), (1, "a\\_b".into())],
        order_by: vec![OrderItem { expr: col(1, Column::Attr(3), ValueType::Int), descending: true }],
        distinct: false,
        limit: Some(5),
        after: None,
        access: None,
        group_by: Vec::new(),
        having: None,
        offset: None,
    }
}

#[test]
fn select_sqlite() {
    let c = compile_select(Dialect::Sqlite, &plan());
    assert_eq!(
        c.sql,
        "SELECT t0.file, t1.a3, t1.a3, t0.id, t1.id FROM e5 AS t0, e7 AS t1 \
         WHERE t0.file LIKE ?1 ESCAPE '\\' AND t1.file = ?2 AND (t1.a3 > ?3) \
         ORDER BY 3 DESC NULLS LAST, 4 ASC, 5 ASC LIMIT 5"
    );
    assert_eq!(c.params, vec![Value::Text("t%".into()), Value::Text("a_b".into()), Value::Int(10)]);
    assert_eq!(c.types.len(), 5);
}

#[test]
fn select_postgres_casts_params() {
    let c = compile_select(Dialect::Postgres, &plan());
    assert!(c.sql.contains("t0.file LIKE $1::text ESCAPE '\\'"), "{}", c.sql);
    assert!(c.sql.contains("(t1.a3 > $3::int8)"));
}

#[test]
fn keyset_continuation() {
    let mut p = plan();
    p.after = Some(vec![Value::Int(7), Value::Int(1), Value::Int(2)]);
    let c = compile_select(Dialect::Sqlite, &p);
    assert!(
        c.sql.contains("(((t1.a3 < ?4 OR t1.a3 IS NULL)) OR (t1.a3 = ?5 AND t0.id > ?6) OR (t1.a3 = ?7 AND t0.id = ?8 AND t1.id > ?9))"),
        "{}",
        c.sql
    );
    p.after = Some(vec![Value::Null, Value::Int(1), Value::Int(2)]);
    let c = compile_select(Dialect::Sqlite, &p);
    assert!(c.sql.contains("((1 = 0) OR (t1.a3 IS NULL AND t0.id > ?4)"), "{}", c.sql);
}

/// A table ordered by its entry name needs no id tie-break (names are unique in a table), so
/// the name's index can give the order; the other table of the join keeps its id.
#[test]
fn entry_name_key_needs_no_id() {
    let mut p = plan();
    p.filter = None;
    p.name_patterns.clear();
    p.limit = None;
    p.order_by = vec![OrderItem { expr: col(0, Column::File, ValueType::Text), descending: false }];
    let c = compile_select(Dialect::Postgres, &p);
    assert_eq!(c.sql, "SELECT t0.file, t1.a3, t0.file, t1.id FROM e5 AS t0, e7 AS t1 ORDER BY 3 ASC, 4 ASC");
    assert_eq!(p.key_types(), vec![ValueType::Text, ValueType::Int]);
    p.tables.truncate(1);
    p.columns.truncate(1);
    p.column_types.truncate(1);
    p.after = Some(vec![Value::Text("e9".into())]);
    let c = compile_select(Dialect::Sqlite, &p);
    assert_eq!(c.sql, "SELECT t0.file, t0.file FROM e5 AS t0 WHERE ((t0.file > ?1)) ORDER BY 2 ASC");
    // Ordered by another table's name: table 0 keeps its id.
    p.tables = vec![5, 7];
    p.order_by = vec![OrderItem { expr: col(1, Column::File, ValueType::Text), descending: true }];
    assert_eq!(p.key_types(), vec![ValueType::Text, ValueType::Int]);
    let c = compile_select(Dialect::Sqlite, &p);
    assert!(c.sql.ends_with("ORDER BY 2 DESC, 3 ASC"), "{}", c.sql);
}

#[test]
fn update_with_join_uses_exists() {
    let attr = AttrDef { id: 4, name: "sssin".into(), attr_type: AttrType::Float, indexed: false };
    let plan = UpdatePlan {
        tables: vec![5, 9],
        assignments: vec![(
            attr,
            Expr::Binary(
                BinOp::Add,
                Box::new(col(0, Column::Attr(4), ValueType::Float)),
                Box::new(Expr::Ref(Term::Const(Value::Int(1), ValueType::Int))),
            ),
        )],
        filter: Some(Expr::Binary(
            BinOp::Eq,
            Box::new(col(0, Column::Attr(2), ValueType::Int)),
            Box::new(col(1, Column::Attr(8), ValueType::Int)),
        )),
        name_patterns: vec![],
        access: None,
    };
    // SQLite computes through the checked functions of `exec::sqlite_math`.
    let c = compile_update(Dialect::Sqlite, &plan, Value::Null);
    assert_eq!(
        c.sql,
        "UPDATE e5 SET a4 = ardacat_add(e5.a4, ?1), modified = ?2 WHERE EXISTS (SELECT 1 FROM e9 AS t1 WHERE (e5.a2 = t1.a8))"
    );
    // PostgreSQL's own operators raise 22003; a float attribute stores -0 as 0 (`+ 0.0`).
    let c = compile_update(Dialect::Postgres, &plan, Value::Null);
    assert!(c.sql.starts_with("UPDATE e5 SET a4 = ((e5.a4 + $1::int8) + 0.0::float8), "), "{}", c.sql);
}

#[test]
fn grouped_select_with_having_offset_and_keyset() {
    use ardacat_core::query::ast::Aggregate;
    let count = Expr::Call(Func::Aggregate(Aggregate::Count, false), vec![]);
    let sum = Expr::Call(Func::Aggregate(Aggregate::Sum, false), vec![col(0, Column::Attr(3), ValueType::Int)]);
    let mut p = SelectPlan {
        tables: vec![5],
        columns: vec![col(0, Column::Attr(2), ValueType::Text), count.clone(), sum],
        column_types: vec![ValueType::Text, ValueType::Int, ValueType::Int],
        filter: None,
        name_patterns: vec![],
        order_by: vec![OrderItem { expr: count.clone(), descending: true }],
        distinct: false,
        limit: None,
        after: None,
        access: None,
        group_by: vec![col(0, Column::Attr(2), ValueType::Text)],
        having: Some(Expr::Binary(
            BinOp::Gt,
            Box::new(count),
            Box::new(Expr::Ref(Term::Const(Value::Int(1), ValueType::Int))),
        )),
        offset: Some(4),
    };
    // Keys: the user's order, then the grouping column (no row ids: they are not grouped).
    let c = compile_select(Dialect::Postgres, &p);
    assert_eq!(
        c.sql,
        "SELECT t0.a2, COUNT(*), CAST(SUM(t0.a3) AS BIGINT), COUNT(*), t0.a2 FROM e5 AS t0 \
         GROUP BY t0.a2 HAVING (COUNT(*) > $1::int8) ORDER BY 4 DESC NULLS LAST, 5 ASC NULLS FIRST OFFSET 4"
    );
    assert!(compile_select(Dialect::Sqlite, &p).sql.ends_with(" LIMIT -1 OFFSET 4"));
    // A continuation filters groups, so it goes to HAVING.
    p.after = Some(vec![Value::Int(3), Value::Text("x".into())]);
    let c = compile_select(Dialect::Sqlite, &p);
    assert!(c.sql.contains("HAVING (COUNT(*) > ?1) AND (((COUNT(*) < ?"), "{}", c.sql);
    assert!(!c.sql.contains("WHERE"), "{}", c.sql);
    // An aggregate without GROUP BY is one row: nothing follows it.
    p.group_by.clear();
    p.having = None;
    p.order_by.clear();
    p.columns.remove(0);
    p.column_types.remove(0);
    p.after = Some(vec![]);
    let c = compile_select(Dialect::Sqlite, &p);
    assert!(c.sql.ends_with("HAVING (1 = 0) LIMIT -1 OFFSET 4"), "{}", c.sql);
    // Averages are doubles on both databases.
    let avg = Expr::Call(Func::Aggregate(Aggregate::Avg, true), vec![col(0, Column::Attr(3), ValueType::Int)]);
    p.columns = vec![avg];
    assert!(
        compile_select(Dialect::Sqlite, &p)
            .sql
            .starts_with("SELECT CAST(AVG(DISTINCT t0.a3) AS DOUBLE PRECISION) FROM")
    );
}

fn access(groups: &[&str], needs: Vec<u16>) -> Option<EntryAccess> {
    Some(EntryAccess { user: "alice".into(), groups: groups.iter().map(|g| g.to_string()).collect(), needs })
}

#[test]
fn entry_access_filters_every_joined_table() {
    let mut p = plan();
    p.access = access(&["atlas"], vec![4, 4]);
    let c = compile_select(Dialect::Sqlite, &p);
    let t0 = "((CASE WHEN t0.owner = ?4 THEN t0.perms & 256 WHEN t0.grp IN (?5) THEN t0.perms & 32 \
              ELSE t0.perms & 4 END) <> 0 OR EXISTS (SELECT 1 FROM entry_acls x0 WHERE x0.collection_id = ?6 \
              AND x0.entry_id = t0.id AND (x0.rights & 4) <> 0 AND ((NOT x0.is_group AND x0.principal = ?7) \
              OR (x0.is_group AND x0.principal IN (?8)))))";
    assert!(c.sql.contains(t0), "{}", c.sql);
    assert!(c.sql.contains("x1.entry_id = t1.id"), "{}", c.sql);
    // Names and ids are parameters, never text of the statement.
    assert!(!c.sql.contains("alice") && !c.sql.contains("atlas"), "{}", c.sql);
    assert_eq!(
        c.params[3..8].to_vec(),
        vec![
            Value::Text("alice".into()),
            Value::Text("atlas".into()),
            Value::Int(5),
            Value::Text("alice".into()),
            Value::Text("atlas".into()),
        ]
    );
    // The filter comes before ORDER BY and LIMIT, so hidden rows are never counted or ordered.
    assert!(c.sql.find("entry_acls").unwrap() < c.sql.find("ORDER BY").unwrap());
    // Without groups there is no empty IN ().
    p.access = access(&[], vec![4, 0]);
    let c = compile_select(Dialect::Postgres, &p);
    assert!(!c.sql.contains("IN ()") && !c.sql.contains("x1."), "{}", c.sql);
    assert!(c.sql.contains("ELSE t0.perms & 4 END) <> 0"), "{}", c.sql);
}

#[test]
fn entry_access_in_update_and_delete() {
    let plan = UpdatePlan {
        tables: vec![5, 9],
        assignments: vec![],
        filter: None,
        name_patterns: vec![],
        access: access(&[], vec![2, 4]),
    };
    let c = compile_update(Dialect::Sqlite, &plan, Value::Null);
    // Write on the target's own rows, read on the joined table inside EXISTS.
    assert!(c.sql.contains("e5.perms & 128"), "{}", c.sql);
    assert!(c.sql.contains("x0.entry_id = e5.id AND (x0.rights & 2) <> 0"), "{}", c.sql);
    assert!(c.sql.contains("EXISTS (SELECT 1 FROM e9 AS t1 WHERE ((CASE WHEN t1.owner"), "{}", c.sql);
    assert!(c.sql.contains("t1.perms & 256"), "{}", c.sql);
    let del = DeletePlan { tables: vec![5], filter: None, name_patterns: vec![], access: access(&[], vec![2]) };
    let c = compile_delete(Dialect::Postgres, &del);
    assert!(c.sql.starts_with("DELETE FROM e5 WHERE ((CASE WHEN e5.owner = $1::text THEN e5.perms & 128"), "{}", c.sql);
    let none = DeletePlan { access: None, ..del };
    assert_eq!(compile_delete(Dialect::Sqlite, &none).sql, "DELETE FROM e5");
}

#[test]
fn insert_rows() {
    let attrs = vec![AttrDef { id: 2, name: "x".into(), attr_type: AttrType::Int, indexed: false }];
    let sql = compile_insert(Dialect::Postgres, 3, &attrs, 2);
    assert!(sql.starts_with("INSERT INTO e3 (file, owner, grp, perms, created, modified, a2) VALUES ($1::text"));
    assert!(sql.ends_with("$14::int8)"));
}

/// A select of several names is the select of one with its name condition widened to a list:
/// same columns, same permission predicate, same parameters but the names; a plan that does not
/// name one entry exactly has none.
#[test]
fn select_of_names_widens_only_the_name_condition() {
    let who = ardacat_core::perm::Principal { user: "alice".into(), groups: vec!["atlas".into()], may_sudo: false };
    let mut p = SelectPlan::of_collection(
        7,
        vec![col(0, Column::File, ValueType::Text), col(0, Column::Attr(3), ValueType::Int)],
        vec![ValueType::Text, ValueType::Int],
        ardacat_core::store::EntryAccess::new(&who, vec![4]),
    );
    p.name_patterns = vec![(0, "e1".into())];
    p.order_by = vec![OrderItem { expr: col(0, Column::File, ValueType::Text), descending: false }];
    for d in [Dialect::Sqlite, Dialect::Postgres] {
        let one = compile_select(d, &p);
        let names: Vec<String> = ["e1", "e'2", "e%3"].map(String::from).to_vec();
        let many = compile_select_names(d, &p, &names).expect("one exact name");
        let ph = |i: usize| if d == Dialect::Postgres { format!("${i}") } else { format!("?{i}") };
        // A name's placeholder (PostgreSQL casts it).
        let nph = |i: usize| if d == Dialect::Postgres { format!("${i}::text") } else { format!("?{i}") };
        // The name is the first parameter of both; the list's others shift the rest by two.
        assert!(one.sql.contains(&format!("t0.file = {}", nph(1))), "{}", one.sql);
        let mut shifted = one.sql.clone();
        for i in (2..=one.params.len()).rev() {
            shifted = shifted.replace(&ph(i), &ph(i + 2));
        }
        let list = format!("t0.file IN ({}, {}, {})", nph(1), nph(2), nph(3));
        let shifted = shifted.replace(&format!("t0.file = {}", nph(1)), &list);
        assert_eq!(many.sql, shifted, "{d:?}");
        assert!(many.sql.contains("entry_acls"), "the permission predicate stays: {}", many.sql);
        let texts: Vec<Value> = names.iter().map(|n| Value::Text(n.clone())).collect();
        assert_eq!(many.params[..3], texts[..]);
        assert_eq!(many.params[3..], one.params[1..]);
        assert_eq!(many.types, one.types);
    }
    let mut pattern = p.clone();
    pattern.name_patterns = vec![(0, "e%".into())];
    assert!(compile_select_names(Dialect::Postgres, &pattern, &["a".into()]).is_none());
    assert!(compile_select_names(Dialect::Postgres, &p, &[]).is_none());
}
