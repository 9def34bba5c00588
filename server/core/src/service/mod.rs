//! The catalogue service: the one API both frontends call. It owns sessions, path resolution,
//! permission checks, validation and query planning; it talks to storage only through the
//! `Store` port and must not know any wire syntax or SQL.
//!
//! Operations live in `namespace` (collections, attributes), `indexes` (composite indexes),
//! `constraints` (constraints on entries), `entries` (entries, queries, bulk load), `admin` (users,
//! groups, ACLs, sequences), `replicas` (sites and replicas), `cursor` (resumable positions) and
//! `dump` (dump and restore in the versioned line format).

mod admin;
pub mod composite;
mod constraints;
pub mod cursor;
pub mod dump;
mod entries;
mod indexes;
mod names;
mod namespace;
mod native_sql;
mod replicas;
mod service_account;
pub mod sessions;
mod standby;
mod wire;

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::perm::{Guard, Mode, Principal};
use crate::store::{CollectionInfo, RemoteChanges, Store, StoreConn};

pub use constraints::{ConstraintInfo, NewConstraint};
pub use entries::{NamedValues, PlanSource, QueryPage, SelectSpec};
pub use indexes::{IndexInfo, MAX_INDEX_COLUMNS};
pub use names::Names;
pub use replicas::{MAX_GUID, MAX_SITE_NAME, MAX_SITE_SERVER};
pub use service_account::SERVICE_ACCOUNT_COMMANDS;
pub use standby::{parse_lsn, replica_poll_pauses};
pub use wire::{WireRow, WireScratch, WireText};

/// Defaults and limits of the service.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Mode of new collections (before the caller's choice), e.g. 0o755.
    pub collection_mode: u16,
    /// Mode of new entries, e.g. 0o644.
    pub entry_mode: u16,
    /// Largest number of entries one bulk call may insert.
    pub max_bulk_entries: usize,
    /// Largest number of joined collections in one query.
    pub max_join_tables: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig { collection_mode: 0o755, entry_mode: 0o644, max_bulk_entries: 1_000_000, max_join_tables: 8 }
    }
}

/// How long a live session trusts its group list when no user, group or ACL change went
/// through this process (changes made by another process sharing the database, when the store
/// does not watch them; when it does, this is only a backstop). See [`Catalogue::auth_recheck`].
pub const AUTH_RECHECK: Duration = Duration::from_secs(10);

/// One caller's state: identity, current directory and, inside `transaction`, the pinned
/// connection that holds the open transaction.
pub struct Session<S: Store> {
    pub principal: Principal,
    pub cwd: String,
    tx: Option<S::Conn>,
    /// The catalogue's auth epoch when the principal's groups were last read (0: never), and
    /// when that was. See [`Catalogue::refresh_if_changed`].
    auth_epoch: u64,
    auth_read: Option<Instant>,
    /// The open transaction changed users, groups or ACLs: bump the epoch again at commit.
    auth_dirty: bool,
    /// The service account (`user_may_sudo`) this session logged in as, once it `sudo`ed to
    /// the principal: it may `sudo` again, and audit lines name it.
    service_account: Option<String>,
    /// Read-your-writes on a site replica: the primary's WAL position after this session's last
    /// forwarded write, until the standby has replayed past it (`standby.rs`).
    wait_lsn: Option<String>,
    /// The last `getattr`'s plan, for the next one of the same shape (`entries/get_plan.rs`).
    get_plan: Option<entries::GetPlan>,
    /// Whether a command may leave state for the next one (`get_plan`): not in a session made
    /// for one request ([`Session::for_one_request`]), which has no next one; its plans are lent
    /// from the catalogue's shelf instead (`Inner::shared_plans`).
    keeps_plans: bool,
}

impl<S: Store> Session<S> {
    /// A session whose groups will be re-read before its first command
    /// ([`Catalogue::refresh_if_changed`]).
    pub fn new(principal: Principal) -> Self {
        Session {
            principal,
            cwd: "/".into(),
            tx: None,
            auth_epoch: 0,
            auth_read: None,
            auth_dirty: false,
            service_account: None,
            wait_lsn: None,
            get_plan: None,
            keeps_plans: true,
        }
    }

