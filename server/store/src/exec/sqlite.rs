//! SQLite backend: rusqlite connections, each owned by a dedicated OS thread.
//!
//! # Threads
//! SQLite calls block (disk I/O, fsync, lock waits), so they never run on tokio's worker threads.
//! Each pooled connection is a `std::thread` that owns one `rusqlite::Connection` and runs boxed
//! jobs it receives over a channel, one at a time, answering through a oneshot. A [`Conn`] is the
//! exclusive right to submit jobs to one such thread until it is dropped. Jobs are queued in
//! order, so the rollback job a dropping `Conn` enqueues always runs before the next user's jobs.
//!
//! One exception: [`Conn::query_point`] (a read of one named entry) runs on the caller's thread
//! when the connection thread has nothing queued or running and the statement is read-only. A
//! point read through an index takes microseconds, less than the two thread switches of a job,
//! and WAL readers do not wait for writers; everything else (writes, commits with their fsync,
//! scans, streams) stays on the connection thread.
//!
//! # Pool: N equal connections plus an in-process write gate
//! The API has a single `acquire()` and a `Conn` does not say up front whether it will write, so
//! the pool is N equal connections (default 4) rather than "one writer + readers". Writers are
//! serialized two ways:
//! - inside the process by an async *write gate* (a `tokio::sync::Mutex`): `begin()` holds it until
//!   commit/rollback, and `execute`/`execute_batch` outside a transaction hold it for the
//!   statement. Waiting writers queue fairly in async land (bounded by `busy_timeout`, then
//!   [`StoreError::Busy`]) instead of spinning in SQLite's busy handler;
//! - against other processes by `BEGIN IMMEDIATE` (the write lock is taken up front, so two
//!   writers can never deadlock upgrading read locks) plus SQLite's `busy_timeout`.
//!
//! A write transaction also moves to the connection that ran the previous one when that one is
//! idle (`Conn::take_writer_connection`): in WAL mode a connection drops its page cache whenever
//! another connection committed, so writers alternating over the pool re-read everything they
//! scan (update-by-query on SQLite fell 3.7x at two writers before this).
//!
//! Readers never wait for the gate: in WAL mode they read a snapshot while a writer works.
//! (`query`/`stream` of a data-changing statement such as `INSERT … RETURNING` outside a
//! transaction skips the gate and relies on `busy_timeout`.)
//!
//! # Connection setup
//! `journal_mode=WAL` (file databases), `synchronous=FULL` (a commit is on disk before it is
//! acknowledged: nothing committed is lost on kill -9 or power loss), `foreign_keys=ON`,
//! `case_sensitive_like=ON` (LIKE behaves as on PostgreSQL), `busy_timeout`, and a
//! `prepare_cached` LRU of `statement_cache` statements, and a page cache of `sqlite_cache_kib`.
//!
//! # In-memory databases
//! `sqlite::memory:` opens `file:/ardacat-mem-<pid>-<n>?vfs=memdb`: SQLite's memdb VFS shares a
//! database whose name starts with `/` among all connections of the process that open that name,
//! with ordinary (rollback-journal) locking, so `busy_timeout` works (the shared-cache mode would
//! fail with `SQLITE_LOCKED` at once). The name is unique per `Db`, so the database is private to
//! it and lives while its connections do. Without WAL a long reader blocks a writer's commit.
//!
//! # Streams
//! `stream` runs the row loop on the connection's thread and hands rows to `blocking_send` on the
//! bounded channel: a slow consumer blocks the loop, so SQLite reads no further ahead than the
//! channel's capacity. A progress handler checks whether the receiver is gone while SQLite works
//! between rows (a sort, a long scan), so a dropped receiver stops even a query that has not
//! produced its first row. The connection is clean afterwards (the statement is reset) and stays
//! usable.
//!
//! # Statement time limit
//! Every connection keeps a progress handler that checks a per-connection deadline every
//! [`PROGRESS_OPS`] VM steps. A job submitted through [`Conn`] arms the deadline with
//! `DbOptions::statement_timeout` when it starts and the worker disarms it when the job ends;
//! past it, SQLite interrupts the statement (`SQLITE_INTERRUPT` → [`StoreError::Timeout`]). A
//! stream's handler checks the same deadline besides its receiver. Interrupting a write inside
//! an explicit transaction rolls the transaction back (SQLite's rule), which the executor
//! reports as an aborted transaction, as on PostgreSQL.

