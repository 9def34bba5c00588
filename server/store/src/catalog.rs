//! The storage port of ardacat-core implemented once over the executor: every catalogue
//! operation becomes SQL from `sql` run through `exec::Conn`, identically for both dialects.

use ardacat_core::error::{Error, Result};
use ardacat_core::perm::AclEntry;
use ardacat_core::query::Term;
use ardacat_core::query::ast::Expr;
use ardacat_core::store::{
    AttrDef, CollectionInfo, ConstraintDef, ConstraintRule, DeletePlan, EntryMeta, EntryMetaChange, IndexColumn,
    IndexDef, NewEntry, RowSender, SelectPlan, SiteRecord, Store, StoreConn, UpdatePlan, UserRecord,
};
use ardacat_core::types::{AttrType, Value, ValueType};
use chrono::Utc;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::StoreError;
use crate::exec::{Backend, Conn, Db};
use crate::sql::compile::{attr_column, compile_condition, table_name};
use crate::sql::{
    Compiled, Dialect, compile_delete, compile_insert, compile_select, compile_update, constraints, replicas,
    statements,
};

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        map_err(e)
    }
}

/// Translate a storage failure into the catalogue's error; causes stay in the log.
pub fn map_err(e: StoreError) -> Error {
    match e {
        StoreError::UniqueViolation(m) => Error::Exists(m),
        // The service names the expression (`Error::Overflow` is re-labelled where it ran).
        StoreError::NumericOverflow(_) => Error::Overflow("an expression".into()),
        StoreError::PoolTimeout => Error::LimitExceeded("no database connection free in time".into()),
        StoreError::Busy => Error::Transaction("the database is busy; try again".into()),
        StoreError::Timeout => Error::LimitExceeded("query time limit exceeded; the statement was cancelled".into()),
        StoreError::ValueDoesNotFit(_) => Error::InvalidValue("value does not fit its attribute type".into()),
        // The catalogue names the constraint (`Catalogue::unit`).
        StoreError::ConstraintViolation(id) => Error::ConstraintViolation { id, text: String::new() },
        other => {
            tracing::warn!(error = %other, "storage error");
            Error::Internal(other.to_string())
        }
    }
}

/// How long a cached schema fact may be served without re-reading it. Changes made through this
/// process invalidate at once; the bound is for other processes sharing the database.
const SCHEMA_CACHE_TTL: Duration = Duration::from_secs(1);
/// Most paths remembered before the path map starts over.
const SCHEMA_CACHE_PATHS: usize = 50_000;

/// Read-mostly schema facts (collections, attributes, ACLs) that every operation looks up. Reads
/// outside a transaction use it; any change through this process clears it; a transaction that
/// changed the schema clears it again when it ends.
#[derive(Default)]
struct SchemaCache {
    by_path: HashMap<String, (Option<CollectionInfo>, Instant)>,
    attrs: HashMap<i64, (Vec<AttrDef>, Instant)>,
    acls: HashMap<i64, (Vec<AclEntry>, Instant)>,
    /// Collections whose entry table is known to exist (committed). A table, once created, stays
    /// until its collection is removed, so this set needs no expiry and survives `clear`.
    tables: HashSet<i64>,
}

impl SchemaCache {
    fn fresh<T: Clone>(e: Option<&(T, Instant)>) -> Option<T> {
        e.filter(|(_, t)| t.elapsed() < SCHEMA_CACHE_TTL).map(|(v, _)| v.clone())
    }

    fn clear(&mut self) {
        self.by_path.clear();
        self.attrs.clear();
        self.acls.clear();
    }
}

/// The catalogue's storage: a pool of either backend.
#[derive(Clone)]
pub struct SqlStore {
    db: Db,
    cache: Arc<Mutex<SchemaCache>>,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore").field("db", &self.db).finish()
    }
}

impl SqlStore {
    pub fn new(db: Db) -> Self {
        SqlStore { db, cache: Arc::default() }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    pub fn dialect(&self) -> Dialect {
        dialect_of(self.db.backend())
    }
}

fn dialect_of(b: Backend) -> Dialect {
    match b {
        Backend::Sqlite => Dialect::Sqlite,
        Backend::Postgres => Dialect::Postgres,
    }
}

impl Store for SqlStore {
    type Conn = SqlConn;

    async fn acquire(&self) -> Result<SqlConn> {
        let conn = self.db.acquire().await.map_err(map_err)?;
        Ok(SqlConn {
            dialect: dialect_of(conn.backend()),
            conn,
            cache: self.cache.clone(),
            schema_changed: false,
            unit: None,
        })
    }

    fn backend_name(&self) -> &'static str {
        self.db.backend().name()
    }
}

pub struct SqlConn {
    conn: Conn,
    dialect: Dialect,
    cache: Arc<Mutex<SchemaCache>>,
    /// This connection's open transaction changed schema facts: clear the cache when it ends.
    schema_changed: bool,
    /// The write unit open on this connection (`StoreConn::begin_unit`), if any.
    unit: Option<Unit>,
}

/// How a write unit was opened, hence how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// A transaction of its own: commit or roll back.
    Own,
    /// A savepoint inside the user's transaction: release, or roll back to it and release.
    Savepoint,
}

fn now() -> Value {
    Value::Timestamp(Utc::now().naive_utc())
}

const COLLECTION_COLS: &str = "id, parent_id, path, owner, grp, perms";
const COLLECTION_TYPES: [ValueType; 6] =
    [ValueType::Int, ValueType::Int, ValueType::Text, ValueType::Text, ValueType::Text, ValueType::Int];

