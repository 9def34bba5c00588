//! PostgreSQL backend: a pool of sqlx `PgConnection`s (`pool.rs`: no ping round trip per use);
//! a [`Conn`] holds one of them.
//!
//! Statements go through sqlx's extended protocol and are prepared once per connection and
//! cached (`statement_cache_capacity`). Parameter types come from the SQL text alone (the
//! server infers them) and values are encoded as those types (see [`bound`]); a NULL is bound
//! untyped, like a NULL literal. Each connection also remembers, per statement it ran with
//! parameters, sqlx's prepared statement and the row decoders made for it ([`Statements`]), so
//! a statement run again is neither looked up twice nor decoded by a decoder built anew. `DbOptions::busy_timeout` becomes the session's
//! `lock_timeout`, so a lock wait ends in [`StoreError::Busy`] as on SQLite, and
//! `DbOptions::statement_timeout` the session's `statement_timeout` ([`StoreError::Timeout`]).
//!
//! # Streams and abandoned streams
//! `stream` pulls rows from sqlx's row stream and `send`s each into the bounded channel; when
//! the channel is full the loop stops reading the socket, TCP fills up and the server waits: a
//! slow consumer slows the query and memory stays flat. While waiting for the next row the loop
//! also watches `Sender::closed`, so a dropped receiver is noticed even before the first row.
//!
//! A stream stopped mid-way (receiver dropped, or a decode error) leaves unread rows on the
//! connection. Policy:
//! - **outside a transaction** the connection is *discarded*: detached from the pool and its
//!   socket closed, which makes the server abort the query at its next write (and, on
//!   PostgreSQL 14+, within a second even while it computes: every connection sets
//!   `client_connection_check_interval`). The `Conn` stays usable: its next statement
//!   transparently acquires a fresh pooled connection. Nothing unread is ever returned to the
//!   pool, and abandoning a huge result costs nothing.
//! - **inside a transaction** the session must be kept, so the rows are *drained* by the next
//!   statement on this `Conn` (sqlx reads up to the pending ReadyForQuery). `rollback` instead
//!   discards the connection (the server rolls back on disconnect), and dropping the `Conn`
//!   discards it too.
//!
//! More generally, a `Conn` whose operation was interrupted (its future dropped) is marked dirty
//! and is closed, not pooled, when dropped. A clean `Conn` dropped with an open transaction is
//! rolled back by a spawned task before it returns to the pool (or discarded if no tokio runtime
//! is running).

use super::{Backend, Batcher, DbOptions, PoolStats, RowBatch, check_types, type_name};
use crate::error::StoreError;
use ardacat_core::types::{Value, ValueType};
use futures::{FutureExt, TryStreamExt};
use sqlx::encode::IsNull;
use sqlx::postgres::PgStatement;
use sqlx::postgres::types::Oid;
use sqlx::postgres::{
    PgArgumentBuffer, PgArguments, PgConnectOptions, PgPoolOptions, PgRow, PgTypeInfo, PgValueFormat, PgValueRef,
};
use sqlx::query::Query;
use sqlx::{
    AssertSqlSafe, Column as _, Decode, Either, Executor, PgPool, Postgres, Row, SqlSafeStr, SqlStr, Statement,
    TypeInfo,
};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a dropped `Conn`'s background rollback may take before the connection is discarded.
const DROP_ROLLBACK_TIMEOUT: Duration = Duration::from_secs(5);

/// The one place where run-time SQL text is declared safe for sqlx. The text comes from our own
/// dialect modules; every user-supplied value is a bound parameter, never part of the text.
fn sql(text: &str) -> SqlStr {
    AssertSqlSafe(text.to_owned()).into_sql_str()
}

mod pool;

use pool::{Live, Slots};

#[derive(Clone)]
pub(crate) struct Pool {
    /// The connections of `db_pool_size` (`pool.rs`: no ping round trip per use).
    slots: Arc<Slots>,
    /// One connection of its own for `LISTEN` (`catalog::shared`), outside `db_pool_size`: a
    /// listener holds its connection for the life of the process, which would starve a small pool.
    listen: PgPool,
}