use super::{Backend, DbOptions, PoolStats, check_types, type_name};
use crate::error::StoreError;
use ardacat_core::types::{Value, ValueType, parse_timestamp, timestamp_sort_key};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags, Statement, ToSql};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc as std_mpsc};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

/// Where the database lives.
pub(crate) enum Target {
    File(PathBuf),
    Memory,
}

/// Number of SQLite VM instructions between two checks for a vanished stream receiver.
const PROGRESS_OPS: i32 = 1000;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// When the statement now running on one connection must stop (see the module docs).
struct Deadline {
    epoch: Instant,
    /// Milliseconds after `epoch`; `u64::MAX`: no limit.
    at_ms: AtomicU64,
}

impl Deadline {
    fn new() -> Deadline {
        Deadline { epoch: Instant::now(), at_ms: AtomicU64::new(u64::MAX) }
    }

    fn arm(&self, limit: Duration) {
        let at = if limit.is_zero() {
            u64::MAX
        } else {
            u64::try_from((self.epoch.elapsed() + limit).as_millis()).unwrap_or(u64::MAX)
        };
        self.at_ms.store(at, Ordering::Relaxed);
    }

    fn disarm(&self) {
        self.at_ms.store(u64::MAX, Ordering::Relaxed);
    }

    fn expired(&self) -> bool {
        let at = self.at_ms.load(Ordering::Relaxed);
        at != u64::MAX && self.epoch.elapsed().as_millis() >= u128::from(at)
    }
}

/// The connection's standing progress handler: interrupt once the deadline has passed.
fn watch_deadline(conn: &Connection, deadline: &Arc<Deadline>) {
    let d = deadline.clone();
    if let Err(e) = conn.progress_handler(PROGRESS_OPS, Some(move || d.expired())) {
        tracing::warn!("cannot install the SQLite progress handler: {e}");
    }
}

/// The sending end of one connection thread's job queue.
struct Worker {
    jobs: std_mpsc::Sender<Job>,
    deadline: Arc<Deadline>,
    /// The connection itself. The thread locks it for each job; `Conn::query_point` locks it
    /// on the caller's thread when no job is queued or running (`pending == 0`).
    conn: Arc<Mutex<Connection>>,
    /// Jobs sent to the thread and not finished yet (decremented under the connection lock).
    pending: Arc<AtomicUsize>,
    /// Which pool connection this is (`Pool::writer`).
    index: usize,
}

impl Worker {
    fn send(&self, job: Job) -> Result<(), StoreError> {
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.jobs.send(job).map_err(|_| {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            StoreError::Closed
        })
    }
}

pub(crate) struct Pool {
    idle: Mutex<Vec<Worker>>,
    /// The connection that ran the last write transaction. In WAL mode a connection throws its
    /// page cache away whenever *another* connection committed since its last transaction, so
    /// writers alternating over the pool would each re-read what they scan from the OS; `begin`
    /// trades its connection for this one when it is idle, keeping the writer's cache warm.
    writer: AtomicUsize,
    /// One permit per idle worker; taking a permit guarantees a worker in `idle`.
    permits: Arc<Semaphore>,
    size: usize,
    write_gate: Arc<tokio::sync::Mutex<()>>,
    acquire_timeout: Duration,
    busy_timeout: Duration,
    statement_timeout: Duration,
    closed: AtomicBool,
}

