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
//! # Pool: N reader connections, one reserved writer connection, an in-process write gate
//! The API has a single `acquire()` and a `Conn` does not say up front whether it will write, so
//! every `Conn` gets one of N pooled connections (default 4; preferably the one its thread gave back
//! last, see `exec::thread_slot`) for its reads, and the pool keeps one
//! more connection, the *writer*, that no `Conn` owns. Writers are serialized two ways:
//! - inside the process by an async *write gate* (a `tokio::sync::Mutex`): `begin()` holds it until
//!   commit/rollback, and `execute`/`execute_batch`/`execute_many` outside a transaction hold it
//!   for the statement. Waiting writers queue fairly in async land (bounded by `busy_timeout`,
//!   then [`StoreError::Busy`]) instead of spinning in SQLite's busy handler;
//! - against other processes by `BEGIN IMMEDIATE` (the write lock is taken up front, so two
//!   writers can never deadlock upgrading read locks) plus SQLite's `busy_timeout`.
//!
//! Holding the gate is the right to submit jobs to the writer connection: every write and every
//! statement inside a transaction (its reads too, so a transaction reads its own writes) runs
//! there; outside a transaction reads run on the `Conn`'s pooled connection. Why a dedicated
//! connection: in WAL mode a connection drops its whole page cache when *another* connection
//! committed since its last transaction, so write transactions alternating over the pool each
//! re-read what they scan from the OS (update-by-query on SQLite fell 3.7x at two writers). The
//! writer only ever sees its own commits and keeps its cache warm however many sessions write.
//! A pooled connection never holds a transaction between statements (every statement is reset
//! when it ends), so after a write has returned, the session's next read on its pooled
//! connection starts a fresh snapshot that contains it; and nothing uncommitted on the writer is
//! visible to any pooled connection.
//!
//! The writer is in autocommit mode whenever the gate is free: `commit`/`rollback` end the
//! transaction before releasing the gate, a dropped `Conn` or a cancelled `begin` queue a
//! rollback job that carries the gate (jobs run in order, so it runs after whatever that `Conn`
//! had queued), and a batch that leaves a transaction open outside `begin` is rolled back and
//! refused.
//!
//! Readers never wait for the gate: in WAL mode they read a snapshot while a writer works.
//! (`query`/`stream` of a data-changing statement such as `INSERT … RETURNING` outside a
//! transaction runs on the pooled connection, skips the gate and relies on `busy_timeout`.)
//!
//! # Connection setup
//! `journal_mode=WAL` (file databases), `synchronous=FULL` (a commit is on disk before it is
//! acknowledged: nothing committed is lost on kill -9 or power loss), `foreign_keys=ON`,
//! `case_sensitive_like=ON` (LIKE behaves as on PostgreSQL), `busy_timeout`, and a
//! `prepare_cached` LRU of `statement_cache` statements, and a page cache of `sqlite_cache_kib`.
//! With `sqlite_exclusive` every connection opens the file through SQLite's `unix-excl` VFS: the
//! process takes one exclusive lock at the first read and keeps it, the connections share the WAL
//! index in this process's memory, and a read transaction costs no `fcntl` on the `-shm` file.
//!
//! # In-memory databases
//! `sqlite::memory:` opens `file:/ardacat-mem-<pid>-<n>?vfs=memdb`: SQLite's memdb VFS shares a
//! database whose name starts with `/` among all connections of the process that open that name,
//! with ordinary (rollback-journal) locking, so `busy_timeout` works (the shared-cache mode would
//! fail with `SQLITE_LOCKED` at once). The name is unique per `Db`, so the database is private to
//! it and lives while its connections do. Without WAL a long reader blocks a writer's commit.
//!
//! # Streams
//! `stream` runs the row loop on the connection's thread and hands batches of rows to
//! `blocking_send` on the bounded channel: a slow consumer blocks the loop, so SQLite reads no
//! further ahead than the channel's capacity (in batches) and one batch. The batch being filled
//! is shared with the progress handler, which sends it once it is [`super::BATCH_WAIT`] old, so
//! rows read before a long stretch without matches do not wait for its end. A progress handler checks whether the receiver is gone while SQLite works
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

use super::{Backend, Batcher, DbOptions, PoolStats, RowBatch, check_types, type_name};
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

