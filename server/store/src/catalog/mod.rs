//! The storage port of ardacat-core implemented once over the executor: every catalogue
//! operation becomes SQL from `sql` run through `exec::Conn`, identically for both dialects.
//! This module owns the connection, the schema cache, the row helpers and the one `StoreConn`
//! impl that delegates to the concern modules; it must not hold catalogue operations itself.
//!
//! Concerns: `units` (transactions, write units), `collections`, `attributes`, `tables` (entry
//! tables' lifecycle), `indexes`, `entry_constraints`, `entries`, `acl`, `sequences`,
//! `principals` (users, groups, subjects), `replica_sites`, `settings` (and revoked tokens),
//! `dump` (the listings dump and copy need), `shared` (the change feed between processes, resumable TCP sessions).

mod acl;
mod attributes;
mod collections;
mod dump;
mod entries;
mod entry_constraints;
mod indexes;
mod point_lane;
mod principals;
mod replica_sites;
mod sequences;
mod settings;
mod shared;
mod tables;
mod units;
mod wal;

use ardacat_core::error::{Error, Result};
use ardacat_core::perm::AclEntry;
use ardacat_core::query::Term;
use ardacat_core::query::ast::Expr;
use ardacat_core::store::{
    AttrDef, Attributes, CollectionInfo, ConstraintDef, ConstraintRule, DeletePlan, EntryMeta, EntryMetaChange,
    IndexColumn, IndexDef, NewEntry, RemoteChanges, RowSender, SavedTcpSession, SelectPlan, ShapeId, SiteRecord, Store,
    StoreConn, UpdatePlan, UserRecord,
};
use ardacat_core::types::{AttrType, Value, ValueType};
use chrono::Utc;
use foldhash::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::StoreError;
use crate::exec::{Backend, Conn, Db};
use crate::sql::compile::{attr_column, compile_condition, table_name};
use crate::sql::point::PointCache;
use crate::sql::{
    Compiled, Dialect, attributes as attribute_sql, collections as collection_sql, compile_delete, compile_insert,
    compile_select, compile_update, constraint_rows, constraints, indexes as index_sql, principals as principal_sql,
    replicas, statements, tables as table_sql,
};
pub use point_lane::LaneStats;
use point_lane::PointLane;

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
        StoreError::ReadOnly => Error::ReadOnlyReplica(None),
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
/// process invalidate at once, and on PostgreSQL so do other processes' (`shared`: the change
/// feed); the bound is for a SQLite file shared by several processes.
const SCHEMA_CACHE_TTL: Duration = Duration::from_secs(1);
/// Most paths remembered before the path map starts over.
const SCHEMA_CACHE_PATHS: usize = 50_000;

/// Read-mostly schema facts (collections, attributes, ACLs) that every operation looks up. Reads
/// outside a transaction use it; any change through this process clears it; a transaction that
/// changed the schema clears it again when it ends.
#[derive(Default)]
struct SchemaCache {
    by_path: HashMap<String, (Option<CollectionInfo>, Instant)>,
    attrs: HashMap<i64, (Attributes, Instant)>,
    acls: HashMap<i64, (Vec<AclEntry>, Instant)>,
    /// Whether a collection has any child collection, and since when: a path below one that has
    /// none is not a collection, which answers the lookup of an entry path (`getattr /dir/entry`
    /// asks whether `/dir/entry` is a collection first) without a statement per entry name.
    has_children: HashMap<i64, (bool, Instant)>,
    /// Collections whose entry table is known to exist (committed). A table, once created, stays
    /// until its collection is removed, so this set needs no expiry and survives `clear`.
    tables: HashSet<i64>,
    /// Moves at every `clear`: a fact read before a clear must not be stored after it.
    generation: u64,
}

impl SchemaCache {
    fn fresh<T: Clone>(e: Option<&(T, Instant)>) -> Option<T> {
        e.filter(|(_, t)| t.elapsed() < SCHEMA_CACHE_TTL).map(|(v, _)| v.clone())
    }

    fn clear(&mut self) {
        self.generation += 1;
        self.by_path.clear();
        self.attrs.clear();
        self.acls.clear();
        self.has_children.clear();
    }