static MEMORY_DB_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Pool {
    pub(crate) async fn open(target: Target, opts: DbOptions) -> Result<Pool, StoreError> {
        let size = opts.effective_pool_size(Backend::Sqlite).max(1);
        let (path, flags, file) = match target {
            Target::File(p) => (
                p,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                true,
            ),
            Target::Memory => {
                let n = MEMORY_DB_COUNTER.fetch_add(1, Ordering::Relaxed);
                (
                    PathBuf::from(format!("file:/ardacat-mem-{}-{n}?vfs=memdb", std::process::id())),
                    OpenFlags::SQLITE_OPEN_READ_WRITE
                        | OpenFlags::SQLITE_OPEN_CREATE
                        | OpenFlags::SQLITE_OPEN_URI
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    false,
                )
            }
        };
        // Opened one after the other: the first switches a new file to WAL before others read it.
        let mut workers = Vec::with_capacity(size);
        for i in 0..size {
            workers.push(spawn_worker(i, path.clone(), flags, file, &opts).await?);
        }
        Ok(Pool {
            idle: Mutex::new(workers),
            writer: AtomicUsize::new(0),
            permits: Arc::new(Semaphore::new(size)),
            size,
            write_gate: Arc::new(tokio::sync::Mutex::new(())),
            acquire_timeout: opts.acquire_timeout,
            busy_timeout: opts.busy_timeout,
            statement_timeout: opts.statement_timeout,
            closed: AtomicBool::new(false),
        })
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Worker>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) async fn acquire(pool: &Arc<Pool>) -> Result<Conn, StoreError> {
        let permit = match tokio::time::timeout(pool.acquire_timeout, pool.permits.clone().acquire_owned()).await {
            Err(_) => return Err(StoreError::PoolTimeout),
            Ok(Err(_)) => return Err(StoreError::Closed),
            Ok(Ok(p)) => p,
        };
        let worker = pool.idle().pop().ok_or(StoreError::Closed)?;
        Ok(Conn {
            worker: Some(worker),
            permit: Some(permit),
            pool: pool.clone(),
            gate: None,
            in_tx: false,
            may_be_in_tx: false,
            unlimited: false,
        })
    }

    pub(crate) fn stats(&self) -> PoolStats {
        let idle = self.idle().len();
        let size = if self.closed.load(Ordering::Relaxed) { 0 } else { self.size };
        PoolStats { size, idle, in_use: size.saturating_sub(idle) }
    }

    /// Stop handing out connections and let the idle threads finish (their connection closes,
    /// checkpointing the WAL). Connections in use end when their `Conn` is dropped.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.permits.close();
        self.idle().clear();
    }
}

async fn spawn_worker(
    index: usize,
    path: PathBuf,
    flags: OpenFlags,
    file: bool,
    opts: &DbOptions,
) -> Result<Worker, StoreError> {
    let (jobs, queue) = std_mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = oneshot::channel();
    let (busy, cache, cache_kib) = (opts.busy_timeout, opts.statement_cache, opts.sqlite_cache_kib);
    let deadline = Arc::new(Deadline::new());
    let watch = deadline.clone();
    let pending = Arc::new(AtomicUsize::new(0));
    let done = pending.clone();
    std::thread::Builder::new()
        .name(format!("ardacat-sqlite-{index}"))
        .spawn(move || {
            let conn = match open_connection(&path, flags, file, busy, cache, cache_kib) {
                Ok(c) => c,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            watch_deadline(&conn, &watch);
            let shared = Arc::new(Mutex::new(conn));
            let _ = ready_tx.send(Ok(shared.clone()));
            while let Ok(job) = queue.recv() {
                // A panic is caught inside the guard's scope, so the lock is never poisoned.
                let mut conn = shared.lock().unwrap_or_else(|p| p.into_inner());
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut conn)));
                watch.disarm();
                if outcome.is_err() {
                    tracing::error!("a SQLite job panicked; rolling back its connection");
                    watch_deadline(&conn, &watch);
                    if !conn.is_autocommit() {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                }
                done.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .map_err(|e| StoreError::Database(format!("cannot start a SQLite thread: {e}")))?;
    let conn = ready_rx.await.map_err(|_| StoreError::Closed)??;
    Ok(Worker { jobs, deadline, conn, pending, index })
}

fn open_connection(
    path: &std::path::Path,
    flags: OpenFlags,
    file: bool,
    busy: Duration,
    cache: usize,
    cache_kib: u32,
) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Config(format!("cannot open SQLite database {}: {e}", path.display())))?;
    conn.busy_timeout(busy)?;
    conn.set_prepared_statement_cache_capacity(cache);
    if file {
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Config(format!(
                "cannot switch {} to WAL mode (journal_mode is {mode})",
                path.display()
            )));
        }
    }
    conn.execute_batch(&format!(
        "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA case_sensitive_like=ON; PRAGMA cache_size=-{cache_kib};"
    ))?;
    Ok(conn)
}

