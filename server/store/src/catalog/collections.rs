//! Collections: lookup (cached), creation with attributes, removal, owner and mode. Must not
//! touch entry rows beyond removing a collection's table; SQL text comes from `sql`.

use super::*;

impl SqlConn {
    pub(super) async fn collection(&mut self, path: &str) -> Result<Option<CollectionInfo>> {
        let cacheable = self.cacheable();
        if cacheable && let Some(hit) = SchemaCache::fresh(self.cache().by_path.get(path)) {
            return Ok(hit);
        }
        let generation = self.cache_generation();
        let sql = format!("SELECT {COLLECTION_COLS} FROM collections WHERE path = {}", self.p(1, ValueType::Text));
        let rows = self.point_rows(&sql, &[Value::Text(path.into())], &COLLECTION_TYPES).await?;
        let found = rows.into_iter().next().map(collection_from).transpose()?;
        if cacheable {
            self.cache_fill(generation, |cache| {
                // Lookups of entry paths (which are not collections) would grow the map without bound.
                if cache.by_path.len() >= SCHEMA_CACHE_PATHS {
                    cache.by_path.clear();
                }
                cache.by_path.insert(path.to_string(), (found.clone(), Instant::now()));
            });
        }
        Ok(found)
    }

    pub(super) async fn collection_by_id(&mut self, id: i64) -> Result<Option<CollectionInfo>> {
        let sql = format!("SELECT {COLLECTION_COLS} FROM collections WHERE id = {}", self.p(1, ValueType::Int));
        let rows = self.point_rows(&sql, &[Value::Int(id)], &COLLECTION_TYPES).await?;
        rows.into_iter().next().map(collection_from).transpose()
    }

    pub(super) async fn children(&mut self, parent_id: i64) -> Result<Vec<CollectionInfo>> {
        let sql = format!(
            "SELECT {COLLECTION_COLS} FROM collections WHERE parent_id = {} ORDER BY name",
            self.p(1, ValueType::Int)
        );
        let rows = self.rows(&sql, &[Value::Int(parent_id)], &COLLECTION_TYPES).await?;
        rows.into_iter().map(collection_from).collect()
    }

    pub(super) async fn create_collection(
        &mut self,
        parent_id: i64,
        path: &str,
        owner: &str,
        group: &str,
        perms: u16,
        attrs: &[(String, AttrType, bool)],
    ) -> Result<CollectionInfo> {
        self.writing()?;
        self.schema_changed();
        let name = path.rsplit('/').next().unwrap_or_default().to_string();
        let sql = format!(
            "INSERT INTO collections (parent_id, path, name, owner, grp, perms, created, has_table) VALUES ({}, {}, {}, {}, {}, {}, {}, {}) RETURNING id",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Text),
            self.p(4, ValueType::Text),
            self.p(5, ValueType::Text),
            self.p(6, ValueType::Int),
            self.p(7, ValueType::Timestamp),
            self.p(8, ValueType::Bool),
        );
        let params = [
            Value::Int(parent_id),
            Value::Text(path.into()),
            Value::Text(name),
            Value::Text(owner.into()),
            Value::Text(group.into()),
            Value::Int(perms as i64),
            now(),
            Value::Bool(false),
        ];
        let id = match self.rows(&sql, &params, &[ValueType::Int]).await {
            Ok(rows) => rows.first().and_then(|r| r.first()).map(int_of).unwrap_or_default(),
            Err(Error::Exists(_)) => return Err(Error::DirExists(path.into())),
            Err(e) => return Err(e),
        };
        // The entry table waits for the first entry (`ensure_table`).
        for (name, t, idx) in attrs {
            self.insert_attr_row(id, name, *t, *idx).await?;
        }
        Ok(CollectionInfo {
            id,
            parent_id: Some(parent_id),
            path: path.into(),
            owner: owner.into(),
            group: group.into(),
            perms,
        })
    }

    pub(super) async fn remove_collection(&mut self, id: i64) -> Result<()> {
        self.writing()?;
        let referrers = self.references_to(id, None).await?;
        if !referrers.is_empty() {
            return Err(Error::IllegalCommand(format!(
                "the collection is referred to by constraint {}; drop that first (constraint_drop)",
                referrers.join(", ")
            )));
        }
        self.schema_changed();
        // Its references' triggers on other tables (SQLite) go by name, before its attributes.
        let has_table = self.lock_table_state(id).await?;
        self.delete_constraints(id, has_table).await?;
        self.batch(&format!("DROP TABLE IF EXISTS {}", table_name(id))).await?;
        // SQLite may hand the id to the next collection, which starts without a table.
        self.cache().tables.remove(&id);
        // Index columns refer to attributes: they go first.
        self.delete_index_rows(id).await?;
        for t in ["attributes", "acls", "sequences"] {
            let sql = format!("DELETE FROM {t} WHERE collection_id = {}", self.p(1, ValueType::Int));
            self.exec(&sql, &[Value::Int(id)]).await?;
        }
        self.exec_compiled(&statements::delete_collection_entry_acls(self.dialect, id)).await?;
        let sql = format!("DELETE FROM collections WHERE id = {}", self.p(1, ValueType::Int));
        self.exec(&sql, &[Value::Int(id)]).await.map(|_| ())
    }

    pub(super) async fn set_collection_owner(&mut self, id: i64, owner: &str, group: &str) -> Result<()> {
        self.writing()?;
        self.schema_changed();
        let sql = format!(
            "UPDATE collections SET owner = {}, grp = {} WHERE id = {}",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Int)
        );
        let r =
            self.exec(&sql, &[Value::Text(owner.into()), Value::Text(group.into()), Value::Int(id)]).await.map(|_| ());
        self.schema_changed();
        r
    }

    pub(super) async fn set_collection_perms(&mut self, id: i64, perms: u16) -> Result<()> {
        self.writing()?;
        self.schema_changed();
        let sql = format!(
            "UPDATE collections SET perms = {} WHERE id = {}",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Int)
        );
        let r = self.exec(&sql, &[Value::Int(perms as i64), Value::Int(id)]).await.map(|_| ());
        self.schema_changed();
        r
    }

    pub(super) async fn has_entries(&mut self, id: i64) -> Result<bool> {
        if !self.has_table(id).await? {
            return Ok(false);
        }
        let rows = self.rows(&format!("SELECT id FROM {} LIMIT 1", table_name(id)), &[], &[ValueType::Int]).await?;
        Ok(!rows.is_empty())
    }
}