    /// The id of `path`'s parent collection when it is cached, and whether that parent has child
    /// collections when that is cached too (a child's path is always its parent's path joined
    /// with its name, so a parent without children means `path` is not a collection).
    fn parent_of(&self, path: &str) -> Option<(i64, Option<bool>)> {
        let (parent, _) = ardacat_core::path::split(path)?;
        let id = match self.by_path.get(parent) {
            Some((Some(info), t)) if t.elapsed() < SCHEMA_CACHE_TTL => info.id,
            _ => return None,
        };
        Some((id, Self::fresh(self.has_children.get(&id))))
    }
}

/// The catalogue's storage: a pool of either backend.
#[derive(Clone)]
pub struct SqlStore {
    db: Db,
    cache: Arc<Mutex<SchemaCache>>,
    feed: Arc<shared::Feed>,
    /// Point-read SQL per plan shape (`sql::point`): a function of the plan alone, so it needs
    /// no clearing when the schema changes.
    point_sql: Arc<Mutex<PointCache>>,
    /// Point reads of one template answered together (PostgreSQL; `point_lane`).
    point_lane: Arc<PointLane<Conn>>,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore").field("db", &self.db).finish()
    }
}

impl SqlStore {
    pub fn new(db: Db) -> Self {
        // SQLite reads alone: a statement there costs no round trip, so a batch saves nothing.
        let limit = match db.backend() {
            Backend::Postgres => db.point_reads_in_flight(),
            Backend::Sqlite => 0,
        };
        SqlStore {
            db,
            cache: Arc::default(),
            feed: Arc::default(),
            point_sql: Arc::default(),
            point_lane: Arc::new(PointLane::new(limit)),
        }
    }

    /// The batch statements point reads have run and the reads they answered (`point_lane`).
    pub fn point_batches(&self) -> LaneStats {
        self.point_lane.stats()
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
            feed: self.feed.clone(),
            schema_changed: false,
            announce: shared::Announce::Nothing,
            unit: None,
            point_sql: self.point_sql.clone(),
            point_lane: self.point_lane.clone(),
        })
    }

    fn backend_name(&self) -> &'static str {
        self.db.backend().name()
    }

    fn remote_changes(&self) -> RemoteChanges {
        self.feed.remote_changes()
    }
}

pub struct SqlConn {
    conn: Conn,
    dialect: Dialect,
    cache: Arc<Mutex<SchemaCache>>,
    feed: Arc<shared::Feed>,
    /// This connection's open transaction changed schema facts: clear the cache when it ends.
    schema_changed: bool,
    /// This connection's open transaction changed what other processes cache: notify at commit.
    announce: shared::Announce,
    /// The write unit open on this connection (`StoreConn::begin_unit`), if any.
    unit: Option<Unit>,
    point_sql: Arc<Mutex<PointCache>>,
    point_lane: Arc<PointLane<Conn>>,
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

    /// Reads inside a transaction may see uncommitted changes: they neither use nor fill the
    /// cache; nor does anyone while the change feed is lost (other processes' changes unseen).
    fn cacheable(&self) -> bool {
        !self.conn.in_transaction() && !self.feed.lost()
    }

    /// The cache generation before a read whose result may be cached ([`Self::cache_fill`]).
    fn cache_generation(&self) -> u64 {
        self.cache().generation
    }

    /// Stores a fact read at `generation` unless the cache was cleared meanwhile (the fact may
    /// predate the change that cleared it).
    fn cache_fill(&self, generation: u64, fill: impl FnOnce(&mut SchemaCache)) {
        let mut cache = self.cache();
        if cache.generation == generation {
            fill(&mut cache);
        }
    }

    /// A schema fact changed: drop everything cached, now and again when the transaction ends.
    fn schema_changed(&mut self) {
        self.announce(false);
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

    async fn point_rows_compiled(&mut self, c: &Compiled) -> Result<Vec<Vec<Value>>> {
        self.point_rows(&c.sql, &c.params, &c.types).await
    }

    async fn batch(&mut self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).await.map_err(map_err)
    }
}

// One `impl StoreConn` block (a trait impl cannot be split); each method is a one-liner into the
// inherent method of the same name in the module of its concern (`SqlConn::x` names the inherent
// one, which takes precedence over the trait method in path resolution).
impl StoreConn for SqlConn {
    async fn begin(&mut self) -> Result<()> {
        SqlConn::begin(self).await
    }

    async fn commit(&mut self) -> Result<()> {
        SqlConn::commit(self).await
    }

    async fn rollback(&mut self) -> Result<()> {
        SqlConn::rollback(self).await
    }

    async fn begin_unit(&mut self) -> Result<()> {
        SqlConn::begin_unit(self).await
    }

