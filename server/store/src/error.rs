//! The storage layer's error type. Both backends map their native errors onto the same variants,
//! so callers (and parity tests) branch on the class of a failure, never on a driver's message.

use thiserror::Error;

/// A failure of the storage layer. Messages are for logs; callers branch on the variant.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    /// A UNIQUE or PRIMARY KEY constraint was violated (PostgreSQL 23505, SQLite
    /// `SQLITE_CONSTRAINT_UNIQUE` / `_PRIMARYKEY`).
    #[error("unique constraint violated: {0}")]
    UniqueViolation(String),
    /// A FOREIGN KEY constraint was violated (PostgreSQL 23503, SQLite `SQLITE_CONSTRAINT_FOREIGNKEY`).
    #[error("foreign key constraint violated: {0}")]
    ForeignKeyViolation(String),
    /// A row broke a constraint of the catalogue's (`constraint_add_*`), which the database
    /// names: PostgreSQL 23502/23505/23503/23514 with constraint `e<c>_k<id>`, SQLite
    /// `SQLITE_CONSTRAINT_TRIGGER` raised by its trigger. Holds the constraint's id.
    #[error("catalogue constraint #{0} violated")]
    ConstraintViolation(i64),
    /// A value does not fit its column's type: SQLite's CHECK of a `varchar(n)` column
    /// (`SQLITE_CONSTRAINT_CHECK`), PostgreSQL 22001 (string too long).
    #[error("value does not fit its column: {0}")]
    ValueDoesNotFit(String),
    /// The statement names a table or column that does not exist (PostgreSQL 42P01 / 42703).
    /// SQLite has no code for this (a plain `SQLITE_ERROR`, told apart only by its message), so
    /// there it is [`StoreError::Database`]: errors are never classified by message text. Nothing
    /// relies on the class: the catalogue knows whether an entry table exists
    /// (`collections.has_table`) and names only columns of attribute rows it has read.
    #[error("undefined table or column: {0}")]
    UndefinedObject(String),
    /// A lock could not be had in time: SQLite busy/locked after `busy_timeout`, PostgreSQL
    /// lock_timeout (55P03), deadlock (40P01) or serialization failure (40001). Retryable.
    #[error("database busy: lock wait timed out")]
    Busy,
    /// A result column could not be decoded as the requested [`ardacat_core::types::ValueType`],
    /// or the number of requested types differs from the number of result columns.
    #[error("cannot decode result column {column}: {message}")]
    Decode { column: usize, message: String },
    /// Any other database error (syntax error, check constraint, I/O, aborted transaction …).
    #[error("database error: {0}")]
    Database(String),
    /// An arithmetic result out of range: integer overflow, float overflow or underflow
    /// (PostgreSQL 22003 `numeric_value_out_of_range`, SQLite our checked operators'
    /// `exec::sqlite_math::NUMERIC_OVERFLOW`).
    #[error("numeric value out of range: {0}")]
    NumericOverflow(String),
    /// The statement ran longer than `DbOptions::statement_timeout` and was cancelled
    /// (PostgreSQL 57014, SQLite interrupted by the deadline in its progress handler).
    #[error("statement cancelled: time limit exceeded")]
    Timeout,
    /// A write on a read-only database: a PostgreSQL hot standby (25006
    /// `read_only_sql_transaction`).
    #[error("the database is a read-only standby")]
    ReadOnly,
    /// No pooled connection became free within `DbOptions::acquire_timeout`.
    #[error("timed out waiting for a database connection")]
    PoolTimeout,
    /// Applying or checking the schema migrations failed.
    #[error("migration error: {0}")]
    Migration(String),
    /// The pool or the connection is closed (or its SQLite worker thread is gone).
    #[error("database connection closed")]
    Closed,
    /// The database URL or the options are unusable.
    #[error("invalid database configuration: {0}")]
    Config(String),
}

impl StoreError {
    pub fn is_unique_violation(&self) -> bool {
        matches!(self, StoreError::UniqueViolation(_))
    }

    pub fn is_foreign_key_violation(&self) -> bool {
        matches!(self, StoreError::ForeignKeyViolation(_))
    }

    pub fn is_undefined_object(&self) -> bool {
        matches!(self, StoreError::UndefinedObject(_))
    }