fn collection_from(row: Vec<Value>) -> Result<CollectionInfo> {
    let mut it = row.into_iter();
    let bad = || Error::Internal("malformed collections row".into());
    let id = match it.next() {
        Some(Value::Int(i)) => i,
        _ => return Err(bad()),
    };
    let parent_id = match it.next() {
        Some(Value::Int(i)) => Some(i),
        Some(Value::Null) => None,
        _ => return Err(bad()),
    };
    let text = |v: Option<Value>| match v {
        Some(Value::Text(s)) => Ok(s),
        _ => Err(bad()),
    };
    let path = text(it.next())?;
    let owner = text(it.next())?;
    let group = text(it.next())?;
    let perms = match it.next() {
        Some(Value::Int(i)) => i as u16,
        _ => return Err(bad()),
    };
    Ok(CollectionInfo { id, parent_id, path, owner, group, perms })
}

fn text_of(v: &Value) -> String {
    v.to_wire().unwrap_or_default()
}

/// An ACL row `(principal, is_group, rights)` of `acls` or `entry_acls`.
fn acl_from(r: &[Value]) -> AclEntry {
    AclEntry { principal: text_of(&r[0]), is_group: matches!(r[1], Value::Bool(true)), rights: int_of(&r[2]) as u16 }
}

fn site_from(r: &[Value]) -> SiteRecord {
    SiteRecord { id: int_of(&r[0]), name: text_of(&r[1]), server: text_of(&r[2]) }
}

