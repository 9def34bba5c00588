//! What dump and copy read and write beyond the other concerns: sequences with their next
//! value, a collection's entry ACL rows by entry name, groups with owners, settings, the
//! replica catalogue. Lists
//! rows only; must not decide who may read them (the core does); SQL text comes from
//! `sql::dump`.

use super::*;
use crate::sql::dump as dump_sql;
use ardacat_core::store::SequenceRecord;

impl SqlConn {
    pub(super) async fn sequences(&mut self, collection_id: i64) -> Result<Vec<SequenceRecord>> {
        let rows = self.rows_compiled(&dump_sql::select_sequences(self.dialect, collection_id)).await?;
        let mut out: Vec<SequenceRecord> = rows
            .iter()
            .map(|r| SequenceRecord { name: text_of(&r[0]), increment: int_of(&r[1]), next: int_of(&r[2]) })
            .collect();
        out.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(out)
    }

    pub(super) async fn entry_acls(&mut self, collection_id: i64) -> Result<Vec<(String, AclEntry)>> {
        if !self.has_table(collection_id).await? {
            return Ok(Vec::new());
        }
        let rows = self.rows_compiled(&dump_sql::select_entry_acls(self.dialect, collection_id)).await?;
        let mut out: Vec<(String, AclEntry)> = rows.iter().map(|r| (text_of(&r[0]), acl_from(&r[1..]))).collect();
        out.sort_by(|(a, x), (b, y)| {
            (a.as_bytes(), x.is_group, x.principal.as_bytes()).cmp(&(b.as_bytes(), y.is_group, y.principal.as_bytes()))
        });
        Ok(out)
    }

    pub(super) async fn groups_with_owners(&mut self) -> Result<Vec<(String, String)>> {
        let rows = self.rows_compiled(&dump_sql::select_groups()).await?;
        let mut out: Vec<(String, String)> = rows.iter().map(|r| (text_of(&r[0]), text_of(&r[1]))).collect();
        out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Ok(out)
    }

    /// Two text columns per row, sorted by both in byte order.
    async fn text_pairs(&mut self, c: &crate::sql::Compiled) -> Result<Vec<(String, String)>> {
        let rows = self.rows_compiled(c).await?;
        let mut out: Vec<(String, String)> = rows.iter().map(|r| (text_of(&r[0]), text_of(&r[1]))).collect();
        out.sort_by(|a, b| (a.0.as_bytes(), a.1.as_bytes()).cmp(&(b.0.as_bytes(), b.1.as_bytes())));
        Ok(out)
    }

    pub(super) async fn all_replica_files(&mut self) -> Result<Vec<(String, String)>> {
        self.text_pairs(&dump_sql::select_replica_files()).await
    }

    pub(super) async fn all_replicas(&mut self) -> Result<Vec<(String, String)>> {
        self.text_pairs(&dump_sql::select_replicas()).await
    }

    pub(super) async fn settings(&mut self) -> Result<Vec<(String, String)>> {
        let rows = self.rows_compiled(&dump_sql::select_settings()).await?;
        let mut out: Vec<(String, String)> = rows.iter().map(|r| (text_of(&r[0]), text_of(&r[1]))).collect();
        out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Ok(out)
    }

    pub(super) async fn put_setting(&mut self, key: &str, value: &str) -> Result<()> {
        self.writing()?;
        self.exec_compiled(&dump_sql::upsert_setting(self.dialect, key, value)).await.map(|_| ())
    }
}
