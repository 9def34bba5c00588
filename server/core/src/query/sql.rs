//! Native SQL (AMGA ≥ 1.9): the SQL-92 entry-level direct data statements `SELECT`, `INSERT`,
//! `UPDATE` and `DELETE` over collections, parsed with the `sqlparser` crate and translated into
//! a [`Statement`] of this crate's own syntax tree (`ast::Expr`). It owns the accepted subset, its
//! syntax errors (code 8 with a byte position into the user's text) and the reply headers "as
//! written". It must not resolve names, check permissions or produce SQL: the catalogue service
//! resolves a `Statement` into the same plans the query language compiles to, so user SQL never
//! reaches a database.
//!
//! Tables are collection paths (`/jobs`), which are not SQL identifiers: `scan` replaces each
//! path (and each `/dir:attr` column) by an identifier of the same length before `sqlparser`
//! sees the text, and remembers what stood there, so every position `sqlparser` reports still
//! points at the user's text.

mod scan;
mod translate;

use thiserror::Error;

use super::ast::{Expr, Literal};

pub use scan::is_statement;

/// A syntax error or a construct outside the subset, located by byte offset into the statement.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("at position {position}: {message}")]
pub struct SqlError {
    pub position: usize,
    pub message: String,
}

impl SqlError {
    pub(crate) fn new(position: usize, message: impl Into<String>) -> Self {
        SqlError { position, message: message.into() }
    }
}

/// A value with the byte offset where it starts in the statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    pub value: T,
    pub position: usize,
}

/// What qualifies a column: a collection path (`/jobs:events`, `/jobs.events`) or a name
/// (`j.events`: a table alias, or a table written as a plain name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Qualifier {
    Path(String),
    Name(String),
}

/// A column as written: `events`, `FILE`, `/jobs:events`, `j.events`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlRef {
    pub qualifier: Option<Qualifier>,
    /// An attribute or an entry column (`FILE`, `OWNER`, `PERMISSIONS`, `GROUP_RIGHT`).
    pub name: String,
    pub position: usize,
}

/// A table of `FROM`, `INSERT INTO`, `UPDATE` or `DELETE FROM`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    /// As written: absolute (`/jobs`) or relative to the current directory (`jobs`).
    pub path: String,
    pub alias: Option<String>,
    pub position: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SelectItem {
    Expr {
        expr: Expr<SqlRef>,
        /// The reply's header line: the alias if given, else the item as written.
        header: String,
        /// `AS name`: ORDER BY may use it.
        alias: Option<String>,
        position: usize,
    },
    /// `*` or `q.*`: the entry name and every attribute of the table(s), headed `/dir:attr`.
    Wildcard { qualifier: Option<Qualifier>, position: usize },
}