impl Pool {
    pub(crate) async fn open(url: &str, opts: DbOptions) -> Result<Pool, StoreError> {
        let size = opts.effective_pool_size(Backend::Postgres).max(1);
        let mut connect: PgConnectOptions =
            url.parse().map_err(|e| StoreError::Config(format!("invalid PostgreSQL url: {e}")))?;
        // At least 1: `bound` relies on the statement it prepared being found again by the query.
        connect = connect.statement_cache_capacity(opts.statement_cache.max(1));
        if !opts.busy_timeout.is_zero() {
            connect = connect.options([("lock_timeout", format!("{}ms", opts.busy_timeout.as_millis()))]);
        }
        if !opts.statement_timeout.is_zero() {
            // The server cancels a longer statement itself (SQLSTATE 57014 → StoreError::Timeout).
            connect =
                connect.options([("statement_timeout", format!("{}ms", opts.statement_timeout.as_millis().max(1)))]);
        }
        let listen = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(opts.acquire_timeout)
            .connect_lazy_with(connect.clone());
        // The factory of `Slots`: every connection is detached from it as soon as it is open, so
        // its own checks (a ping per acquire and per release) never run.
        let factory = PgPoolOptions::new()
            .max_connections(u32::try_from(size).unwrap_or(u32::MAX))
            .min_connections(0)
            .acquire_timeout(opts.acquire_timeout)
            .test_before_acquire(false)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    // PostgreSQL 14+: have the server notice a vanished client during a long
                    // query (an abandoned stream's connection is closed) and abort it. Best
                    // effort: the setting is refused on platforms without POLLRDHUP.
                    if conn.server_version_num().is_some_and(|v| v >= 140_000) {
                        let _ = sqlx::raw_sql("SET client_connection_check_interval = 1000").execute(&mut *conn).await;
                    }
                    Ok(())
                })
            })
            .connect_with(connect)
            .await?;
        Ok(Pool { slots: Slots::new(factory, size, opts.acquire_timeout), listen })
    }

    pub(crate) async fn acquire(&self) -> Result<Conn, StoreError> {
        let conn = self.slots.acquire().await?;
        Ok(Conn {
            conn: Some(conn),
            slots: self.slots.clone(),
            in_tx: false,
            dirty: false,
            discard: false,
            failed: false,
        })
    }

    /// The pool of the one `LISTEN` connection.
    pub(crate) fn listen_pool(&self) -> PgPool {
        self.listen.clone()
    }

    pub(crate) fn stats(&self) -> PoolStats {
        self.slots.stats()
    }

    /// Closes the pool; waits until every connection in use has been returned.
    pub(crate) async fn close(&self) {
        // A closed pool ends the listener's wait (sqlx's pool close event), so both finish.
        tokio::join!(self.listen.close(), self.slots.close());
    }
}

pub(crate) struct Conn {
    /// `None` after a connection was discarded outside a transaction; re-acquired on next use.
    conn: Option<Live>,
    slots: Arc<Slots>,
    in_tx: bool,
    /// The connection may have unread results (an abandoned stream, an interrupted future).
    dirty: bool,
    /// Close instead of pooling on drop (session state such as an advisory lock).
    discard: bool,
    /// A statement failed on this connection: it may be broken (an I/O error looks like any other
    /// here), so the pool pings it before it is handed out again.
    failed: bool,
}

impl Drop for Conn {
    fn drop(&mut self) {
        let Some(mut live) = self.conn.take() else { return };
        if self.dirty || self.discard {
            // Closing the socket aborts the query and any open transaction on the server.
            drop(live);
            return;
        }
        if self.in_tx {
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    let slots = self.slots.clone();
                    rt.spawn(async move {
                        let rollback = sqlx::raw_sql("ROLLBACK").execute(&mut live.conn);
                        if let Ok(Ok(_)) = tokio::time::timeout(DROP_ROLLBACK_TIMEOUT, rollback).await {
                            slots.give_back(live, false);
                        }
                    });
                }
                Err(_) => drop(live),
            }
            return;
        }
        self.slots.give_back(live, self.failed);
    }
}

