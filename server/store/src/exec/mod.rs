//! The low-level database executor: a pool of connections to SQLite (rusqlite on dedicated
//! threads) or PostgreSQL (sqlx), running SQL text the dialect modules produce, binding
//! [`Value`]s and decoding rows by the [`ValueType`]s the caller expects.
//!
//! No catalogue logic and no query compilation live here. What this layer guarantees, on both
//! backends alike:
//!
//! - **Placeholders** are `$1..$n` on PostgreSQL and `?1..?n` on SQLite. Every value is bound,
//!   never spliced into the text. The SQL string itself is trusted (it comes from our own dialect
//!   modules); it is wrapped in `sqlx::AssertSqlSafe` in exactly one place (`postgres::sql`).
//! - **Binding**: Int → i64, Float → f64, Text → text, Bool → bool (SQLite: 0/1), Timestamp →
//!   PostgreSQL `timestamp` / SQLite text `types::timestamp_sort_key`, Null → SQLite NULL /
//!   PostgreSQL a NULL. On PostgreSQL a parameter's type is what the server infers from the SQL
//!   text (`col = $1`, `VALUES ($1)` into a column, `$1::int8`; `SELECT $1` alone is text), never
//!   what the first value bound to it happened to be, and each value is encoded as that type
//!   (an Int where a float8 is expected is sent as float8; a Text where an int8 is expected is an
//!   error). Where the context gives no type (`$1 IS NULL`) or the wrong one, the SQL must cast.
//! - **Decoding** is driven by the caller's `types` (one per result column, else
//!   [`StoreError::Decode`]); a mismatch is a `Decode` error with the column index, never a panic.
//! - **Transactions**: [`Conn::begin`] / [`Conn::commit`] / [`Conn::rollback`]; one level, no
//!   nesting. SQLite uses `BEGIN IMMEDIATE`. A statement that fails inside a transaction *aborts*
//!   it on both backends (PostgreSQL's rule, enforced for SQLite too so that the two agree): later
//!   statements fail with [`StoreError::Database`] and `commit` rolls back and returns an error.
//!   Decode errors are raised on our side and do not abort. [`Conn::savepoint`] /
//!   [`Conn::rollback_to_savepoint`] / [`Conn::release_savepoint`] let one operation fail inside
//!   a transaction without spoiling it. Dropping a [`Conn`] with an open transaction rolls it
//!   back.
//! - **Streaming**: [`Conn::stream`] moves rows from the database cursor into a bounded channel
//!   as they are read, in batches ([`RowBatch`]: up to [`ROW_BATCH`] rows, fewer when the next
//!   row is not at hand at once — see `Batcher`), so the hand-over between the database and
//!   the frontend costs one wake-up per batch, not per row; a slow consumer slows the query,
//!   memory stays flat, and dropping the receiver stops the query promptly (see the backend
//!   modules for what happens to the connection).

/// Rows streamed in one channel message; never empty.
pub type RowBatch = Vec<Vec<Value>>;

/// Rows in one [`RowBatch`] at most.
pub const ROW_BATCH: usize = 64;

/// A batch being filled goes out when it is full or when this long has passed since the last
/// one went, so rows that trickle in (a filter matching now and then in a long scan) are not
/// held back for long. Rows read just before the database goes quiet (a long scan after the
/// last match) do not wait for the next row either: SQLite's progress handler sends a batch
/// this old, and PostgreSQL's cursor sends what it has before it waits on the network.
pub const BATCH_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

/// The batching rule of a stream, shared by both backends.
pub(crate) struct Batcher {
    rows: RowBatch,
    since: std::time::Instant,
}

impl Batcher {
    pub(crate) fn new() -> Batcher {
        Batcher { rows: Vec::with_capacity(ROW_BATCH), since: std::time::Instant::now() }
    }

    /// Add a row; `Some(batch)` when the batch should go now.
    pub(crate) fn push(&mut self, row: Vec<Value>) -> Option<RowBatch> {
        self.rows.push(row);
        if self.rows.len() >= ROW_BATCH || self.since.elapsed() >= BATCH_WAIT { self.take() } else { None }
    }

