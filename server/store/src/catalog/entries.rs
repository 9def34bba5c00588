//! Entry rows: insert, update, delete from compiled plans, entry metadata and streaming
//! selects. Must not resolve names or check permissions (the core plans); SQL from `sql`.

use super::point_lane::Run;
use super::*;

impl SqlConn {
    pub(super) async fn insert_entries(
        &mut self,
        collection_id: i64,
        attrs: &[AttrDef],
        entries: Vec<NewEntry>,
    ) -> Result<u64> {
        self.writing()?;
        if entries.is_empty() {
            return Ok(0);
        }
        self.ensure_table(collection_id).await?;
        let ts = now();
        let width = 6 + attrs.len();
        let to_row = |e: NewEntry| {
            let mut row = Vec::with_capacity(width);
            row.push(Value::Text(e.name));
            row.push(Value::Text(e.owner));
            row.push(Value::Text(e.group));
            row.push(Value::Int(e.perms as i64));
            row.push(ts.clone());
            row.push(ts.clone());
            row.extend(e.values);
            row
        };
        let r = match self.dialect {
            // One prepared single-row statement, run once per entry inside the caller's transaction.
            Dialect::Sqlite => {
                let sql = compile_insert(self.dialect, collection_id, attrs, 1);
                let rows: Vec<Vec<Value>> = entries.into_iter().map(to_row).collect();
                self.conn.execute_many(&sql, rows).await.map_err(map_err)
            }
            // Multi-row VALUES in chunks under PostgreSQL's parameter limit.
            Dialect::Postgres => {
                let per = (self.dialect.max_params() / width).clamp(1, 1000);
                let mut total = 0;
                let mut it = entries.into_iter().peekable();
                let mut r = Ok(0);
                while it.peek().is_some() {
                    let chunk: Vec<NewEntry> = it.by_ref().take(per).collect();
                    let sql = compile_insert(self.dialect, collection_id, attrs, chunk.len());
                    let params: Vec<Value> = chunk.into_iter().flat_map(to_row).collect();
                    match self.exec(&sql, &params).await {
                        Ok(n) => total += n,
                        Err(e) => {
                            r = Err(e);
                            break;
                        }
                    }
                    r = Ok(total);
                }
                return r.map_err(|e| match e {
                    Error::Exists(_) => Error::Exists("entry".into()),
                    e => e,
                });
            }
        };
        r.map_err(|e| match e {
            Error::Exists(_) => Error::Exists("entry".into()),
            e => e,
        })
    }

    pub(super) async fn update_entries(&mut self, plan: &UpdatePlan) -> Result<u64> {
        self.writing()?;
        // An inner join with a collection that never had an entry matches nothing.
        if !self.tables_exist(&plan.tables).await? {
            return Ok(0);
        }
        let c = compile_update(self.dialect, plan, now());
        self.exec(&c.sql, &c.params).await
    }

    pub(super) async fn delete_entries(&mut self, plan: &DeletePlan) -> Result<u64> {
        self.writing()?;
        if !self.tables_exist(&plan.tables).await? {
            return Ok(0);
        }
        let c = compile_delete(self.dialect, plan);
        let n = self.exec(&c.sql, &c.params).await?;
        if n > 0 {
            self.exec_compiled(&statements::delete_orphan_entry_acls(self.dialect, plan.tables[0])).await?;
        }
        Ok(n)
    }

    pub(super) async fn entry_meta(&mut self, collection_id: i64, pattern: &str, lock: bool) -> Result<Vec<EntryMeta>> {
        // No entry table yet (the collection never had an entry): no entries.
        if !self.has_table(collection_id).await? {
            return Ok(Vec::new());
        }
        let c = statements::select_entry_meta(self.dialect, collection_id, pattern, lock);
        let rows = self.rows_compiled(&c).await?;
        Ok(rows
            .into_iter()
            .map(|r| EntryMeta {
                id: int_of(&r[0]),
                name: text_of(&r[1]),
                owner: text_of(&r[2]),
                group: text_of(&r[3]),
                perms: (int_of(&r[4]) & 0o777) as u16,
            })
            .collect())
    }

    pub(super) async fn set_entry_meta(
        &mut self,
        collection_id: i64,
        pattern: &str,
        only_owner: Option<&str>,
        change: &EntryMetaChange,
    ) -> Result<u64> {
        self.writing()?;
        // A collection that never had an entry has no entry table yet: nothing to change.
        if !self.has_table(collection_id).await? {
            return Ok(0);
        }
        match statements::update_entry_meta(self.dialect, collection_id, pattern, only_owner, change) {
            Some(c) => self.exec_compiled(&c).await,
            None => Ok(0),
        }
    }

    pub(super) async fn select(&mut self, plan: &SelectPlan, tx: RowSender) -> Result<u64> {
        if !self.tables_exist(&plan.tables).await? {
            return Ok(0);
        }
        let c = compile_select(self.dialect, plan);
        // Rows go straight into the service's channel; errors become `Error` through `From`.
        self.conn.stream(&c.sql, &c.params, &c.types, tx).await.map_err(map_err)
    }

    pub(super) async fn select_few(&mut self, plan: &SelectPlan, shape: Option<ShapeId>) -> Result<Vec<Vec<Value>>> {
        if !self.tables_exist(&plan.tables).await? {
            return Ok(Vec::new());
        }
        // The text is compiled once per plan shape (`sql::point`); a `get` binds its name.
        let c =
            self.point_sql.lock().unwrap_or_else(std::sync::PoisonError::into_inner).compile(self.dialect, plan, shape);
        // Into the rows of this thread's last `get`, once written out (`run_select_one`).
        let reuse = ardacat_core::store::spent_rows::take_point();
        // Outside a transaction, reads of one template may be answered together (`point_lane`);
        // inside one, a read must see the transaction's own writes.
        let (Some(batch), false) = (&c.batch, self.conn.in_transaction()) else {
            return self.conn.query_point_into(&c.sql, &c.params, &c.types, reuse).await.map_err(map_err);
        };
        let run = async |conn: &mut Conn, run: Run| match run {
            Run::Own => conn.query_point_into(&c.sql, &c.params, &c.types, reuse).await,
            Run::Batch { sql, params } => conn.query_point_into(&sql, &params, &batch.family.types, reuse).await,
        };
        self.point_lane.read(&batch.family, &batch.name, &mut self.conn, run).await.map_err(map_err)
    }
}
