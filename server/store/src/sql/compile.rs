//! Compiles resolved plans (`SelectPlan`, `UpdatePlan`, `DeletePlan`) into one SQL statement
//! with bound parameters. Tables are `e<collection id> AS t<i>`, attributes `a<attribute id>`.
//!
//! A plan's [`EntryAccess`] becomes a predicate per joined table (see `Builder::access`), so
//! entries the caller may not read (or write) are filtered by the database itself: they are
//! never returned, counted, ordered by, updated or deleted.

use std::fmt::Write;

use ardacat_core::query::ast::{Aggregate, BinOp, Expr, Func, Literal, UnOp};
use ardacat_core::query::{Column, Term, expr_type};
use ardacat_core::store::{AttrDef, DeletePlan, EntryAccess, SelectPlan, UpdatePlan};
use ardacat_core::types::{Value, ValueType};

use super::Dialect;

/// A statement ready to run: text, parameters, and the types of the result columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    pub sql: String,
    pub params: Vec<Value>,
    pub types: Vec<ValueType>,
}

pub fn table_name(collection_id: i64) -> String {
    format!("e{collection_id}")
}

pub fn attr_column(attr_id: i64) -> String {
    format!("a{attr_id}")
}

/// The system table of per-entry ACL rows (migration 0004).
pub const ENTRY_ACLS: &str = "entry_acls";

fn column_name(c: Column) -> String {
    match c {
        Column::Id => "id".into(),
        Column::File => "file".into(),
        Column::Owner => "owner".into(),
        Column::Group => "grp".into(),
        Column::Perms => "perms".into(),
        Column::Created => "created".into(),
        Column::Modified => "modified".into(),
        Column::Attr(id) => attr_column(id),
    }
}

struct Builder {
    dialect: Dialect,
    sql: String,
    params: Vec<Value>,
    /// In UPDATE/DELETE the target table is referenced by its own name, not `t0`; in a
    /// constraint's condition by `NEW` (SQLite trigger) or not at all (PostgreSQL CHECK: empty).
    target_alias: String,
    /// Values are written into the text as literals instead of bound (a constraint's condition
    /// is DDL, which takes no parameters). A value a literal cannot carry sets `unwritable`.
    inline: bool,
    unwritable: bool,
}

impl Builder {
    fn new(dialect: Dialect) -> Self {
        Builder {
            dialect,
            sql: String::new(),
            params: Vec::new(),
            target_alias: "t0".into(),
            inline: false,
            unwritable: false,
        }
    }

    fn param(&mut self, v: Value, t: ValueType) {
        if self.inline {
            match sql_literal(self.dialect, &v, t) {
                Some(l) => self.sql.push_str(&l),
                None => self.unwritable = true,
            }
            return;
        }
        self.params.push(v);
        let p = self.dialect.param(self.params.len(), t);
        self.sql.push_str(&p);
    }

    fn alias(&self, table: usize) -> String {
        if table == 0 { self.target_alias.clone() } else { format!("t{table}") }
    }

