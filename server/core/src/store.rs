//! The storage port: what the catalogue needs from a database, in catalogue terms. Backends
//! (ardacat-store) implement it; this module must not contain SQL or know a dialect.

use std::future::Future;

use tokio::sync::mpsc;

use crate::error::Result;
use crate::perm::{AclEntry, Principal};
use crate::query::{Term, ast};
use crate::types::{AttrType, Value, ValueType};

/// A collection (directory): one row of the collections table, one entry table.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionInfo {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub path: String,
    pub owner: String,
    pub group: String,
    pub perms: u16,
}

/// An attribute (column) of a collection.
#[derive(Debug, Clone, PartialEq)]
pub struct AttrDef {
    pub id: i64,
    pub name: String,
    pub attr_type: AttrType,
    pub indexed: bool,
}

/// A collection's attributes in schema order, shared: the store's schema cache hands out the
/// same list to every reader (a `get` looks them up on every call) instead of a copy of it.
pub type Attributes = std::sync::Arc<[AttrDef]>;

/// One column of a composite index: the entry name or an attribute (by id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexColumn {
    File,
    Attr(i64),
}

/// A composite index of a collection (`index_create`): a name and its columns in index order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub id: i64,
    pub name: String,
    pub columns: Vec<IndexColumn>,
}

/// What a constraint of a collection requires of each of its entries (`constraint_add_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConstraintRule {
    /// The attribute is never NULL.
    NotNull { attr: i64 },
    /// No two entries have the same non-NULL value of the attribute.
    Unique { attr: i64 },
    /// A non-NULL value of `attr` is the value of `column` (an attribute carrying a unique
    /// constraint, or FILE) of some entry of collection `collection`; such an entry cannot be
    /// removed or changed while it is referred to.
    Reference { attr: i64, collection: i64, column: IndexColumn },
    /// The condition (query-language text as given) is not false for any entry.
    Check { condition: String },
}

impl ConstraintRule {
    /// The kind as `constraint_list` shows it and the store records it.
    pub fn kind(&self) -> &'static str {
        match self {
            ConstraintRule::NotNull { .. } => "not_null",
            ConstraintRule::Unique { .. } => "unique",
            ConstraintRule::Reference { .. } => "reference",
            ConstraintRule::Check { .. } => "check",
        }
    }
}

/// A constraint of a collection: its name (unique per collection, case-insensitively) and rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintDef {
    pub id: i64,
    pub collection_id: i64,
    pub name: String,
    pub rule: ConstraintRule,
}

/// A new entry for `insert_entries`: values line up with the `attrs` slice passed beside it.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub name: String,
    pub owner: String,
    pub group: String,
    pub perms: u16,
    pub values: Vec<Value>,
}

/// Entry-level permissions a statement enforces in its own SQL: a row of table `i` takes part
/// (is returned, counted, ordered by, updated or deleted) only if `user` holds every right of
/// `needs[i]` on that entry: owner bits if it owns the entry, group bits if it is in the entry's
/// group, other bits otherwise, widened by the entry's ACL rows for the user or its groups
/// (the rule of [`crate::perm::Guard::rights`]). Root gets no filter at all (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryAccess {
    pub user: String,
    pub groups: Vec<String>,
    /// Rights needed per table of the plan (same index as `tables`); 0 = unchecked.
    pub needs: Vec<u16>,
}

impl EntryAccess {
    /// The filter for `who` needing `needs[i]` on entries of table `i`; `None` for root or when
    /// nothing is needed.
    pub fn new(who: &Principal, needs: Vec<u16>) -> Option<EntryAccess> {
        if who.is_root() || needs.iter().all(|n| *n == 0) {
            return None;
        }
        Some(EntryAccess { user: who.user.clone(), groups: who.groups.clone(), needs })
    }

    /// The rights needed on table `i` (0 if none).
    pub fn need(&self, table: usize) -> u16 {
        self.needs.get(table).copied().unwrap_or(0)
    }
}

/// One entry's permission facts, for decisions about a single named entry (chmod, ACLs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMeta {
    pub id: i64,
    pub name: String,
    pub owner: String,
    pub group: String,
    pub perms: u16,
}

