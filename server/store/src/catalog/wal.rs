//! The database's WAL position (`wal_lsn`). Must not compare or wait; SQL text comes from
//! `sql::wal`.

use super::*;
use crate::sql::wal as wal_sql;

impl SqlConn {
    pub(super) async fn wal_lsn(&mut self) -> Result<Option<String>> {
        let Some(q) = wal_sql::select_wal_lsn(self.dialect) else { return Ok(None) };
        let rows = self.rows_compiled(&q).await?;
        Ok(rows.first().and_then(|r| r[0].to_wire()))
    }
}
