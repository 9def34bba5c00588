//! Attributes of a collection: their rows, adding and removing columns of the entry table.
//! Must not decide who may change them (the core's rules do); SQL text comes from
//! `sql::attributes` (and `sql::indexes`, `sql::constraint_rows` for what uses them).

use super::*;

impl SqlConn {
    pub(super) async fn load_attributes(&mut self, collection_id: i64) -> Result<Vec<AttrDef>> {
        let rows = self.point_rows_compiled(&attribute_sql::select_attributes(self.dialect, collection_id)).await?;
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
        let insert = attribute_sql::insert_attribute(
            self.dialect,
            collection_id,
            name,
            &name.to_ascii_lowercase(),
            &t.to_string(),
            indexed,
        );
        let rows = self.rows_compiled(&insert).await?;
        rows.first().and_then(|r| r.first()).map(int_of).ok_or_else(|| Error::Internal("no attribute id".into()))
    }

    pub(super) async fn attributes(&mut self, collection_id: i64) -> Result<Attributes> {
        let cacheable = self.cacheable();
        if cacheable && let Some(hit) = SchemaCache::fresh(self.cache().attrs.get(&collection_id)) {
            return Ok(hit);
        }
        let generation = self.cache_generation();
        let attrs: Attributes = self.load_attributes(collection_id).await?.into();
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
            self.batch(&attribute_sql::add_column_ddl(self.dialect, collection_id, id, attr_type)).await?;
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
        let users = self.rows_compiled(&index_sql::select_indexes_using_attribute(self.dialect, attr.id)).await?;
        if !users.is_empty() {
            let names: Vec<String> = users.iter().map(|r| text_of(&r[0])).collect();
            return Err(Error::IllegalCommand(format!(
                "attribute {} is used by index {}; remove the index first (index_remove)",
                attr.name,
                names.join(", ")
            )));
        }
        let users =
            self.rows_compiled(&constraint_rows::select_constraints_using_attribute(self.dialect, attr.id)).await?;
        if !users.is_empty() {
            let names: Vec<String> = users.iter().map(|r| text_of(&r[0])).collect();
            return Err(Error::IllegalCommand(format!(
                "attribute {} is used by constraint {}; drop the constraint first (constraint_drop)",
                attr.name,
                names.join(", ")
            )));
        }
        if has_table {
            if attr.indexed {
                self.batch(&index_sql::drop_attribute_index_ddl(collection_id, attr.id)).await?;
            }
            self.batch(&attribute_sql::drop_column_ddl(collection_id, attr.id)).await?;
        }
        self.exec_compiled(&attribute_sql::delete_attribute(self.dialect, attr.id)).await.map(|_| ())
    }
}