/// What `set_entry_meta` changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryMetaChange {
    pub owner: Option<String>,
    pub group: Option<String>,
    pub perms: Option<u16>,
}

/// A resolved, type-checked read over one or more collections (implicit inner join).
/// Table `i` of the join is `tables[i]`; every `Term` names a table by that index.
#[derive(Debug, Clone)]
pub struct SelectPlan {
    pub tables: Vec<i64>,
    pub columns: Vec<ast::Expr<Term>>,
    pub column_types: Vec<ValueType>,
    pub filter: Option<ast::Expr<Term>>,
    /// Entry-name LIKE patterns (already translated from globs) per table index.
    pub name_patterns: Vec<(usize, String)>,
    /// The user's ORDER BY; the backend appends keys that make the order total (see `order_keys`).
    pub order_by: Vec<ast::OrderItem<Term>>,
    pub distinct: bool,
    pub limit: Option<u64>,
    /// Keyset position: continue strictly after this key (values of `order_keys()`).
    pub after: Option<Vec<Value>>,
    /// Entry permissions enforced inside the statement (`None`: every row, for root and for
    /// internal existence checks).
    pub access: Option<EntryAccess>,
    /// Grouping columns (native SQL `GROUP BY`; column references only, so that both databases
    /// recognise them in the select list). Empty for the query language.
    pub group_by: Vec<ast::Expr<Term>>,
    /// Condition on groups (native SQL `HAVING`); may use aggregates.
    pub having: Option<ast::Expr<Term>>,
    /// Rows skipped before the first one returned (native SQL `OFFSET`).
    pub offset: Option<u64>,
}

/// Names the shape of a point read's plan for the store's statement cache: the service gives
/// one id to plans that are equal in everything but their entry-name patterns (a session's
/// repeated `getattr` of one collection and attribute list, `service::entries::get_plan`), so the
/// store can find the statement by the id instead of comparing the plan field by field. Ids are
/// never reused within a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShapeId(std::num::NonZeroU64);

impl ShapeId {
    /// An id no plan had before.
    pub fn fresh() -> ShapeId {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ShapeId(std::num::NonZeroU64::MIN.saturating_add(n))
    }
}

impl SelectPlan {
    /// A plain read of one collection's entries: `columns` of every row `access` lets through,
    /// unfiltered, unordered, unlimited (set the other fields after).
    pub fn of_collection(
        table: i64,
        columns: Vec<ast::Expr<Term>>,
        column_types: Vec<ValueType>,
        access: Option<EntryAccess>,
    ) -> SelectPlan {
        SelectPlan {
            tables: vec![table],
            columns,
            column_types,
            filter: None,
            name_patterns: Vec::new(),
            order_by: Vec::new(),
            distinct: false,
            limit: None,
            after: None,
            access,
            group_by: Vec::new(),
            having: None,
            offset: None,
        }
    }

    /// Whether rows are groups: a `GROUP BY`, a `HAVING`, or an aggregate in the output or the
    /// order (one group of all rows then).
    pub fn is_grouped(&self) -> bool {
        !self.group_by.is_empty()
            || self.having.is_some()
            || self.columns.iter().any(ast::Expr::has_aggregate)
            || self.order_by.iter().any(|o| o.expr.has_aggregate())
    }

    /// The full sort key of every row: user order, then (for DISTINCT) the output columns, else
    /// (for groups) the grouping columns, else every joined table's entry id (unless the table's
    /// entry name is among the user's keys). Rows are streamed with these keys appended after the
    /// columns, so a cursor position is just the last row's key. A group's key is unique because
    /// its grouping columns are; an aggregate without `GROUP BY` is one row, whose key may be
    /// empty.
    pub fn order_keys(&self) -> Vec<ast::OrderItem<Term>> {
        let mut keys = self.order_by.clone();
        if self.distinct {
            keys.extend(self.columns.iter().map(|c| ast::OrderItem { expr: c.clone(), descending: false }));
        } else if self.is_grouped() {
            keys.extend(self.group_by.iter().map(|c| ast::OrderItem { expr: c.clone(), descending: false }));
        } else {
            // A table whose entry name is already a key needs no id: names are unique in a
            // table. Without the redundant id PostgreSQL can read the name's index in order
            // instead of sorting (or incrementally sorting) the whole result.
            let named = |t: usize| {
                self.order_by.iter().any(|o| {
                    matches!(o.expr, ast::Expr::Ref(Term::Column { table, column: crate::query::Column::File, .. }) if table == t)
                })
            };
            keys.extend((0..self.tables.len()).filter(|t| !named(*t)).map(|t| ast::OrderItem {
                expr: ast::Expr::Ref(Term::Column {
                    table: t,
                    column: crate::query::Column::Id,
                    vtype: ValueType::Int,
                }),
                descending: false,
            }));
        }
        keys
    }