    /// A session that serves one request (a SOAP call, a web page) and is dropped after it: it
    /// keeps no plan for a next command, but borrows plans from the catalogue's shelf.
    pub fn for_one_request(mut self) -> Self {
        self.keeps_plans = false;
        self
    }

    /// Mark the principal's groups as read at `epoch` ([`Catalogue::auth_epoch`], taken before
    /// they were read), so no refresh is needed until the next user, group or ACL change.
    pub fn with_auth_epoch(mut self, epoch: u64) -> Self {
        self.auth_epoch = epoch;
        self.auth_read = Some(Instant::now());
        self
    }

    pub fn in_transaction(&self) -> bool {
        self.tx.is_some()
    }

    /// The service account acting as the principal (after its `sudo`), for audit lines.
    pub fn service_account(&self) -> Option<&str> {
        self.service_account.as_deref()
    }

    /// Read-your-writes: the next local read waits until the standby replayed past `lsn`
    /// ([`Catalogue::catch_up`]).
    pub fn set_wait_lsn(&mut self, lsn: String) {
        self.wait_lsn = Some(lsn);
    }

    /// The WAL position the session's next local read waits for, if any.
    pub fn wait_lsn(&self) -> Option<&str> {
        self.wait_lsn.as_deref()
    }
}

/// Receives result rows as wire text (`None` = NULL). Returning an error stops the query.
pub trait RowSink: Send {
    fn row(&mut self, row: Vec<Option<String>>) -> impl Future<Output = Result<()>> + Send;

    /// A row of a query plan as the store returned it. The default turns it into owned text
    /// for [`row`](Self::row); a sink that copies the text out anyway (the TCP reply) takes it
    /// here and borrows it ([`WireRow::texts`]) instead of allocating a `String` per value.
    fn wire_row(&mut self, row: WireRow<'_>) -> impl Future<Output = Result<()>> + Send {
        self.row(row.into_texts())
    }

    /// `getattr` found the collection whose entries the rows are (its path), before any row:
    /// a sink that writes full entry paths learns it here instead of asking the catalogue first.
    fn collection(&mut self, _path: &str) {}
}

impl RowSink for Vec<Vec<Option<String>>> {
    async fn row(&mut self, row: Vec<Option<String>>) -> Result<()> {
        self.push(row);
        Ok(())
    }
}

/// A cheap-to-clone handle on the catalogue.
pub struct Catalogue<S: Store> {
    inner: Arc<Inner<S>>,
}

impl<S: Store> Clone for Catalogue<S> {
    fn clone(&self) -> Self {
        Catalogue { inner: self.inner.clone() }
    }
}

struct Inner<S> {
    store: S,
    config: ServiceConfig,
    /// HMAC key for cursor tokens; shared through the database so every process agrees.
    token_key: Vec<u8>,
    /// Bumped by every user, group and ACL change made through this process, so live sessions
    /// and credential caches know to re-read who is in which group. Starts at 1.
    auth_epoch: AtomicU64,
    /// Read-only standby or not (`standby.rs`).
    standby: standby::Standby,
    /// `getattr` plans lent to one-request sessions (`entries/get_plan.rs`).
    shared_plans: entries::SharedPlans,
}

/// A connection for one operation: the session's pinned transaction, or one from the pool.
pub(crate) enum Held<'a, C> {
    Pinned(&'a mut C),
    Pooled(C),
}

impl<C> Deref for Held<'_, C> {
    type Target = C;
    fn deref(&self) -> &C {
        match self {
            Held::Pinned(c) => c,
            Held::Pooled(c) => c,
        }
    }
}

impl<C> DerefMut for Held<'_, C> {
    fn deref_mut(&mut self) -> &mut C {
        match self {
            Held::Pinned(c) => c,
            Held::Pooled(c) => c,
        }
    }
}

impl<S: Store> Catalogue<S> {
    /// Opens the service over a migrated store; loads (or creates) the shared token key.
    pub async fn new(store: S, config: ServiceConfig) -> Result<Self> {
        let mut conn = store.acquire().await?;
        let fresh: [u8; 32] = rand::random();
        let hex: String = fresh.iter().map(|b| format!("{b:02x}")).collect();
        // Read first: a standby cannot write, and its primary created the key long ago.
        let key_hex = match conn.setting("token_key").await? {
            Some(k) => k,
            None => Self::unit(&mut conn, async |c| c.init_setting("token_key", &hex).await).await?,
        };
        let token_key = (0..key_hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(key_hex.get(2 * i..2 * i + 2)?, 16).ok())
            .collect();
        Ok(Catalogue {
            inner: Arc::new(Inner {
                store,
                config,
                token_key,
                auth_epoch: AtomicU64::new(1),
                standby: standby::Standby::default(),
                shared_plans: entries::SharedPlans::default(),
            }),
        })
    }

