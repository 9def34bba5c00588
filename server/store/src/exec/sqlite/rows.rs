//! Statements on a connection's own thread: preparing (cached), binding parameters, running,
//! the statement deadline's progress guard, streaming rows into the channel and decoding values.
//! Must not manage connections, the pool or transactions, nor call SQLite's C API (`columns`
//! does, for a stream's rows).

use super::*;

pub(super) fn prepare<'c>(conn: &'c Connection, sql: &str) -> Result<rusqlite::CachedStatement<'c>, StoreError> {
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
pub(super) fn bind(st: &mut Statement<'_>, params: &[Value]) -> Result<(), StoreError> {
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
pub(super) fn run_bound(conn: &Connection, st: &mut Statement<'_>) -> Result<u64, StoreError> {
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

/// A stream's batch and the rows sent so far, shared by the row loop and the progress handler
/// (which sends a batch that went stale while SQLite works between rows).
struct Pending {
    batch: Batcher,
    sent: u64,
}

impl Pending {
    fn send<E>(&mut self, tx: &mpsc::Sender<Result<RowBatch, E>>, rows: RowBatch) -> bool {
        let n = rows.len() as u64;
        let delivered = tx.blocking_send(Ok(rows)).is_ok();
        if delivered {
            self.sent += n;
        }
        delivered
    }
}

fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(super) fn stream_rows<E: From<StoreError> + Send + 'static>(
    conn: &mut Connection,
    sql: &str,
    params: &[Value],
    types: &[ValueType],
    tx: mpsc::Sender<Result<RowBatch, E>>,
    deadline: &Arc<Deadline>,
) -> Result<u64, StoreError> {
    let pending = Arc::new(Mutex::new(Pending { batch: Batcher::new(), sent: 0 }));
    let r = stream_inner(conn, sql, params, types, &tx, deadline, &pending);
    let mut p = lock(&pending);
    match r {
        Ok(()) => {
            if let Some(rest) = p.batch.take() {
                p.send(&tx, rest);
            }
            Ok(p.sent)
        }
        Err(Stop::Cancelled) => Ok(p.sent),
        Err(Stop::Failed(e)) => {
            // The rows read before the error go out first: the consumer sees what it would
            // have seen row by row, then the error.
            if let Some(rows) = p.batch.take() {
                p.send(&tx, rows);
            }
            let _ = tx.blocking_send(Err(E::from(e.clone())));
            Err(e)
        }
    }
}

/// Why a stream ended early.
enum Stop {
    /// The receiver went away.
    Cancelled,
    Failed(StoreError),
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Stop {
        Stop::Failed(e)
    }
}

impl From<rusqlite::Error> for Stop {
    fn from(e: rusqlite::Error) -> Stop {
        Stop::Failed(e.into())
    }
}

/// Reads every row into `pending` (which sends full batches); what is left in it is sent by
/// the caller.
fn stream_inner<E: From<StoreError> + Send + 'static>(
    conn: &Connection,
    sql: &str,
    params: &[Value],
    types: &[ValueType],
    tx: &mpsc::Sender<Result<RowBatch, E>>,
    deadline: &Arc<Deadline>,
    pending: &Arc<Mutex<Pending>>,
) -> Result<(), Stop> {
    if tx.is_closed() {
        return Err(Stop::Cancelled);
    }
    let mut st = prepare(conn, sql)?;
    check_types(st.column_count(), types)?;
    bind(&mut st, params)?;
    let (watch, d, held) = (tx.clone(), deadline.clone(), pending.clone());
    conn.progress_handler(
        PROGRESS_OPS,
        Some(move || {
            // Between rows (a sort, a long scan): rows already read do not wait for the next.
            if let Ok(mut p) = held.try_lock()
                && let Some(stale) = p.batch.take_stale()
            {
                p.send(&watch, stale);
            }
            watch.is_closed() || d.expired()
        }),
    )?;
    let _guard = ProgressGuard(conn, deadline);
    let mut rows = RawRows::new(conn, st.raw_query());
    // Rows of batches the consumer handed back, decoded into in place of new ones.
    let mut spent: Vec<Vec<Value>> = Vec::new();
    loop {
        match rows.next() {
            Ok(Some(row)) => {
                if spent.is_empty() {
                    spent = ardacat_core::store::spent_rows::take().unwrap_or_default();
                }
                let mut values = spent.pop().unwrap_or_default();
                match &row {
                    Columns::Raw(raw) => decode_row_into(raw, types, &mut values)?,
                    Columns::Rusqlite(row) => decode_row_into(*row, types, &mut values)?,
                }
                let mut p = lock(pending);
                if let Some(full) = p.batch.push(values)
                    && !p.send(tx, full)
                {
                    return Err(Stop::Cancelled);
                }
            }
            Ok(None) => return Ok(()),
            Err(_) if tx.is_closed() => return Err(Stop::Cancelled), // interrupted by the progress handler
            Err(e) => return Err(e.into()),
        }
    }
}

