//! Per-attribute and composite indexes of entry tables: their definitions and DDL. Must not
//! change attributes or entry rows; SQL text comes from `sql::indexes`.

use super::*;

impl SqlConn {
    pub(super) async fn create_index(&mut self, collection_id: i64, attr_id: i64) -> Result<()> {
        self.batch(&index_sql::create_attribute_index_ddl(collection_id, attr_id)).await
    }

    /// The composite indexes of a collection with their columns, by name.
    pub(super) async fn load_indexes(&mut self, collection_id: i64) -> Result<Vec<IndexDef>> {
        let rows = self.rows_compiled(&index_sql::select_indexes(self.dialect, collection_id)).await?;
        let mut out: Vec<IndexDef> = Vec::new();
        for r in rows {
            let id = int_of(&r[0]);
            let column = match r[2] {
                Value::Int(a) => IndexColumn::Attr(a),
                _ => IndexColumn::File,
            };
            match out.last_mut() {
                Some(last) if last.id == id => last.columns.push(column),
                _ => out.push(IndexDef { id, name: text_of(&r[1]), columns: vec![column] }),
            }
        }
        // By name in byte order on both backends (a database collation might ignore `_`).
        out.sort_by_cached_key(|ix| ix.name.to_ascii_lowercase());
        Ok(out)
    }

    /// The SQL index of a composite index (`sql::indexes::create_composite_index_ddl`).
    pub(super) async fn create_composite_index(&mut self, collection_id: i64, ix: &IndexDef) -> Result<()> {
        self.batch(&index_sql::create_composite_index_ddl(collection_id, ix)).await
    }

    /// Removes the definitions of every composite index of a collection.
    pub(super) async fn delete_index_rows(&mut self, collection_id: i64) -> Result<()> {
        for delete in index_sql::delete_collection_indexes(self.dialect, collection_id) {
            self.exec_compiled(&delete).await?;
        }
        Ok(())
    }

    pub(super) async fn indexes(&mut self, collection_id: i64) -> Result<Vec<IndexDef>> {
        self.load_indexes(collection_id).await
    }

    pub(super) async fn add_index(
        &mut self,
        collection_id: i64,
        name: &str,
        columns: &[IndexColumn],
    ) -> Result<IndexDef> {
        self.writing()?;
        // Index definitions are not cached: nothing to invalidate.
        let has_table = self.lock_table_state(collection_id).await?;
        // The attributes were looked up before the lock; a concurrent removeattr may have won.
        let present: HashSet<i64> = self
            .rows_compiled(&attribute_sql::select_attribute_ids(self.dialect, collection_id))
            .await?
            .iter()
            .map(|r| int_of(&r[0]))
            .collect();
        if let Some(IndexColumn::Attr(gone)) =
            columns.iter().find(|c| matches!(c, IndexColumn::Attr(a) if !present.contains(a)))
        {
            return Err(Error::NoSuchAttribute(format!("attribute #{gone} was removed meanwhile")));
        }
        let insert = index_sql::insert_index(self.dialect, collection_id, name, &name.to_ascii_lowercase());
        let id = match self.rows_compiled(&insert).await {
            Ok(rows) => {
                rows.first().and_then(|r| r.first()).map(int_of).ok_or_else(|| Error::Internal("no index id".into()))?
            }
            Err(Error::Exists(_)) => return Err(Error::Exists(format!("index {name}"))),
            Err(e) => return Err(e),
        };
        for (pos, c) in columns.iter().enumerate() {
            self.exec_compiled(&index_sql::insert_index_column(self.dialect, id, pos as i64, c)).await?;
        }
        let def = IndexDef { id, name: name.into(), columns: columns.to_vec() };
        if has_table {
            self.create_composite_index(collection_id, &def).await?;
        }
        Ok(def)
    }

    pub(super) async fn remove_index(&mut self, collection_id: i64, index: &IndexDef) -> Result<()> {
        self.writing()?;
        // Index definitions are not cached: nothing to invalidate.
        if self.lock_table_state(collection_id).await? {
            self.batch(&index_sql::drop_composite_index_ddl(collection_id, index.id)).await?;
        }
        let [columns, row] = index_sql::delete_index(self.dialect, index.id);
        self.exec_compiled(&columns).await?;
        let n = self.exec_compiled(&row).await?;
        if n == 0 {
            return Err(Error::NotFound(format!("index {}", index.name)));
        }
        Ok(())
    }
}