    async fn begin_snapshot(&mut self) -> Result<()> {
        SqlConn::begin_snapshot(self).await
    }

    async fn end_snapshot(&mut self) -> Result<()> {
        SqlConn::end_snapshot(self).await
    }

    async fn end_unit(&mut self, ok: bool) -> Result<()> {
        SqlConn::end_unit(self, ok).await
    }

    async fn begin_group(&mut self) -> Result<()> {
        SqlConn::begin_group(self).await
    }

    async fn end_group(&mut self, ok: bool) -> Result<()> {
        SqlConn::end_group(self, ok).await
    }

    async fn collection(&mut self, path: &str) -> Result<Option<CollectionInfo>> {
        SqlConn::collection(self, path).await
    }

    async fn collection_by_id(&mut self, id: i64) -> Result<Option<CollectionInfo>> {
        SqlConn::collection_by_id(self, id).await
    }

    async fn children(&mut self, parent_id: i64) -> Result<Vec<CollectionInfo>> {
        SqlConn::children(self, parent_id).await
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
        SqlConn::create_collection(self, parent_id, path, owner, group, perms, attrs).await
    }

    async fn remove_collection(&mut self, id: i64) -> Result<()> {
        SqlConn::remove_collection(self, id).await
    }

    async fn set_collection_owner(&mut self, id: i64, owner: &str, group: &str) -> Result<()> {
        SqlConn::set_collection_owner(self, id, owner, group).await
    }

    async fn set_collection_perms(&mut self, id: i64, perms: u16) -> Result<()> {
        SqlConn::set_collection_perms(self, id, perms).await
    }

    async fn has_entries(&mut self, id: i64) -> Result<bool> {
        SqlConn::has_entries(self, id).await
    }

    async fn attributes(&mut self, collection_id: i64) -> Result<Attributes> {
        SqlConn::attributes(self, collection_id).await
    }

    async fn acl(&mut self, collection_id: i64) -> Result<Vec<AclEntry>> {
        SqlConn::acl(self, collection_id).await
    }

    async fn add_attribute(
        &mut self,
        collection_id: i64,
        name: &str,
        attr_type: AttrType,
        indexed: bool,
    ) -> Result<AttrDef> {
        SqlConn::add_attribute(self, collection_id, name, attr_type, indexed).await
    }

    async fn remove_attribute(&mut self, collection_id: i64, attr: &AttrDef) -> Result<()> {
        SqlConn::remove_attribute(self, collection_id, attr).await
    }

    async fn indexes(&mut self, collection_id: i64) -> Result<Vec<IndexDef>> {
        SqlConn::indexes(self, collection_id).await
    }

    async fn add_index(&mut self, collection_id: i64, name: &str, columns: &[IndexColumn]) -> Result<IndexDef> {
        SqlConn::add_index(self, collection_id, name, columns).await
    }

    async fn remove_index(&mut self, collection_id: i64, index: &IndexDef) -> Result<()> {
        SqlConn::remove_index(self, collection_id, index).await
    }

    async fn constraints(&mut self, collection_id: i64) -> Result<Vec<ConstraintDef>> {
        SqlConn::constraints(self, collection_id).await
    }

    async fn constraint_by_id(&mut self, id: i64) -> Result<Option<ConstraintDef>> {
        SqlConn::constraint_by_id(self, id).await
    }

    async fn add_constraint(
        &mut self,
        collection_id: i64,
        name: &str,
        rule: &ConstraintRule,
        check: Option<&Expr<Term>>,
        uses: &[i64],
    ) -> Result<ConstraintDef> {
        SqlConn::add_constraint(self, collection_id, name, rule, check, uses).await
    }

    async fn remove_constraint(&mut self, k: &ConstraintDef) -> Result<()> {
        SqlConn::remove_constraint(self, k).await
    }

    async fn insert_entries(&mut self, collection_id: i64, attrs: &[AttrDef], entries: Vec<NewEntry>) -> Result<u64> {
        SqlConn::insert_entries(self, collection_id, attrs, entries).await
    }

    async fn settle_statistics(&mut self, collection_id: i64) -> Result<bool> {
        SqlConn::settle_statistics(self, collection_id).await
    }

    async fn update_entries(&mut self, plan: &UpdatePlan) -> Result<u64> {
        SqlConn::update_entries(self, plan).await
    }

    async fn delete_entries(&mut self, plan: &DeletePlan) -> Result<u64> {
        SqlConn::delete_entries(self, plan).await
    }