    pub fn key_types(&self) -> Vec<ValueType> {
        self.order_keys().iter().map(|k| crate::query::expr_type(&k.expr)).collect()
    }
}

/// An update-by-query of one collection (table 0 of the join); other tables only filter.
#[derive(Debug, Clone)]
pub struct UpdatePlan {
    pub tables: Vec<i64>,
    pub assignments: Vec<(AttrDef, ast::Expr<Term>)>,
    pub filter: Option<ast::Expr<Term>>,
    pub name_patterns: Vec<(usize, String)>,
    /// Typically WRITE on table 0 and READ on the others: other entries are left alone.
    pub access: Option<EntryAccess>,
}

/// A delete of entries of one collection (table 0), filtered like an update.
#[derive(Debug, Clone)]
pub struct DeletePlan {
    pub tables: Vec<i64>,
    pub filter: Option<ast::Expr<Term>>,
    pub name_patterns: Vec<(usize, String)>,
    pub access: Option<EntryAccess>,
}

/// One site of the replica catalogue (`site_add`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteRecord {
    pub id: i64,
    pub name: String,
    /// Empty when the site was added without one.
    pub server: String,
}

/// One sequence of a collection: the value `sequence_next` hands out next, and its step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceRecord {
    pub name: String,
    pub increment: i64,
    pub next: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UserRecord {
    pub name: String,
    pub password_hash: Option<String>,
    /// A service account that may only `sudo` to non-root users (`user_may_sudo`).
    pub may_sudo: bool,
}

/// Rows streamed by `select`, several per message (never an empty batch): each the plan's
/// columns followed by its order keys. A batch per message keeps the hand-over from the
/// database's thread or cursor to the frontend at one wake-up per batch instead of per row.
pub type RowSender = mpsc::Sender<Result<Vec<Vec<Value>>>>;

/// Row batches a stream's consumer is done with, for a producer to decode its next rows into:
/// a text value read into a spent row reuses that value's buffer. The SQLite stream decodes on
/// its connection's thread and the frontend drops rows on a tokio thread; without this, every
/// text value of every row was allocated on one thread and freed on another (mimalloc's
/// cross-thread free and its collection were ~10 % of a 60-attribute stream's server CPU).
/// Bounded: at most [`spent_rows::MAX_BATCHES`] batches are kept, texts longer than
/// [`spent_rows::MAX_KEPT_TEXT`] bytes are not kept; anything else handed back is dropped.
pub mod spent_rows {
    use std::sync::Mutex;

    use crate::types::Value;

    /// Batches kept at most (a stream's channel holds four; one more is being read into).
    pub const MAX_BATCHES: usize = 4;
    /// A text value's buffer is kept only up to this capacity, so the pool stays small
    /// (4 × 64 rows × 67 values × 256 bytes at the very most).
    pub const MAX_KEPT_TEXT: usize = 256;

    static SPENT: Mutex<Vec<Vec<Vec<Value>>>> = Mutex::new(Vec::new());

    fn pool() -> std::sync::MutexGuard<'static, Vec<Vec<Vec<Value>>>> {
        SPENT.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hands a consumed batch back (its rows are overwritten by a later stream, never read).
    pub fn give(mut batch: Vec<Vec<Value>>) {
        if batch.is_empty() || pool().len() >= MAX_BATCHES {
            return;
        }
        for row in &mut batch {
            for v in row.iter_mut() {
                if matches!(v, Value::Text(s) if s.capacity() > MAX_KEPT_TEXT) {
                    *v = Value::Null;
                }
            }
        }
        // Checked again: another consumer may have filled the pool while this one trimmed.
        let mut pool = pool();
        if pool.len() < MAX_BATCHES {
            pool.push(batch);
        }
    }