/// A NULL parameter without a type of its own (type OID 0 in the Parse message): the server
/// gives it the type the statement's context calls for, as it would to a NULL literal.
struct UntypedNull;

impl sqlx::Type<Postgres> for UntypedNull {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(Oid(0))
    }
}

impl sqlx::Encode<'_, Postgres> for UntypedNull {
    fn encode_by_ref(&self, _buf: &mut PgArgumentBuffer) -> Result<IsNull, sqlx::error::BoxDynError> {
        Ok(IsNull::Yes)
    }
}

/// A statement with its parameters (`$1..$n`) bound *as the types the server gave them*.
///
/// sqlx caches a prepared statement by its SQL text and sends values in binary, so the types a
/// statement's parameters have must not depend on the values of its first execution (they
/// would, if each value declared its own type at Parse: a later Float sent to a parameter the
/// server reads as int8 would be misread or refused, depending on which call came first). So the
/// statement is prepared with *no* declared parameter types: the server infers each from its
/// context (`f > $1` → float8, `VALUES ($1)` → the column's type, `$1::int8` → int8,
/// `LIMIT $1` → int8, `SELECT $1` → text), which depends on the SQL text alone. The parameter
/// types are read back from the prepared statement (a statement-cache hit after the first
/// time, no round trip) and each value is encoded as that type: Int widens to a float or
/// narrows to int4/int2 when it fits, Timestamp becomes timestamptz (as UTC) or date (midnight
/// only), NULL fits anything. Any other combination is an error, never a guess.
///
/// A statement this connection ran before is known from [`Statements`] (no second look-up in
/// sqlx's cache, no copy of its text); the index returned is its place there, for
/// [`Statements::decode_rows`].
async fn bound<'p>(
    live: &mut Live,
    text: &str,
    params: &'p [Value],
) -> Result<(Query<'p, Postgres, PgArguments>, Option<usize>), StoreError> {
    if params.is_empty() {
        return Ok((sqlx::query(sql(text)), None));
    }
    let at = match live.statements.find(text) {
        Some(at) => at,
        None => {
            let text = AssertSqlSafe(Arc::<str>::from(text)).into_sql_str();
            let statement = live.conn.prepare_with(text, &[]).await?;
            live.statements.insert(statement)
        }
    };
    let statement = &live.statements.known[at].statement;
    // An `Arc` text: the query takes a reference count, not a copy.
    let mut q = sqlx::query(statement.sql().clone());
    let types = match statement.parameters() {
        Some(Either::Left(types)) => types,
        _ => &[],
    };
    if types.len() != params.len() {
        return Err(StoreError::Database(format!(
            "the statement has {} parameters but {} values were given",
            types.len(),
            params.len()
        )));
    }
    for (i, (v, t)) in params.iter().zip(types).enumerate() {
        let mismatch = || {
            StoreError::Database(format!(
                "parameter ${}: cannot bind {} value to PostgreSQL type {}",
                i + 1,
                value_kind(v),
                t.name()
            ))
        };
        let out_of_range =
            || StoreError::Database(format!("parameter ${}: {v:?} is out of range for {}", i + 1, t.name()));
        q = match (v, t.name()) {
            (Value::Null, _) => q.bind(UntypedNull),
            (Value::Int(n), "INT8") => q.bind(*n),
            (Value::Int(n), "INT4") => q.bind(i32::try_from(*n).map_err(|_| out_of_range())?),
            (Value::Int(n), "INT2") => q.bind(i16::try_from(*n).map_err(|_| out_of_range())?),
            (Value::Int(n), "FLOAT8") => q.bind(*n as f64),
            (Value::Int(n), "FLOAT4") => q.bind(*n as f32),
            (Value::Float(f), "FLOAT8") => q.bind(*f),
            (Value::Float(f), "FLOAT4") => q.bind(*f as f32),
            (Value::Text(s), "TEXT" | "VARCHAR" | "CHAR" | "NAME" | "UNKNOWN") => q.bind(s.as_str()),
            (Value::Bool(b), "BOOL") => q.bind(*b),
            (Value::Timestamp(ts), "TIMESTAMP") => q.bind(*ts),
            (Value::Timestamp(ts), "TIMESTAMPTZ") => q.bind(ts.and_utc()),
            (Value::Timestamp(ts), "DATE") if ts.time() == chrono::NaiveTime::MIN => q.bind(ts.date()),
            _ => return Err(mismatch()),
        };
    }
    Ok((q, Some(at)))
}

