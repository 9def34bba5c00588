//! Per-attribute and composite indexes of entry tables: their definitions and DDL. Must not
//! change attributes or entry rows; SQL text comes from `sql`.

use super::*;

/// SQL name of a composite index: `e<collection id>_x<index id>` (per-attribute ones are `_a<id>`).
fn composite_index_name(collection_id: i64, index_id: i64) -> String {
    format!("{}_x{index_id}", table_name(collection_id))
}

impl SqlConn {
    pub(super) async fn create_index(&mut self, collection_id: i64, attr_id: i64) -> Result<()> {
        let t = table_name(collection_id);
        let c = attr_column(attr_id);
        self.batch(&format!("CREATE INDEX {t}_{c} ON {t} ({c})")).await
    }

    /// The composite indexes of a collection with their columns, by name.
    pub(super) async fn load_indexes(&mut self, collection_id: i64) -> Result<Vec<IndexDef>> {
        let sql = format!(
            "SELECT i.id, i.name, c.attribute_id FROM entry_indexes i \
             JOIN entry_index_columns c ON c.index_id = i.id \
             WHERE i.collection_id = {} ORDER BY i.id, c.position",
            self.p(1, ValueType::Int)
        );
        let rows =
            self.rows(&sql, &[Value::Int(collection_id)], &[ValueType::Int, ValueType::Text, ValueType::Int]).await?;
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

    /// `CREATE INDEX e<c>_x<index id> ON e<c> (<columns>)`: every identifier comes from an id.
    pub(super) async fn create_composite_index(&mut self, collection_id: i64, ix: &IndexDef) -> Result<()> {
        let t = table_name(collection_id);
        let cols: Vec<String> = ix
            .columns
            .iter()
            .map(|c| match c {
                IndexColumn::File => "file".to_string(),
                IndexColumn::Attr(a) => attr_column(*a),
            })
            .collect();
        self.batch(&format!("CREATE INDEX {} ON {t} ({})", composite_index_name(collection_id, ix.id), cols.join(", ")))
            .await
    }

    /// Removes the definitions of every composite index of a collection.
    pub(super) async fn delete_index_rows(&mut self, collection_id: i64) -> Result<()> {
        let p = self.p(1, ValueType::Int);
        let sql = format!(
            "DELETE FROM entry_index_columns WHERE index_id IN (SELECT id FROM entry_indexes WHERE collection_id = {p})"
        );
        self.exec(&sql, &[Value::Int(collection_id)]).await?;
        self.exec(&format!("DELETE FROM entry_indexes WHERE collection_id = {p}"), &[Value::Int(collection_id)])
            .await?;
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
        let sql = format!("SELECT id FROM attributes WHERE collection_id = {} ORDER BY id", self.p(1, ValueType::Int));
        let present: HashSet<i64> = self
            .rows(&sql, &[Value::Int(collection_id)], &[ValueType::Int])
            .await?
            .iter()
            .map(|r| int_of(&r[0]))
            .collect();
        if let Some(IndexColumn::Attr(gone)) =
            columns.iter().find(|c| matches!(c, IndexColumn::Attr(a) if !present.contains(a)))
        {
            return Err(Error::NoSuchAttribute(format!("attribute #{gone} was removed meanwhile")));
        }
        let sql = format!(
            "INSERT INTO entry_indexes (collection_id, name, name_key) VALUES ({}, {}, {}) RETURNING id",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Text)
        );
        let params = [Value::Int(collection_id), Value::Text(name.into()), Value::Text(name.to_ascii_lowercase())];
        let id = match self.rows(&sql, &params, &[ValueType::Int]).await {
            Ok(rows) => {
                rows.first().and_then(|r| r.first()).map(int_of).ok_or_else(|| Error::Internal("no index id".into()))?
            }
            Err(Error::Exists(_)) => return Err(Error::Exists(format!("index {name}"))),
            Err(e) => return Err(e),
        };
        let sql = format!(
            "INSERT INTO entry_index_columns (index_id, position, attribute_id) VALUES ({}, {}, {})",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Int),
            self.p(3, ValueType::Int)
        );
        for (pos, c) in columns.iter().enumerate() {
            let attr = match c {
                IndexColumn::File => Value::Null,
                IndexColumn::Attr(a) => Value::Int(*a),
            };
            self.exec(&sql, &[Value::Int(id), Value::Int(pos as i64), attr]).await?;
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
            self.batch(&format!("DROP INDEX IF EXISTS {}", composite_index_name(collection_id, index.id))).await?;
        }
        let p = self.p(1, ValueType::Int);
        self.exec(&format!("DELETE FROM entry_index_columns WHERE index_id = {p}"), &[Value::Int(index.id)]).await?;
        let n = self.exec(&format!("DELETE FROM entry_indexes WHERE id = {p}"), &[Value::Int(index.id)]).await?;
        if n == 0 {
            return Err(Error::NotFound(format!("index {}", index.name)));
        }
        Ok(())
    }
}