mod columns;
mod rows;
use columns::{Columns, RawRow, RawRows};
use rows::*;

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
    /// [`super::thread_slot`] of the thread that last gave this connection back to the pool.
    last_thread: u32,
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
    /// The reserved writer connection (see the module docs): only the holder of `write_gate`
    /// submits jobs to it. `None` once the pool is closed.
    writer: Mutex<Option<Arc<Worker>>>,
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
        // Opened one after the other: the first (the writer) switches a new file to WAL before
        // others read it.
        let writer = spawn_worker("ardacat-sqlite-w".into(), path.clone(), flags, file, &opts).await?;
        let mut workers = Vec::with_capacity(size);
        for i in 0..size {
            workers.push(spawn_worker(format!("ardacat-sqlite-{i}"), path.clone(), flags, file, &opts).await?);
        }
        Ok(Pool {
            idle: Mutex::new(workers),
            writer: Mutex::new(Some(Arc::new(writer))),
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

    /// The writer connection (its user must hold the write gate).
    fn writer(&self) -> Result<Arc<Worker>, StoreError> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner()).clone().ok_or(StoreError::Closed)
    }

    pub(crate) async fn acquire(pool: &Arc<Pool>) -> Result<Conn, StoreError> {
        let permit = match tokio::time::timeout(pool.acquire_timeout, pool.permits.clone().acquire_owned()).await {
            Err(_) => return Err(StoreError::PoolTimeout),
            Ok(Err(_)) => return Err(StoreError::Closed),
            Ok(Ok(p)) => p,
        };
        // A point read runs on the calling thread (`query_point`): with the connection this
        // thread gave back, its page cache, lookaside and statements are in this core's caches.
        let worker = super::take_for_this_thread(&mut pool.idle(), |w| w.last_thread).ok_or(StoreError::Closed)?;
        Ok(Conn {
            worker: Some(worker),
            permit: Some(permit),
            pool: pool.clone(),
            gate: None,
            in_tx: false,
            snapshot: false,
            unlimited: false,
        })
    }

    /// The pooled (reader) connections; the reserved writer is not counted.
    pub(crate) fn stats(&self) -> PoolStats {
        let idle = self.idle().len();
        let size = if self.closed.load(Ordering::Relaxed) { 0 } else { self.size };
        PoolStats { size, idle, in_use: size.saturating_sub(idle) }
    }

    /// Stop handing out connections and let the idle threads finish (their connection closes,
    /// checkpointing the WAL). Connections in use end when their `Conn` is dropped; the writer's
    /// thread ends once the jobs queued on it (a transaction in progress, then its rollback) ran,
    /// and later writes fail with [`StoreError::Closed`].
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.permits.close();
        self.idle().clear();
        self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

async fn spawn_worker(
    name: String,
    path: PathBuf,
    flags: OpenFlags,
    file: bool,
    opts: &DbOptions,
) -> Result<Worker, StoreError> {
    let (jobs, queue) = std_mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = oneshot::channel();
    let (busy, cache, cache_kib) = (opts.busy_timeout, opts.statement_cache, opts.sqlite_cache_kib);
    let exclusive = file && opts.sqlite_exclusive;
    let deadline = Arc::new(Deadline::new());
    let watch = deadline.clone();
    let pending = Arc::new(AtomicUsize::new(0));
    let done = pending.clone();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let conn = match open_connection(&path, flags, file, exclusive, busy, cache, cache_kib) {
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
    Ok(Worker { jobs, deadline, conn, pending, last_thread: 0 })
}

fn open_connection(
    path: &std::path::Path,
    flags: OpenFlags,
    file: bool,
    exclusive: bool,
    busy: Duration,
    cache: usize,
    cache_kib: u32,
) -> Result<Connection, StoreError> {
    let opened = if exclusive {
        Connection::open_with_flags_and_vfs(path, flags, c"unix-excl")
    } else {
        Connection::open_with_flags(path, flags)
    };
    let conn =
        opened.map_err(|e| StoreError::Config(format!("cannot open SQLite database {}: {e}", path.display())))?;
    conn.busy_timeout(busy)?;
    conn.set_prepared_statement_cache_capacity(cache);
    if file {
        // The first read of the file: where a lock held by another process shows.
        let mode: String =
            conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                    StoreError::Config(format!(
                        "SQLite database {} is in use by another process{}: {e}",
                        path.display(),
                        if exclusive {
                            " (sqlite_exclusive needs the file to itself)"
                        } else {
                            " that holds it exclusively (a server with sqlite_exclusive?)"
                        }
                    ))
                }
                _ => StoreError::from(e),
            })?;
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
    super::sqlite_math::register(&conn)?;
    Ok(conn)
}

/// One pooled SQLite connection (the right to use one reader connection thread), and while it
/// holds the write gate, the right to use the writer connection.
pub(crate) struct Conn {
    worker: Option<Worker>,
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<Pool>,
    /// The write gate, held from `begin` to `commit`/`rollback`: the transaction runs on the
    /// pool's writer connection meanwhile.
    gate: Option<OwnedMutexGuard<()>>,
    in_tx: bool,
    /// A read snapshot is open on the pooled connection (`begin_snapshot`): ended by
    /// `end_snapshot`, or rolled back by a job queued when the `Conn` is dropped.
    snapshot: bool,
    /// Jobs run without the statement deadline (migrations).
    unlimited: bool,
}