    async fn entry_meta(&mut self, collection_id: i64, pattern: &str, lock: bool) -> Result<Vec<EntryMeta>> {
        SqlConn::entry_meta(self, collection_id, pattern, lock).await
    }

    async fn set_entry_meta(
        &mut self,
        collection_id: i64,
        pattern: &str,
        only_owner: Option<&str>,
        change: &EntryMetaChange,
    ) -> Result<u64> {
        SqlConn::set_entry_meta(self, collection_id, pattern, only_owner, change).await
    }

    async fn entry_acl(&mut self, collection_id: i64, entry_id: i64) -> Result<Vec<AclEntry>> {
        SqlConn::entry_acl(self, collection_id, entry_id).await
    }

    async fn set_entry_acl(&mut self, collection_id: i64, entry_id: i64, e: &AclEntry) -> Result<()> {
        SqlConn::set_entry_acl(self, collection_id, entry_id, e).await
    }

    async fn remove_entry_acl(&mut self, collection_id: i64, entry_id: i64, principal: &str) -> Result<u64> {
        SqlConn::remove_entry_acl(self, collection_id, entry_id, principal).await
    }

    async fn select(&mut self, plan: &SelectPlan, tx: RowSender) -> Result<u64> {
        SqlConn::select(self, plan, tx).await
    }

    async fn select_few(&mut self, plan: &SelectPlan, shape: Option<ShapeId>) -> Result<Vec<Vec<Value>>> {
        SqlConn::select_few(self, plan, shape).await
    }

    async fn set_acl(&mut self, collection_id: i64, e: &AclEntry) -> Result<()> {
        SqlConn::set_acl(self, collection_id, e).await
    }

    async fn remove_acl(&mut self, collection_id: i64, principal: &str) -> Result<u64> {
        SqlConn::remove_acl(self, collection_id, principal).await
    }

    async fn create_sequence(&mut self, collection_id: i64, name: &str, increment: i64, start: i64) -> Result<()> {
        SqlConn::create_sequence(self, collection_id, name, increment, start).await
    }

    async fn next_sequence(&mut self, collection_id: i64, name: &str) -> Result<Option<i64>> {
        SqlConn::next_sequence(self, collection_id, name).await
    }

    async fn remove_sequence(&mut self, collection_id: i64, name: &str) -> Result<bool> {
        SqlConn::remove_sequence(self, collection_id, name).await
    }

    async fn user(&mut self, name: &str) -> Result<Option<UserRecord>> {
        SqlConn::user(self, name).await
    }

    async fn user_by_subject(&mut self, subject: &str) -> Result<Option<String>> {
        SqlConn::user_by_subject(self, subject).await
    }

    async fn create_user(&mut self, name: &str, password_hash: Option<&str>) -> Result<()> {
        SqlConn::create_user(self, name, password_hash).await
    }

    async fn remove_user(&mut self, name: &str) -> Result<bool> {
        SqlConn::remove_user(self, name).await
    }

    async fn set_password(&mut self, name: &str, password_hash: &str) -> Result<bool> {
        SqlConn::set_password(self, name, password_hash).await
    }

    async fn set_may_sudo(&mut self, name: &str, may_sudo: bool) -> Result<bool> {
        SqlConn::set_may_sudo(self, name, may_sudo).await
    }

    async fn wal_lsn(&mut self) -> Result<Option<String>> {
        SqlConn::wal_lsn(self).await
    }

    async fn add_subject(&mut self, name: &str, subject: &str) -> Result<()> {
        SqlConn::add_subject(self, name, subject).await
    }

    async fn remove_subject(&mut self, name: &str, subject: &str) -> Result<bool> {
        SqlConn::remove_subject(self, name, subject).await
    }

    async fn subjects(&mut self, name: &str) -> Result<Vec<String>> {
        SqlConn::subjects(self, name).await
    }

    async fn groups_of(&mut self, user: &str) -> Result<Vec<String>> {
        SqlConn::groups_of(self, user).await
    }

    async fn create_group(&mut self, name: &str, owner: &str) -> Result<()> {
        SqlConn::create_group(self, name, owner).await
    }

    async fn remove_group(&mut self, name: &str) -> Result<bool> {
        SqlConn::remove_group(self, name).await
    }

    async fn add_member(&mut self, group: &str, user: &str) -> Result<()> {
        SqlConn::add_member(self, group, user).await
    }