    /// A spent batch whose rows may be decoded into, if one was handed back.
    pub fn take() -> Option<Vec<Vec<Value>>> {
        pool().pop()
    }

    /// Rows of a point read kept at most (a `get` reads one).
    pub const MAX_POINT_ROWS: usize = 8;

    thread_local! {
        /// The rows of this thread's last point read, once written out. A point read decodes
        /// and is answered on the request's own thread, so no lock: a 60-attribute `get` read
        /// into the last one's row allocates none of its text values.
        static POINT: std::cell::Cell<Vec<Vec<Value>>> = const { std::cell::Cell::new(Vec::new()) };
    }

    /// Hands back the rows of a point read (`select_few`) once they were written out: the next
    /// point read on this thread decodes into them. Bounded as [`give`] is, and by
    /// [`MAX_POINT_ROWS`].
    pub fn give_point(mut rows: Vec<Vec<Value>>) {
        rows.truncate(MAX_POINT_ROWS);
        for row in &mut rows {
            for v in row.iter_mut() {
                if matches!(v, Value::Text(s) if s.capacity() > MAX_KEPT_TEXT) {
                    *v = Value::Null;
                }
            }
        }
        POINT.with(|p| p.set(rows));
    }

    /// The rows [`give_point`] kept on this thread (empty if none), for a point read to decode
    /// into; every value of them is overwritten, never read.
    pub fn take_point() -> Vec<Vec<Value>> {
        POINT.with(std::cell::Cell::take)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_pool_is_bounded_and_keeps_no_long_text() {
            let long = "x".repeat(MAX_KEPT_TEXT + 1);
            for _ in 0..MAX_BATCHES + 3 {
                give(vec![vec![Value::Text(long.clone()), Value::Text("kept".into()), Value::Int(1)]]);
            }
            give(Vec::new());
            let mut taken = Vec::new();
            while let Some(b) = take() {
                taken.push(b);
            }
            assert_eq!(taken.len(), MAX_BATCHES);
            for b in taken {
                assert_eq!(b, vec![vec![Value::Null, Value::Text("kept".into()), Value::Int(1)]]);
            }
        }

        #[test]
        fn a_point_reads_rows_come_back_on_its_thread_bounded() {
            let long = "x".repeat(MAX_KEPT_TEXT + 1);
            let row = || vec![Value::Text(long.clone()), Value::Text("kept".into()), Value::Int(1)];
            give_point((0..MAX_POINT_ROWS + 2).map(|_| row()).collect());
            // Another thread has its own (none).
            assert!(std::thread::spawn(take_point).join().unwrap().is_empty());
            let rows = take_point();
            assert_eq!(rows.len(), MAX_POINT_ROWS);
            for r in &rows {
                assert_eq!(r, &vec![Value::Null, Value::Text("kept".into()), Value::Int(1)]);
            }
            // Taken once: the next point read starts from nothing.
            assert!(take_point().is_empty());
        }
    }
}

/// A storage backend: a pool of connections.
pub trait Store: Clone + Send + Sync + 'static {
    type Conn: StoreConn;
    fn acquire(&self) -> impl Future<Output = Result<Self::Conn>> + Send;
    /// A short name for logs and metrics (`sqlite`, `postgres`).
    fn backend_name(&self) -> &'static str;
    /// What this process knows of changes to users, groups, ACLs, modes, owners and schema made
    /// by *other* processes sharing the database (PostgreSQL `LISTEN`/`NOTIFY`).
    fn remote_changes(&self) -> RemoteChanges {
        RemoteChanges::NotWatched
    }
}

/// See [`Store::remote_changes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteChanges {
    /// Nobody watches (SQLite, one process): caches expire by time.
    NotWatched,
    /// Watched: the number moves at every change any process announced (and when the watch
    /// came back after a loss); what was read at an earlier number may be stale.
    Live(u64),
    /// The watch is lost: nothing cached may be trusted until it is back.
    Lost,
}