/// Releases the write gate once the writer is back in autocommit mode: the job rolls back
/// whatever transaction is open there, then drops the gate. Jobs run in order, so it runs after
/// every job its owner queued. Without a writer (closed pool) the gate goes at once: the
/// writer's connection closes, which rolls back.
fn release_gate_after_rollback(pool: &Pool, gate: OwnedMutexGuard<()>) {
    let Ok(writer) = pool.writer() else { return };
    let cleanup: Job = Box::new(move |conn| {
        if !conn.is_autocommit()
            && let Err(e) = conn.execute_batch("ROLLBACK")
        {
            tracing::warn!("rollback of an abandoned SQLite write transaction failed: {e}");
        }
        drop(gate);
    });
    // A failed send drops the job, and the gate with it: the writer thread is gone.
    let _ = writer.send(cleanup);
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            release_gate_after_rollback(&self.pool, gate);
        }
        // The pooled connection never holds a transaction between `Conn`s (see the module
        // docs): a snapshot left open is ended by a job queued before the next owner's jobs.
        if let Some(worker) = self.worker.take()
            && !self.pool.closed.load(Ordering::SeqCst)
        {
            if self.snapshot {
                let _ = worker.send(Box::new(|conn: &mut Connection| {
                    if !conn.is_autocommit() {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                }));
            }
            let mut worker = worker;
            worker.last_thread = super::thread_slot();
            self.pool.idle().push(worker);
        }
        // Released after the worker is back in `idle`, keeping permits <= idle workers.
        drop(self.permit.take());
    }
}

/// A `begin` in flight: if its future is dropped before the transaction is open, the gate is
/// handed to a rollback job on the writer, undoing a `BEGIN` that may still run.
struct BeginGuard<'p> {
    pool: &'p Pool,
    gate: Option<OwnedMutexGuard<()>>,
}

impl Drop for BeginGuard<'_> {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            release_gate_after_rollback(self.pool, gate);
        }
    }
}

impl Conn {
    pub(crate) fn in_transaction(&self) -> bool {
        self.in_tx
    }

    pub(crate) fn set_unlimited(&mut self, unlimited: bool) {
        self.unlimited = unlimited;
    }