/// A row's values as rusqlite's `ValueRef`s: a rusqlite row (point reads, `query`, a stream's
/// first row), or a stream's row read through the C API. Generic, so that each kind of row has
/// its own decoding loop with `decode_value` inlined: with one loop over an enum of both, the
/// decoder became a call per value and a `get` cost 1.4 % more instructions.
pub(super) trait RowValues {
    fn value(&self, i: usize) -> rusqlite::Result<ValueRef<'_>>;
}

impl RowValues for rusqlite::Row<'_> {
    #[inline]
    fn value(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        self.get_ref(i)
    }
}

impl RowValues for RawRow<'_> {
    #[inline]
    fn value(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        self.get(i)
    }
}

pub(super) fn decode_row(row: &rusqlite::Row<'_>, types: &[ValueType]) -> Result<Vec<Value>, StoreError> {
    let mut values = Vec::new();
    decode_row_into(row, types, &mut values)?;
    Ok(values)
}

/// [`decode_row`] into `out`, whose earlier values are overwritten (a text value into an
/// earlier text value keeps its buffer).
pub(super) fn decode_row_into(
    row: &impl RowValues,
    types: &[ValueType],
    out: &mut Vec<Value>,
) -> Result<(), StoreError> {
    out.truncate(types.len());
    // Exact size: pushing into an empty Vec would grow it by doubling (five reallocations
    // for 60 columns).
    out.reserve_exact(types.len() - out.len());
    out.resize(types.len(), Value::Null);
    for (i, (t, slot)) in types.iter().zip(out.iter_mut()).enumerate() {
        // The `ValueRef` is looked at where rusqlite returned it and the value written into its
        // slot, not returned: copying either out of a `Result` (in wider loads than the stores
        // that made it) stalled on every value.
        let got = row.value(i);
        let v = match &got {
            Ok(v) => v,
            Err(e) => return Err(StoreError::decode(i, e.to_string())),
        };
        decode_value(i, *t, v, slot)?;
    }
    Ok(())
}