/// One pooled SQLite connection (the right to use one connection thread).
pub(crate) struct Conn {
    worker: Option<Worker>,
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<Pool>,
    /// The write gate, held from `begin` to `commit`/`rollback`.
    gate: Option<OwnedMutexGuard<()>>,
    in_tx: bool,
    /// A transaction may be open on the connection (a `begin` or a batch ran since the last
    /// clean end): only then does `drop` queue the rollback job. Point reads skip that extra
    /// round trip to the connection thread.
    may_be_in_tx: bool,
    /// Jobs run without the statement deadline (migrations).
    unlimited: bool,
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            if !self.may_be_in_tx {
                if !self.pool.closed.load(Ordering::SeqCst) {
                    self.pool.idle().push(worker);
                }
                drop(self.permit.take());
                return;
            }
            // Whatever happened (an open transaction, a cancelled `begin`), leave the connection
            // in autocommit mode for the next user. The gate is released only after the rollback.
            let gate = self.gate.take();
            let cleanup: Job = Box::new(move |conn| {
                if !conn.is_autocommit()
                    && let Err(e) = conn.execute_batch("ROLLBACK")
                {
                    tracing::warn!("rollback of a dropped SQLite connection failed: {e}");
                }
                drop(gate);
            });
            if worker.send(cleanup).is_ok() && !self.pool.closed.load(Ordering::SeqCst) {
                self.pool.idle().push(worker);
            }
        }
        // Released after the worker is back in `idle`, keeping permits <= idle workers.
        drop(self.permit.take());
    }
}

impl Conn {
    pub(crate) fn in_transaction(&self) -> bool {
        self.in_tx
    }

    pub(crate) fn set_unlimited(&mut self, unlimited: bool) {
        self.unlimited = unlimited;
    }

    /// Run `f` on the connection's thread and wait for its answer. The statement deadline is
    /// armed when the job starts (not when it is queued); the worker disarms it afterwards.
    async fn run<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let worker = self.worker.as_ref().ok_or(StoreError::Closed)?;
        let (tx, rx) = oneshot::channel();
        let limit = if self.unlimited { Duration::ZERO } else { self.pool.statement_timeout };
        let deadline = worker.deadline.clone();
        let job: Job = Box::new(move |conn| {
            deadline.arm(limit);
            let _ = tx.send(f(conn));
        });
        worker.send(job)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// The write gate, for a write outside an explicit transaction (none needed inside one).
    async fn gate_for_write(&self) -> Result<Option<OwnedMutexGuard<()>>, StoreError> {
        if self.in_tx {
            return Ok(None);
        }
        self.lock_gate().await.map(Some)
    }

    async fn lock_gate(&self) -> Result<OwnedMutexGuard<()>, StoreError> {
        let gate = self.pool.write_gate.clone();
        tokio::time::timeout(self.pool.busy_timeout, gate.lock_owned()).await.map_err(|_| StoreError::Busy)
    }