/// One database connection. Every method runs in the connection's current transaction, if any.
///
/// **Write units.** Every method that changes the database (marked *write* below) must run inside
/// a unit opened by [`StoreConn::begin_unit`] and closed by [`StoreConn::end_unit`]; outside one
/// it fails with `Error::Internal` and changes nothing, so a command that forgot its unit fails
/// every test that runs it. The catalogue opens units in exactly one place
/// (`Catalogue::write`/`Catalogue::read`, server/core/src/service/mod.rs).
pub trait StoreConn: Send + 'static {
    /// Opens the user's transaction (`transaction`). Units inside it are savepoints.
    fn begin(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// Commits the user's transaction. A unit still open (its command was cancelled mid-way) is
    /// rolled back first: a command is all or nothing.
    fn commit(&mut self) -> impl Future<Output = Result<()>> + Send;
    fn rollback(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// Opens a read-only snapshot outside any transaction: every read until
    /// [`StoreConn::end_snapshot`] sees one state of the database (a dump). No writes inside.
    fn begin_snapshot(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// Ends the snapshot; a no-op when none is open.
    fn end_snapshot(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// Opens the atomic unit of one command: a savepoint inside the user's transaction, else a
    /// transaction of its own. Units do not nest; a unit left open by a command whose future was
    /// dropped (cancel) is rolled back here before the new one starts.
    fn begin_unit(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// Closes the unit: keeps its work when `ok`, else undoes all of it and leaves the user's
    /// transaction (if any) exactly as it was before the unit, usable.
    fn end_unit(&mut self, ok: bool) -> impl Future<Output = Result<()>> + Send;
    /// Opens a group around several units inside the user's transaction (a savepoint): a
    /// composite operation (`service/composite.rs`) that must be all-or-nothing there. A group
    /// is not a unit: each write inside it still runs in its own unit.
    fn begin_group(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// Closes the innermost group: keeps its work when `ok`, else undoes all of it and leaves
    /// the user's transaction as it was before the group, usable.
    fn end_group(&mut self, ok: bool) -> impl Future<Output = Result<()>> + Send;

    fn collection(&mut self, path: &str) -> impl Future<Output = Result<Option<CollectionInfo>>> + Send;
    fn collection_by_id(&mut self, id: i64) -> impl Future<Output = Result<Option<CollectionInfo>>> + Send;
    /// Direct sub-collections, ordered by name.
    fn children(&mut self, parent_id: i64) -> impl Future<Output = Result<Vec<CollectionInfo>>> + Send;
    /// Creates the row and the entry table with the given attributes.
    fn create_collection(
        &mut self,
        parent_id: i64,
        path: &str,
        owner: &str,
        group: &str,
        perms: u16,
        attrs: &[(String, AttrType, bool)],
    ) -> impl Future<Output = Result<CollectionInfo>> + Send;
    /// Drops the collection, its table, attributes, indexes, constraints, ACLs (its own and its
    /// entries') and sequences. The caller checks emptiness. A collection that a reference
    /// constraint of another collection refers to stays, and the call fails with
    /// `Error::IllegalCommand` naming it.
    fn remove_collection(&mut self, id: i64) -> impl Future<Output = Result<()>> + Send;
    fn set_collection_owner(&mut self, id: i64, owner: &str, group: &str) -> impl Future<Output = Result<()>> + Send;
    fn set_collection_perms(&mut self, id: i64, perms: u16) -> impl Future<Output = Result<()>> + Send;
    fn has_entries(&mut self, id: i64) -> impl Future<Output = Result<bool>> + Send;

    fn attributes(&mut self, collection_id: i64) -> impl Future<Output = Result<Attributes>> + Send;
    fn add_attribute(
        &mut self,
        collection_id: i64,
        name: &str,
        attr_type: AttrType,
        indexed: bool,
    ) -> impl Future<Output = Result<AttrDef>> + Send;
    /// Removes the attribute and its column. An attribute that a composite index or a constraint
    /// uses stays and the call fails with `Error::IllegalCommand` naming the index or constraint
    /// (checked under the same collection lock that `add_index` and `add_constraint` take, so
    /// they cannot race).
    fn remove_attribute(&mut self, collection_id: i64, attr: &AttrDef) -> impl Future<Output = Result<()>> + Send;

    /// The composite indexes of a collection, by name (case-insensitive order).
    fn indexes(&mut self, collection_id: i64) -> impl Future<Output = Result<Vec<IndexDef>>> + Send;
    /// Records a composite index and creates it at once if the entry table exists (else the table
    /// is created with it). A name taken (case-insensitively) fails with `Error::Exists`; an
    /// attribute that is gone by the time the collection is locked with `Error::NoSuchAttribute`.
    fn add_index(
        &mut self,
        collection_id: i64,
        name: &str,
        columns: &[IndexColumn],
    ) -> impl Future<Output = Result<IndexDef>> + Send;
    fn remove_index(&mut self, collection_id: i64, index: &IndexDef) -> impl Future<Output = Result<()>> + Send;

    /// The constraints of a collection, by name (case-insensitive order).
    fn constraints(&mut self, collection_id: i64) -> impl Future<Output = Result<Vec<ConstraintDef>>> + Send;
    /// One constraint by id (to name it in a violation), if it still exists.
    fn constraint_by_id(&mut self, id: i64) -> impl Future<Output = Result<Option<ConstraintDef>>> + Send;
    /// Records a constraint and makes it a database constraint at once if the entry table exists
    /// (else it is created with the table); a reference also needs the referred collection's
    /// table, which is created (empty) if missing. `check` is the resolved condition of a
    /// `Check` rule over table 0 = the collection; `uses` every attribute the rule needs (they
    /// cannot be removed while it exists). Existing entries that break it fail the call with
    /// `Error::ConstraintViolation`; a taken name with `Error::Exists`.
    fn add_constraint(
        &mut self,
        collection_id: i64,
        name: &str,
        rule: &ConstraintRule,
        check: Option<&ast::Expr<Term>>,
        uses: &[i64],
    ) -> impl Future<Output = Result<ConstraintDef>> + Send;
    /// Drops a constraint. A unique constraint that a reference relies on stays, and the call
    /// fails with `Error::IllegalCommand` naming the reference.
    fn remove_constraint(&mut self, constraint: &ConstraintDef) -> impl Future<Output = Result<()>> + Send;

    /// Inserts entries; a name that exists already fails the whole call with `Error::Exists`.
    fn insert_entries(
        &mut self,
        collection_id: i64,
        attrs: &[AttrDef],
        entries: Vec<NewEntry>,
    ) -> impl Future<Output = Result<u64>> + Send;
    /// After a bulk load has committed: gathers the database planner's statistics of the
    /// collection's entries if it has none yet (true when it did; never inside a transaction).
    fn settle_statistics(&mut self, collection_id: i64) -> impl Future<Output = Result<bool>> + Send;
    fn update_entries(&mut self, plan: &UpdatePlan) -> impl Future<Output = Result<u64>> + Send;
    /// Deletes entries and, in the same statement sequence, the ACL rows of deleted entries.
    fn delete_entries(&mut self, plan: &DeletePlan) -> impl Future<Output = Result<u64>> + Send;

    /// The permission facts of the entries of a collection whose names match `pattern` (LIKE
    /// syntax, as in plans), by name; with `lock`, the rows stay locked until the transaction
    /// ends (so an entry cannot vanish under a new ACL row).
    fn entry_meta(
        &mut self,
        collection_id: i64,
        pattern: &str,
        lock: bool,
    ) -> impl Future<Output = Result<Vec<EntryMeta>>> + Send;
    /// Changes owner, group and/or mode of the entries matching `pattern`; with `only_owner`,
    /// only of those owned by that user. Returns how many entries changed.
    fn set_entry_meta(
        &mut self,
        collection_id: i64,
        pattern: &str,
        only_owner: Option<&str>,
        change: &EntryMetaChange,
    ) -> impl Future<Output = Result<u64>> + Send;
    fn entry_acl(&mut self, collection_id: i64, entry_id: i64) -> impl Future<Output = Result<Vec<AclEntry>>> + Send;
    fn set_entry_acl(
        &mut self,
        collection_id: i64,
        entry_id: i64,
        entry: &AclEntry,
    ) -> impl Future<Output = Result<()>> + Send;
    fn remove_entry_acl(
        &mut self,
        collection_id: i64,
        entry_id: i64,
        principal: &str,
    ) -> impl Future<Output = Result<u64>> + Send;
    /// Streams rows into `tx` until done, or until the receiver is dropped (cancel).
    fn select(&mut self, plan: &SelectPlan, tx: RowSender) -> impl Future<Output = Result<u64>> + Send;
    /// Runs a select that can match at most a few rows (one named entry) in one round trip and
    /// returns them whole: no stream, no channel, for the single-entry `get` hot path. `shape`:
    /// the caller promises that every plan it passes with this id is equal to this one but for
    /// its name patterns ([`ShapeId`]); `None` promises nothing.
    fn select_few(
        &mut self,
        plan: &SelectPlan,
        shape: Option<ShapeId>,
    ) -> impl Future<Output = Result<Vec<Vec<Value>>>> + Send;

    fn acl(&mut self, collection_id: i64) -> impl Future<Output = Result<Vec<AclEntry>>> + Send;
    fn set_acl(&mut self, collection_id: i64, entry: &AclEntry) -> impl Future<Output = Result<()>> + Send;
    fn remove_acl(&mut self, collection_id: i64, principal: &str) -> impl Future<Output = Result<u64>> + Send;

    fn create_sequence(
        &mut self,
        collection_id: i64,
        name: &str,
        increment: i64,
        start: i64,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Returns the current value and advances; `None` when there is no such sequence.
    fn next_sequence(&mut self, collection_id: i64, name: &str) -> impl Future<Output = Result<Option<i64>>> + Send;
    fn remove_sequence(&mut self, collection_id: i64, name: &str) -> impl Future<Output = Result<bool>> + Send;

    fn user(&mut self, name: &str) -> impl Future<Output = Result<Option<UserRecord>>> + Send;
    fn user_by_subject(&mut self, subject: &str) -> impl Future<Output = Result<Option<String>>> + Send;
    fn create_user(&mut self, name: &str, password_hash: Option<&str>) -> impl Future<Output = Result<()>> + Send;
    fn remove_user(&mut self, name: &str) -> impl Future<Output = Result<bool>> + Send;
    fn set_password(&mut self, name: &str, password_hash: &str) -> impl Future<Output = Result<bool>> + Send;
    /// Sets or clears a user's service-account privilege; false when there is no such user.
    fn set_may_sudo(&mut self, name: &str, may_sudo: bool) -> impl Future<Output = Result<bool>> + Send;
    /// The database's WAL position as PostgreSQL's `X/Y` text: the current insert position on a
    /// primary, the last replayed one on a standby; `None` where there is no WAL (SQLite).
    fn wal_lsn(&mut self) -> impl Future<Output = Result<Option<String>>> + Send;
    fn add_subject(&mut self, name: &str, subject: &str) -> impl Future<Output = Result<()>> + Send;
    /// Removes one certificate subject of a user; false when the user has no such subject.
    fn remove_subject(&mut self, name: &str, subject: &str) -> impl Future<Output = Result<bool>> + Send;
    fn subjects(&mut self, name: &str) -> impl Future<Output = Result<Vec<String>>> + Send;
    fn groups_of(&mut self, user: &str) -> impl Future<Output = Result<Vec<String>>> + Send;
    fn create_group(&mut self, name: &str, owner: &str) -> impl Future<Output = Result<()>> + Send;
    fn remove_group(&mut self, name: &str) -> impl Future<Output = Result<bool>> + Send;
    fn add_member(&mut self, group: &str, user: &str) -> impl Future<Output = Result<()>> + Send;
    fn remove_member(&mut self, group: &str, user: &str) -> impl Future<Output = Result<bool>> + Send;
    fn group_exists(&mut self, name: &str) -> impl Future<Output = Result<bool>> + Send;
    /// Every user name, sorted.
    fn user_names(&mut self) -> impl Future<Output = Result<Vec<String>>> + Send;
    /// Every group name, sorted.
    fn group_names(&mut self) -> impl Future<Output = Result<Vec<String>>> + Send;
    /// The members of one group, sorted (empty for a missing group).
    fn group_members(&mut self, group: &str) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Every site, by id.
    fn sites(&mut self) -> impl Future<Output = Result<Vec<SiteRecord>>> + Send;
    fn site_by_name(&mut self, name: &str) -> impl Future<Output = Result<Option<SiteRecord>>> + Send;
    fn site_by_id(&mut self, id: i64) -> impl Future<Output = Result<Option<SiteRecord>>> + Send;
    /// *Write.* Returns the new site's id.
    fn add_site(&mut self, name: &str, server: &str) -> impl Future<Output = Result<i64>> + Send;
    /// *Write.* The caller checked that no replica is at the site.
    fn remove_site(&mut self, id: i64) -> impl Future<Output = Result<bool>> + Send;
    /// Whether any replica is at the site.
    fn site_in_use(&mut self, id: i64) -> impl Future<Output = Result<bool>> + Send;
    /// The user who registered a GUID; `None` when the GUID has no record. With `lock`, the
    /// record stays locked until the surrounding write unit ends.
    fn replica_owner(&mut self, guid: &str, lock: bool) -> impl Future<Output = Result<Option<String>>> + Send;
    /// *Write.*
    fn add_replica_file(&mut self, guid: &str, owner: &str) -> impl Future<Output = Result<()>> + Send;
    /// *Write.* With its replicas.
    fn remove_replica_file(&mut self, guid: &str) -> impl Future<Output = Result<()>> + Send;
    /// The ids of the sites holding a GUID, ascending.
    fn replica_sites(&mut self, guid: &str) -> impl Future<Output = Result<Vec<i64>>> + Send;
    /// *Write.* The caller checked that the replica is not registered yet.
    fn add_replica(&mut self, guid: &str, site_id: i64) -> impl Future<Output = Result<()>> + Send;
    /// *Write.* False when there was no such replica.
    fn remove_replica(&mut self, guid: &str, site_id: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Marks a query token as ended; `expires` (unix seconds) says when the row may be purged.
    /// Returns `false` when the token was ended already (nothing changes then).
    fn revoke_token(&mut self, id: &str, expires: i64) -> impl Future<Output = Result<bool>> + Send;
    fn is_token_revoked(&mut self, id: &str) -> impl Future<Output = Result<bool>> + Send;

    fn setting(&mut self, key: &str) -> impl Future<Output = Result<Option<String>>> + Send;
    /// Sets a setting only if it is not set yet; returns the value that is stored afterwards.
    fn init_setting(&mut self, key: &str, value: &str) -> impl Future<Output = Result<String>> + Send;

    // ---- dump and copy (service/dump.rs) ----

    /// The sequences of a collection, by name (byte order).
    fn sequences(&mut self, collection_id: i64) -> impl Future<Output = Result<Vec<SequenceRecord>>> + Send;
    /// Every entry ACL row of a collection with its entry's name, by name, then users before
    /// groups, then principal (byte order).
    fn entry_acls(&mut self, collection_id: i64) -> impl Future<Output = Result<Vec<(String, AclEntry)>>> + Send;
    /// Every group with its owner, by name (byte order).
    fn groups_with_owners(&mut self) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;
    /// Every replica file `(guid, owner)`, by guid (byte order).
    fn all_replica_files(&mut self) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;
    /// Every replica `(guid, site name)`, by guid, then site name (byte order).
    fn all_replicas(&mut self) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;
    /// Every setting `(key, value)`, by key (byte order).
    fn settings(&mut self) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;
    /// *Write.* Sets a setting, replacing any value it had (the offline `copy`).
    fn put_setting(&mut self, key: &str, value: &str) -> impl Future<Output = Result<()>> + Send;
    /// *Write.* Stores a resumable TCP session's state until `expires` (unix seconds), and
    /// forgets the sessions that expired before `now`. With `create` only a new id is stored
    /// (false: the id is taken); without, the session's row is replaced.
    fn put_tcp_session(
        &mut self,
        id: i64,
        saved: &SavedTcpSession,
        expires: i64,
        now: i64,
        create: bool,
    ) -> impl Future<Output = Result<bool>> + Send;
    /// A TCP session that has not expired at `now`, with its expiry.
    fn tcp_session(&mut self, id: i64, now: i64)
    -> impl Future<Output = Result<Option<(SavedTcpSession, i64)>>> + Send;
}

/// What a resumable TCP session keeps between connections (its groups are re-read on resume).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedTcpSession {
    pub user: String,
    pub cwd: String,
    pub escape: bool,
}
