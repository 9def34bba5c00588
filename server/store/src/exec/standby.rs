//! Is the database a PostgreSQL hot standby (`pg_is_in_recovery()`), and which primary does it
//! stream from (`pg_stat_wal_receiver`)? Facts only: what a standby may do is the catalogue's
//! rule, when to ask is the server's.

use super::{Backend, Db};
use crate::error::StoreError;
use ardacat_core::types::{Value, ValueType};

/// The answer of [`Db::standby_status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandbyStatus {
    /// Replaying a primary's WAL: every write is refused by the database. Always false on SQLite.
    pub in_recovery: bool,
    /// The primary's `host:port` as the WAL receiver knows it (needs a superuser or
    /// `pg_read_all_stats` to be visible), on a standby.
    pub upstream: Option<String>,
}

const PG_STANDBY: &str = "SELECT pg_is_in_recovery(), \
     (SELECT sender_host || ':' || sender_port FROM pg_stat_wal_receiver WHERE sender_host IS NOT NULL LIMIT 1)";

impl Db {
    /// Asks the database whether it is a standby, on one pooled connection.
    pub async fn standby_status(&self) -> Result<StandbyStatus, StoreError> {
        if self.backend() == Backend::Sqlite {
            return Ok(StandbyStatus { in_recovery: false, upstream: None });
        }
        let mut conn = self.acquire().await?;
        let rows = conn.query(PG_STANDBY, &[], &[ValueType::Bool, ValueType::Text]).await?;
        match rows.first().map(Vec::as_slice) {
            Some([Value::Bool(r), up]) => Ok(StandbyStatus {
                in_recovery: *r,
                upstream: match up {
                    Value::Text(t) if *r => Some(t.clone()),
                    _ => None,
                },
            }),
            other => Err(StoreError::decode(0, format!("unexpected standby row {other:?}"))),
        }
    }
}
