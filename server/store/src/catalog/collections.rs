//! Collections: lookup (cached), creation with attributes, removal, owner and mode. Must not
//! touch entry rows beyond removing a collection's table; SQL text comes from `sql::collections`.

use super::*;

impl SqlConn {
    pub(super) async fn collection(&mut self, path: &str) -> Result<Option<CollectionInfo>> {
        let cacheable = self.cacheable();
        // Before anything is read from the cache or the database (see `cache_fill`).
        let generation = self.cache_generation();
        let mut parent = None;
        if cacheable {
            let cache = self.cache();
            if let Some(hit) = SchemaCache::fresh(cache.by_path.get(path)) {
                return Ok(hit);
            }
            parent = cache.parent_of(path);
            if let Some((_, Some(false))) = parent {
                return Ok(None);
            }
        }
        let rows = self.point_rows_compiled(&collection_sql::select_collection_by_path(self.dialect, path)).await?;
        let found = rows.into_iter().next().map(collection_from).transpose()?;
        // Not a collection, below a cached one whose children are not known: find out whether it
        // has any, so that the next entry paths below a leaf need no statement.
        let children = match (&found, parent) {
            (None, Some((id, None))) => {
                let any = self.point_rows_compiled(&collection_sql::select_any_child(self.dialect, id)).await?;
                Some((id, !any.is_empty()))
            }
            _ => None,
        };
        if cacheable {
            self.cache_fill(generation, |cache| {
                // Lookups of entry paths (which are not collections) would grow the map without bound.
                if cache.by_path.len() >= SCHEMA_CACHE_PATHS {
                    cache.by_path.clear();
                }
                if cache.has_children.len() >= SCHEMA_CACHE_PATHS {
                    cache.has_children.clear();
                }
                let now = Instant::now();
                if let Some((id, any)) = children {
                    cache.has_children.insert(id, (any, now));
                }
                cache.by_path.insert(path.to_string(), (found.clone(), now));
            });
        }
        Ok(found)
    }

    pub(super) async fn collection_by_id(&mut self, id: i64) -> Result<Option<CollectionInfo>> {
        let rows = self.point_rows_compiled(&collection_sql::select_collection_by_id(self.dialect, id)).await?;
        rows.into_iter().next().map(collection_from).transpose()
    }

    pub(super) async fn children(&mut self, parent_id: i64) -> Result<Vec<CollectionInfo>> {
        let rows = self.rows_compiled(&collection_sql::select_children(self.dialect, parent_id)).await?;
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
        let insert =
            collection_sql::insert_collection(self.dialect, parent_id, path, &name, owner, group, perms, now());
        let id = match self.rows_compiled(&insert).await {
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
        self.batch(&table_sql::drop_entry_table(id)).await?;
        // SQLite may hand the id to the next collection, which starts without a table.
        self.cache().tables.remove(&id);
        // Index columns refer to attributes: they go first.
        self.delete_index_rows(id).await?;
        for delete in collection_sql::delete_collection_rows(self.dialect, id) {
            self.exec_compiled(&delete).await?;
        }
        self.exec_compiled(&statements::delete_collection_entry_acls(self.dialect, id)).await?;
        self.exec_compiled(&collection_sql::delete_collection(self.dialect, id)).await.map(|_| ())
    }

    pub(super) async fn set_collection_owner(&mut self, id: i64, owner: &str, group: &str) -> Result<()> {
        self.writing()?;
        self.schema_changed();
        let r = self
            .exec_compiled(&collection_sql::update_collection_owner(self.dialect, id, owner, group))
            .await
            .map(|_| ());
        self.schema_changed();
        r
    }

    pub(super) async fn set_collection_perms(&mut self, id: i64, perms: u16) -> Result<()> {
        self.writing()?;
        self.schema_changed();
        let r = self.exec_compiled(&collection_sql::update_collection_perms(self.dialect, id, perms)).await.map(|_| ());
        self.schema_changed();
        r
    }

    pub(super) async fn has_entries(&mut self, id: i64) -> Result<bool> {
        if !self.has_table(id).await? {
            return Ok(false);
        }
        let rows = self.rows_compiled(&table_sql::select_any_entry(self.dialect, id)).await?;
        Ok(!rows.is_empty())
    }
}