    fn expr(&mut self, e: &Expr<Term>) {
        match e {
            Expr::Lit(Literal::Null) => self.sql.push_str("NULL"),
            Expr::Lit(l) => {
                let (v, t) = match l {
                    Literal::Int(i) => (Value::Int(*i), ValueType::Int),
                    Literal::Float(f) => (Value::Float(*f), ValueType::Float),
                    Literal::Str(s) => (Value::Text(s.clone()), ValueType::Text),
                    Literal::Bool(b) => (Value::Bool(*b), ValueType::Bool),
                    Literal::Null => (Value::Null, ValueType::Text),
                };
                self.param(v, t);
            }
            Expr::Ref(Term::Column { table, column, .. }) => {
                let a = self.alias(*table);
                if !a.is_empty() {
                    let _ = write!(self.sql, "{a}.");
                }
                self.sql.push_str(&column_name(*column));
            }
            Expr::Ref(Term::Const(v, t)) => self.param(v.clone(), *t),
            Expr::Unary(UnOp::Not, a) => {
                self.sql.push_str("(NOT ");
                self.expr(a);
                self.sql.push(')');
            }
            Expr::Unary(UnOp::Neg, a) if self.dialect == Dialect::Sqlite => {
                // Checked on SQLite (`exec::sqlite_math`): -MIN is an overflow, as on PostgreSQL.
                self.sql.push_str("ardacat_neg(");
                self.expr(a);
                self.sql.push(')');
            }
            Expr::Unary(UnOp::Neg, a) => {
                self.sql.push_str("(-");
                self.expr(a);
                self.sql.push(')');
            }
            Expr::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b)
                if self.dialect == Dialect::Sqlite =>
            {
                // SQLite's own operators would turn an overflow into a float or infinity; the
                // checked functions raise it like PostgreSQL's int8/float8 operators.
                self.sql.push_str(match op {
                    BinOp::Add => "ardacat_add(",
                    BinOp::Sub => "ardacat_sub(",
                    BinOp::Mul => "ardacat_mul(",
                    _ => "ardacat_div(",
                });
                self.expr(a);
                self.sql.push_str(", ");
                if *op == BinOp::Div {
                    self.sql.push_str("NULLIF(");
                    self.expr(b);
                    self.sql.push_str(", 0)");
                } else {
                    self.expr(b);
                }
                self.sql.push(')');
            }
            Expr::Binary(BinOp::Div, a, b) => {
                // Division by zero is NULL on both backends (PostgreSQL would raise, SQLite not).
                self.sql.push('(');
                self.expr(a);
                self.sql.push_str(" / NULLIF(");
                self.expr(b);
                self.sql.push_str(", 0))");
            }
            Expr::Binary(op, a, b) => {
                let op = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                    BinOp::Eq => "=",
                    BinOp::Ne => "<>",
                    BinOp::Lt => "<",
                    BinOp::Le => "<=",
                    BinOp::Gt => ">",
                    BinOp::Ge => ">=",
                    BinOp::And => "AND",
                    BinOp::Or => "OR",
                };
                self.sql.push('(');
                self.expr(a);
                let _ = write!(self.sql, " {op} ");
                self.expr(b);
                self.sql.push(')');
            }
            Expr::Call(Func::Aggregate(agg, distinct), args) => self.aggregate(*agg, *distinct, args),
            Expr::Call(f, args) => {
                self.sql.push_str(match f {
                    Func::Lower => "lower(",
                    Func::Upper => "upper(",
                    Func::Aggregate(..) => unreachable!("handled above"),
                });
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        self.sql.push_str(", ");
                    }
                    self.expr(a);
                }
                self.sql.push(')');
            }
            Expr::Like { expr, pattern, case_insensitive, negated } => {
                let e = self.sub(expr);
                let p = self.sub(pattern);
                if *case_insensitive {
                    let s = self.dialect.ilike(&e, &p, *negated);
                    self.sql.push_str(&s);
                } else {
                    let not = if *negated { "NOT " } else { "" };
                    let _ = write!(self.sql, "({e} {not}LIKE {p} ESCAPE '\\')");
                }
            }
            Expr::InList { expr, list, negated } => {
                self.sql.push('(');
                self.expr(expr);
                self.sql.push_str(if *negated { " NOT IN (" } else { " IN (" });
                for (i, item) in list.iter().enumerate() {
                    if i > 0 {
                        self.sql.push_str(", ");
                    }
                    self.expr(item);
                }
                self.sql.push_str("))");
            }
            Expr::Between { expr, low, high, negated } => {
                self.sql.push('(');
                self.expr(expr);
                self.sql.push_str(if *negated { " NOT BETWEEN " } else { " BETWEEN " });
                self.expr(low);
                self.sql.push_str(" AND ");
                self.expr(high);
                self.sql.push(')');
            }
            Expr::IsNull { expr, negated } => {
                self.sql.push('(');
                self.expr(expr);
                self.sql.push_str(if *negated { " IS NOT NULL)" } else { " IS NULL)" });
            }
        }
    }

    /// An aggregate call. PostgreSQL's `sum(bigint)` and `avg(…)` answer `numeric`, which
    /// neither the row decoders nor SQLite know: the casts make both databases answer the type
    /// `expr_type` promises (BIGINT for integer sums, DOUBLE PRECISION for averages).
    fn aggregate(&mut self, agg: Aggregate, distinct: bool, args: &[Expr<Term>]) {
        let name = match agg {
            Aggregate::Count => "COUNT",
            Aggregate::Sum => "SUM",
            Aggregate::Avg => "AVG",
            Aggregate::Min => "MIN",
            Aggregate::Max => "MAX",
        };
        let inner = match args.first() {
            None => "*".to_string(),
            Some(a) => {
                let a = self.sub(a);
                if distinct { format!("DISTINCT {a}") } else { a }
            }
        };
        let cast = match (agg, args.first().map(expr_type)) {
            (Aggregate::Sum, Some(ValueType::Int)) => Some("BIGINT"),
            (Aggregate::Avg, _) => Some("DOUBLE PRECISION"),
            _ => None,
        };
        match cast {
            Some(t) => {
                let _ = write!(self.sql, "CAST({name}({inner}) AS {t})");
            }
            None => {
                let _ = write!(self.sql, "{name}({inner})");
            }
        }
    }

    /// Compile a sub-expression into its own string (parameters still go to `self`).
    fn sub(&mut self, e: &Expr<Term>) -> String {
        let saved = std::mem::take(&mut self.sql);
        self.expr(e);
        std::mem::replace(&mut self.sql, saved)
    }

    fn conditions(&mut self, filter: Option<&Expr<Term>>, name_patterns: &[(usize, String)]) -> Vec<String> {
        let mut out = Vec::new();
        for (table, pattern) in name_patterns {
            let a = self.alias(*table);
            // An exact name is an equality, so both databases use the unique index on `file`.
            match literal_of_like(pattern) {
                Some(name) => {
                    let p = self.sub(&Expr::Ref(Term::Const(Value::Text(name), ValueType::Text)));
                    out.push(format!("{a}.file = {p}"));
                }
                None => {
                    let p = self.sub(&Expr::Ref(Term::Const(Value::Text(pattern.clone()), ValueType::Text)));
                    out.push(format!("{a}.file LIKE {p} ESCAPE '\\'"));
                }
            }
        }
        if let Some(f) = filter {
            out.push(self.sub(f));
        }
        out
    }

    /// The entry permission predicate of table `table` (collection `collection_id`), if the
    /// plan needs rights there. For each needed bit `b` (r = 4, w = 2, x = 1):
    ///
    /// ```sql
    /// (CASE WHEN t.owner = :user THEN t.perms & (b << 6)
    ///       WHEN t.grp IN (:groups…) THEN t.perms & (b << 3)
    ///       ELSE t.perms & b END <> 0
    ///  OR EXISTS (SELECT 1 FROM entry_acls x WHERE x.collection_id = :c AND x.entry_id = t.id
    ///             AND (x.rights & b) <> 0
    ///             AND ((NOT x.is_group AND x.principal = :user)
    ///                  OR (x.is_group AND x.principal IN (:groups…)))))
    /// ```
    ///
    /// which is `perm::Guard::rights` bit by bit: owner, else group, else other bits, widened
    /// by every matching ACL row. User and group names are bound parameters; the bit masks are
    /// constants of this function.
    fn access(&mut self, table: usize, collection_id: i64, access: &EntryAccess) -> Option<String> {
        let need = access.need(table);
        if need == 0 {
            return None;
        }
        let a = self.alias(table);
        let x = format!("x{table}");
        let mut parts = Vec::new();
        for bit in [4u16, 2, 1] {
            if need & bit == 0 {
                continue;
            }
            let user = self.text_param(&access.user);
            let mut case = format!("CASE WHEN {a}.owner = {user} THEN {a}.perms & {}", bit << 6);
            if !access.groups.is_empty() {
                let groups = self.text_list(&access.groups);
                let _ = write!(case, " WHEN {a}.grp IN ({groups}) THEN {a}.perms & {}", bit << 3);
            }
            let _ = write!(case, " ELSE {a}.perms & {bit} END");
            let coll = self.sub(&Expr::Ref(Term::Const(Value::Int(collection_id), ValueType::Int)));
            let user = self.text_param(&access.user);
            let mut who = format!("(NOT {x}.is_group AND {x}.principal = {user})");
            if !access.groups.is_empty() {
                let groups = self.text_list(&access.groups);
                let _ = write!(who, " OR ({x}.is_group AND {x}.principal IN ({groups}))");
            }
            parts.push(format!(
                "(({case}) <> 0 OR EXISTS (SELECT 1 FROM {ENTRY_ACLS} {x} WHERE {x}.collection_id = {coll} \
                 AND {x}.entry_id = {a}.id AND ({x}.rights & {bit}) <> 0 AND ({who})))"
            ));
        }
        Some(parts.join(" AND "))
    }

    fn text_param(&mut self, v: &str) -> String {
        self.sub(&Expr::Ref(Term::Const(Value::Text(v.to_string()), ValueType::Text)))
    }

    fn text_list(&mut self, values: &[String]) -> String {
        values.iter().map(|v| self.text_param(v)).collect::<Vec<_>>().join(", ")
    }
}

