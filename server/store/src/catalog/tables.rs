//! The lifecycle of a collection's entry table: whether it exists, its row lock, its one-time
//! creation, the planner's first statistics of it. Must not read or write entry rows; SQL text
//! comes from `sql::tables` (and the table's DDL from `Dialect::create_entry_table`).

use super::*;

impl SqlConn {
    /// Whether the collection's entry table exists. Known tables cost a set lookup; the others
    /// a read of `collections.has_table` (visible to this transaction).
    pub(super) async fn has_table(&mut self, id: i64) -> Result<bool> {
        if self.cache().tables.contains(&id) {
            return Ok(true);
        }
        let rows = self.point_rows_compiled(&table_sql::select_has_table(self.dialect, id)).await?;
        let exists = matches!(rows.first().and_then(|r| r.first()), Some(Value::Bool(true)));
        // Inside a transaction the table may be this transaction's own and still roll back.
        if exists && self.cacheable() {
            self.cache().tables.insert(id);
        }
        Ok(exists)
    }

    /// Gathers the planner's statistics of the collection's entry table if the database has
    /// none yet (PostgreSQL, a table never analyzed); true when it did. Until autovacuum first
    /// gets to a freshly loaded table (up to `autovacuum_naptime`, a minute by default) the
    /// planner assumes a small table and picks, for example, a full sort over reading the entry
    /// names' index in order. Runs outside any unit: it writes no catalogue data.
    pub(super) async fn settle_statistics(&mut self, id: i64) -> Result<bool> {
        let Some(q) = table_sql::select_lacks_statistics(self.dialect, id) else { return Ok(false) };
        if self.conn.in_transaction() || !self.has_table(id).await? {
            return Ok(false);
        }
        let rows = self.rows_compiled(&q).await?;
        if !matches!(rows.first().and_then(|r| r.first()), Some(Value::Bool(true))) {
            return Ok(false);
        }
        self.batch(&table_sql::analyze_entry_table(id)).await?;
        Ok(true)
    }

    pub(super) async fn tables_exist(&mut self, ids: &[i64]) -> Result<bool> {
        for &id in ids {
            if !self.has_table(id).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Locks the collection row until the transaction ends and returns whether its table exists.
    /// Schema changes and table creation serialize on this row lock, so a concurrent first entry
    /// either sees a new attribute or creates the table that the attribute change then alters.
    /// (SQLite has one writer at a time; the statement is harmless there.)
    pub(super) async fn lock_table_state(&mut self, id: i64) -> Result<bool> {
        let rows = self.rows_compiled(&table_sql::lock_table_state(self.dialect, id)).await?;
        Ok(matches!(rows.first().and_then(|r| r.first()), Some(Value::Bool(true))))
    }

    /// Creates the entry table with the collection's current attributes and indexes, once.
    pub(super) async fn ensure_table(&mut self, id: i64) -> Result<()> {
        if self.cache().tables.contains(&id) {
            return Ok(());
        }
        // The service writes inside a transaction; the row lock below needs one to mean anything.
        if self.conn.in_transaction() {
            return self.create_table_once(id).await;
        }
        self.begin().await?;
        match self.create_table_once(id).await {
            Ok(()) => self.commit().await,
            Err(e) => {
                let _ = self.rollback().await;
                Err(e)
            }
        }
    }

    pub(super) async fn create_table_once(&mut self, id: i64) -> Result<()> {
        if self.lock_table_state(id).await? {
            return Ok(());
        }
        let attrs = self.load_attributes(id).await?;
        let columns: Vec<(String, AttrType)> = attrs.iter().map(|a| (attr_column(a.id), a.attr_type)).collect();
        let ddl = self.dialect.create_entry_table(&table_name(id), &columns);
        self.batch(&ddl).await?;
        for a in attrs.iter().filter(|a| a.indexed) {
            self.create_index(id, a.id).await?;
        }
        for ix in self.load_indexes(id).await? {
            self.create_composite_index(id, &ix).await?;
        }
        // The table is empty: nothing to validate.
        for (k, check_sql) in self.load_constraints(id).await? {
            let ddl = constraints::create_ddl(self.dialect, &k, check_sql.as_deref());
            self.run_ddl(ddl).await?;
        }
        self.exec_compiled(&table_sql::set_has_table(self.dialect, id)).await?;
        Ok(())
    }
}