    /// True for failures worth retrying as a whole transaction (lock timeouts, deadlocks).
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Busy | StoreError::PoolTimeout)
    }

    /// True when the error was raised by the database while running a statement. Inside a
    /// transaction such an error aborts the transaction on both backends (see `Conn`).
    pub(crate) fn aborts_transaction(&self) -> bool {
        matches!(
            self,
            StoreError::UniqueViolation(_)
                | StoreError::ForeignKeyViolation(_)
                | StoreError::ConstraintViolation(_)
                | StoreError::ValueDoesNotFit(_)
                | StoreError::UndefinedObject(_)
                | StoreError::Busy
                | StoreError::Timeout
                | StoreError::NumericOverflow(_)
                | StoreError::Database(_)
        )
    }

    pub(crate) fn decode(column: usize, message: impl Into<String>) -> StoreError {
        StoreError::Decode { column, message: message.into() }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        match &e {
            rusqlite::Error::SqliteFailure(err, msg) => {
                classify_sqlite(err, msg.clone().unwrap_or_else(|| err.to_string()))
            }
            // Errors found while preparing (unknown table, syntax) come with the SQL text.
            rusqlite::Error::SqlInputError { error, msg, .. } => classify_sqlite(error, msg.clone()),
            _ => StoreError::Database(e.to_string()),
        }
    }
}

fn classify_sqlite(err: &rusqlite::ffi::Error, text: String) -> StoreError {
    use rusqlite::ffi;
    match err.extended_code {
        ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
            return StoreError::UniqueViolation(text);
        }
        ffi::SQLITE_CONSTRAINT_FOREIGNKEY => return StoreError::ForeignKeyViolation(text),
        // Only the catalogue's constraint triggers raise (sql/constraints.rs): the message is
        // theirs and carries the constraint id.
        ffi::SQLITE_CONSTRAINT_TRIGGER => {
            let id = text.strip_prefix(crate::sql::constraints::SQLITE_RAISE_PREFIX).and_then(|n| n.parse().ok());
            return StoreError::ConstraintViolation(id.unwrap_or(0));
        }
        ffi::SQLITE_CONSTRAINT_CHECK => return StoreError::ValueDoesNotFit(text),
        crate::exec::sqlite_math::NUMERIC_OVERFLOW => return StoreError::NumericOverflow(text),
        _ => {}
    }
    match err.code {
        ffi::ErrorCode::DatabaseBusy | ffi::ErrorCode::DatabaseLocked => StoreError::Busy,
        // Only the statement deadline interrupts a statement whose result is still wanted (an
        // abandoned stream's interrupt is recognised before it gets here).
        ffi::ErrorCode::OperationInterrupted => StoreError::Timeout,
        _ => StoreError::Database(text),
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        match e {
            sqlx::Error::Database(d) => {
                let text = match d.constraint() {
                    Some(c) => format!("{} (constraint {c})", d.message()),
                    None => d.message().to_string(),
                };
                let ours = d.constraint().and_then(crate::sql::constraints::constraint_id_of);
                match (d.code().as_deref(), ours) {
                    (Some("23502" | "23505" | "23503" | "23514"), Some(id)) => StoreError::ConstraintViolation(id),
                    (Some("22001"), _) => StoreError::ValueDoesNotFit(text),
                    (Some("23505"), _) => StoreError::UniqueViolation(text),
                    (Some("23503"), _) => StoreError::ForeignKeyViolation(text),
                    (Some("42P01" | "42703"), _) => StoreError::UndefinedObject(text),
                    (Some("22003"), _) => StoreError::NumericOverflow(text),
                    (Some("55P03" | "40P01" | "40001"), _) => StoreError::Busy,
                    (Some("57014"), _) => StoreError::Timeout,
                    (Some("25006"), _) => StoreError::ReadOnly,
                    (Some(code), _) => StoreError::Database(format!("{text} [{code}]")),
                    (None, _) => StoreError::Database(text),
                }
            }
            sqlx::Error::PoolTimedOut => StoreError::PoolTimeout,
            sqlx::Error::PoolClosed => StoreError::Closed,
            sqlx::Error::Configuration(c) => StoreError::Config(c.to_string()),
            sqlx::Error::ColumnDecode { index, source } => {
                StoreError::Decode { column: index.parse().unwrap_or(0), message: source.to_string() }
            }
            other => StoreError::Database(other.to_string()),
        }
    }
}
