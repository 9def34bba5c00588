//! Attributes of a collection: their rows, adding and removing columns of the entry table.
//! Must not decide who may change them (the core's rules do); SQL text comes from `sql`.

use super::*;

impl SqlConn {
    pub(super) async fn load_attributes(&mut self, collection_id: i64) -> Result<Vec<AttrDef>> {
        let sql = format!(
            "SELECT id, name, type, indexed FROM attributes WHERE collection_id = {} ORDER BY id",
            self.p(1, ValueType::Int)
        );
        let rows = self
            .point_rows(
                &sql,
                &[Value::Int(collection_id)],
                &[ValueType::Int, ValueType::Text, ValueType::Text, ValueType::Bool],
            )
            .await?;
        rows.into_iter()
            .map(|r| {
                Ok(AttrDef {
                    id: int_of(&r[0]),
                    name: text_of(&r[1]),
                    attr_type: AttrType::parse(&text_of(&r[2]))?,
                    indexed: matches!(r[3], Value::Bool(true)),
                })
            })
            .collect()
    }

    pub(super) async fn insert_attr_row(
        &mut self,
        collection_id: i64,
        name: &str,
        t: AttrType,
        indexed: bool,
    ) -> Result<i64> {
        let sql = format!(
            "INSERT INTO attributes (collection_id, name, name_key, type, indexed) VALUES ({}, {}, {}, {}, {}) RETURNING id",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Text),
            self.p(4, ValueType::Text),
            self.p(5, ValueType::Bool)
        );
        let params = [
            Value::Int(collection_id),
            Value::Text(name.into()),
            Value::Text(name.to_ascii_lowercase()),
            Value::Text(t.to_string()),
            Value::Bool(indexed),
        ];
        let rows = self.rows(&sql, &params, &[ValueType::Int]).await?;
        rows.first().and_then(|r| r.first()).map(int_of).ok_or_else(|| Error::Internal("no attribute id".into()))
    }

    pub(super) async fn attributes(&mut self, collection_id: i64) -> Result<Vec<AttrDef>> {
        let cacheable = self.cacheable();
        if cacheable && let Some(hit) = SchemaCache::fresh(self.cache().attrs.get(&collection_id)) {
            return Ok(hit);
        }
        let generation = self.cache_generation();
        let attrs = self.load_attributes(collection_id).await?;
        if cacheable {
            self.cache_fill(generation, |c| _ = c.attrs.insert(collection_id, (attrs.clone(), Instant::now())));
        }
        Ok(attrs)
    }

    pub(super) async fn add_attribute(
        &mut self,
        collection_id: i64,
        name: &str,
        attr_type: AttrType,
        indexed: bool,
    ) -> Result<AttrDef> {
        self.writing()?;
        self.schema_changed();
        let has_table = self.lock_table_state(collection_id).await?;
        let id = self.insert_attr_row(collection_id, name, attr_type, indexed).await?;
        if has_table {
            let col = attr_column(id);
            let def = self.dialect.column_def(&col, attr_type);
            self.batch(&format!("ALTER TABLE {} ADD COLUMN {col} {def}", table_name(collection_id))).await?;
            if indexed {
                self.create_index(collection_id, id).await?;
            }
        }
        Ok(AttrDef { id, name: name.into(), attr_type, indexed })
    }

    pub(super) async fn remove_attribute(&mut self, collection_id: i64, attr: &AttrDef) -> Result<()> {
        self.writing()?;
        self.schema_changed();
        let has_table = self.lock_table_state(collection_id).await?;
        // Checked under the collection lock, so a concurrent index_create cannot slip in between.
        let sql = format!(
            "SELECT i.name FROM entry_indexes i JOIN entry_index_columns c ON c.index_id = i.id \
             WHERE c.attribute_id = {} ORDER BY i.id",
            self.p(1, ValueType::Int)
        );
        let users = self.rows(&sql, &[Value::Int(attr.id)], &[ValueType::Text]).await?;
        if !users.is_empty() {
            let names: Vec<String> = users.iter().map(|r| text_of(&r[0])).collect();
            return Err(Error::IllegalCommand(format!(
                "attribute {} is used by index {}; remove the index first (index_remove)",
                attr.name,
                names.join(", ")
            )));
        }
        let sql = format!(
            "SELECT k.name FROM entry_constraints k JOIN entry_constraint_columns u ON u.constraint_id = k.id \
             WHERE u.attribute_id = {} ORDER BY k.id",
            self.p(1, ValueType::Int)
        );
        let users = self.rows(&sql, &[Value::Int(attr.id)], &[ValueType::Text]).await?;
        if !users.is_empty() {
            let names: Vec<String> = users.iter().map(|r| text_of(&r[0])).collect();
            return Err(Error::IllegalCommand(format!(
                "attribute {} is used by constraint {}; drop the constraint first (constraint_drop)",
                attr.name,
                names.join(", ")
            )));
        }
        if has_table {
            let t = table_name(collection_id);
            let c = attr_column(attr.id);
            if attr.indexed {
                self.batch(&format!("DROP INDEX IF EXISTS {t}_{c}")).await?;
            }
            self.batch(&format!("ALTER TABLE {t} DROP COLUMN {c}")).await?;
        }
        let sql = format!("DELETE FROM attributes WHERE id = {}", self.p(1, ValueType::Int));
        self.exec(&sql, &[Value::Int(attr.id)]).await.map(|_| ())
    }
}
