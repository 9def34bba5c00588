//! Schema migrations: the files of `schema-migrations/<dialect>/` (embedded at build time by
//! `build.rs`) applied in version order, each in its own transaction, and recorded in
//! `schema_migrations (version, name, checksum, applied_at)`.
//!
//! - Before applying anything, every recorded version is checked against the embedded list: a
//!   different checksum (someone edited an applied migration) or a version this build does not
//!   know (the database was migrated by a newer server) stops the run with
//!   [`StoreError::Migration`], and nothing is changed.
//! - PostgreSQL: the whole run holds a session advisory lock ([`ADVISORY_LOCK_KEY`]), so several
//!   server processes may start at once; the others wait, then find nothing left to do.
//! - SQLite: each migration re-checks its version inside its `BEGIN IMMEDIATE` transaction, which
//!   serializes concurrent processes on the same file.
//! - A migration file must not contain its own `BEGIN`/`COMMIT`.

use super::{Backend, Conn, Db};
use crate::error::StoreError;
use ardacat_core::types::{Value, ValueType};

/// One embedded migration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// The `NNNN` of `NNNN_name.sql`.
    pub version: i64,
    /// The `name` of `NNNN_name.sql`.
    pub name: &'static str,
    pub sql: &'static str,
    /// SHA-256 of the file, lower-case hex.
    pub checksum: &'static str,
}

mod embedded {
    use super::Migration;
    include!(concat!(env!("OUT_DIR"), "/migrations.rs"));
}

/// The embedded migrations of SQLite (`schema-migrations/sqlite`), in version order.
pub static SQLITE: &[Migration] = embedded::SQLITE;
/// The embedded migrations of PostgreSQL (`schema-migrations/postgres`), in version order.
pub static POSTGRES: &[Migration] = embedded::POSTGRES;

/// The embedded migrations of a backend, in version order.
pub fn migrations(backend: Backend) -> &'static [Migration] {
    match backend {
        Backend::Sqlite => SQLITE,
        Backend::Postgres => POSTGRES,
    }
}

/// Key of the PostgreSQL advisory lock held while migrating ("ardacat" + 0x01).
pub const ADVISORY_LOCK_KEY: i64 = 0x6172_6461_6361_7401;

const CREATE_SQLITE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT";

const CREATE_POSTGRES: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TIMESTAMP NOT NULL
)";

/// The SQL this module runs, per dialect.
struct Dialect {
    create: &'static str,
    select_all: &'static str,
    select_one: &'static str,
    insert: &'static str,
}

const SQLITE_SQL: Dialect = Dialect {
    create: CREATE_SQLITE,
    select_all: "SELECT version, name, checksum FROM schema_migrations ORDER BY version",
    select_one: "SELECT checksum FROM schema_migrations WHERE version = ?1",
    insert: "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)",
};

const POSTGRES_SQL: Dialect = Dialect {
    create: CREATE_POSTGRES,
    select_all: "SELECT version, name, checksum FROM schema_migrations ORDER BY version",
    select_one: "SELECT checksum FROM schema_migrations WHERE version = $1",
    insert: "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
};

/// Apply the missing migrations of `db`'s backend. Idempotent.
pub async fn run(db: &Db) -> Result<(), StoreError> {
    let mut conn = db.acquire().await?;
    match db.backend() {
        Backend::Sqlite => {
            // A migration may rewrite a large table: no statement time limit.
            conn.set_unlimited(true);
            let r = apply_all(&mut conn, SQLITE, &SQLITE_SQL).await;
            conn.set_unlimited(false);
            r
        }
        Backend::Postgres => {
            // Session state from here on: never return this connection to the pool half-way.
            conn.set_discard_on_drop(true);
            // No lock_timeout while waiting for another process's migration run.
            conn.execute_batch("SET lock_timeout = 0").await?;
            // A migration may rewrite a large table: no statement time limit either.
            conn.execute_batch("SET statement_timeout = 0").await?;
            conn.execute("SELECT pg_advisory_lock($1)", &[Value::Int(ADVISORY_LOCK_KEY)]).await?;
            let result = apply_all(&mut conn, POSTGRES, &POSTGRES_SQL).await;
            let _ = conn.rollback().await;
            let unlocked =
                conn.query("SELECT pg_advisory_unlock($1)", &[Value::Int(ADVISORY_LOCK_KEY)], &[ValueType::Bool]).await;
            let reset = conn.execute_batch("RESET lock_timeout; RESET statement_timeout").await;
            if matches!(unlocked.as_deref(), Ok([row]) if row == &[Value::Bool(true)]) && reset.is_ok() {
                conn.set_discard_on_drop(false);
            }
            result
        }
    }
}

