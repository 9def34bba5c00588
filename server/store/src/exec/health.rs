//! What a readiness probe asks the database: does it answer, at which schema migration version
//! is it, and — on a PostgreSQL standby — how far behind its primary is replay. It reports
//! facts only; what counts as ready (lag limits, timeouts) is the server's decision.

use super::{Backend, Db, migrate};
use crate::error::StoreError;
use ardacat_core::types::{Value, ValueType};

/// The answers of one probe.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// Highest version recorded in `schema_migrations` (`None`: none recorded).
    pub schema_version: Option<i64>,
    /// The database is a standby replaying a primary's WAL (`pg_is_in_recovery()`); always
    /// false on SQLite.
    pub in_recovery: bool,
    /// On a standby: milliseconds since the last replayed transaction's commit, or 0 when
    /// everything received has been replayed; `None` when unknown (nothing replayed yet) or
    /// on a primary.
    pub replay_lag_ms: Option<f64>,
}

/// The migration version this build brings for `backend` (its last embedded migration).
pub fn expected_schema_version(backend: Backend) -> i64 {
    migrate::migrations(backend).last().map(|m| m.version).unwrap_or(0)
}

const SCHEMA_VERSION: &str = "SELECT MAX(version) FROM schema_migrations";

// A standby that has replayed all it received is current however old its last transaction is
// (an idle primary writes nothing); otherwise the lag is the age of the last replayed commit.
const PG_RECOVERY: &str = "SELECT pg_is_in_recovery(), CASE \
     WHEN NOT pg_is_in_recovery() THEN NULL \
     WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0::float8 \
     ELSE (EXTRACT(EPOCH FROM (now() - pg_last_xact_replay_timestamp())) * 1000)::float8 END";

impl Db {
    /// Ask the database the readiness questions on one pooled connection.
    pub async fn health(&self) -> Result<Health, StoreError> {
        let mut conn = self.acquire().await?;
        let rows = conn.query(SCHEMA_VERSION, &[], &[ValueType::Int]).await?;
        let schema_version = match rows.first().and_then(|r| r.first()) {
            Some(Value::Int(v)) => Some(*v),
            _ => None,
        };
        let (in_recovery, replay_lag_ms) = match self.backend() {
            Backend::Sqlite => (false, None),
            Backend::Postgres => {
                let rows = conn.query(PG_RECOVERY, &[], &[ValueType::Bool, ValueType::Float]).await?;
                match rows.first().map(Vec::as_slice) {
                    Some([Value::Bool(r), Value::Float(lag)]) => (*r, Some(*lag)),
                    Some([Value::Bool(r), _]) => (*r, None),
                    other => return Err(StoreError::decode(0, format!("unexpected recovery row {other:?}"))),
                }
            }
        };
        Ok(Health { schema_version, in_recovery, replay_lag_ms })
    }
}