    /// The rows not yet sent if they have waited [`BATCH_WAIT`] (the database is busy
    /// elsewhere).
    pub(crate) fn take_stale(&mut self) -> Option<RowBatch> {
        if self.rows.is_empty() || self.since.elapsed() < BATCH_WAIT { None } else { self.take() }
    }

    /// The rows not yet sent, if any.
    pub(crate) fn take(&mut self) -> Option<RowBatch> {
        self.since = std::time::Instant::now();
        if self.rows.is_empty() {
            return None;
        }
        Some(std::mem::replace(&mut self.rows, Vec::with_capacity(ROW_BATCH)))
    }
}

pub mod health;
pub mod migrate;
mod postgres;
mod sqlite;
pub(crate) mod sqlite_math;
pub mod standby;

use crate::error::StoreError;
use ardacat_core::types::{Value, ValueType};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// Which database engine a [`Db`] talks to. The dialect modules pick SQL text by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The folder name under `schema-migrations/`, also handy in logs.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// Pool and connection settings.
#[derive(Debug, Clone)]
pub struct DbOptions {
    /// Number of pooled connections. `0` (the default) picks the backend's default: 8 for
    /// PostgreSQL, 4 for SQLite (each SQLite connection is one dedicated thread). SQLite opens
    /// one more connection, reserved for writes and transactions, that is not counted here nor
    /// in [`PoolStats`].
    pub pool_size: usize,
    /// How long [`Db::acquire`] waits for a free connection before [`StoreError::PoolTimeout`].
    pub acquire_timeout: Duration,
    /// How long a statement waits for a lock before [`StoreError::Busy`]: SQLite's
    /// `busy_timeout` (and the wait for the in-process write gate), PostgreSQL's `lock_timeout`.
    pub busy_timeout: Duration,
    /// Prepared statements cached per connection (rusqlite `prepare_cached` capacity, sqlx
    /// `statement_cache_capacity`).
    pub statement_cache: usize,
    /// Longest time one statement may run before it is cancelled with [`StoreError::Timeout`]
    /// (zero: no limit). PostgreSQL: the session's `statement_timeout`; SQLite: a deadline that
    /// the connection's progress handler checks every few thousand VM steps. The time counts
    /// from the start of the statement to its end, so a streamed result that its consumer reads
    /// slowly counts too. Migrations run without it.
    pub statement_timeout: Duration,
    /// SQLite page cache per connection, in KiB (`PRAGMA cache_size = -N`). SQLite's default of
    /// 2 MiB makes random point reads of a 10k-entry collection re-read pages from the OS.
    pub sqlite_cache_kib: u32,
    /// SQLite file only: this process alone may open the file while the server runs (SQLite's
    /// `unix-excl` VFS: one exclusive lock taken at the first read and held, the WAL index in
    /// this process's memory). Every read transaction then skips the two `fcntl` locks on the
    /// `-shm` file and the mutex held across them that shared access costs (rounds 8 and 12 of
    /// docs/benchmarks.md). Another process — the `sqlite3` shell, a second server — cannot
    /// read or write the file meanwhile.
    pub sqlite_exclusive: bool,
    /// PostgreSQL: point reads (a `get` of one entry) of one shape run at most this many
    /// statements at once; the reads that arrive meanwhile are answered together by the next
    /// one (`t0.file IN (…)`, up to 32 names: `catalog::point_lane`). 0: every point read runs
    /// its own statement. SQLite reads alone (no round trip to save).
    pub point_reads_in_flight: usize,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            pool_size: 0,
            acquire_timeout: Duration::from_secs(10),
            busy_timeout: Duration::from_secs(5),
            statement_cache: 256,
            statement_timeout: Duration::ZERO,
            sqlite_cache_kib: 16 * 1024,
            sqlite_exclusive: false,
            point_reads_in_flight: DEFAULT_POINT_READS_IN_FLIGHT,
        }
    }
}

/// [`DbOptions::point_reads_in_flight`] by default.
pub const DEFAULT_POINT_READS_IN_FLIGHT: usize = 2;