/// Statements this connection has run with parameters, most recently used first (at most
/// [`KNOWN_STATEMENTS`]), each with the row decoders made for it. Running one again takes no
/// `prepare_with` (a second look-up in sqlx's statement cache, its text hashed and copied twice),
/// no copy of its parameter types, and no decoder built anew from its first row — together about
/// 4 % of the instructions of a 60-attribute point read (docs/benchmarks.md, round 16).
#[derive(Default)]
pub(super) struct Statements {
    known: Vec<Known>,
}

/// Statements a connection remembers; the oldest is forgotten first.
const KNOWN_STATEMENTS: usize = 32;
/// Decoders kept per statement (one per list of asked value types; a statement has one in practice).
const DECODERS_PER_STATEMENT: usize = 4;

struct Known {
    /// sqlx's prepared statement: text (an `Arc`), parameter types, columns. Holding it keeps its
    /// column list where it is: a row whose `columns()` is that very slice was read through this
    /// preparation, so its column types are these (see [`Statements::decoder`]).
    statement: PgStatement,
    decoders: Vec<(Vec<ValueType>, RowDecoder)>,
}

impl Statements {
    /// The place of the statement of `text` (moved to the front), if known.
    fn find(&mut self, text: &str) -> Option<usize> {
        let at = self.known.iter().position(|k| k.statement.sql().as_str() == text)?;
        self.known[..=at].rotate_right(1);
        Some(0)
    }

    /// Remembers a statement just prepared, at the front; the oldest goes if there are too many.
    fn insert(&mut self, statement: PgStatement) -> usize {
        self.known.truncate(KNOWN_STATEMENTS - 1);
        self.known.insert(0, Known { statement, decoders: Vec::new() });
        0
    }

    /// Decodes the rows of a statement run through [`bound`] (`known`: its place) into `out`,
    /// whose earlier rows are overwritten (a point read's: `ardacat_core::store::spent_rows`).
    fn decode_rows(
        &mut self,
        known: Option<usize>,
        rows: &[PgRow],
        types: &[ValueType],
        mut out: Vec<Vec<Value>>,
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        out.truncate(rows.len());
        let Some(first) = rows.first() else { return Ok(out) };
        let decoder = self.decoder(known, first, types)?;
        out.resize_with(rows.len(), Vec::new);
        for (row, values) in rows.iter().zip(out.iter_mut()) {
            decoder.decode_into(row, values)?;
        }
        Ok(out)
    }

    /// The decoder for `row` read as `types`: the one made before for the statement at `known`,
    /// if `row` was read through that very preparation; else a new one (kept for next time).
    fn decoder(
        &mut self,
        known: Option<usize>,
        row: &PgRow,
        types: &[ValueType],
    ) -> Result<Cow<'_, RowDecoder>, StoreError> {
        let Some(at) = known.filter(|&at| at < self.known.len()) else {
            return Ok(Cow::Owned(RowDecoder::new(row, types)?));
        };
        // The same slice (address and length) of a statement we hold: sqlx's metadata is shared
        // and never changed once made, and cannot be freed and its place reused while held here.
        if !std::ptr::eq(self.known[at].statement.columns(), row.columns()) {
            // sqlx prepared the text again (it left its cache): learn the new preparation next time.
            self.known.remove(at);
            return Ok(Cow::Owned(RowDecoder::new(row, types)?));
        }
        let decoders = &mut self.known[at].decoders;
        let i = match decoders.iter().position(|(t, _)| t.as_slice() == types) {
            Some(i) => i,
            None => {
                let decoder = RowDecoder::new(row, types)?;
                decoders.truncate(DECODERS_PER_STATEMENT - 1);
                decoders.push((types.to_vec(), decoder));
                decoders.len() - 1
            }
        };
        Ok(Cow::Borrowed(&decoders[i].1))
    }
}

fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "a null",
        Value::Int(_) => "an int",
        Value::Float(_) => "a float",
        Value::Text(_) => "a text",
        Value::Bool(_) => "a bool",
        Value::Timestamp(_) => "a timestamp",
    }
}

impl Conn {
    pub(crate) fn in_transaction(&self) -> bool {
        self.in_tx
    }

    pub(crate) fn set_discard_on_drop(&mut self, discard: bool) {
        self.discard = discard;
    }

    /// The live connection, re-acquiring one if the last was discarded.
    async fn live(&mut self) -> Result<&mut Live, StoreError> {
        Ok(match &mut self.conn {
            Some(c) => c,
            slot => slot.insert(self.slots.acquire().await?),
        })
    }

    /// Forget the current connection without returning it to the pool.
    fn discard_now(&mut self) {
        // Dropping the connection closes it.
        drop(self.conn.take());
        self.dirty = false;
    }

    pub(crate) async fn execute(&mut self, text: &str, params: &[Value]) -> Result<u64, StoreError> {
        self.dirty = true;
        let live = self.live().await?;
        let r = match bound(live, text, params).await {
            Ok((q, _)) => q.execute(&mut live.conn).await.map_err(StoreError::from),
            Err(e) => Err(e),
        };
        self.dirty = false;
        self.failed |= r.is_err();
        Ok(r?.rows_affected())
    }

    pub(crate) async fn query(
        &mut self,
        text: &str,
        params: &[Value],
        types: &[ValueType],
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        self.query_into(text, params, types, Vec::new()).await
    }

    /// [`query`](Self::query) decoding into `out`'s rows (see `decode_rows`).
    pub(crate) async fn query_into(
        &mut self,
        text: &str,
        params: &[Value],
        types: &[ValueType],
        out: Vec<Vec<Value>>,
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        self.dirty = true;
        let live = self.live().await?;
        // Outer error: the statement failed (the connection may be broken); inner: decoding.
        let r = match bound(live, text, params).await {
            Ok((q, known)) => match q.fetch_all(&mut live.conn).await {
                Ok(rows) => Ok(live.statements.decode_rows(known, &rows, types, out)),
                Err(e) => Err(StoreError::from(e)),
            },
            Err(e) => Err(e),
        };
        self.dirty = false;
        self.failed |= r.is_err();
        r?
    }