async fn apply_all(conn: &mut Conn, list: &[Migration], sql: &Dialect) -> Result<(), StoreError> {
    conn.execute_batch(sql.create).await?;
    let applied = conn.query(sql.select_all, &[], &[ValueType::Int, ValueType::Text, ValueType::Text]).await?;
    let mut done = Vec::with_capacity(applied.len());
    for row in applied {
        let (version, name, checksum) = match row.as_slice() {
            [Value::Int(v), Value::Text(n), Value::Text(c)] => (*v, n.clone(), c.clone()),
            other => return Err(StoreError::Migration(format!("unexpected schema_migrations row {other:?}"))),
        };
        verify(list, version, &name, &checksum)?;
        done.push(version);
    }
    for m in list.iter().filter(|m| !done.contains(&m.version)) {
        apply_one(conn, m, sql).await.map_err(|e| match e {
            StoreError::Migration(_) => e,
            other => StoreError::Migration(format!("{:04}_{}: {other}", m.version, m.name)),
        })?;
    }
    Ok(())
}

/// An applied version must be known to this build, with the same checksum.
fn verify(list: &[Migration], version: i64, name: &str, checksum: &str) -> Result<(), StoreError> {
    let Some(m) = list.iter().find(|m| m.version == version) else {
        return Err(StoreError::Migration(format!(
            "the database has migration {version:04}_{name}, which this build does not know (was it migrated by a newer server?)"
        )));
    };
    if m.checksum != checksum {
        return Err(StoreError::Migration(format!(
            "migration {version:04}_{} was changed after it was applied (checksum {checksum} in the database, {} in this build); add a new migration instead",
            m.name, m.checksum
        )));
    }
    Ok(())
}

async fn apply_one(conn: &mut Conn, m: &Migration, sql: &Dialect) -> Result<(), StoreError> {
    conn.begin().await?;
    let result = async {
        // Another process may have applied it since we looked (SQLite; PostgreSQL holds the lock).
        let now = conn.query(sql.select_one, &[Value::Int(m.version)], &[ValueType::Text]).await?;
        if let Some(row) = now.first() {
            let checksum = match row.first() {
                Some(Value::Text(c)) => c.as_str(),
                _ => "",
            };
            return verify(std::slice::from_ref(m), m.version, m.name, checksum);
        }
        tracing::info!(version = m.version, name = m.name, "applying migration");
        conn.execute_batch(m.sql).await?;
        let applied_at = chrono::Utc::now().naive_utc();
        conn.execute(
            sql.insert,
            &[
                Value::Int(m.version),
                Value::Text(m.name.to_string()),
                Value::Text(m.checksum.to_string()),
                Value::Timestamp(applied_at),
            ],
        )
        .await?;
        Ok(())
    }
    .await;
    match result {
        Ok(()) => conn.commit().await,
        Err(e) => {
            let _ = conn.rollback().await;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dialects_have_the_same_versions_and_names() {
        let key = |l: &[Migration]| l.iter().map(|m| (m.version, m.name)).collect::<Vec<_>>();
        assert!(!SQLITE.is_empty());
        assert_eq!(key(SQLITE), key(POSTGRES));
    }

    #[test]
    fn embedded_lists_are_sorted_unique_and_checksummed() {
        for list in [SQLITE, POSTGRES] {
            assert!(list.windows(2).all(|w| w[0].version < w[1].version));
            for m in list {
                assert_eq!(m.checksum.len(), 64);
                assert!(m.checksum.bytes().all(|b| b.is_ascii_hexdigit()));
                assert!(!m.sql.trim().is_empty());
            }
        }
    }
}