impl DbOptions {
    /// `pool_size` with `0` replaced by the backend's default.
    pub fn effective_pool_size(&self, backend: Backend) -> usize {
        match (self.pool_size, backend) {
            (0, Backend::Postgres) => 8,
            (0, Backend::Sqlite) => 4,
            (n, _) => n,
        }
    }
}

/// A snapshot of a pool's occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Connections currently open.
    pub size: usize,
    /// Open connections waiting in the pool.
    pub idle: usize,
    /// Connections handed out as [`Conn`]s.
    pub in_use: usize,
}

/// How requests waited for pooled connections: the queue in front of the pool.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AcquireStats {
    /// Connections handed out (or refused) so far.
    pub acquires: u64,
    /// Requests waiting for a connection now.
    pub waiting: u64,
    /// Seconds spent waiting, summed over every acquire.
    pub wait_seconds: f64,
    /// Requests that gave up after `acquire_timeout` ([`StoreError::PoolTimeout`]).
    pub timeouts: u64,
}

#[derive(Default)]
struct AcquireCounters {
    acquires: AtomicU64,
    waiting: AtomicU64,
    wait_micros: AtomicU64,
    timeouts: AtomicU64,
}

/// One request counted as waiting for a connection until dropped (also when the waiting request
/// is cancelled).
struct Waiter<'a>(&'a AtomicU64);

impl<'a> Waiter<'a> {
    fn new(waiting: &'a AtomicU64) -> Self {
        waiting.fetch_add(1, Ordering::Relaxed);
        Waiter(waiting)
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection pool. Cheap to clone; all clones share the pool.
#[derive(Clone)]
pub struct Db {
    inner: DbInner,
    queue: Arc<AcquireCounters>,
    point_reads_in_flight: usize,
}

#[derive(Clone)]
enum DbInner {
    Sqlite(Arc<sqlite::Pool>),
    Postgres(postgres::Pool),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("backend", &self.backend()).field("pool", &self.pool_stats()).finish()
    }
}

impl Db {
    /// Open a pool.
    ///
    /// - `sqlite:PATH` (or `sqlite://PATH`): a database file, created if missing, in WAL mode.
    /// - `sqlite::memory:`: a private in-memory database shared by all connections of this `Db`
    ///   (and of nothing else); it lives as long as the `Db`.
    /// - `postgres://…` / `postgresql://…`: a PostgreSQL server; one connection is made at once
    ///   so that a bad URL or an unreachable server fails here.
    pub async fn open(url: &str, opts: DbOptions) -> Result<Db, StoreError> {
        let point_reads_in_flight = opts.point_reads_in_flight;
        let inner = if let Some(rest) = url.strip_prefix("sqlite:") {
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            if rest.is_empty() {
                return Err(StoreError::Config(format!("no database path in '{url}'")));
            }
            let target = if rest == ":memory:" { sqlite::Target::Memory } else { sqlite::Target::File(rest.into()) };
            DbInner::Sqlite(Arc::new(sqlite::Pool::open(target, opts).await?))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            DbInner::Postgres(postgres::Pool::open(url, opts).await?)
        } else {
            return Err(StoreError::Config(format!(
                "unsupported database url '{}' (expected sqlite:PATH, sqlite::memory: or postgres://…)",
                redact(url)
            )));
        };
        Ok(Db { inner, queue: Arc::default(), point_reads_in_flight })
    }

    pub fn backend(&self) -> Backend {
        match self.inner {
            DbInner::Sqlite(_) => Backend::Sqlite,
            DbInner::Postgres(_) => Backend::Postgres,
        }
    }

    /// [`DbOptions::point_reads_in_flight`] as opened.
    pub fn point_reads_in_flight(&self) -> usize {
        self.point_reads_in_flight
    }

    /// The PostgreSQL pool of the one `LISTEN` connection, apart from the statement pool;
    /// `None` on SQLite.
    pub(crate) fn pg_listen_pool(&self) -> Option<sqlx::PgPool> {
        match &self.inner {
            DbInner::Sqlite(_) => None,
            DbInner::Postgres(p) => Some(p.listen_pool()),
        }
    }