/// Decodes `v` into `slot` (a text into the slot's old text keeps its buffer). Inlined into
/// both decoding loops: called once per value, as a function it cost 1.5 % of a `get`.
#[inline(always)]
fn decode_value(i: usize, t: ValueType, v: &ValueRef<'_>, slot: &mut Value) -> Result<(), StoreError> {
    fn utf8(i: usize, b: &[u8]) -> Result<&str, StoreError> {
        std::str::from_utf8(b).map_err(|_| StoreError::decode(i, "text is not UTF-8"))
    }
    *slot = match (t, v) {
        (_, ValueRef::Null) => Value::Null,
        (ValueType::Int, ValueRef::Integer(n)) => Value::Int(*n),
        (ValueType::Float, ValueRef::Real(f)) => Value::Float(*f),
        // A REAL column (or a float expression) may hand back an INTEGER.
        (ValueType::Float, ValueRef::Integer(n)) => Value::Float(*n as f64),
        (ValueType::Text, ValueRef::Text(b)) => {
            slot.set_text(utf8(i, b)?);
            return Ok(());
        }
        (ValueType::Bool, ValueRef::Integer(n)) => Value::Bool(*n != 0),
        (ValueType::Timestamp, ValueRef::Text(b)) => {
            let s = utf8(i, b)?;
            Value::Timestamp(
                parse_timestamp(s).ok_or_else(|| StoreError::decode(i, format!("'{s}' is not a timestamp")))?,
            )
        }
        (t, other) => {
            return Err(StoreError::decode(
                i,
                format!("expected {}, found SQLite {}", type_name(t), other.data_type()),
            ));
        }
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream reads its rows through the C API (`columns`) and gets what the rusqlite way
    /// (`decode_row`, as `query` reads) gets, for every type and for NULLs; a value of the wrong
    /// kind fails the stream with the same error both ways.
    #[test]
    fn a_stream_reads_as_a_query_reads() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (i INTEGER, f REAL, s TEXT, b INTEGER, ts TEXT);
             INSERT INTO t VALUES (1, 2.5, 'one', 1, '2026-12-06 04:23:54');
             INSERT INTO t VALUES (NULL, 3, '', 0, NULL);
             INSERT INTO t VALUES (-7, NULL, 'é€😀', NULL, '1970-01-01 00:00:00.5');",
        )
        .unwrap();
        let types = [ValueType::Int, ValueType::Float, ValueType::Text, ValueType::Bool, ValueType::Timestamp];
        let sql = "SELECT i, f, s, b, ts FROM t WHERE i IS NULL OR i <> ?1 ORDER BY rowid";
        let read = |conn: &mut Connection, sql: &str, params: &[Value]| {
            let (tx, mut rx) = mpsc::channel(16);
            let found = columns::FOUND.with(|f| f.get());
            let sent = stream_rows::<StoreError>(conn, sql, params, &types, tx, &Arc::new(Deadline::new()));
            let mut rows = Vec::new();
            let mut error = None;
            while let Ok(message) = rx.try_recv() {
                match message {
                    Ok(batch) => rows.extend(batch),
                    Err(e) => error = Some(e.to_string()),
                }
            }
            (sent.map_err(|e| e.to_string()), rows, error, columns::FOUND.with(|f| f.get()) - found)
        };
        let expected = |conn: &Connection, sql: &str, params: &[Value]| {
            let mut st = prepare(conn, sql).unwrap();
            bind(&mut st, params).unwrap();
            let mut rows = st.raw_query();
            let mut out = Vec::new();
            loop {
                match rows.next() {
                    Ok(Some(row)) => match decode_row(row, &types) {
                        Ok(values) => out.push(values),
                        Err(e) => return (out, Some(e.to_string())),
                    },
                    Ok(None) => return (out, None),
                    Err(e) => return (out, Some(e.to_string())),
                }
            }
        };
        let params = [Value::Int(99)];
        let (want, none) = expected(&conn, sql, &params);
        assert_eq!((want.len(), none), (3, None));
        let (sent, got, error, found) = read(&mut conn, sql, &params);
        assert_eq!((sent, error, found), (Ok(3), None, 1), "three rows, through the C API");
        assert_eq!(got, want);
        assert!(matches!(&got[1][2], Value::Text(s) if s.is_empty()));

        // A text where an int is expected, in the second row: both ways fail alike, after the first row.
        conn.execute_batch("UPDATE t SET i = 'x' WHERE i IS NULL").unwrap();
        let (want, why) = expected(&conn, sql, &params);
        assert_eq!(want.len(), 1);
        let (sent, got, error, found) = read(&mut conn, sql, &params);
        assert_eq!(found, 1);
        assert_eq!(got, want);
        assert_eq!(error, why);
        assert_eq!(sent.err(), why);
    }
}