    async fn remove_member(&mut self, group: &str, user: &str) -> Result<bool> {
        SqlConn::remove_member(self, group, user).await
    }

    async fn group_exists(&mut self, name: &str) -> Result<bool> {
        SqlConn::group_exists(self, name).await
    }

    async fn user_names(&mut self) -> Result<Vec<String>> {
        SqlConn::user_names(self).await
    }

    async fn group_names(&mut self) -> Result<Vec<String>> {
        SqlConn::group_names(self).await
    }

    async fn group_members(&mut self, group: &str) -> Result<Vec<String>> {
        SqlConn::group_members(self, group).await
    }

    async fn sites(&mut self) -> Result<Vec<SiteRecord>> {
        SqlConn::sites(self).await
    }

    async fn site_by_name(&mut self, name: &str) -> Result<Option<SiteRecord>> {
        SqlConn::site_by_name(self, name).await
    }

    async fn site_by_id(&mut self, id: i64) -> Result<Option<SiteRecord>> {
        SqlConn::site_by_id(self, id).await
    }

    async fn add_site(&mut self, name: &str, server: &str) -> Result<i64> {
        SqlConn::add_site(self, name, server).await
    }

    async fn remove_site(&mut self, id: i64) -> Result<bool> {
        SqlConn::remove_site(self, id).await
    }

    async fn site_in_use(&mut self, id: i64) -> Result<bool> {
        SqlConn::site_in_use(self, id).await
    }

    async fn replica_owner(&mut self, guid: &str, lock: bool) -> Result<Option<String>> {
        SqlConn::replica_owner(self, guid, lock).await
    }

    async fn add_replica_file(&mut self, guid: &str, owner: &str) -> Result<()> {
        SqlConn::add_replica_file(self, guid, owner).await
    }

    async fn remove_replica_file(&mut self, guid: &str) -> Result<()> {
        SqlConn::remove_replica_file(self, guid).await
    }

    async fn replica_sites(&mut self, guid: &str) -> Result<Vec<i64>> {
        SqlConn::replica_sites(self, guid).await
    }

    async fn add_replica(&mut self, guid: &str, site_id: i64) -> Result<()> {
        SqlConn::add_replica(self, guid, site_id).await
    }

    async fn remove_replica(&mut self, guid: &str, site_id: i64) -> Result<bool> {
        SqlConn::remove_replica(self, guid, site_id).await
    }

    async fn revoke_token(&mut self, id: &str, expires: i64) -> Result<bool> {
        SqlConn::revoke_token(self, id, expires).await
    }

    async fn is_token_revoked(&mut self, id: &str) -> Result<bool> {
        SqlConn::is_token_revoked(self, id).await
    }

    async fn setting(&mut self, key: &str) -> Result<Option<String>> {
        SqlConn::setting(self, key).await
    }

    async fn init_setting(&mut self, key: &str, value: &str) -> Result<String> {
        SqlConn::init_setting(self, key, value).await
    }

    async fn sequences(&mut self, collection_id: i64) -> Result<Vec<ardacat_core::store::SequenceRecord>> {
        SqlConn::sequences(self, collection_id).await
    }

    async fn entry_acls(&mut self, collection_id: i64) -> Result<Vec<(String, AclEntry)>> {
        SqlConn::entry_acls(self, collection_id).await
    }

    async fn groups_with_owners(&mut self) -> Result<Vec<(String, String)>> {
        SqlConn::groups_with_owners(self).await
    }

    async fn settings(&mut self) -> Result<Vec<(String, String)>> {
        SqlConn::settings(self).await
    }

    async fn all_replica_files(&mut self) -> Result<Vec<(String, String)>> {
        SqlConn::all_replica_files(self).await
    }

    async fn all_replicas(&mut self) -> Result<Vec<(String, String)>> {
        SqlConn::all_replicas(self).await
    }

    async fn put_setting(&mut self, key: &str, value: &str) -> Result<()> {
        SqlConn::put_setting(self, key, value).await
    }

    async fn put_tcp_session(
        &mut self,
        id: i64,
        saved: &SavedTcpSession,
        expires: i64,
        now: i64,
        create: bool,
    ) -> Result<bool> {
        SqlConn::put_tcp_session(self, id, saved, expires, now, create).await
    }

    async fn tcp_session(&mut self, id: i64, now: i64) -> Result<Option<(SavedTcpSession, i64)>> {
        SqlConn::tcp_session(self, id, now).await
    }
}

#[cfg(test)]
mod tests;