    pub(crate) async fn stream<E: From<StoreError> + Send + 'static>(
        &mut self,
        text: &str,
        params: &[Value],
        types: &[ValueType],
        tx: mpsc::Sender<Result<RowBatch, E>>,
    ) -> Result<u64, StoreError> {
        if tx.is_closed() {
            return Ok(0);
        }
        self.dirty = true;
        let live = match self.live().await {
            Ok(live) => live,
            Err(e) => {
                let _ = tx.send(Err(E::from(e.clone()))).await;
                return Err(e);
            }
        };
        let q = match bound(live, text, params).await {
            Ok((q, _)) => q,
            Err(e) => {
                self.dirty = false;
                self.failed = true;
                let _ = tx.send(Err(E::from(e.clone()))).await;
                return Err(e);
            }
        };
        let mut rows = q.fetch(&mut live.conn);
        let mut sent = 0u64;
        let mut batch = Batcher::new();
        // Rows of batches the consumer handed back, decoded into in place of new ones.
        let mut spent: Vec<Vec<Value>> = Vec::new();
        // Made from the first row.
        let mut decoder: Option<RowDecoder> = None;
        // Ok(true): all rows read; Ok(false): receiver gone. Err(_, true): the server reported
        // the error (nothing unread); Err(_, false): we stopped with rows unread.
        let outcome: Result<bool, (StoreError, bool)> = loop {
            // A row already received goes into the batch; the batch goes out when full, or
            // before waiting on the network for the next row.
            let next = match rows.try_next().now_or_never() {
                Some(next) => next,
                None => {
                    if let Some(ready) = batch.take()
                        && !send_batch(&tx, ready, &mut sent).await
                    {
                        break Ok(false);
                    }
                    tokio::select! {
                        biased;
                        _ = tx.closed() => break Ok(false),
                        next = rows.try_next() => next,
                    }
                }
            };
            match next {
                Ok(Some(row)) => {
                    if spent.is_empty() {
                        spent = ardacat_core::store::spent_rows::take().unwrap_or_default();
                    }
                    let mut values = spent.pop().unwrap_or_default();
                    let d = match &mut decoder {
                        Some(d) => d,
                        none => match RowDecoder::new(&row, types) {
                            Ok(d) => none.insert(d),
                            Err(e) => break Err((e, false)),
                        },
                    };
                    match d.decode_into(&row, &mut values) {
                        Ok(()) => {
                            if let Some(full) = batch.push(values)
                                && !send_batch(&tx, full, &mut sent).await
                            {
                                break Ok(false);
                            }
                        }
                        Err(e) => break Err((e, false)),
                    }
                }
                Ok(None) => break Ok(true),
                Err(e) => break Err((e.into(), true)),
            }
        };
        // The rows read before the end (or the error) go out before it.
        if !matches!(outcome, Ok(false))
            && let Some(rest) = batch.take()
        {
            send_batch(&tx, rest, &mut sent).await;
        }
        drop(rows);
        self.failed |= outcome.is_err();
        let finished = matches!(outcome, Ok(true) | Err((_, true)));
        if finished {
            self.dirty = false;
        } else if !self.in_tx {
            self.discard_now();
        } // else: in a transaction, the next statement drains the rest (module docs).
        match outcome {
            Ok(_) => Ok(sent),
            Err((e, _)) => {
                let _ = tx.send(Err(E::from(e.clone()))).await;
                Err(e)
            }
        }
    }

    pub(crate) async fn execute_batch(&mut self, text: &str) -> Result<(), StoreError> {
        self.dirty = true;
        let c = &mut self.live().await?.conn;
        let r = sqlx::raw_sql(sql(text)).execute(c).await;
        self.dirty = false;
        self.failed |= r.is_err();
        r?;
        Ok(())
    }

    pub(crate) async fn execute_many(&mut self, text: &str, rows: Vec<Vec<Value>>) -> Result<u64, StoreError> {
        self.dirty = true;
        let live = self.live().await?;
        let mut total = 0;
        let mut result = Ok(());
        for row in &rows {
            let r = match bound(live, text, row).await {
                Ok((q, _)) => q.execute(&mut live.conn).await.map_err(StoreError::from),
                Err(e) => Err(e),
            };
            match r {
                Ok(r) => total += r.rows_affected(),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.dirty = false;
        self.failed |= result.is_err();
        result?;
        Ok(total)
    }

    async fn simple(&mut self, text: &'static str) -> Result<(), StoreError> {
        self.dirty = true;
        let c = &mut self.live().await?.conn;
        let r = sqlx::raw_sql(text).execute(c).await;
        self.dirty = false;
        self.failed |= r.is_err();
        r?;
        Ok(())
    }

    pub(crate) async fn begin(&mut self) -> Result<(), StoreError> {
        self.simple("BEGIN").await?;
        self.in_tx = true;
        Ok(())
    }

    /// Opens a read-only snapshot: one state of the database for every statement until
    /// `rollback` (REPEATABLE READ is a snapshot on PostgreSQL; READ ONLY refuses writes).
    pub(crate) async fn begin_snapshot(&mut self) -> Result<(), StoreError> {
        self.simple("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").await?;
        self.in_tx = true;
        Ok(())
    }

    pub(crate) async fn commit(&mut self) -> Result<(), StoreError> {
        let r = self.simple("COMMIT").await;
        // Whatever the outcome, PostgreSQL has ended the transaction block (a failed COMMIT
        // rolls back); on a broken connection the server rolls back when it notices.
        self.in_tx = false;
        r
    }

    pub(crate) async fn rollback(&mut self) -> Result<(), StoreError> {
        self.in_tx = false;
        if self.dirty {
            // Unread rows of an abandoned stream: disconnecting rolls back without draining them.
            self.discard_now();
            return Ok(());
        }
        self.simple("ROLLBACK").await
    }
}

/// Send one batch of a stream, counting its rows into `sent`; false when the receiver is gone.
async fn send_batch<E>(tx: &mpsc::Sender<Result<RowBatch, E>>, rows: RowBatch, sent: &mut u64) -> bool {
    let n = rows.len() as u64;
    let delivered = tx.send(Ok(rows)).await.is_ok();
    if delivered {
        *sent += n;
    }
    delivered
}

/// PostgreSQL types read as text.
fn is_text_type(name: &str) -> bool {
    matches!(name, "TEXT" | "VARCHAR" | "CHAR" | "NAME" | "UNKNOWN")
}

/// How one column is read: chosen once per statement from the PostgreSQL column type and the
/// value type the query asked for.
#[derive(Debug, Clone)]
enum ColumnDecoder {
    Int8,
    Int4,
    Int2,
    Float8,
    Float4,
    Int8AsFloat,
    Int4AsFloat,
    Int2AsFloat,
    Text,
    Bool,
    Timestamp,
    TimestampTz,
    Date,
    /// A column that cannot hold the asked type: NULLs read fine, any other value is an error
    /// (a computed column may be NULL in every row).
    Mismatch(String),
}

/// The decoders of a statement's columns, made from the first row's column types (every row
/// of a statement has the same ones), so a row is decoded without looking a type up by name per
/// value.
#[derive(Debug, Clone)]
pub(super) struct RowDecoder {
    columns: Vec<ColumnDecoder>,
}

impl RowDecoder {
    pub(super) fn new(row: &PgRow, types: &[ValueType]) -> Result<RowDecoder, StoreError> {
        check_types(row.len(), types)?;
        let columns = row
            .columns()
            .iter()
            .zip(types)
            .map(|(column, t)| {
                let name = column.type_info().name();
                match (t, name) {
                    (ValueType::Int, "INT8") => ColumnDecoder::Int8,
                    (ValueType::Int, "INT4") => ColumnDecoder::Int4,
                    (ValueType::Int, "INT2") => ColumnDecoder::Int2,
                    (ValueType::Float, "FLOAT8") => ColumnDecoder::Float8,
                    (ValueType::Float, "FLOAT4") => ColumnDecoder::Float4,
                    (ValueType::Float, "INT8") => ColumnDecoder::Int8AsFloat,
                    (ValueType::Float, "INT4") => ColumnDecoder::Int4AsFloat,
                    (ValueType::Float, "INT2") => ColumnDecoder::Int2AsFloat,
                    (ValueType::Text, name) if is_text_type(name) => ColumnDecoder::Text,
                    (ValueType::Bool, "BOOL") => ColumnDecoder::Bool,
                    (ValueType::Timestamp, "TIMESTAMP") => ColumnDecoder::Timestamp,
                    (ValueType::Timestamp, "TIMESTAMPTZ") => ColumnDecoder::TimestampTz,
                    (ValueType::Timestamp, "DATE") => ColumnDecoder::Date,
                    (t, other) => {
                        ColumnDecoder::Mismatch(format!("expected {}, found PostgreSQL {other}", type_name(*t)))
                    }
                }
            })
            .collect();
        Ok(RowDecoder { columns })
    }

    /// Decodes `row` into `out`, whose earlier values are overwritten (a text value into an
    /// earlier text value keeps its buffer: see `ardacat_core::store::spent_rows`).
    pub(super) fn decode_into(&self, row: &PgRow, out: &mut Vec<Value>) -> Result<(), StoreError> {
        if row.len() != self.columns.len() {
            return Err(StoreError::decode(
                row.len().min(self.columns.len()),
                format!("a row of {} columns in a statement of {}", row.len(), self.columns.len()),
            ));
        }
        out.truncate(self.columns.len());
        // Exact size: growing an empty Vec by pushing would double its capacity.
        out.reserve_exact(self.columns.len() - out.len());
        out.resize(self.columns.len(), Value::Null);
        for (i, (decoder, slot)) in self.columns.iter().zip(out.iter_mut()).enumerate() {
            // Looked at where sqlx returned it: moving the value (70-odd bytes) out of the
            // `Result` cost more than decoding it.
            let got = row.try_get_raw(i);
            let raw = match &got {
                Ok(raw) => raw,
                Err(e) => return Err(StoreError::decode(i, e.to_string())),
            };
            let Ok(bytes) = raw.as_bytes() else {
                *slot = Value::Null;
                continue;
            };
            decode_value(decoder, raw, bytes, i, slot)?;
        }
        Ok(())
    }
}

/// Decodes a non-NULL value (`bytes`, of `raw`) into `slot`. Text and, in PostgreSQL's binary
/// format (what the extended protocol returns), the numbers and booleans are read straight from
/// the bytes (big-endian integers and IEEE floats, one byte for a bool); timestamps, dates and
/// text-format numbers go through sqlx's `Decode`. Reading from the bytes keeps the per-value
/// work to them: a `PgValueRef` moved through `Decode` was most of a 60-column row's decoding time.
fn decode_value(
    decoder: &ColumnDecoder,
    raw: &PgValueRef<'_>,
    bytes: &[u8],
    i: usize,
    slot: &mut Value,
) -> Result<(), StoreError> {
    fn dec<'r, T: Decode<'r, Postgres>>(raw: &PgValueRef<'r>, i: usize) -> Result<T, StoreError> {
        T::decode(raw.clone()).map_err(|e| StoreError::decode(i, e.to_string()))
    }
    /// A fixed-size binary value through `from_be`, a text-format one through sqlx.
    fn number<'r, T: Decode<'r, Postgres>, const N: usize>(
        raw: &PgValueRef<'r>,
        bytes: &[u8],
        i: usize,
        from_be: fn([u8; N]) -> T,
    ) -> Result<T, StoreError> {
        if raw.format() != PgValueFormat::Binary {
            return dec(raw, i);
        }
        let fixed = bytes
            .try_into()
            .map_err(|_| StoreError::decode(i, format!("a binary value of {} bytes, not {N}", bytes.len())))?;
        Ok(from_be(fixed))
    }
    *slot = match decoder {
        // UTF-8 in both formats.
        ColumnDecoder::Text => {
            slot.set_text(std::str::from_utf8(bytes).map_err(|e| StoreError::decode(i, e.to_string()))?);
            return Ok(());
        }
        ColumnDecoder::Int8 => Value::Int(number(raw, bytes, i, i64::from_be_bytes)?),
        ColumnDecoder::Int4 => Value::Int(number(raw, bytes, i, i32::from_be_bytes)?.into()),
        ColumnDecoder::Int2 => Value::Int(number(raw, bytes, i, i16::from_be_bytes)?.into()),
        ColumnDecoder::Float8 => Value::Float(number(raw, bytes, i, f64::from_be_bytes)?),
        ColumnDecoder::Float4 => Value::Float(number(raw, bytes, i, f32::from_be_bytes)?.into()),
        ColumnDecoder::Int8AsFloat => Value::Float(number(raw, bytes, i, i64::from_be_bytes)? as f64),
        ColumnDecoder::Int4AsFloat => Value::Float(number(raw, bytes, i, i32::from_be_bytes)?.into()),
        ColumnDecoder::Int2AsFloat => Value::Float(number(raw, bytes, i, i16::from_be_bytes)?.into()),
        ColumnDecoder::Bool => Value::Bool(number(raw, bytes, i, |[b]: [u8; 1]| b != 0)?),
        ColumnDecoder::Timestamp => Value::Timestamp(dec::<chrono::NaiveDateTime>(raw, i)?),
        ColumnDecoder::TimestampTz => Value::Timestamp(dec::<chrono::DateTime<chrono::Utc>>(raw, i)?.naive_utc()),
        ColumnDecoder::Date => Value::Timestamp(dec::<chrono::NaiveDate>(raw, i)?.and_time(chrono::NaiveTime::MIN)),
        ColumnDecoder::Mismatch(message) => return Err(StoreError::decode(i, message.clone())),
    };
    Ok(())
}
