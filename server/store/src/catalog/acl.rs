//! Access control lists of collections and of entries. Stores and lists ACL rows only; must
//! not decide access (the core's `perm` does); SQL text comes from `sql`.

use super::*;

impl SqlConn {
    pub(super) async fn load_acl(&mut self, collection_id: i64) -> Result<Vec<AclEntry>> {
        let c = statements::select_collection_acl(self.dialect, collection_id);
        let rows = self.point_rows(&c.sql, &c.params, &c.types).await?;
        Ok(rows.iter().map(|r| acl_from(r)).collect())
    }

    pub(super) async fn acl(&mut self, collection_id: i64) -> Result<Vec<AclEntry>> {
        let cacheable = self.cacheable();
        if cacheable && let Some(hit) = SchemaCache::fresh(self.cache().acls.get(&collection_id)) {
            return Ok(hit);
        }
        let generation = self.cache_generation();
        let acl = self.load_acl(collection_id).await?;
        if cacheable {
            self.cache_fill(generation, |c| _ = c.acls.insert(collection_id, (acl.clone(), Instant::now())));
        }
        Ok(acl)
    }

    pub(super) async fn entry_acl(&mut self, collection_id: i64, entry_id: i64) -> Result<Vec<AclEntry>> {
        let rows = self.rows_compiled(&statements::select_entry_acl(self.dialect, collection_id, entry_id)).await?;
        Ok(rows.iter().map(|r| acl_from(r)).collect())
    }

    pub(super) async fn set_entry_acl(&mut self, collection_id: i64, entry_id: i64, e: &AclEntry) -> Result<()> {
        self.writing()?;
        let c = statements::upsert_entry_acl(self.dialect, collection_id, entry_id, &e.principal, e.is_group, e.rights);
        self.exec_compiled(&c).await.map(|_| ())
    }

    pub(super) async fn remove_entry_acl(&mut self, collection_id: i64, entry_id: i64, principal: &str) -> Result<u64> {
        self.writing()?;
        self.exec_compiled(&statements::delete_entry_acl(self.dialect, collection_id, entry_id, principal)).await
    }

    pub(super) async fn set_acl(&mut self, collection_id: i64, e: &AclEntry) -> Result<()> {
        self.writing()?;
        self.schema_changed();
        let c = statements::upsert_collection_acl(self.dialect, collection_id, &e.principal, e.is_group, e.rights);
        let r = self.exec_compiled(&c).await.map(|_| ());
        self.schema_changed();
        r
    }

    pub(super) async fn remove_acl(&mut self, collection_id: i64, principal: &str) -> Result<u64> {
        self.writing()?;
        self.schema_changed();
        let r = self.exec_compiled(&statements::delete_collection_acl(self.dialect, collection_id, principal)).await;
        self.schema_changed();
        r
    }
}
