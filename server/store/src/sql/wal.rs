//! The WAL position of a PostgreSQL database (read-your-writes of forwarding replicas): the
//! current insert position on a primary, the last replayed one on a standby. It builds SQL only;
//! comparing positions and waiting is the catalogue's.

use ardacat_core::types::ValueType;

use super::Dialect;
use super::compile::Compiled;
use super::statements::Params;

/// One text row `X/Y`, or `None` when the database has no WAL position (PostgreSQL only).
pub fn select_wal_lsn(d: Dialect) -> Option<Compiled> {
    match d {
        Dialect::Sqlite => None,
        Dialect::Postgres => {
            let p = Params::new(d);
            let sql = "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() \
                       ELSE pg_current_wal_lsn() END)::text"
                .to_string();
            Some(p.done(sql, vec![ValueType::Text]))
        }
    }
}