    pub(crate) async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        let gate = self.gate_for_write().await?;
        let (sql, params) = (sql.to_owned(), params.to_vec());
        self.run(move |conn| {
            let r = prepare(conn, &sql).and_then(|mut st| {
                bind(&mut st, &params)?;
                run_bound(conn, &mut st)
            });
            drop(gate);
            r
        })
        .await
    }

    pub(crate) async fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        let (sql, params, types) = (sql.to_owned(), params.to_vec(), types.to_vec());
        self.run(move |conn| {
            let mut st = prepare(conn, &sql)?;
            check_types(st.column_count(), &types)?;
            bind(&mut st, &params)?;
            let mut rows = st.raw_query();
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(decode_row(row, &types)?);
            }
            Ok(out)
        })
        .await
    }

    /// `query` on the calling thread when the connection thread has nothing queued or running
    /// (so no job of this `Conn`, nor the previous owner's rollback, is overtaken) and the
    /// statement only reads. A point read costs a few microseconds, less than the two thread
    /// switches of a job; WAL readers do not wait for writers. Anything else goes to the thread.
    pub(crate) async fn query_point(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        if let Some(r) = self.try_inline_read(sql, params, types) {
            return r;
        }
        self.query(sql, params, types).await
    }

    fn try_inline_read(
        &self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
    ) -> Option<Result<Vec<Vec<Value>>, StoreError>> {
        let worker = self.worker.as_ref()?;
        if worker.pending.load(Ordering::SeqCst) != 0 {
            return None;
        }
        let conn = worker.conn.try_lock().ok()?;
        let mut st = match prepare(&conn, sql) {
            Ok(st) => st,
            Err(e) => return Some(Err(e)),
        };
        if !st.readonly() {
            return None;
        }
        let limit = if self.unlimited { Duration::ZERO } else { self.pool.statement_timeout };
        worker.deadline.arm(limit);
        let r = (|| {
            check_types(st.column_count(), types)?;
            bind(&mut st, params)?;
            let mut rows = st.raw_query();
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(decode_row(row, types)?);
            }
            Ok(out)
        })();
        worker.deadline.disarm();
        Some(r)
    }

    pub(crate) async fn stream<E: From<StoreError> + Send + 'static>(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
        tx: mpsc::Sender<Result<Vec<Value>, E>>,
    ) -> Result<u64, StoreError> {
        let (sql, params, types) = (sql.to_owned(), params.to_vec(), types.to_vec());
        let err_tx = tx.clone();
        let deadline = self.worker.as_ref().map(|w| w.deadline.clone()).ok_or(StoreError::Closed)?;
        let r = self.run(move |conn| stream_rows(conn, &sql, &params, &types, tx, &deadline)).await;
        if let Err(e) = &r {
            // Errors raised on the thread were sent there already; this covers `Closed`.
            if matches!(e, StoreError::Closed) {
                let _ = err_tx.send(Err(E::from(e.clone()))).await;
            }
        }
        r
    }

    pub(crate) async fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        let gate = self.gate_for_write().await?;
        // A batch may hold its own BEGIN.
        self.may_be_in_tx = true;
        let sql = sql.to_owned();
        self.run(move |conn| {
            let r = conn.execute_batch(&sql).map_err(StoreError::from);
            drop(gate);
            r
        })
        .await
    }

    pub(crate) async fn execute_many(&mut self, sql: &str, rows: Vec<Vec<Value>>) -> Result<u64, StoreError> {
        let gate = self.gate_for_write().await?;
        let sql = sql.to_owned();
        self.run(move |conn| {
            let r = (|| {
                let mut st = prepare(conn, &sql)?;
                let mut total = 0;
                for row in &rows {
                    bind(&mut st, row)?;
                    total += run_bound(conn, &mut st)?;
                }
                Ok(total)
            })();
            drop(gate);
            r
        })
        .await
    }

    /// Under the write gate: swap this `Conn`'s connection for the last writer's if that one
    /// is idle and ours has nothing queued (so no job of ours is left behind on it). The idle
    /// list keeps its length, so the permits still match it.
    fn take_writer_connection(&mut self) {
        let Some(mine) = self.worker.as_mut() else { return };
        let writer = self.pool.writer.load(Ordering::Relaxed);
        if mine.index != writer && mine.pending.load(Ordering::SeqCst) == 0 {
            let mut idle = self.pool.idle();
            if let Some(w) = idle.iter_mut().find(|w| w.index == writer) {
                std::mem::swap(w, mine);
            }
        }
        self.pool.writer.store(mine.index, Ordering::Relaxed);
    }

    pub(crate) async fn begin(&mut self) -> Result<(), StoreError> {
        let gate = self.lock_gate().await?;
        self.take_writer_connection();
        self.may_be_in_tx = true;
        self.run(|conn| conn.execute_batch("BEGIN IMMEDIATE").map_err(StoreError::from)).await?;
        self.gate = Some(gate);
        self.in_tx = true;
        Ok(())
    }

    pub(crate) async fn commit(&mut self) -> Result<(), StoreError> {
        let (r, still_open) = self
            .run(|conn| {
                let r = conn.execute_batch("COMMIT").map_err(StoreError::from);
                Ok((r, !conn.is_autocommit()))
            })
            .await?;
        if !still_open {
            self.end_tx();
        }
        r
    }

    pub(crate) async fn rollback(&mut self) -> Result<(), StoreError> {
        let r = self
            .run(|conn| {
                // SQLite may have rolled back already (after SQLITE_FULL, SQLITE_IOERR …).
                if conn.is_autocommit() {
                    return Ok(());
                }
                conn.execute_batch("ROLLBACK").map_err(StoreError::from)
            })
            .await;
        self.end_tx();
        // Unknown state: let `drop` try once more.
        self.may_be_in_tx = r.is_err();
        r
    }

    fn end_tx(&mut self) {
        self.in_tx = false;
        self.may_be_in_tx = false;
        self.gate = None;
    }
}