    /// One pooled connection; it goes back to the pool when dropped. Waits at most
    /// `acquire_timeout`, then fails with [`StoreError::PoolTimeout`].
    pub async fn acquire(&self) -> Result<Conn, StoreError> {
        let q = &self.queue;
        let started = std::time::Instant::now();
        let waiter = Waiter::new(&q.waiting);
        let inner = match &self.inner {
            DbInner::Sqlite(p) => sqlite::Pool::acquire(p).await.map(ConnInner::Sqlite),
            DbInner::Postgres(p) => p.acquire().await.map(ConnInner::Postgres),
        };
        drop(waiter);
        q.acquires.fetch_add(1, Ordering::Relaxed);
        q.wait_micros.fetch_add(started.elapsed().as_micros().min(u64::MAX as u128) as u64, Ordering::Relaxed);
        if matches!(inner, Err(StoreError::PoolTimeout)) {
            q.timeouts.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Conn { inner: inner?, tx_failed: false, savepoints: 0 })
    }

    /// The queue in front of the pool: acquires, waiters now, time waited, timeouts.
    pub fn acquire_stats(&self) -> AcquireStats {
        let q = &self.queue;
        AcquireStats {
            acquires: q.acquires.load(Ordering::Relaxed),
            waiting: q.waiting.load(Ordering::Relaxed),
            wait_seconds: q.wait_micros.load(Ordering::Relaxed) as f64 / 1e6,
            timeouts: q.timeouts.load(Ordering::Relaxed),
        }
    }

    /// Apply the embedded `schema-migrations/<dialect>/` files that this database lacks, in
    /// version order, each in its own transaction. See [`migrate`].
    pub async fn migrate(&self) -> Result<(), StoreError> {
        migrate::run(self).await
    }

    pub fn pool_stats(&self) -> PoolStats {
        match &self.inner {
            DbInner::Sqlite(p) => p.stats(),
            DbInner::Postgres(p) => p.stats(),
        }
    }

    /// Close the pool: later `acquire` calls fail with [`StoreError::Closed`]; connections in
    /// use are closed when their `Conn` is dropped.
    pub async fn close(&self) {
        match &self.inner {
            DbInner::Sqlite(p) => p.close(),
            DbInner::Postgres(p) => p.close().await,
        }
    }
}

/// A small number naming the calling OS thread (0 is never handed out). Both pools prefer to
/// give a thread the connection it gave back last: a connection's buffers, statement cache
/// and (SQLite) page cache then stay in the caches of the core that uses them instead of
/// moving between the runtime's threads with every request (docs/benchmarks.md, round 14).
fn thread_slot() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    thread_local!(static SLOT: u32 = NEXT.fetch_add(1, Ordering::Relaxed));
    // `u32` has no destructor, so the slot outlives every other thread-local; 0 just in case.
    SLOT.try_with(|s| *s).unwrap_or(0)
}

/// From a pool's idle connections (the most recently given back last), the most recent one the
/// calling thread gave back, else the most recent of all. `given_back_by` reads a connection's
/// [`thread_slot`] tag.
fn take_for_this_thread<C>(idle: &mut Vec<C>, given_back_by: impl Fn(&C) -> u32) -> Option<C> {
    let me = thread_slot();
    match idle.iter().rposition(|c| given_back_by(c) == me) {
        Some(at) => Some(idle.remove(at)),
        None => idle.pop(),
    }
}

/// Hide the password of a URL in messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

/// One pooled connection. Returned to the pool on drop; an open transaction is rolled back.
pub struct Conn {
    inner: ConnInner,
    /// A statement failed inside the open transaction: it is aborted (see the module docs)
    /// until it is rolled back, or rolled back to a savepoint.
    tx_failed: bool,
    /// Savepoints currently set (`ardacat_sp1` … `ardacat_spN`).
    savepoints: usize,
}

