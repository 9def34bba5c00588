//! What differs between SQLite and PostgreSQL: placeholders, column types, collation, casts.

use ardacat_core::types::{AttrType, ValueType};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// Placeholder for parameter `n` (1-based), cast to its type on PostgreSQL so that typed
    /// NULLs and comparisons resolve the same way as on SQLite.
    pub fn param(self, n: usize, vtype: ValueType) -> String {
        match self {
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Postgres => format!("${n}::{}", self.cast_name(vtype)),
        }
    }

    pub(crate) fn cast_name(self, vtype: ValueType) -> &'static str {
        match vtype {
            ValueType::Int => "int8",
            ValueType::Float => "float8",
            ValueType::Text => "text",
            ValueType::Bool => "bool",
            ValueType::Timestamp => "timestamp",
        }
    }

    /// Column type of an attribute; `column` is the column name, for SQLite's length check.
    pub fn column_def(self, column: &str, t: AttrType) -> String {
        match (self, t) {
            (Dialect::Sqlite, AttrType::Int | AttrType::Bool) => "INTEGER".into(),
            (Dialect::Sqlite, AttrType::Float) => "REAL".into(),
            (Dialect::Sqlite, AttrType::Text | AttrType::Timestamp) => "TEXT".into(),
            (Dialect::Sqlite, AttrType::Varchar(n)) => format!("TEXT CHECK (length({column}) <= {n})"),
            (Dialect::Postgres, AttrType::Int) => "BIGINT".into(),
            (Dialect::Postgres, AttrType::Bool) => "BOOLEAN".into(),
            (Dialect::Postgres, AttrType::Float) => "DOUBLE PRECISION".into(),
            (Dialect::Postgres, AttrType::Text) => "TEXT COLLATE \"C\"".into(),
            (Dialect::Postgres, AttrType::Varchar(n)) => format!("VARCHAR({n}) COLLATE \"C\""),
            (Dialect::Postgres, AttrType::Timestamp) => "TIMESTAMP".into(),
        }
    }

    /// DDL of a new entry table with its attribute columns.
    pub fn create_entry_table(self, table: &str, attrs: &[(String, AttrType)]) -> String {
        let mut cols = match self {
            Dialect::Sqlite => vec![
                "id INTEGER PRIMARY KEY".to_string(),
                "file TEXT NOT NULL UNIQUE".into(),
                "owner TEXT NOT NULL".into(),
                "grp TEXT NOT NULL".into(),
                "perms INTEGER NOT NULL".into(),
                "created TEXT NOT NULL".into(),
                "modified TEXT NOT NULL".into(),
            ],
            Dialect::Postgres => vec![
                "id BIGSERIAL PRIMARY KEY".to_string(),
                "file TEXT COLLATE \"C\" NOT NULL UNIQUE".into(),
                "owner TEXT NOT NULL".into(),
                "grp TEXT NOT NULL".into(),
                "perms BIGINT NOT NULL".into(),
                "created TIMESTAMP NOT NULL".into(),
                "modified TIMESTAMP NOT NULL".into(),
            ],
        };
        for (name, t) in attrs {
            cols.push(format!("{name} {}", self.column_def(name, *t)));
        }
        let strict = if self == Dialect::Sqlite { " STRICT" } else { "" };
        format!("CREATE TABLE {table} ({}){strict}", cols.join(", "))
    }

    /// `RETURNING` works on both (SQLite ≥ 3.35); kept here in case a dialect differs.
    pub fn returning_id(self) -> &'static str {
        " RETURNING id"
    }

    /// Case-insensitive LIKE. SQLite runs with `case_sensitive_like = ON` for parity with
    /// PostgreSQL's LIKE, so ILIKE becomes a LIKE of lowered operands there.
    pub fn ilike(self, expr: &str, pattern: &str, negated: bool) -> String {
        let not = if negated { "NOT " } else { "" };
        match self {
            Dialect::Sqlite => format!("(lower({expr}) {not}LIKE lower({pattern}) ESCAPE '\\')"),
            Dialect::Postgres => format!("({expr} {not}ILIKE {pattern} ESCAPE '\\')"),
        }
    }

    pub fn max_params(self) -> usize {
        match self {
            Dialect::Sqlite => 32_000,
            Dialect::Postgres => 65_000,
        }
    }
}