fn prepare<'c>(conn: &'c Connection, sql: &str) -> Result<rusqlite::CachedStatement<'c>, StoreError> {
    Ok(conn.prepare_cached(sql)?)
}

/// A `Value` as a SQLite parameter.
struct Bind<'a>(&'a Value);

impl ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Float(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*b))),
            Value::Timestamp(t) => ToSqlOutput::Owned(rusqlite::types::Value::Text(timestamp_sort_key(t))),
        })
    }
}

/// Bind every parameter (`?1..?n`); the count must match the statement's.
fn bind(st: &mut Statement<'_>, params: &[Value]) -> Result<(), StoreError> {
    let expected = st.parameter_count();
    if expected != params.len() {
        return Err(StoreError::Database(format!(
            "the statement has {expected} parameters but {} values were given",
            params.len()
        )));
    }
    for (i, v) in params.iter().enumerate() {
        st.raw_bind_parameter(i + 1, Bind(v))?;
    }
    Ok(())
}

/// Run a bound statement to completion; rows changed (or, for a read-only statement that
/// returns rows, the rows returned — PostgreSQL's count for a SELECT).
fn run_bound(conn: &Connection, st: &mut Statement<'_>) -> Result<u64, StoreError> {
    if st.column_count() == 0 {
        return Ok(st.raw_execute()? as u64);
    }
    let readonly = st.readonly();
    let mut rows = st.raw_query();
    let mut n = 0u64;
    while rows.next()?.is_some() {
        n += 1;
    }
    drop(rows);
    Ok(if readonly { n } else { conn.changes() })
}