enum ConnInner {
    Sqlite(sqlite::Conn),
    Postgres(postgres::Conn),
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("backend", &self.backend())
            .field("in_transaction", &self.in_transaction())
            .finish()
    }
}

const TX_ABORTED: &str = "current transaction is aborted, commands ignored until end of transaction block";

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match &mut $self.inner {
            ConnInner::Sqlite($c) => $e,
            ConnInner::Postgres($c) => $e,
        }
    };
}

impl Conn {
    pub fn backend(&self) -> Backend {
        match self.inner {
            ConnInner::Sqlite(_) => Backend::Sqlite,
            ConnInner::Postgres(_) => Backend::Postgres,
        }
    }

    /// PostgreSQL, outside a transaction, with nothing unread and no session state: the
    /// database connection goes back to the pool now and the next statement takes one again
    /// (a point read about to wait for others' statement: `catalog::point_lane`). Otherwise, and
    /// on SQLite, nothing happens.
    pub fn release(&mut self) {
        if let ConnInner::Postgres(c) = &mut self.inner
            && !self.tx_failed
            && self.savepoints == 0
        {
            c.release();
        }
    }

    /// Under [`Conn::release`]'s conditions: this connection's database connection moved into a
    /// new `Conn`, this one taking another at its next statement; else `None`.
    pub fn hand_over(&mut self) -> Option<Conn> {
        match &mut self.inner {
            ConnInner::Postgres(c) if !self.tx_failed && self.savepoints == 0 => {
                Some(Conn { inner: ConnInner::Postgres(c.hand_over()?), tx_failed: false, savepoints: 0 })
            }
            _ => None,
        }
    }

    /// Takes `other`'s database connection (from [`Conn::hand_over`]) in place of this one's,
    /// which goes back to the pool. Where this one cannot give its own back, `other` is dropped
    /// (its connection goes back instead).
    pub fn take_over(&mut self, other: Conn) {
        if let (ConnInner::Postgres(c), ConnInner::Postgres(o)) = (&mut self.inner, other.inner)
            && !self.tx_failed
            && self.savepoints == 0
        {
            c.take_over(o);
        }
    }

    pub fn in_transaction(&self) -> bool {
        match &self.inner {
            ConnInner::Sqlite(c) => c.in_transaction(),
            ConnInner::Postgres(c) => c.in_transaction(),
        }
    }

    /// Refuse statements inside an aborted transaction (PostgreSQL's behaviour, on both).
    fn check_tx(&self) -> Result<(), StoreError> {
        if self.tx_failed && self.in_transaction() {
            return Err(StoreError::Database(TX_ABORTED.into()));
        }
        Ok(())
    }

    /// Note a statement's failure: it aborts the open transaction.
    fn note<T>(&mut self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        if let Err(e) = &r
            && e.aborts_transaction()
            && self.in_transaction()
        {
            self.tx_failed = true;
        }
        r
    }