    /// The writer inside a transaction, else the pooled connection.
    fn current(&self) -> Result<Current<'_>, StoreError> {
        if self.in_tx {
            Ok(Current::Writer(self.pool.writer()?))
        } else {
            self.worker.as_ref().map(Current::Pooled).ok_or(StoreError::Closed)
        }
    }

    /// Run `f` on the thread of the connection this `Conn` uses now ([`Conn::current`]).
    async fn run<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let current = self.current()?;
        self.run_on(&current, f).await
    }

    /// Run `f` on the writer's thread; the caller holds the gate (in a transaction, or moved
    /// into `f`).
    async fn run_on_writer<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let writer = self.pool.writer()?;
        self.run_on(&writer, f).await
    }

    /// Run `f` on `worker`'s thread and wait for its answer. The statement deadline is armed
    /// when the job starts (not when it is queued); the worker disarms it afterwards.
    async fn run_on<R, F>(&self, worker: &Worker, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
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
        self.run_on_writer(move |conn| {
            let r = prepare(conn, &sql).and_then(|mut st| {
                bind(&mut st, &params)?;
                run_bound(conn, &mut st)
            });
            end_gated_write(conn, gate, r)
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
        reuse: Vec<Vec<Value>>,
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        if let Some(r) = self.try_inline_read(sql, params, types, reuse) {
            return r;
        }
        self.query(sql, params, types).await
    }

    /// The point read on this thread, decoded into `reuse`'s rows (see `exec::Conn::query_point_into`);
    /// `None` when it must go to the connection's thread.
    fn try_inline_read(
        &self,
        sql: &str,
        params: &[Value],
        types: &[ValueType],
        reuse: Vec<Vec<Value>>,
    ) -> Option<Result<Vec<Vec<Value>>, StoreError>> {
        let current = self.current().ok()?;
        let worker: &Worker = &current;
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
            let mut out = reuse;
            let mut n = 0;
            while let Some(row) = rows.next()? {
                if n == out.len() {
                    out.push(Vec::new());
                }
                decode_row_into(row, types, &mut out[n])?;
                n += 1;
            }
            out.truncate(n);
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
        tx: mpsc::Sender<Result<RowBatch, E>>,
    ) -> Result<u64, StoreError> {
        let (sql, params, types) = (sql.to_owned(), params.to_vec(), types.to_vec());
        let err_tx = tx.clone();
        let r = match self.current() {
            Ok(current) => {
                let deadline = current.deadline.clone();
                self.run_on(&current, move |conn| stream_rows(conn, &sql, &params, &types, tx, &deadline)).await
            }
            Err(e) => Err(e),
        };
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
        let sql = sql.to_owned();
        self.run_on_writer(move |conn| {
            let r = conn.execute_batch(&sql).map_err(StoreError::from);
            end_gated_write(conn, gate, r)
        })
        .await
    }

    pub(crate) async fn execute_many(&mut self, sql: &str, rows: Vec<Vec<Value>>) -> Result<u64, StoreError> {
        let gate = self.gate_for_write().await?;
        let sql = sql.to_owned();
        self.run_on_writer(move |conn| {
            let r = (|| {
                let mut st = prepare(conn, &sql)?;
                let mut total = 0;
                for row in &rows {
                    bind(&mut st, row)?;
                    total += run_bound(conn, &mut st)?;
                }
                Ok(total)
            })();
            end_gated_write(conn, gate, r)
        })
        .await
    }

    /// Opens a read snapshot on the pooled connection (a deferred `BEGIN`: WAL readers hold
    /// the state of their first read until the end), for a dump that must see one state
    /// across many statements. Writers are not held up; the WAL cannot be checkpointed past
    /// the snapshot while it is open.
    pub(crate) async fn begin_snapshot(&mut self) -> Result<(), StoreError> {
        if self.in_tx || self.snapshot {
            return Err(StoreError::Database("a transaction is already open on this connection".into()));
        }
        // Set first: if this future is dropped after the job was queued, the drop ends it.
        self.snapshot = true;
        let r = self.run(|conn| conn.execute_batch("BEGIN DEFERRED").map_err(StoreError::from)).await;
        if r.is_err() {
            self.end_snapshot().await?;
        }
        r
    }

    /// Ends the read snapshot (nothing was written in it: a rollback keeps nothing less).
    pub(crate) async fn end_snapshot(&mut self) -> Result<(), StoreError> {
        if !self.snapshot {
            return Ok(());
        }
        let r =
            self.run(|conn| {
                if conn.is_autocommit() { Ok(()) } else { conn.execute_batch("ROLLBACK").map_err(StoreError::from) }
            })
            .await;
        if r.is_ok() {
            self.snapshot = false;
        }
        r
    }

    pub(crate) async fn begin(&mut self) -> Result<(), StoreError> {
        let gate = self.lock_gate().await?;
        let mut guard = BeginGuard { pool: &self.pool, gate: Some(gate) };
        let writer = self.pool.writer()?;
        self.run_on(&writer, |conn| conn.execute_batch("BEGIN IMMEDIATE").map_err(StoreError::from)).await?;
        self.gate = guard.gate.take();
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
        match &r {
            Ok(()) => self.end_tx(),
            // Unknown state: the rollback job that releases the gate tries once more.
            Err(_) => {
                self.in_tx = false;
                if let Some(gate) = self.gate.take() {
                    release_gate_after_rollback(&self.pool, gate);
                }
            }
        }
        r
    }

    fn end_tx(&mut self) {
        self.in_tx = false;
        self.gate = None;
    }
}

/// The connection a `Conn`'s statement runs on.
enum Current<'c> {
    Pooled(&'c Worker),
    Writer(Arc<Worker>),
}

impl std::ops::Deref for Current<'_> {
    type Target = Worker;

    fn deref(&self) -> &Worker {
        match self {
            Current::Pooled(w) => w,
            Current::Writer(w) => w,
        }
    }
}

/// The end of a write outside a transaction, on the writer's thread: the writer must be in
/// autocommit mode when the gate goes (the `Conn`'s later reads run on its pooled connection
/// and would not see an open transaction, and the next gate holder would inherit it), so a
/// statement or batch that opened one (`BEGIN` by hand) is undone and refused.
fn end_gated_write<R>(
    conn: &Connection,
    gate: Option<OwnedMutexGuard<()>>,
    r: Result<R, StoreError>,
) -> Result<R, StoreError> {
    let Some(gate) = gate else { return r };
    let r = if conn.is_autocommit() {
        r
    } else {
        if let Err(e) = conn.execute_batch("ROLLBACK") {
            tracing::warn!("rollback of a transaction left open by a batch failed: {e}");
        }
        r.and(Err(StoreError::Database("a statement outside begin/commit left a transaction open; use begin".into())))
    };
    drop(gate);
    r
}