#[derive(Debug, Clone, PartialEq)]
pub enum OrderKey {
    /// `ORDER BY 2`: the second output column (1-based as written).
    Position(u64),
    /// A bare name may also be an output column's alias.
    Expr(Expr<SqlRef>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    pub key: OrderKey,
    pub descending: bool,
    pub position: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub distinct: bool,
    pub items: Vec<SelectItem>,
    pub from: Vec<TableRef>,
    /// The `WHERE` condition and the `ON` conditions of inner joins, all of which must hold.
    pub filters: Vec<Located<Expr<SqlRef>>>,
    pub group_by: Vec<Located<SqlRef>>,
    pub having: Option<Located<Expr<SqlRef>>>,
    pub order_by: Vec<OrderItem>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    pub table: TableRef,
    /// `None`: `FILE` then every attribute in schema order.
    pub columns: Option<Vec<Located<String>>>,
    pub rows: Vec<Vec<Located<Literal>>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub table: TableRef,
    pub assignments: Vec<(Located<String>, Located<Expr<SqlRef>>)>,
    pub filter: Option<Located<Expr<SqlRef>>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    pub table: TableRef,
    pub filter: Option<Located<Expr<SqlRef>>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Select(Select),
    Insert(Insert),
    Update(Update),
    Delete(Delete),
}

/// Parse one statement (a trailing `;` is allowed).
///
/// Runs the parser and the translation recursively over the statement; a statement as long as
/// the protocol's line limit can nest deeply enough to exhaust a small stack, so callers on
/// async worker threads should use [`parse_on_own_stack`].
pub fn parse(statement: &str) -> Result<Statement, SqlError> {
    translate::statement(statement)
}

/// Stack of the thread [`parse_on_own_stack`] parses on. Dropping `sqlparser`'s tree of a long
/// `a AND b AND …` chain recurses once per operator; a 1 MiB statement needs far less than this.
const PARSE_STACK: usize = 256 << 20;

/// [`parse`] on a thread of its own with a large stack, awaited without blocking the caller's
/// executor thread. The translated tree is at most `parser::MAX_DEPTH` deep, so what comes
/// back is safe to walk (and drop) anywhere. A syntax error is `Error::IllegalQuery` (code 8)
/// with its position.
pub async fn parse_on_own_stack(statement: &str) -> crate::error::Result<Statement> {
    let text = statement.to_string();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("sql-parse".into())
        .stack_size(PARSE_STACK)
        .spawn(move || {
            let _ = tx.send(parse(&text));
        })
        .map_err(|e| crate::error::Error::Internal(format!("no thread to parse a statement: {e}")))?;
    rx.await
        .map_err(|_| crate::error::Error::Internal("the statement parser stopped".into()))?
        .map_err(|e| crate::error::Error::IllegalQuery(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::ast::{Aggregate, BinOp, Func};

    fn r(q: Option<Qualifier>, name: &str, position: usize) -> Expr<SqlRef> {
        Expr::Ref(SqlRef { qualifier: q, name: name.into(), position })
    }

    fn select(s: &str) -> Select {
        match parse(s) {
            Ok(Statement::Select(sel)) => sel,
            other => panic!("{s}: {other:?}"),
        }
    }

    fn err(s: &str) -> SqlError {
        match parse(s) {
            Err(e) => e,
            Ok(st) => panic!("{s} parsed: {st:?}"),
        }
    }

    #[test]
    fn select_with_every_clause() {
        let s = "select distinct FILE, /jobs:events AS ev, j.status, count(*), Sum(DISTINCT c.x) \
                 from /jobs j, /cfg c where ev > 5 and c.k = j.k group by FILE, /jobs:events \
                 having count(*) >= 2 order by 2 desc, FILE limit 10 offset 3;";
        let sel = select(s);
        assert!(sel.distinct);
        assert_eq!(sel.items.len(), 5);
        let headers: Vec<_> = sel
            .items
            .iter()
            .map(|i| match i {
                SelectItem::Expr { header, .. } => header.as_str(),
                SelectItem::Wildcard { .. } => "*",
            })
            .collect();
        assert_eq!(headers, ["FILE", "ev", "j.status", "count(*)", "Sum(DISTINCT c.x)"]);
        match &sel.items[1] {
            SelectItem::Expr { expr, alias, position, .. } => {
                assert_eq!(expr, &r(Some(Qualifier::Path("/jobs".into())), "events", s.find("/jobs:events").unwrap()));
                assert_eq!(alias.as_deref(), Some("ev"));
                assert_eq!(*position, s.find("/jobs:events").unwrap());
            }
            other => panic!("{other:?}"),
        }
        match &sel.items[4] {
            SelectItem::Expr { expr: Expr::Call(Func::Aggregate(Aggregate::Sum, true), args), .. } => {
                assert_eq!(args[0], r(Some(Qualifier::Name("c".into())), "x", s.find("c.x").unwrap()))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            sel.from,
            vec![
                TableRef { path: "/jobs".into(), alias: Some("j".into()), position: s.find("/jobs j").unwrap() },
                TableRef { path: "/cfg".into(), alias: Some("c".into()), position: s.find("/cfg").unwrap() },
            ]
        );
        assert_eq!(sel.filters.len(), 1);
        assert!(matches!(sel.filters[0].value, Expr::Binary(BinOp::And, ..)));
        assert_eq!(sel.group_by.len(), 2);
        assert!(sel.having.is_some());
        assert_eq!(sel.order_by[0].key, OrderKey::Position(2));
        assert!(sel.order_by[0].descending);
        assert!(!sel.order_by[1].descending);
        assert_eq!((sel.limit, sel.offset), (Some(10), Some(3)));
    }

    #[test]
    fn wildcards_joins_and_literals() {
        let sel = select(
            "SELECT *, j.*, /cfg:*, /cfg.* FROM /jobs j JOIN /cfg ON /cfg:k = j.k WHERE x IN (1, -2.5, 'a', NULL, TRUE) AND y BETWEEN 1 AND 2 AND z LIKE 'a%' AND w NOT ILIKE 'b' AND v IS NOT NULL",
        );
        assert!(matches!(sel.items[0], SelectItem::Wildcard { qualifier: None, .. }));
        assert!(matches!(&sel.items[1], SelectItem::Wildcard { qualifier: Some(Qualifier::Name(n)), .. } if n == "j"));
        assert!(
            matches!(&sel.items[2], SelectItem::Wildcard { qualifier: Some(Qualifier::Path(p)), .. } if p == "/cfg")
        );
        assert!(
            matches!(&sel.items[3], SelectItem::Wildcard { qualifier: Some(Qualifier::Path(p)), .. } if p == "/cfg")
        );
        assert_eq!(sel.from.len(), 2);
        assert_eq!(sel.filters.len(), 2, "ON and WHERE");
        let text = format!("{:?}", sel.filters[1].value);
        for part in [
            "Float(-2.5)",
            "Str(\"a\")",
            "Null",
            "Bool(true)",
            "Between",
            "case_insensitive: true, negated: true",
            "IsNull",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
    }

    #[test]
    fn writes() {
        let ins = match parse("INSERT INTO /d (FILE, a, b) VALUES ('e1', 1, NULL), ('e2', -3, 'x')").unwrap() {
            Statement::Insert(i) => i,
            other => panic!("{other:?}"),
        };
        assert_eq!(ins.table.path, "/d");
        assert_eq!(ins.columns.unwrap().iter().map(|c| c.value.as_str()).collect::<Vec<_>>(), ["FILE", "a", "b"]);
        assert_eq!(ins.rows[1][1].value, Literal::Int(-3));
        assert_eq!(ins.rows[0][2].value, Literal::Null);
        let up = match parse("update jobs x set a = a + 1, x.b = 'q' where /other:c = x.c").unwrap() {
            Statement::Update(u) => u,
            other => panic!("{other:?}"),
        };
        assert_eq!((up.table.path.as_str(), up.table.alias.as_deref()), ("jobs", Some("x")));
        assert_eq!(up.assignments.len(), 2);
        assert_eq!(up.assignments[1].0.value, "b");
        assert!(up.filter.is_some());
        let del = match parse("DELETE FROM /d WHERE FILE LIKE 't%'").unwrap() {
            Statement::Delete(d) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(del.table.path, "/d");
        assert!(del.filter.is_some());
    }

    #[test]
    fn errors_point_at_the_users_text() {
        let s = "SELECT FILE FORM /jobs";
        assert_eq!(err(s).position, s.find("/jobs").unwrap(), "{}", err(s));
        let s = "SELECT FILE FROM /jobs WHERE a % 2 = 1";
        assert_eq!(err(s).position, s.find("2 =").unwrap(), "{}", err(s));
        let s = "SELECT FILE FROM /jobs UNION SELECT FILE FROM /b";
        assert_eq!(err(s).position, s.rfind("SELECT").unwrap(), "{}", err(s));
        let s = "SELECT CASE WHEN a = 1 THEN 2 END FROM /j";
        assert_eq!(err(s).position, 7, "{}", err(s));
        let s = "SELECT FILE FROM /j LEFT JOIN /k ON /j:a = /k:a";
        assert_eq!(err(s).position, s.find("/k ").unwrap(), "{}", err(s));
        let s = "SELECT FILE FROM /j WHERE a = (SELECT 1 FROM /k)";
        assert_eq!(err(s).position, s.find("SELECT 1").unwrap(), "{}", err(s));
        let s = "SELECT count(count(a)) FROM /j";
        assert_eq!(err(s).position, s.find("count(a)").unwrap(), "{}", err(s));
        let s = "SELECT FILE FROM /j; DELETE FROM /j";
        assert_eq!(err(s).position, s.find("DELETE").unwrap(), "{}", err(s));
        let s = "SELECT FILE FROM /j WHERE é = 1";
        assert!(err(s).position >= s.find("é").unwrap(), "{}", err(s));
        let s = "SELECT FILE FROM /j ORDER BY 1 NULLS FIRST";
        assert_eq!(err(s).position, s.find("1 NULLS").unwrap(), "{}", err(s));
        let s = "SELECT FILE FROM /j GROUP BY a + 1";
        assert_eq!(err(s).position, s.find("a + 1").unwrap(), "{}", err(s));
        let s = "SELECT FILE FROM /j LIMIT 'x'";
        assert_eq!(err(s).position, s.find("'x'").unwrap(), "{}", err(s));
        let s = "INSERT INTO /d (FILE) SELECT FILE FROM /e";
        assert!(err(s).message.contains("INSERT"), "{}", err(s));
        let s = "INSERT INTO /d (FILE, a) VALUES ('x', a + 1)";
        assert_eq!(err(s).position, s.find("a + 1").unwrap(), "{}", err(s));
        let s = "SELECT foo(a) FROM /j";
        assert_eq!(err(s).position, 7, "{}", err(s));
        let s = "DROP TABLE jobs";
        assert_eq!(err(s).position, 0, "{}", err(s));
        assert_eq!(err("   ").message, "empty statement");
        let s = "SELECT FILE FROM /j WHERE x = 'unterminated";
        assert_eq!(err(s).position, s.find('\'').unwrap(), "{}", err(s));
        // The path the user wrote is named, not its placeholder.
        let s = "SELECT FILE FROM /j WHERE a IN /k";
        assert_eq!(err(s).position, s.find("/k").unwrap(), "{}", err(s));
        assert!(err(s).message.contains("found: /k"), "{}", err(s));
    }

    #[tokio::test]
    async fn hostile_nesting_is_refused_not_fatal() {
        let mut s = String::from("SELECT FILE FROM /j WHERE a = 1");
        while s.len() < 1 << 20 {
            s.push_str(" AND a = 1");
        }
        let e = parse_on_own_stack(&s).await.unwrap_err();
        assert_eq!(e.code(), 8);
        assert!(e.to_string().contains("nested too deeply"), "{e}");
        // Deep through parentheses (the parser's own recursion limit) and through a chain in
        // parentheses (located without walking it).
        let mut chain = String::from("SELECT FILE FROM /j WHERE (a = 1");
        while chain.len() < 1 << 18 {
            chain.push_str(" OR a = 1");
        }
        chain.push(')');
        assert_eq!(parse_on_own_stack(&chain).await.unwrap_err().code(), 8);
        let deep = format!("SELECT FILE FROM /j WHERE {}a = 1{}", "(".repeat(5000), ")".repeat(5000));
        let e = parse_on_own_stack(&deep).await.unwrap_err();
        assert_eq!(e.code(), 8, "{e}");
    }
}