    pub fn store(&self) -> &S {
        &self.inner.store
    }

    pub fn config(&self) -> &ServiceConfig {
        &self.inner.config
    }

    /// How many `getattr` plans came from `source` since the process started (the
    /// `getattr_plans_total` counter): how often sessions' kept plans and the shared shelf serve.
    pub fn getattr_plans(&self, source: PlanSource) -> u64 {
        self.inner.shared_plans.used(source)
    }

    /// The current auth epoch (see [`Session::with_auth_epoch`]). Read it *before* reading a
    /// principal's groups, so a change in between is not missed. It moves with every change made
    /// through this process and, on a store that watches them, every change another process
    /// announced.
    pub fn auth_epoch(&self) -> u64 {
        let remote = match self.inner.store.remote_changes() {
            RemoteChanges::Live(n) => n,
            RemoteChanges::NotWatched | RemoteChanges::Lost => 0,
        };
        self.inner.auth_epoch.load(Ordering::Acquire).wrapping_add(remote)
    }

    /// How long group lists read at the current epoch may be trusted: [`AUTH_RECHECK`], or not
    /// at all while the store's watch of other processes' changes is lost.
    pub fn auth_recheck(&self) -> Duration {
        match self.inner.store.remote_changes() {
            RemoteChanges::Lost => Duration::ZERO,
            RemoteChanges::NotWatched | RemoteChanges::Live(_) => AUTH_RECHECK,
        }
    }

    /// A user, group or ACL change succeeded in `s`: tell live sessions (now, and again at
    /// commit when it happened inside a transaction, so that nobody re-reads too early).
    pub(crate) fn auth_changed(&self, s: &mut Session<S>) {
        self.inner.auth_epoch.fetch_add(1, Ordering::AcqRel);
        if s.tx.is_some() {
            s.auth_dirty = true;
        }
    }