    /// Run one statement; returns the number of rows it inserted, updated or deleted (for a
    /// statement that returns rows: the rows changed, or for a plain query the rows returned).
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        self.check_tx()?;
        let r = dispatch!(self, c => c.execute(sql, params).await);
        self.note(r)
    }

    /// Run a query and collect all rows, each decoded by `types`. For small results; use
    /// [`Conn::stream`] for anything that may be large.
    pub async fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        self.check_tx()?;
        let r = dispatch!(self, c => c.query(sql, params, types).await);
        self.note(r)
    }

    /// [`Conn::query`] for a read that touches a handful of rows through an index (one named
    /// entry). SQLite runs it on the calling thread when its connection thread is idle — no
    /// thread hop, the difference that matters for single-entry `get` — and falls back to the
    /// thread for a statement that writes. PostgreSQL: the same as `query`.
    pub async fn query_point(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        self.query_point_into(sql, params, types, Vec::new()).await
    }

    /// [`query_point`](Self::query_point) decoding into `reuse`'s rows, whose values are
    /// overwritten, never read (a text value into an old one keeps its buffer): a `get` hands
    /// in the rows of the last one (`ardacat_core::store::spent_rows::take_point`).
    pub async fn query_point_into(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
        reuse: Vec<Vec<Value>>,
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        self.check_tx()?;
        let r = match &mut self.inner {
            ConnInner::Sqlite(c) => c.query_point(sql, params, types, reuse).await,
            ConnInner::Postgres(c) => c.query_into(sql, params, types, reuse).await,
        };
        self.note(r)
    }

    /// Run a query and send its rows into `tx` as they are read from the database, in batches
    /// (module docs). Returns the number of rows sent. If the receiver is dropped the query is
    /// stopped promptly and the call returns `Ok(rows sent so far)`. An error is also sent into the channel (when the
    /// receiver still listens) so that the consumer sees the stream did not end cleanly.
    pub async fn stream<E: From<StoreError> + Send + 'static>(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
        tx: mpsc::Sender<Result<RowBatch, E>>,
    ) -> Result<u64, StoreError> {
        if let Err(e) = self.check_tx() {
            let _ = tx.send(Err(E::from(e.clone()))).await;
            return Err(e);
        }
        let r = dispatch!(self, c => c.stream(sql, params, types, tx).await);
        self.note(r)
    }

    /// Run several `;`-separated statements without parameters (DDL, migrations).
    pub async fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.check_tx()?;
        let r = dispatch!(self, c => c.execute_batch(sql).await);
        self.note(r)
    }

    /// Run one prepared statement once per row of parameters (bulk insert); returns the total
    /// of rows affected. Runs inside the caller's transaction when one is open; otherwise in a
    /// transaction of its own, so that either every row or none is applied.
    pub async fn execute_many(&mut self, sql: &str, rows: Vec<Vec<Value>>) -> Result<u64, StoreError> {
        self.check_tx()?;
        if rows.is_empty() {
            return Ok(0);
        }
        let own_tx = !self.in_transaction();
        if own_tx {
            self.begin().await?;
        }
        let r = dispatch!(self, c => c.execute_many(sql, rows).await);
        let r = self.note(r);
        if own_tx {
            match &r {
                Ok(_) => self.commit().await?,
                Err(_) => {
                    let _ = self.rollback().await;
                }
            }
        }
        r
    }

    /// Open a transaction (SQLite: `BEGIN IMMEDIATE`, which takes the write lock up front so
    /// that two writers never deadlock upgrading a read lock). Nesting is an error.
    pub async fn begin(&mut self) -> Result<(), StoreError> {
        if self.in_transaction() {
            return Err(StoreError::Database("a transaction is already open on this connection".into()));
        }
        self.tx_failed = false;
        self.savepoints = 0;
        dispatch!(self, c => c.begin().await)
    }

    /// Open a read-only snapshot: every statement until [`Conn::end_snapshot`] sees the one
    /// state of the database of the first (a dump). SQLite: a deferred read transaction on the
    /// connection's own pooled connection; PostgreSQL: `REPEATABLE READ READ ONLY`. Not inside
    /// a transaction; no writes inside it.
    pub async fn begin_snapshot(&mut self) -> Result<(), StoreError> {
        if self.in_transaction() {
            return Err(StoreError::Database("a transaction is already open on this connection".into()));
        }
        dispatch!(self, c => c.begin_snapshot().await)
    }

    /// End the snapshot of [`Conn::begin_snapshot`]; a no-op when none is open.
    pub async fn end_snapshot(&mut self) -> Result<(), StoreError> {
        self.tx_failed = false;
        self.savepoints = 0;
        match &mut self.inner {
            ConnInner::Sqlite(c) => c.end_snapshot().await,
            ConnInner::Postgres(c) if c.in_transaction() => c.rollback().await,
            ConnInner::Postgres(_) => Ok(()),
        }
    }

    /// Commit the open transaction. If a statement failed inside it, the transaction is rolled
    /// back instead and an error is returned. Committing with no open transaction is an error.
    pub async fn commit(&mut self) -> Result<(), StoreError> {
        if !self.in_transaction() {
            return Err(StoreError::Database("commit without an open transaction".into()));
        }
        if self.tx_failed {
            self.rollback().await?;
            return Err(StoreError::Database(format!("transaction rolled back: {TX_ABORTED}")));
        }
        self.savepoints = 0;
        dispatch!(self, c => c.commit().await)
    }

    /// Roll back the open transaction; a no-op when none is open.
    pub async fn rollback(&mut self) -> Result<(), StoreError> {
        self.tx_failed = false;
        self.savepoints = 0;
        if !self.in_transaction() {
            return Ok(());
        }
        dispatch!(self, c => c.rollback().await)
    }

    /// Set a savepoint inside the open transaction (`SAVEPOINT`), so that one operation can fail
    /// without spoiling the caller's transaction. Savepoints nest; each `savepoint` is ended by
    /// one `release_savepoint`. Outside a transaction this is an error on both backends.
    pub async fn savepoint(&mut self) -> Result<(), StoreError> {
        if !self.in_transaction() {
            return Err(StoreError::Database("SAVEPOINT can only be used in a transaction".into()));
        }
        self.check_tx()?;
        let name = savepoint_name(self.savepoints + 1);
        let r = dispatch!(self, c => c.execute_batch(&format!("SAVEPOINT {name}")).await);
        self.note(r)?;
        self.savepoints += 1;
        Ok(())
    }

    /// Keep the work done since the innermost savepoint and forget the savepoint
    /// (`RELEASE SAVEPOINT`). Fails, like any statement, if the transaction is aborted: roll back
    /// to the savepoint first.
    pub async fn release_savepoint(&mut self) -> Result<(), StoreError> {
        self.check_savepoint()?;
        self.check_tx()?;
        let name = savepoint_name(self.savepoints);
        let r = dispatch!(self, c => c.execute_batch(&format!("RELEASE SAVEPOINT {name}")).await);
        self.note(r)?;
        self.savepoints -= 1;
        Ok(())
    }

    /// Undo the work done since the innermost savepoint (`ROLLBACK TO SAVEPOINT`); this also
    /// clears a failure that happened after it. The savepoint stays set: release it next.
    pub async fn rollback_to_savepoint(&mut self) -> Result<(), StoreError> {
        self.check_savepoint()?;
        let name = savepoint_name(self.savepoints);
        let r = dispatch!(self, c => c.execute_batch(&format!("ROLLBACK TO SAVEPOINT {name}")).await);
        self.note(r)?;
        self.tx_failed = false;
        Ok(())
    }

    fn check_savepoint(&mut self) -> Result<(), StoreError> {
        if !self.in_transaction() {
            self.savepoints = 0;
        }
        if self.savepoints == 0 {
            return Err(StoreError::Database("no savepoint is set on this connection".into()));
        }
        Ok(())
    }

    /// Make sure this connection is closed rather than returned to the pool when dropped
    /// (used while it holds session state such as an advisory lock).
    pub(crate) fn set_discard_on_drop(&mut self, discard: bool) {
        if let ConnInner::Postgres(c) = &mut self.inner {
            c.set_discard_on_drop(discard);
        }
    }

    /// SQLite: run this connection's statements without `DbOptions::statement_timeout`
    /// (migrations). PostgreSQL callers set the session's `statement_timeout` themselves.
    pub(crate) fn set_unlimited(&mut self, unlimited: bool) {
        if let ConnInner::Sqlite(c) = &mut self.inner {
            c.set_unlimited(unlimited);
        }
    }
}

fn savepoint_name(depth: usize) -> String {
    format!("ardacat_sp{depth}")
}

/// Checks shared by both backends.
fn check_types(columns: usize, types: &[ValueType]) -> Result<(), StoreError> {
    if columns != types.len() {
        return Err(StoreError::decode(
            columns.min(types.len()),
            format!("the statement returns {columns} columns but {} types were given", types.len()),
        ));
    }
    Ok(())
}

fn type_name(t: ValueType) -> &'static str {
    match t {
        ValueType::Int => "int",
        ValueType::Float => "float",
        ValueType::Text => "text",
        ValueType::Timestamp => "timestamp",
        ValueType::Bool => "bool",
    }
}
