//! Per-collection sequences: create, next value, remove. Must not touch entries; SQL text
//! comes from `sql::sequences`.

use super::*;
use crate::sql::sequences as sequence_sql;

impl SqlConn {
    pub(super) async fn create_sequence(
        &mut self,
        collection_id: i64,
        name: &str,
        increment: i64,
        start: i64,
    ) -> Result<()> {
        self.writing()?;
        let insert = sequence_sql::insert_sequence(self.dialect, collection_id, name, increment, start);
        self.exec_compiled(&insert).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("sequence {name}")),
            e => e,
        })
    }

    pub(super) async fn next_sequence(&mut self, collection_id: i64, name: &str) -> Result<Option<i64>> {
        self.writing()?;
        let rows = self.rows_compiled(&sequence_sql::advance_sequence(self.dialect, collection_id, name)).await?;
        Ok(rows.first().and_then(|r| r.first()).map(int_of))
    }

    pub(super) async fn remove_sequence(&mut self, collection_id: i64, name: &str) -> Result<bool> {
        self.writing()?;
        Ok(self.exec_compiled(&sequence_sql::delete_sequence(self.dialect, collection_id, name)).await? > 0)
    }
}