fn int_of(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

impl SqlConn {
    fn cache(&self) -> std::sync::MutexGuard<'_, SchemaCache> {
        // A poisoned lock only means a panic elsewhere mid-insert into plain maps.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads inside a transaction may see uncommitted changes: they neither use nor fill the cache.
    fn cacheable(&self) -> bool {
        !self.conn.in_transaction()
    }

    /// A schema fact changed: drop everything cached, now and again when the transaction ends.
    fn schema_changed(&mut self) {
        self.cache().clear();
        if self.conn.in_transaction() {
            self.schema_changed = true;
        }
    }

    fn end_transaction(&mut self) {
        if std::mem::take(&mut self.schema_changed) {
            self.cache().clear();
        }
    }

    async fn load_attributes(&mut self, collection_id: i64) -> Result<Vec<AttrDef>> {
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

    async fn load_acl(&mut self, collection_id: i64) -> Result<Vec<AclEntry>> {
        let sql = format!(
            "SELECT principal, is_group, rights FROM acls WHERE collection_id = {} ORDER BY is_group, principal",
            self.p(1, ValueType::Int)
        );
        let rows = self
            .point_rows(&sql, &[Value::Int(collection_id)], &[ValueType::Text, ValueType::Bool, ValueType::Int])
            .await?;
        Ok(rows.iter().map(|r| acl_from(r)).collect())
    }

    /// `?n`/`$n` placeholders for a statement whose parameters have these types.
    fn p(&self, n: usize, t: ValueType) -> String {
        self.dialect.param(n, t)
    }

    async fn exec(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        self.conn.execute(sql, params).await.map_err(map_err)
    }

    async fn rows(&mut self, sql: &str, params: &[Value], types: &[ValueType]) -> Result<Vec<Vec<Value>>> {
        self.conn.query(sql, params, types).await.map_err(map_err)
    }

    /// `rows` for an index lookup of a few rows in a system table (a collection by path, its
    /// attributes): on SQLite it runs on the calling thread (`exec::Conn::query_point`).
    async fn point_rows(&mut self, sql: &str, params: &[Value], types: &[ValueType]) -> Result<Vec<Vec<Value>>> {
        self.conn.query_point(sql, params, types).await.map_err(map_err)
    }

    async fn exec_compiled(&mut self, c: &Compiled) -> Result<u64> {
        self.exec(&c.sql, &c.params).await
    }

    async fn rows_compiled(&mut self, c: &Compiled) -> Result<Vec<Vec<Value>>> {
        self.rows(&c.sql, &c.params, &c.types).await
    }

    async fn batch(&mut self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).await.map_err(map_err)
    }

    async fn insert_attr_row(&mut self, collection_id: i64, name: &str, t: AttrType, indexed: bool) -> Result<i64> {
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

    /// Whether the collection's entry table exists. Known tables cost a set lookup; the others
    /// a read of `collections.has_table` (visible to this transaction).
    async fn has_table(&mut self, id: i64) -> Result<bool> {
        if self.cache().tables.contains(&id) {
            return Ok(true);
        }
        let sql = format!("SELECT has_table FROM collections WHERE id = {}", self.p(1, ValueType::Int));
        let rows = self.point_rows(&sql, &[Value::Int(id)], &[ValueType::Bool]).await?;
        let exists = matches!(rows.first().and_then(|r| r.first()), Some(Value::Bool(true)));
        // Inside a transaction the table may be this transaction's own and still roll back.
        if exists && self.cacheable() {
            self.cache().tables.insert(id);
        }
        Ok(exists)
    }

    async fn tables_exist(&mut self, ids: &[i64]) -> Result<bool> {
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
    async fn lock_table_state(&mut self, id: i64) -> Result<bool> {
        let sql = format!(
            "UPDATE collections SET has_table = has_table WHERE id = {} RETURNING has_table",
            self.p(1, ValueType::Int)
        );
        let rows = self.rows(&sql, &[Value::Int(id)], &[ValueType::Bool]).await?;
        Ok(matches!(rows.first().and_then(|r| r.first()), Some(Value::Bool(true))))
    }

    /// Creates the entry table with the collection's current attributes and indexes, once.
    async fn ensure_table(&mut self, id: i64) -> Result<()> {
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

    async fn create_table_once(&mut self, id: i64) -> Result<()> {
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
        let sql = format!(
            "UPDATE collections SET has_table = {} WHERE id = {}",
            self.p(1, ValueType::Bool),
            self.p(2, ValueType::Int)
        );
        self.exec(&sql, &[Value::Bool(true), Value::Int(id)]).await?;
        Ok(())
    }

    async fn create_index(&mut self, collection_id: i64, attr_id: i64) -> Result<()> {
        let t = table_name(collection_id);
        let c = attr_column(attr_id);
        self.batch(&format!("CREATE INDEX {t}_{c} ON {t} ({c})")).await
    }

    /// The composite indexes of a collection with their columns, by name.
    async fn load_indexes(&mut self, collection_id: i64) -> Result<Vec<IndexDef>> {
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
    async fn create_composite_index(&mut self, collection_id: i64, ix: &IndexDef) -> Result<()> {
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
    async fn delete_index_rows(&mut self, collection_id: i64) -> Result<()> {
        let p = self.p(1, ValueType::Int);
        let sql = format!(
            "DELETE FROM entry_index_columns WHERE index_id IN (SELECT id FROM entry_indexes WHERE collection_id = {p})"
        );
        self.exec(&sql, &[Value::Int(collection_id)]).await?;
        self.exec(&format!("DELETE FROM entry_indexes WHERE collection_id = {p}"), &[Value::Int(collection_id)])
            .await?;
        Ok(())
    }
}

/// SQL name of a composite index: `e<collection id>_x<index id>` (per-attribute ones are `_a<id>`).
fn composite_index_name(collection_id: i64, index_id: i64) -> String {
    format!("{}_x{index_id}", table_name(collection_id))
}

/// Columns of a constraint row: id, collection_id, name, kind, attribute_id, ref_collection_id,
/// ref_attribute_id, condition, check_sql.
const CONSTRAINT_COLS: &str =
    "id, collection_id, name, kind, attribute_id, ref_collection_id, ref_attribute_id, condition, check_sql";
const CONSTRAINT_TYPES: [ValueType; 9] = [
    ValueType::Int,
    ValueType::Int,
    ValueType::Text,
    ValueType::Text,
    ValueType::Int,
    ValueType::Int,
    ValueType::Int,
    ValueType::Text,
    ValueType::Text,
];

/// A constraint row → its definition and its stored check SQL.
fn constraint_from(r: &[Value]) -> Result<(ConstraintDef, Option<String>)> {
    let attr = int_of(&r[4]);
    let rule = match text_of(&r[3]).as_str() {
        "not_null" => ConstraintRule::NotNull { attr },
        "unique" => ConstraintRule::Unique { attr },
        "reference" => ConstraintRule::Reference {
            attr,
            collection: int_of(&r[5]),
            column: match r[6] {
                Value::Int(a) => IndexColumn::Attr(a),
                _ => IndexColumn::File,
            },
        },
        "check" => ConstraintRule::Check { condition: text_of(&r[7]) },
        other => return Err(Error::Internal(format!("unknown constraint kind {other}"))),
    };
    let def = ConstraintDef { id: int_of(&r[0]), collection_id: int_of(&r[1]), name: text_of(&r[2]), rule };
    Ok((def, r[8].to_wire()))
}

impl SqlConn {
    /// The constraints of a collection with their stored check SQL, by name.
    async fn load_constraints(&mut self, collection_id: i64) -> Result<Vec<(ConstraintDef, Option<String>)>> {
        let sql = format!(
            "SELECT {CONSTRAINT_COLS} FROM entry_constraints WHERE collection_id = {} ORDER BY id",
            self.p(1, ValueType::Int)
        );
        let rows = self.rows(&sql, &[Value::Int(collection_id)], &CONSTRAINT_TYPES).await?;
        let mut out = rows.iter().map(|r| constraint_from(r)).collect::<Result<Vec<_>>>()?;
        // By name in byte order on both backends, as indexes.
        out.sort_by_cached_key(|(k, _)| k.name.to_ascii_lowercase());
        Ok(out)
    }

    async fn run_ddl(&mut self, statements: Vec<String>) -> Result<()> {
        for s in statements {
            self.batch(&s).await?;
        }
        Ok(())
    }

    /// Names of the constraints of other collections that refer to `collection_id` (with
    /// `column`, only those referring to that column), as `<name> of <path>`.
    async fn references_to(&mut self, collection_id: i64, column: Option<i64>) -> Result<Vec<String>> {
        let mut sql = format!(
            "SELECT k.name, c.path FROM entry_constraints k JOIN collections c ON c.id = k.collection_id \
             WHERE k.kind = 'reference' AND k.ref_collection_id = {}",
            self.p(1, ValueType::Int)
        );
        let mut params = vec![Value::Int(collection_id)];
        match column {
            Some(a) => {
                let _ = std::fmt::Write::write_fmt(
                    &mut sql,
                    format_args!(" AND k.ref_attribute_id = {}", self.p(2, ValueType::Int)),
                );
                params.push(Value::Int(a));
            }
            None => {
                let _ = std::fmt::Write::write_fmt(
                    &mut sql,
                    format_args!(" AND k.collection_id <> {}", self.p(2, ValueType::Int)),
                );
                params.push(Value::Int(collection_id));
            }
        }
        sql.push_str(" ORDER BY k.id");
        let rows = self.rows(&sql, &params, &[ValueType::Text, ValueType::Text]).await?;
        Ok(rows.iter().map(|r| format!("{} of {}", text_of(&r[0]), text_of(&r[1]))).collect())
    }

    /// Drops the database side of every constraint of a collection and their rows.
    async fn delete_constraints(&mut self, collection_id: i64, has_table: bool) -> Result<()> {
        for (k, _) in self.load_constraints(collection_id).await? {
            let ddl = constraints::drop_ddl(self.dialect, &k, has_table);
            self.run_ddl(ddl).await?;
        }
        let p = self.p(1, ValueType::Int);
        let sql = format!(
            "DELETE FROM entry_constraint_columns WHERE constraint_id IN \
             (SELECT id FROM entry_constraints WHERE collection_id = {p})"
        );
        self.exec(&sql, &[Value::Int(collection_id)]).await?;
        self.exec(&format!("DELETE FROM entry_constraints WHERE collection_id = {p}"), &[Value::Int(collection_id)])
            .await?;
        Ok(())
    }
}

impl SqlConn {
    /// Every write method starts here: a write outside a unit is a bug of the caller, refused
    /// before anything changes (see `StoreConn::begin_unit`).
    fn writing(&self) -> Result<()> {
        match self.unit {
            Some(_) if self.conn.in_transaction() => Ok(()),
            _ => Err(Error::Internal("a write outside a write unit (Catalogue::write)".into())),
        }
    }

    /// Undoes a unit whose command never ended it (its future was dropped: a cancel).
    async fn abandon_unit(&mut self) -> Result<()> {
        match self.unit {
            None => Ok(()),
            Some(_) => self.close_unit(false).await,
        }
    }

    async fn close_unit(&mut self, ok: bool) -> Result<()> {
        let Some(unit) = self.unit.take() else {
            return Err(Error::Internal("no write unit is open".into()));
        };
        match (unit, ok) {
            (Unit::Own, true) => self.commit_tx().await,
            (Unit::Own, false) => self.rollback_tx().await,
            (Unit::Savepoint, true) => self.conn.release_savepoint().await.map_err(map_err),
            (Unit::Savepoint, false) => {
                self.conn.rollback_to_savepoint().await.map_err(map_err)?;
                self.conn.release_savepoint().await.map_err(map_err)
            }
        }
    }

    async fn commit_tx(&mut self) -> Result<()> {
        let r = self.conn.commit().await.map_err(map_err);
        self.end_transaction();
        r
    }

    async fn rollback_tx(&mut self) -> Result<()> {
        let r = self.conn.rollback().await.map_err(map_err);
        self.end_transaction();
        r
    }
}

impl StoreConn for SqlConn {
    async fn begin(&mut self) -> Result<()> {
        self.abandon_unit().await?;
        self.conn.begin().await.map_err(map_err)
    }

    async fn commit(&mut self) -> Result<()> {
        // A command is all or nothing: one cancelled mid-way leaves nothing in the commit.
        if self.unit == Some(Unit::Savepoint) {
            self.abandon_unit().await?;
        }
        self.unit = None;
        self.commit_tx().await
    }

    async fn rollback(&mut self) -> Result<()> {
        self.unit = None;
        self.rollback_tx().await
    }

    async fn begin_unit(&mut self) -> Result<()> {
        self.abandon_unit().await?;
        if self.conn.in_transaction() {
            self.conn.savepoint().await.map_err(map_err)?;
            self.unit = Some(Unit::Savepoint);
        } else {
            self.conn.begin().await.map_err(map_err)?;
            self.unit = Some(Unit::Own);
        }
        Ok(())
    }

    async fn end_unit(&mut self, ok: bool) -> Result<()> {
        self.close_unit(ok).await
    }

    async fn begin_group(&mut self) -> Result<()> {
        if self.unit.is_some() || !self.conn.in_transaction() {
            return Err(Error::Internal("a group opens only between units, inside a transaction".into()));
        }
        self.conn.savepoint().await.map_err(map_err)
    }

    async fn end_group(&mut self, ok: bool) -> Result<()> {
        // A unit still open here belongs to a step whose future was dropped: undo it first.
        self.abandon_unit().await?;
        if !ok {
            self.conn.rollback_to_savepoint().await.map_err(map_err)?;
        }
        self.conn.release_savepoint().await.map_err(map_err)
    }

    async fn collection(&mut self, path: &str) -> Result<Option<CollectionInfo>> {
        let cacheable = self.cacheable();
        if cacheable && let Some(hit) = SchemaCache::fresh(self.cache().by_path.get(path)) {
            return Ok(hit);
        }
        let sql = format!("SELECT {COLLECTION_COLS} FROM collections WHERE path = {}", self.p(1, ValueType::Text));
        let rows = self.point_rows(&sql, &[Value::Text(path.into())], &COLLECTION_TYPES).await?;
        let found = rows.into_iter().next().map(collection_from).transpose()?;
        if cacheable {
            let mut cache = self.cache();
            // Lookups of entry paths (which are not collections) would grow the map without bound.
            if cache.by_path.len() >= SCHEMA_CACHE_PATHS {
                cache.by_path.clear();
            }
            cache.by_path.insert(path.to_string(), (found.clone(), Instant::now()));
        }
        Ok(found)
    }

    async fn collection_by_id(&mut self, id: i64) -> Result<Option<CollectionInfo>> {
        let sql = format!("SELECT {COLLECTION_COLS} FROM collections WHERE id = {}", self.p(1, ValueType::Int));
        let rows = self.point_rows(&sql, &[Value::Int(id)], &COLLECTION_TYPES).await?;
        rows.into_iter().next().map(collection_from).transpose()
    }

    async fn children(&mut self, parent_id: i64) -> Result<Vec<CollectionInfo>> {
        let sql = format!(
            "SELECT {COLLECTION_COLS} FROM collections WHERE parent_id = {} ORDER BY name",
            self.p(1, ValueType::Int)
        );
        let rows = self.rows(&sql, &[Value::Int(parent_id)], &COLLECTION_TYPES).await?;
        rows.into_iter().map(collection_from).collect()
    }

    async fn create_collection(
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

    async fn remove_collection(&mut self, id: i64) -> Result<()> {
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

    async fn set_collection_owner(&mut self, id: i64, owner: &str, group: &str) -> Result<()> {
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

    async fn set_collection_perms(&mut self, id: i64, perms: u16) -> Result<()> {
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

    async fn has_entries(&mut self, id: i64) -> Result<bool> {
        if !self.has_table(id).await? {
            return Ok(false);
        }
        let rows = self.rows(&format!("SELECT id FROM {} LIMIT 1", table_name(id)), &[], &[ValueType::Int]).await?;
        Ok(!rows.is_empty())
    }

    async fn attributes(&mut self, collection_id: i64) -> Result<Vec<AttrDef>> {
        let cacheable = self.cacheable();
        if cacheable && let Some(hit) = SchemaCache::fresh(self.cache().attrs.get(&collection_id)) {
            return Ok(hit);
        }
        let attrs = self.load_attributes(collection_id).await?;
        if cacheable {
            self.cache().attrs.insert(collection_id, (attrs.clone(), Instant::now()));
        }
        Ok(attrs)
    }

    async fn acl(&mut self, collection_id: i64) -> Result<Vec<AclEntry>> {
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

    async fn add_attribute(
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

    async fn remove_attribute(&mut self, collection_id: i64, attr: &AttrDef) -> Result<()> {
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

    async fn indexes(&mut self, collection_id: i64) -> Result<Vec<IndexDef>> {
        self.load_indexes(collection_id).await
    }

    async fn add_index(&mut self, collection_id: i64, name: &str, columns: &[IndexColumn]) -> Result<IndexDef> {
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

    async fn remove_index(&mut self, collection_id: i64, index: &IndexDef) -> Result<()> {
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

    async fn constraints(&mut self, collection_id: i64) -> Result<Vec<ConstraintDef>> {
        Ok(self.load_constraints(collection_id).await?.into_iter().map(|(k, _)| k).collect())
    }

    async fn constraint_by_id(&mut self, id: i64) -> Result<Option<ConstraintDef>> {
        let sql = format!("SELECT {CONSTRAINT_COLS} FROM entry_constraints WHERE id = {}", self.p(1, ValueType::Int));
        let rows = self.rows(&sql, &[Value::Int(id)], &CONSTRAINT_TYPES).await?;
        rows.first().map(|r| constraint_from(r).map(|(k, _)| k)).transpose()
    }

    async fn add_constraint(
        &mut self,
        collection_id: i64,
        name: &str,
        rule: &ConstraintRule,
        check: Option<&Expr<Term>>,
        uses: &[i64],
    ) -> Result<ConstraintDef> {
        self.writing()?;
        // Constraint definitions are not cached: nothing to invalidate.
        let mut has_table = self.lock_table_state(collection_id).await?;
        if let ConstraintRule::Reference { collection, .. } = rule {
            // Both tables must exist for a foreign key (PostgreSQL) or triggers that look into
            // the other table (SQLite); an empty table costs little.
            self.create_table_once(*collection).await?;
            if !has_table {
                self.create_table_once(collection_id).await?;
                has_table = true;
            }
        }
        // The attributes were looked up before the lock; a concurrent removeattr may have won.
        let p = self.p(1, ValueType::Int);
        for &a in uses {
            let rows = self
                .rows(&format!("SELECT id FROM attributes WHERE id = {p}"), &[Value::Int(a)], &[ValueType::Int])
                .await?;
            if rows.is_empty() {
                return Err(Error::NoSuchAttribute(format!("attribute #{a} was removed meanwhile")));
            }
        }
        let (stored_sql, probe_sql) = match check {
            Some(e) => {
                let qualifier = match self.dialect {
                    Dialect::Sqlite => "NEW",
                    Dialect::Postgres => "",
                };
                let unwritable =
                    || Error::IllegalQuery("a value of the condition cannot be part of a constraint".into());
                let stored = compile_condition(self.dialect, e, qualifier).ok_or_else(unwritable)?;
                let probe = compile_condition(self.dialect, e, &table_name(collection_id)).ok_or_else(unwritable)?;
                (Some(stored), Some(probe))
            }
            None => (None, None),
        };
        let (attr, ref_coll, ref_attr, condition) = match rule {
            ConstraintRule::NotNull { attr } | ConstraintRule::Unique { attr } => {
                (Value::Int(*attr), Value::Null, Value::Null, Value::Null)
            }
            ConstraintRule::Reference { attr, collection, column } => (
                Value::Int(*attr),
                Value::Int(*collection),
                match column {
                    IndexColumn::File => Value::Null,
                    IndexColumn::Attr(a) => Value::Int(*a),
                },
                Value::Null,
            ),
            ConstraintRule::Check { condition } => {
                (Value::Null, Value::Null, Value::Null, Value::Text(condition.clone()))
            }
        };
        let sql = format!(
            "INSERT INTO entry_constraints (collection_id, name, name_key, kind, attribute_id, ref_collection_id, \
             ref_attribute_id, condition, check_sql) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}) RETURNING id",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Text),
            self.p(4, ValueType::Text),
            self.p(5, ValueType::Int),
            self.p(6, ValueType::Int),
            self.p(7, ValueType::Int),
            self.p(8, ValueType::Text),
            self.p(9, ValueType::Text)
        );
        let params = [
            Value::Int(collection_id),
            Value::Text(name.into()),
            Value::Text(name.to_ascii_lowercase()),
            Value::Text(rule.kind().into()),
            attr,
            ref_coll,
            ref_attr,
            condition,
            stored_sql.clone().map_or(Value::Null, Value::Text),
        ];
        let id = match self.rows(&sql, &params, &[ValueType::Int]).await {
            Ok(rows) => rows
                .first()
                .and_then(|r| r.first())
                .map(int_of)
                .ok_or_else(|| Error::Internal("no constraint id".into()))?,
            Err(Error::Exists(_)) => return Err(Error::Exists(format!("constraint {name}"))),
            Err(e) => return Err(e),
        };
        let sql = format!(
            "INSERT INTO entry_constraint_columns (constraint_id, attribute_id) VALUES ({}, {}) ON CONFLICT DO NOTHING",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Int)
        );
        for &a in uses {
            self.exec(&sql, &[Value::Int(id), Value::Int(a)]).await?;
        }
        let def = ConstraintDef { id, collection_id, name: name.into(), rule: rule.clone() };
        if has_table {
            // PostgreSQL checks the existing rows when the constraint is added; SQLite's
            // triggers only see new writes, so the rows are checked first.
            if self.dialect == Dialect::Sqlite {
                let probe = constraints::violation_probe(&def, probe_sql.as_deref());
                if !self.rows(&probe, &[], &[ValueType::Int]).await?.is_empty() {
                    return Err(Error::ConstraintViolation { id, text: String::new() });
                }
            }
            let ddl = constraints::create_ddl(self.dialect, &def, stored_sql.as_deref());
            self.run_ddl(ddl).await?;
        }
        Ok(def)
    }

    async fn remove_constraint(&mut self, k: &ConstraintDef) -> Result<()> {
        self.writing()?;
        if let ConstraintRule::Unique { attr } = k.rule {
            let users = self.references_to(k.collection_id, Some(attr)).await?;
            if !users.is_empty() {
                return Err(Error::IllegalCommand(format!(
                    "constraint {} is relied on by reference {}; drop that first",
                    k.name,
                    users.join(", ")
                )));
            }
        }
        let has_table = self.lock_table_state(k.collection_id).await?;
        let ddl = constraints::drop_ddl(self.dialect, k, has_table);
        self.run_ddl(ddl).await?;
        let p = self.p(1, ValueType::Int);
        self.exec(&format!("DELETE FROM entry_constraint_columns WHERE constraint_id = {p}"), &[Value::Int(k.id)])
            .await?;
        let n = self.exec(&format!("DELETE FROM entry_constraints WHERE id = {p}"), &[Value::Int(k.id)]).await?;
        if n == 0 {
            return Err(Error::NotFound(format!("constraint {}", k.name)));
        }
        Ok(())
    }

    async fn insert_entries(&mut self, collection_id: i64, attrs: &[AttrDef], entries: Vec<NewEntry>) -> Result<u64> {
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

    async fn update_entries(&mut self, plan: &UpdatePlan) -> Result<u64> {
        self.writing()?;
        // An inner join with a collection that never had an entry matches nothing.
        if !self.tables_exist(&plan.tables).await? {
            return Ok(0);
        }
        let c = compile_update(self.dialect, plan, now());
        self.exec(&c.sql, &c.params).await
    }

    async fn delete_entries(&mut self, plan: &DeletePlan) -> Result<u64> {
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

    async fn entry_meta(&mut self, collection_id: i64, pattern: &str, lock: bool) -> Result<Vec<EntryMeta>> {
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

    async fn set_entry_meta(
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

    async fn entry_acl(&mut self, collection_id: i64, entry_id: i64) -> Result<Vec<AclEntry>> {
        let rows = self.rows_compiled(&statements::select_entry_acl(self.dialect, collection_id, entry_id)).await?;
        Ok(rows.iter().map(|r| acl_from(r)).collect())
    }

    async fn set_entry_acl(&mut self, collection_id: i64, entry_id: i64, e: &AclEntry) -> Result<()> {
        self.writing()?;
        let c = statements::upsert_entry_acl(self.dialect, collection_id, entry_id, &e.principal, e.is_group, e.rights);
        self.exec_compiled(&c).await.map(|_| ())
    }

    async fn remove_entry_acl(&mut self, collection_id: i64, entry_id: i64, principal: &str) -> Result<u64> {
        self.writing()?;
        self.exec_compiled(&statements::delete_entry_acl(self.dialect, collection_id, entry_id, principal)).await
    }

    async fn select(&mut self, plan: &SelectPlan, tx: RowSender) -> Result<u64> {
        if !self.tables_exist(&plan.tables).await? {
            return Ok(0);
        }
        let c = compile_select(self.dialect, plan);
        // Rows go straight into the service's channel; errors become `Error` through `From`.
        self.conn.stream(&c.sql, &c.params, &c.types, tx).await.map_err(map_err)
    }

    async fn select_few(&mut self, plan: &SelectPlan) -> Result<Vec<Vec<Value>>> {
        if !self.tables_exist(&plan.tables).await? {
            return Ok(Vec::new());
        }
        let c = compile_select(self.dialect, plan);
        self.conn.query_point(&c.sql, &c.params, &c.types).await.map_err(map_err)
    }

    async fn set_acl(&mut self, collection_id: i64, e: &AclEntry) -> Result<()> {
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

    async fn remove_acl(&mut self, collection_id: i64, principal: &str) -> Result<u64> {
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

    async fn create_sequence(&mut self, collection_id: i64, name: &str, increment: i64, start: i64) -> Result<()> {
        self.writing()?;
        let sql = format!(
            "INSERT INTO sequences (collection_id, name, increment, next_value) VALUES ({}, {}, {}, {})",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Int),
            self.p(4, ValueType::Int)
        );
        let params = [Value::Int(collection_id), Value::Text(name.into()), Value::Int(increment), Value::Int(start)];
        self.exec(&sql, &params).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("sequence {name}")),
            e => e,
        })
    }

    async fn next_sequence(&mut self, collection_id: i64, name: &str) -> Result<Option<i64>> {
        self.writing()?;
        // SQLite turns an integer overflow into a float (which the STRICT column then refuses
        // with a message, not a code); its checked addition fails like PostgreSQL's bigint, as
        // an overflow: a sequence at the end of its range is exhausted, not broken.
        let next = match self.dialect {
            Dialect::Sqlite => "ardacat_add(next_value, increment)",
            Dialect::Postgres => "next_value + increment",
        };
        let sql = format!(
            "UPDATE sequences SET next_value = {next} WHERE collection_id = {} AND name = {} \
             RETURNING next_value - increment",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text)
        );
        let rows = self.rows(&sql, &[Value::Int(collection_id), Value::Text(name.into())], &[ValueType::Int]).await?;
        Ok(rows.first().and_then(|r| r.first()).map(int_of))
    }

    async fn remove_sequence(&mut self, collection_id: i64, name: &str) -> Result<bool> {
        self.writing()?;
        let sql = format!(
            "DELETE FROM sequences WHERE collection_id = {} AND name = {}",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text)
        );
        Ok(self.exec(&sql, &[Value::Int(collection_id), Value::Text(name.into())]).await? > 0)
    }

    async fn user(&mut self, name: &str) -> Result<Option<UserRecord>> {
        let sql = format!("SELECT name, password_hash FROM users WHERE name = {}", self.p(1, ValueType::Text));
        let rows = self.rows(&sql, &[Value::Text(name.into())], &[ValueType::Text, ValueType::Text]).await?;
        Ok(rows.into_iter().next().map(|r| UserRecord { name: text_of(&r[0]), password_hash: r[1].to_wire() }))
    }

    async fn user_by_subject(&mut self, subject: &str) -> Result<Option<String>> {
        let sql = format!("SELECT user_name FROM user_subjects WHERE subject = {}", self.p(1, ValueType::Text));
        let rows = self.rows(&sql, &[Value::Text(subject.into())], &[ValueType::Text]).await?;
        Ok(rows.into_iter().next().map(|r| text_of(&r[0])))
    }

    async fn create_user(&mut self, name: &str, password_hash: Option<&str>) -> Result<()> {
        self.writing()?;
        let sql = format!(
            "INSERT INTO users (name, password_hash, created) VALUES ({}, {}, {})",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Timestamp)
        );
        let hash = password_hash.map(|h| Value::Text(h.into())).unwrap_or(Value::Null);
        self.exec(&sql, &[Value::Text(name.into()), hash, now()]).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("user {name}")),
            e => e,
        })
    }

    async fn remove_user(&mut self, name: &str) -> Result<bool> {
        self.writing()?;
        let p = self.p(1, ValueType::Text);
        self.exec(&format!("DELETE FROM group_members WHERE user_name = {p}"), &[Value::Text(name.into())]).await?;
        self.exec(&format!("DELETE FROM acls WHERE principal = {p} AND NOT is_group"), &[Value::Text(name.into())])
            .await?;
        self.exec_compiled(&statements::delete_principal_entry_acls(self.dialect, name, false)).await?;
        Ok(self.exec(&format!("DELETE FROM users WHERE name = {p}"), &[Value::Text(name.into())]).await? > 0)
    }

    async fn set_password(&mut self, name: &str, password_hash: &str) -> Result<bool> {
        self.writing()?;
        let sql = format!(
            "UPDATE users SET password_hash = {} WHERE name = {}",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        Ok(self.exec(&sql, &[Value::Text(password_hash.into()), Value::Text(name.into())]).await? > 0)
    }

    async fn add_subject(&mut self, name: &str, subject: &str) -> Result<()> {
        self.writing()?;
        let sql = format!(
            "INSERT INTO user_subjects (user_name, subject) VALUES ({}, {})",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        self.exec(&sql, &[Value::Text(name.into()), Value::Text(subject.into())]).await.map(|_| ()).map_err(|e| match e
        {
            Error::Exists(_) => Error::Exists(format!("subject {subject}")),
            e => e,
        })
    }

    async fn remove_subject(&mut self, name: &str, subject: &str) -> Result<bool> {
        self.writing()?;
        Ok(self.exec_compiled(&statements::delete_user_subject(self.dialect, name, subject)).await? > 0)
    }

    async fn subjects(&mut self, name: &str) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT subject FROM user_subjects WHERE user_name = {} ORDER BY subject",
            self.p(1, ValueType::Text)
        );
        let rows = self.rows(&sql, &[Value::Text(name.into())], &[ValueType::Text]).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    async fn groups_of(&mut self, user: &str) -> Result<Vec<String>> {
        let sql =
            format!("SELECT grp FROM group_members WHERE user_name = {} ORDER BY grp", self.p(1, ValueType::Text));
        let rows = self.rows(&sql, &[Value::Text(user.into())], &[ValueType::Text]).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    async fn create_group(&mut self, name: &str, owner: &str) -> Result<()> {
        self.writing()?;
        let sql = format!(
            "INSERT INTO user_groups (name, owner) VALUES ({}, {})",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        self.exec(&sql, &[Value::Text(name.into()), Value::Text(owner.into())]).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("group {name}")),
            e => e,
        })
    }

    async fn remove_group(&mut self, name: &str) -> Result<bool> {
        self.writing()?;
        let p = self.p(1, ValueType::Text);
        self.exec(&format!("DELETE FROM group_members WHERE grp = {p}"), &[Value::Text(name.into())]).await?;
        self.exec(&format!("DELETE FROM acls WHERE principal = {p} AND is_group"), &[Value::Text(name.into())]).await?;
        self.exec_compiled(&statements::delete_principal_entry_acls(self.dialect, name, true)).await?;
        Ok(self.exec(&format!("DELETE FROM user_groups WHERE name = {p}"), &[Value::Text(name.into())]).await? > 0)
    }

    async fn add_member(&mut self, group: &str, user: &str) -> Result<()> {
        self.writing()?;
        let sql = format!(
            "INSERT INTO group_members (grp, user_name) VALUES ({}, {}) ON CONFLICT DO NOTHING",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        self.exec(&sql, &[Value::Text(group.into()), Value::Text(user.into())]).await.map(|_| ())
    }

    async fn remove_member(&mut self, group: &str, user: &str) -> Result<bool> {
        self.writing()?;
        let sql = format!(
            "DELETE FROM group_members WHERE grp = {} AND user_name = {}",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        Ok(self.exec(&sql, &[Value::Text(group.into()), Value::Text(user.into())]).await? > 0)
    }

    async fn group_exists(&mut self, name: &str) -> Result<bool> {
        let sql = format!("SELECT name FROM user_groups WHERE name = {}", self.p(1, ValueType::Text));
        Ok(!self.rows(&sql, &[Value::Text(name.into())], &[ValueType::Text]).await?.is_empty())
    }

    async fn user_names(&mut self) -> Result<Vec<String>> {
        let rows = self.rows_compiled(&statements::select_user_names()).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    async fn group_names(&mut self) -> Result<Vec<String>> {
        let rows = self.rows_compiled(&statements::select_group_names()).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    async fn group_members(&mut self, group: &str) -> Result<Vec<String>> {
        let rows = self.rows_compiled(&statements::select_group_members(self.dialect, group)).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    async fn sites(&mut self) -> Result<Vec<SiteRecord>> {
        Ok(self.rows_compiled(&replicas::select_sites()).await?.iter().map(|r| site_from(r)).collect())
    }

    async fn site_by_name(&mut self, name: &str) -> Result<Option<SiteRecord>> {
        let rows = self.rows_compiled(&replicas::select_site_by_name(self.dialect, name)).await?;
        Ok(rows.first().map(|r| site_from(r)))
    }

    async fn site_by_id(&mut self, id: i64) -> Result<Option<SiteRecord>> {
        let rows = self.rows_compiled(&replicas::select_site_by_id(self.dialect, id)).await?;
        Ok(rows.first().map(|r| site_from(r)))
    }

    async fn add_site(&mut self, name: &str, server: &str) -> Result<i64> {
        self.writing()?;
        let rows =
            self.rows_compiled(&replicas::insert_site(self.dialect, name, server)).await.map_err(|e| match e {
                Error::Exists(_) => Error::Exists(format!("site {name}")),
                e => e,
            })?;
        rows.first().and_then(|r| r.first()).map(int_of).ok_or_else(|| Error::Internal("no site id returned".into()))
    }

    async fn remove_site(&mut self, id: i64) -> Result<bool> {
        self.writing()?;
        Ok(self.exec_compiled(&replicas::delete_site(self.dialect, id)).await? > 0)
    }

    async fn site_in_use(&mut self, id: i64) -> Result<bool> {
        Ok(!self.rows_compiled(&replicas::select_site_replica(self.dialect, id)).await?.is_empty())
    }

    async fn replica_owner(&mut self, guid: &str, lock: bool) -> Result<Option<String>> {
        let rows = self.rows_compiled(&replicas::select_replica_owner(self.dialect, guid, lock)).await?;
        Ok(rows.first().map(|r| text_of(&r[0])))
    }

    async fn add_replica_file(&mut self, guid: &str, owner: &str) -> Result<()> {
        self.writing()?;
        self.exec_compiled(&replicas::insert_replica_file(self.dialect, guid, owner)).await.map(|_| ())
    }

    async fn remove_replica_file(&mut self, guid: &str) -> Result<()> {
        self.writing()?;
        for c in replicas::delete_replica_file(self.dialect, guid) {
            self.exec_compiled(&c).await?;
        }
        Ok(())
    }

    async fn replica_sites(&mut self, guid: &str) -> Result<Vec<i64>> {
        let rows = self.rows_compiled(&replicas::select_replica_sites(self.dialect, guid)).await?;
        Ok(rows.iter().map(|r| int_of(&r[0])).collect())
    }

    async fn add_replica(&mut self, guid: &str, site_id: i64) -> Result<()> {
        self.writing()?;
        self.exec_compiled(&replicas::insert_replica(self.dialect, guid, site_id)).await.map(|_| ())
    }

    async fn remove_replica(&mut self, guid: &str, site_id: i64) -> Result<bool> {
        self.writing()?;
        Ok(self.exec_compiled(&replicas::delete_replica(self.dialect, guid, site_id)).await? > 0)
    }

    async fn revoke_token(&mut self, id: &str, expires: i64) -> Result<bool> {
        self.writing()?;
        let purge = format!("DELETE FROM revoked_tokens WHERE expires < {}", self.p(1, ValueType::Int));
        self.exec(&purge, &[Value::Int(Utc::now().timestamp())]).await?;
        let sql = format!(
            "INSERT INTO revoked_tokens (id, expires) VALUES ({}, {}) ON CONFLICT (id) DO NOTHING",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Int)
        );
        Ok(self.exec(&sql, &[Value::Text(id.into()), Value::Int(expires)]).await? > 0)
    }

    async fn is_token_revoked(&mut self, id: &str) -> Result<bool> {
        let sql = format!("SELECT id FROM revoked_tokens WHERE id = {}", self.p(1, ValueType::Text));
        Ok(!self.rows(&sql, &[Value::Text(id.into())], &[ValueType::Text]).await?.is_empty())
    }

    async fn setting(&mut self, key: &str) -> Result<Option<String>> {
        let sql = format!("SELECT value FROM settings WHERE key = {}", self.p(1, ValueType::Text));
        let rows = self.rows(&sql, &[Value::Text(key.into())], &[ValueType::Text]).await?;
        Ok(rows.first().map(|r| text_of(&r[0])))
    }

    async fn init_setting(&mut self, key: &str, value: &str) -> Result<String> {
        self.writing()?;
        let sql = format!(
            "INSERT INTO settings (key, value) VALUES ({}, {}) ON CONFLICT (key) DO NOTHING",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        self.exec(&sql, &[Value::Text(key.into()), Value::Text(value.into())]).await?;
        self.setting(key).await?.ok_or_else(|| Error::Internal(format!("setting {key} vanished")))
    }
}