    pub(crate) async fn conn<'a>(&self, s: &'a mut Session<S>) -> Result<Held<'a, S::Conn>> {
        match s.tx.as_mut() {
            Some(c) => Ok(Held::Pinned(c)),
            None => Ok(Held::Pooled(self.inner.store.acquire().await?)),
        }
    }

    /// After a bulk load (upload, restore) committed into these collections: the database's
    /// first planner statistics of them, so queries right after a load get the plans they will
    /// get later ([`StoreConn::settle_statistics`]). The load is kept whatever happens here: a
    /// failure is logged, not reported.
    pub(crate) async fn settle_statistics(&self, collection_ids: &[i64]) {
        if collection_ids.is_empty() || self.refuse_on_standby().is_err() {
            return;
        }
        let settle = async {
            let mut conn = self.inner.store.acquire().await?;
            for &id in collection_ids {
                if conn.settle_statistics(id).await? {
                    tracing::debug!(collection = id, "gathered the first planner statistics after a bulk load");
                }
            }
            Ok::<_, Error>(())
        };
        if let Err(e) = settle.await {
            tracing::warn!("planner statistics after a bulk load: {e}");
        }
    }

    // ---- the unit of work: the one place where commands meet transactions ----

    /// Runs one command that changes the catalogue as **one atomic unit**: its own transaction,
    /// or a savepoint inside the session's `transaction`. On success the work is kept; on any
    /// error all of it is undone and the user's transaction stays exactly as it was and usable
    /// (issue #20: no command may spoil it). This is the only way to a write: the store refuses
    /// every write outside a unit (see [`StoreConn::begin_unit`]).
    pub(crate) async fn write<T>(
        &self,
        s: &mut Session<S>,
        f: impl AsyncFnOnce(&mut S::Conn) -> Result<T>,
    ) -> Result<T> {
        self.refuse_on_standby()?;
        let mut conn = self.conn(s).await?;
        Self::unit(&mut conn, f).await
    }

    /// Runs one command that only reads. Outside a transaction it runs as is (no extra statement:
    /// the `get` hot path). Inside the user's transaction it runs under a savepoint like a write,
    /// because a statement that fails there (an overflow, a timeout) would otherwise abort the
    /// whole transaction on both backends.
    pub(crate) async fn read<T>(
        &self,
        s: &mut Session<S>,
        f: impl AsyncFnOnce(&mut S::Conn) -> Result<T>,
    ) -> Result<T> {
        match s.tx.as_mut() {
            Some(c) => Self::unit(c, f).await,
            None => f(&mut self.inner.store.acquire().await?).await,
        }
    }

    /// [`Catalogue::read`] for a command that reads many statements and must see one state
    /// (a dump): outside a transaction in a read-only snapshot of its own; inside the user's
    /// transaction as `read` does (that transaction's state: a snapshot on SQLite, each
    /// statement's latest commit on PostgreSQL, which cannot change isolation mid-way).
    pub(crate) async fn read_snapshot<T>(
        &self,
        s: &mut Session<S>,
        f: impl AsyncFnOnce(&mut S::Conn) -> Result<T>,
    ) -> Result<T> {
        if s.tx.is_some() {
            return self.read(s, f).await;
        }
        let mut conn = self.inner.store.acquire().await?;
        conn.begin_snapshot().await?;
        let r = f(&mut conn).await;
        // A failure to end it wins only over success: the reads were done either way.
        let ended = conn.end_snapshot().await;
        let r = r?;
        ended?;
        Ok(r)
    }

    /// The unit itself, on a connection the caller holds (also for the service's own writes
    /// outside any session: the token key, the first root user, revoked tokens).
    pub(crate) async fn unit<T>(conn: &mut S::Conn, f: impl AsyncFnOnce(&mut S::Conn) -> Result<T>) -> Result<T> {
        conn.begin_unit().await?;
        let r = f(conn).await;
        // A failure to end the unit wins: the caller must not believe work was kept.
        conn.end_unit(r.is_ok()).await?;
        match r {
            // The store knows only the broken constraint's id; with the unit undone the
            // connection reads again, so the error can name it.
            Err(Error::ConstraintViolation { id, text }) if text.is_empty() => {
                Err(Error::ConstraintViolation { id, text: constraints::violation_text(conn, id).await? })
            }
            r => r,
        }
    }

    // ---- transactions ----

    pub async fn begin(&self, s: &mut Session<S>) -> Result<()> {
        if s.tx.is_some() {
            return Err(Error::Transaction("a transaction is already in progress".into()));
        }
        let mut c = self.inner.store.acquire().await?;
        c.begin().await?;
        s.tx = Some(c);
        Ok(())
    }

    pub async fn commit(&self, s: &mut Session<S>) -> Result<()> {
        let mut c = s.tx.take().ok_or_else(|| Error::Transaction("no transaction in progress".into()))?;
        let r = c.commit().await;
        if std::mem::take(&mut s.auth_dirty) {
            self.inner.auth_epoch.fetch_add(1, Ordering::AcqRel);
        }
        r
    }

    pub async fn abort(&self, s: &mut Session<S>) -> Result<()> {
        let mut c = s.tx.take().ok_or_else(|| Error::Transaction("no transaction in progress".into()))?;
        if std::mem::take(&mut s.auth_dirty) {
            self.inner.auth_epoch.fetch_add(1, Ordering::AcqRel);
        }
        c.rollback().await
    }

    // ---- helpers shared by the operation modules ----

    pub(crate) async fn must_collection(conn: &mut S::Conn, path: &str) -> Result<CollectionInfo> {
        conn.collection(path).await?.ok_or_else(|| Error::NotFound(path.to_string()))
    }

    /// Checks `need` rights on a collection for the session's principal.
    pub(crate) async fn check(conn: &mut S::Conn, who: &Principal, c: &CollectionInfo, need: u16) -> Result<()> {
        if who.is_root() {
            return Ok(());
        }
        let acl = conn.acl(c.id).await?;
        Guard { owner: &c.owner, group: &c.group, mode: Mode(c.perms), acl: &acl }.check(who, need, &c.path)
    }

    pub(crate) fn is_owner(who: &Principal, c: &CollectionInfo) -> bool {
        who.is_root() || who.user == c.owner
    }
}