/// A value as an SQL literal of type `t`, for DDL (which takes no parameters). Text is quoted
/// so that no value can end the literal: SQLite doubles `'`; PostgreSQL uses an `E'…'` string
/// (its meaning does not depend on `standard_conforming_strings`) with `\` and `'` escaped.
/// `None` for what a literal cannot carry (NUL in text, a non-finite float).
pub(crate) fn sql_literal(d: Dialect, v: &Value, t: ValueType) -> Option<String> {
    let text = match v {
        Value::Null => return Some("NULL".into()),
        Value::Int(i) => i.to_string(),
        Value::Float(f) if f.is_finite() => format!("{f:?}"),
        Value::Float(_) => return None,
        Value::Text(s) if s.contains('\0') => return None,
        Value::Text(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Timestamp(ts) => ardacat_core::types::timestamp_sort_key(ts),
    };
    Some(match d {
        Dialect::Postgres => {
            let escaped = text.replace('\\', "\\\\").replace('\'', "''");
            format!("CAST(E'{escaped}' AS {})", d.cast_name(t))
        }
        Dialect::Sqlite => match v {
            Value::Int(_) | Value::Float(_) => text,
            Value::Bool(b) => i64::from(*b).to_string(),
            _ => format!("'{}'", text.replace('\'', "''")),
        },
    })
}

/// A constraint's condition over one entry table as SQL text with its values written in
/// (`qualifier`: how columns are prefixed — `NEW` in a SQLite trigger, the table name in a
/// query, empty in a PostgreSQL CHECK). `None` when a value cannot be written as a literal.
pub fn compile_condition(d: Dialect, e: &Expr<Term>, qualifier: &str) -> Option<String> {
    let mut b = Builder::new(d);
    b.inline = true;
    b.target_alias = qualifier.to_string();
    b.expr(e);
    (!b.unwritable).then_some(b.sql)
}

/// The plain string a LIKE pattern (with `\` escapes) matches, if it has no wildcard.
pub(crate) fn literal_of_like(pattern: &str) -> Option<String> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '%' | '_' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// The strict "comes after" predicate over a list of sort keys: NULL sorts first ascending and
/// last descending, matching the ORDER BY emitted beside it.
/// A key of a keyset order: its SQL, descending, its type, and whether it can be NULL.
type Key = (String, bool, ValueType, bool);

/// Keys that are never NULL: the row id and the entry name. Their order needs no `NULLS`
/// clause, which would keep PostgreSQL from walking the btree index in that order (a 1M-row
/// collection's first page was a full sort: `ORDER BY id ASC NULLS FIRST` is not the index's
/// `ASC NULLS LAST`).
fn never_null(e: &Expr<Term>) -> bool {
    matches!(e, Expr::Ref(Term::Column { column: Column::Id | Column::File, .. }))
}

fn keyset_after(b: &mut Builder, keys: &[Key], after: &[Value]) -> String {
    let mut alternatives = Vec::new();
    for i in 0..keys.len().min(after.len()) {
        let mut parts = Vec::new();
        for j in 0..i {
            let (k, _, t, _) = &keys[j];
            match &after[j] {
                Value::Null => parts.push(format!("{k} IS NULL")),
                v => {
                    let p = b.sub(&Expr::Ref(Term::Const(v.clone(), *t)));
                    parts.push(format!("{k} = {p}"));
                }
            }
        }
        let (k, desc, t, nullable) = &keys[i];
        let gt = match (&after[i], desc) {
            (Value::Null, false) => format!("{k} IS NOT NULL"),
            (Value::Null, true) => "1 = 0".to_string(),
            (v, false) => {
                let p = b.sub(&Expr::Ref(Term::Const(v.clone(), *t)));
                format!("{k} > {p}")
            }
            (v, true) => {
                let p = b.sub(&Expr::Ref(Term::Const(v.clone(), *t)));
                if *nullable { format!("({k} < {p} OR {k} IS NULL)") } else { format!("{k} < {p}") }
            }
        };
        parts.push(gt);
        alternatives.push(format!("({})", parts.join(" AND ")));
    }
    format!("({})", alternatives.join(" OR "))
}

/// `SELECT <columns>, <keys> FROM e.. AS t0, … WHERE … ORDER BY <keys> [LIMIT n]`.
pub fn compile_select(d: Dialect, plan: &SelectPlan) -> Compiled {
    compile_select_in(d, plan, None)
}

/// [`compile_select`] of a plan that names one entry of table 0 exactly (its only name
/// pattern, without wildcards), reading the entries named `names` instead: its name condition
/// becomes `t0.file IN (…)`, one bound parameter per name, in order. Several point reads of one
/// shape answered by one statement (`sql::point`). `None` if the plan does not name one entry.
pub fn compile_select_names(d: Dialect, plan: &SelectPlan, names: &[String]) -> Option<Compiled> {
    match plan.name_patterns.as_slice() {
        [(0, pattern)] if !names.is_empty() && literal_of_like(pattern).is_some() => {
            Some(compile_select_in(d, plan, Some(names)))
        }
        _ => None,
    }
}

fn compile_select_in(d: Dialect, plan: &SelectPlan, names: Option<&[String]>) -> Compiled {
    let mut b = Builder::new(d);
    let keys = plan.order_keys();
    let mut select_list = Vec::new();
    for c in &plan.columns {
        select_list.push(b.sub(c));
    }
    let mut key_sql = Vec::new();
    for k in &keys {
        let s = b.sub(&k.expr);
        key_sql.push((s, k.descending, expr_type(&k.expr), !never_null(&k.expr)));
    }
    let ncols = select_list.len();
    select_list.extend(key_sql.iter().map(|(s, _, _, _)| s.clone()));
    let from: Vec<String> =
        plan.tables.iter().enumerate().map(|(i, id)| format!("{} AS t{i}", table_name(*id))).collect();
    let mut conds = match names {
        Some(names) => {
            let list: Vec<String> =
                names.iter().map(|n| b.sub(&Expr::Ref(Term::Const(Value::Text(n.clone()), ValueType::Text)))).collect();
            let mut conds = vec![format!("{}.file IN ({})", b.alias(0), list.join(", "))];
            conds.extend(b.conditions(plan.filter.as_ref(), &[]));
            conds
        }
        None => b.conditions(plan.filter.as_ref(), &plan.name_patterns),
    };
    if let Some(access) = &plan.access {
        for (i, id) in plan.tables.iter().enumerate() {
            conds.extend(b.access(i, *id, access));
        }
    }
    // Groups are filtered after grouping: their keyset position goes to HAVING, beside the
    // user's HAVING (the access predicates above stay in WHERE, so hidden rows are never
    // counted). An aggregate without GROUP BY is one row: nothing comes after it.
    let grouped = plan.is_grouped();
    let mut group_conds = Vec::new();
    if let Some(h) = &plan.having {
        group_conds.push(b.sub(h));
    }
    if let Some(after) = &plan.after {
        let k = if key_sql.is_empty() { "(1 = 0)".to_string() } else { keyset_after(&mut b, &key_sql, after) };
        if grouped { group_conds.push(k) } else { conds.push(k) }
    }
    let group_sql: Vec<String> = plan.group_by.iter().map(|g| b.sub(g)).collect();
    let mut sql = format!(
        "SELECT {}{} FROM {}",
        if plan.distinct { "DISTINCT " } else { "" },
        select_list.join(", "),
        from.join(", ")
    );
    if !conds.is_empty() {
        let _ = write!(sql, " WHERE {}", conds.join(" AND "));
    }
    if !group_sql.is_empty() {
        let _ = write!(sql, " GROUP BY {}", group_sql.join(", "));
    }
    if !group_conds.is_empty() {
        let _ = write!(sql, " HAVING {}", group_conds.join(" AND "));
    }
    // Ordinals: the keys are in the select list already, and DISTINCT requires it.
    let order: Vec<String> = key_sql
        .iter()
        .enumerate()
        .map(|(i, (_, desc, _, nullable))| {
            let dir = match (desc, nullable) {
                (false, true) => "ASC NULLS FIRST",
                (true, true) => "DESC NULLS LAST",
                (false, false) => "ASC",
                (true, false) => "DESC",
            };
            format!("{} {dir}", ncols + i + 1)
        })
        .collect();
    if !order.is_empty() {
        let _ = write!(sql, " ORDER BY {}", order.join(", "));
    }
    if let Some(n) = plan.limit {
        let _ = write!(sql, " LIMIT {n}");
    }
    if let Some(n) = plan.offset {
        // SQLite takes OFFSET only after a LIMIT; -1 is its "no limit".
        if plan.limit.is_none() && d == Dialect::Sqlite {
            sql.push_str(" LIMIT -1");
        }
        let _ = write!(sql, " OFFSET {n}");
    }
    let mut types = plan.column_types.clone();
    types.extend(key_sql.iter().map(|(_, _, t, _)| *t));
    b.sql = sql;
    Compiled { sql: b.sql, params: b.params, types }
}

/// The WHERE clause of an UPDATE/DELETE on table 0: its own patterns, and other tables of the
/// implicit join through `EXISTS (SELECT 1 FROM …)`.
fn target_where(
    b: &mut Builder,
    tables: &[i64],
    filter: Option<&Expr<Term>>,
    patterns: &[(usize, String)],
    access: Option<&EntryAccess>,
) -> String {
    let (own, others): (Vec<_>, Vec<_>) = patterns.iter().cloned().partition(|(t, _)| *t == 0);
    let mut conds = b.conditions(None, &own);
    if let Some(access) = access {
        conds.extend(b.access(0, tables[0], access));
    }
    if tables.len() > 1 {
        let from: Vec<String> =
            tables.iter().enumerate().skip(1).map(|(i, id)| format!("{} AS t{i}", table_name(*id))).collect();
        let mut inner = b.conditions(filter, &others);
        if let Some(access) = access {
            for (i, id) in tables.iter().enumerate().skip(1) {
                inner.extend(b.access(i, *id, access));
            }
        }
        let mut sub = format!("EXISTS (SELECT 1 FROM {}", from.join(", "));
        if !inner.is_empty() {
            let _ = write!(sub, " WHERE {}", inner.join(" AND "));
        }
        sub.push(')');
        conds.push(sub);
    } else if let Some(f) = filter {
        conds.push(b.sub(f));
    }
    if conds.is_empty() { String::new() } else { format!(" WHERE {}", conds.join(" AND ")) }
}

pub fn compile_update(d: Dialect, plan: &UpdatePlan, now: Value) -> Compiled {
    let mut b = Builder::new(d);
    let target = table_name(plan.tables[0]);
    b.target_alias = target.clone();
    let mut sets = Vec::new();
    for (attr, e) in &plan.assignments {
        let v = b.sub(e);
        // A float attribute stores -0 as 0 on both backends: SQLite keeps an integral REAL as
        // an integer and loses the sign, so PostgreSQL adds +0.0 (IEEE: -0 + 0 = +0, any other
        // value unchanged). Values from the wire are normalised in `AttrType::parse_value`.
        if d == Dialect::Postgres
            && attr.attr_type.value_type() == ValueType::Float
            && !matches!(e, Expr::Ref(Term::Const(..)))
        {
            sets.push(format!("{} = ({v} + 0.0::float8)", attr_column(attr.id)));
        } else {
            sets.push(format!("{} = {v}", attr_column(attr.id)));
        }
    }
    let m = b.sub(&Expr::Ref(Term::Const(now, ValueType::Timestamp)));
    sets.push(format!("modified = {m}"));
    let w = target_where(&mut b, &plan.tables, plan.filter.as_ref(), &plan.name_patterns, plan.access.as_ref());
    Compiled { sql: format!("UPDATE {target} SET {}{w}", sets.join(", ")), params: b.params, types: vec![] }
}

pub fn compile_delete(d: Dialect, plan: &DeletePlan) -> Compiled {
    let mut b = Builder::new(d);
    let target = table_name(plan.tables[0]);
    b.target_alias = target.clone();
    let w = target_where(&mut b, &plan.tables, plan.filter.as_ref(), &plan.name_patterns, plan.access.as_ref());
    Compiled { sql: format!("DELETE FROM {target}{w}"), params: b.params, types: vec![] }
}

/// `INSERT INTO e<id> (file, owner, grp, perms, created, modified, a…) VALUES (…), …` for
/// `rows` rows at once.
pub fn compile_insert(d: Dialect, collection_id: i64, attrs: &[AttrDef], rows: usize) -> String {
    let mut cols =
        vec!["file", "owner", "grp", "perms", "created", "modified"].into_iter().map(String::from).collect::<Vec<_>>();
    let mut types = vec![
        ValueType::Text,
        ValueType::Text,
        ValueType::Text,
        ValueType::Int,
        ValueType::Timestamp,
        ValueType::Timestamp,
    ];
    for a in attrs {
        cols.push(attr_column(a.id));
        types.push(a.attr_type.value_type());
    }
    let width = cols.len();
    let mut sql = format!("INSERT INTO {} ({}) VALUES ", table_name(collection_id), cols.join(", "));
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for (i, t) in types.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&d.param(r * width + i + 1, *t));
        }
        sql.push(')');
    }
    sql
}

#[cfg(test)]
mod tests;