/// Puts back the standing deadline handler (dropping the stream's, and the `Sender` clone it
/// holds) however the row loop ends.
struct ProgressGuard<'c>(&'c Connection, &'c Arc<Deadline>);

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        watch_deadline(self.0, self.1);
    }
}

fn stream_rows<E: From<StoreError> + Send + 'static>(
    conn: &mut Connection,
    sql: &str,
    params: &[Value],
    types: &[ValueType],
    tx: mpsc::Sender<Result<Vec<Value>, E>>,
    deadline: &Arc<Deadline>,
) -> Result<u64, StoreError> {
    let r = stream_inner(conn, sql, params, types, &tx, deadline);
    if let Err(e) = &r {
        let _ = tx.blocking_send(Err(E::from(e.clone())));
    }
    r
}

fn stream_inner<E: From<StoreError> + Send + 'static>(
    conn: &Connection,
    sql: &str,
    params: &[Value],
    types: &[ValueType],
    tx: &mpsc::Sender<Result<Vec<Value>, E>>,
    deadline: &Arc<Deadline>,
) -> Result<u64, StoreError> {
    if tx.is_closed() {
        return Ok(0);
    }
    let mut st = prepare(conn, sql)?;
    check_types(st.column_count(), types)?;
    bind(&mut st, params)?;
    let watch = tx.clone();
    let d = deadline.clone();
    conn.progress_handler(PROGRESS_OPS, Some(move || watch.is_closed() || d.expired()))?;
    let _guard = ProgressGuard(conn, deadline);
    let mut rows = st.raw_query();
    let mut sent = 0u64;
    loop {
        match rows.next() {
            Ok(Some(row)) => {
                let values = decode_row(row, types)?;
                if tx.blocking_send(Ok(values)).is_err() {
                    return Ok(sent); // receiver dropped: cancelled
                }
                sent += 1;
            }
            Ok(None) => return Ok(sent),
            Err(_) if tx.is_closed() => return Ok(sent), // interrupted by the progress handler
            Err(e) => return Err(e.into()),
        }
    }
}

fn decode_row(row: &rusqlite::Row<'_>, types: &[ValueType]) -> Result<Vec<Value>, StoreError> {
    // A plain loop into an exact-size Vec: collecting `Result`s grows the Vec by doubling
    // (five reallocations for 60 columns).
    let mut values = Vec::with_capacity(types.len());
    for (i, t) in types.iter().enumerate() {
        let v = row.get_ref(i).map_err(|e| StoreError::decode(i, e.to_string()))?;
        values.push(decode_value(i, *t, v)?);
    }
    Ok(values)
}

fn decode_value(i: usize, t: ValueType, v: ValueRef<'_>) -> Result<Value, StoreError> {
    let text =
        |b: &[u8]| std::str::from_utf8(b).map(str::to_owned).map_err(|_| StoreError::decode(i, "text is not UTF-8"));
    Ok(match (t, v) {
        (_, ValueRef::Null) => Value::Null,
        (ValueType::Int, ValueRef::Integer(n)) => Value::Int(n),
        (ValueType::Float, ValueRef::Real(f)) => Value::Float(f),
        // A REAL column (or a float expression) may hand back an INTEGER.
        (ValueType::Float, ValueRef::Integer(n)) => Value::Float(n as f64),
        (ValueType::Text, ValueRef::Text(b)) => Value::Text(text(b)?),
        (ValueType::Bool, ValueRef::Integer(n)) => Value::Bool(n != 0),
        (ValueType::Timestamp, ValueRef::Text(b)) => {
            let s = text(b)?;
            Value::Timestamp(
                parse_timestamp(&s).ok_or_else(|| StoreError::decode(i, format!("'{s}' is not a timestamp")))?,
            )
        }
        (t, other) => {
            return Err(StoreError::decode(
                i,
                format!("expected {}, found SQLite {}", type_name(t), other.data_type()),
            ));
        }
    })
}
