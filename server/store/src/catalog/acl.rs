//! Access control lists of collections and of entries. Stores and lists ACL rows only; must
//! not decide access (the core's `perm` does); SQL text comes from `sql`.

use super::*;

impl SqlConn {
    pub(super) async fn load_acl(&mut self, collection_id: i64) -> Result<Vec<AclEntry>> {
        let sql = format!(
            "SELECT principal, is_group, rights FROM acls WHERE collection_id = {} ORDER BY is_group, principal",
            self.p(1, ValueType::Int)
        );
        let rows = self
            .point_rows(&sql, &[Value::Int(collection_id)], &[ValueType::Text, ValueType::Bool, ValueType::Int])
            .await?;
        Ok(rows.iter().map(|r| acl_from(r)).collect())
    }

    pub(super) async fn acl(&mut self, collection_id: i64) -> Result<Vec<AclEntry>> {
        let cacheable = self.cacheable();
        if cacheable && let Some(hit) = SchemaCache::fresh(self.cache().acls.get(&collection_id)) {
            return Ok(hit);
        }
        let acl = self.load_acl(collection_id).await?;
        if cacheable {
            self.cache().acls.insert(collection_id, (acl.clone(), Instant::now()));
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
        let sql = format!(
            "INSERT INTO acls (collection_id, principal, is_group, rights) VALUES ({}, {}, {}, {}) \
             ON CONFLICT (collection_id, principal, is_group) DO UPDATE SET rights = excluded.rights",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Bool),
            self.p(4, ValueType::Int)
        );
        let params = [
            Value::Int(collection_id),
            Value::Text(e.principal.clone()),
            Value::Bool(e.is_group),
            Value::Int(e.rights as i64),
        ];
        let r = self.exec(&sql, &params).await.map(|_| ());
        self.schema_changed();
        r
    }

    pub(super) async fn remove_acl(&mut self, collection_id: i64, principal: &str) -> Result<u64> {
        self.writing()?;
        self.schema_changed();
        let sql = format!(
            "DELETE FROM acls WHERE collection_id = {} AND principal = {}",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text)
        );
        let r = self.exec(&sql, &[Value::Int(collection_id), Value::Text(principal.into())]).await;
        self.schema_changed();
        r
    }
}
