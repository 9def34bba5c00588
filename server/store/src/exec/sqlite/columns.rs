//! A stream's rows read through SQLite's C API: the one module of the workspace allowed `unsafe`.
//! It owns finding the statement a `rusqlite::Rows` steps and reading that statement's current
//! row. It must not step, reset, bind or finalize a statement (rusqlite does all of that), and
//! nothing it hands out outlives the row it was read from.
//!
//! Why: a stream reads every column of every row, and rusqlite's `Row::get_ref` makes four calls
//! into SQLite per value (the column count for its index check, the type, the pointer, the
//! length). One `sqlite3_column_value` per column and the value's fields read from it cost less;
//! docs/benchmarks.md, performance rounds 18 and 19, has the figures. rusqlite keeps its statement
//! pointer private, so the statement is found on the connection's list of prepared statements
//! (`sqlite3_next_stmt`) at the stream's second row: while a statement is on a row it is busy,
//! and when it is the connection's only busy statement (the connection's thread runs one
//! statement at a time) it is ours. When another is busy too, rows are read through rusqlite.
//! The first row is always read through rusqlite, so a one-row stream does not pay for the
//! search; point reads and `query` do not search at all.
#![allow(unsafe_code)]

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Error, Rows, ffi};
use std::ffi::c_int;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// The rows of one running statement, read through the C API once its statement was found.
pub(super) struct RawRows<'s> {
    rows: Rows<'s>,
    db: Option<NonNull<ffi::sqlite3>>,
    state: Found,
}

enum Found {
    /// The next row is the first: read through rusqlite, so that a stream of one row (most
    /// are small) does not pay for the search.
    First,
    /// At the second row: look for the statement.
    Search,
    /// Our statement and its column count.
    Raw(NonNull<ffi::sqlite3_stmt>, c_int),
    /// Not found for certain: read through rusqlite.
    Rusqlite,
}

#[cfg(test)]
thread_local! {
    /// Statements found on this thread (tests check that streams take the C API's way).
    pub(super) static FOUND: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The current row of a [`RawRows`].
pub(super) enum Columns<'r> {
    Raw(RawRow<'r>),
    Rusqlite(&'r rusqlite::Row<'r>),
}

/// A row read through the C API: its statement, which has just stepped to it.
pub(super) struct RawRow<'r> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    count: c_int,
    row: PhantomData<&'r ()>,
}

/// The statement of `db` that has been stepped and not yet reset or run to its end, if exactly
/// one has.
///
/// # Safety
/// `db` is an open connection that no other thread uses meanwhile.
unsafe fn the_busy_statement(db: NonNull<ffi::sqlite3>) -> Option<NonNull<ffi::sqlite3_stmt>> {
    let mut found = None;
    let mut p = std::ptr::null_mut();
    loop {
        // SAFETY: `db` is open and ours (the caller's promise); `p` is null or a statement of it
        // that the previous call returned and nothing has finalized since.
        p = unsafe { ffi::sqlite3_next_stmt(db.as_ptr(), p) };
        let Some(stmt) = NonNull::new(p) else { return found };
        // SAFETY: `stmt` is a live statement of `db`.
        if unsafe { ffi::sqlite3_stmt_busy(stmt.as_ptr()) } != 0 {
            if found.is_some() {
                return None;
            }
            found = Some(stmt);
        }
    }
}

impl<'s> RawRows<'s> {
    /// `rows` must come from a statement prepared on `conn`: the search looks among `conn`'s
    /// statements. The one caller, `rows::stream_inner`, prepares it from `conn` two lines before.
    /// (A precondition of this module's one constructor rather than an `unsafe fn`, which would
    /// put `unsafe` into the caller's module too.)
    pub(super) fn new(conn: &'s Connection, rows: Rows<'s>) -> RawRows<'s> {
        // SAFETY: the handle is only used while `conn` is borrowed (for `'s`), on this thread
        // (`Connection` is not `Sync`), and never closed or handed out here.
        let db = NonNull::new(unsafe { conn.handle() });
        RawRows { rows, db, state: Found::First }
    }

    /// Steps to the next row.
    pub(super) fn next(&mut self) -> rusqlite::Result<Option<Columns<'_>>> {
        let Some(row) = self.rows.next()? else { return Ok(None) };
        match self.state {
            Found::First => {
                self.state = Found::Search;
                return Ok(Some(Columns::Rusqlite(row)));
            }
            Found::Search => {
                // Our statement has stepped to a row, so it is busy. When no other statement
                // of the connection is, the one busy statement is ours.
                // SAFETY: `db` is open (borrowed for `'s`) and used by this thread alone.
                let busy = self.db.and_then(|db| unsafe { the_busy_statement(db) });
                let columns = row.as_ref().column_count();
                self.state = match busy {
                    // SAFETY: `stmt` is a live statement of `db`.
                    Some(stmt) => match unsafe { ffi::sqlite3_column_count(stmt.as_ptr()) } {
                        n if usize::try_from(n) == Ok(columns) => {
                            #[cfg(test)]
                            FOUND.with(|f| f.set(f.get() + 1));
                            Found::Raw(stmt, n)
                        }
                        _ => Found::Rusqlite,
                    },
                    None => Found::Rusqlite,
                };
            }
            Found::Raw(..) | Found::Rusqlite => {}
        }
        Ok(Some(match self.state {
            Found::Raw(stmt, count) => Columns::Raw(RawRow { stmt, count, row: PhantomData }),
            _ => Columns::Rusqlite(row),
        }))
    }

    /// Whether rows are read through the C API (for tests).
    #[cfg(test)]
    pub(super) fn is_raw(&self) -> bool {
        matches!(self.state, Found::Raw(..))
    }
}

impl Columns<'_> {
    /// Column `i` of the row, as rusqlite's `Row::get_ref` gives it.
    #[cfg(test)]
    pub(super) fn get(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        match self {
            Columns::Rusqlite(row) => row.get_ref(i),
            Columns::Raw(raw) => raw.get(i),
        }
    }
}

impl RawRow<'_> {
    /// Column `i` of the row, as rusqlite's `Row::get_ref` would give it.
    pub(super) fn get(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        let (stmt, count) = (self.stmt.as_ptr(), self.count);
        let col = match c_int::try_from(i) {
            Ok(col) if col < count => col,
            _ => return Err(Error::InvalidColumnIndex(i)),
        };
        // SAFETY: `stmt` is the statement of the `Rows` this row was stepped from, which holds
        // it (so it is not finalized) and cannot step again while `self` borrows it; the last
        // step returned a row and `col` is one of its columns. `sqlite3_column_value` of such a
        // row is valid until the next step, and the slices made below borrow `self`. The value
        // is "unprotected" in SQLite's words, which matters only to a connection used by several
        // threads at once; ours is used by this thread alone.
        unsafe {
            let v = ffi::sqlite3_column_value(stmt, col);
            if v.is_null() {
                return Err(Error::InvalidColumnIndex(i));
            }
            Ok(match ffi::sqlite3_value_type(v) {
                ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_value_int64(v)),
                ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_value_double(v)),
                // As SQLite's documentation asks: the pointer first, then its length.
                ffi::SQLITE_TEXT => ValueRef::Text(bytes(ffi::sqlite3_value_text(v), ffi::sqlite3_value_bytes(v))),
                ffi::SQLITE_BLOB => {
                    ValueRef::Blob(bytes(ffi::sqlite3_value_blob(v).cast(), ffi::sqlite3_value_bytes(v)))
                }
                _ => ValueRef::Null,
            })
        }
    }
}

/// `len` bytes at `p` (none when `p` is null, as SQLite gives an empty blob).
///
/// # Safety
/// `p` is null or points at `len` readable bytes that stay unchanged for `'a`.
unsafe fn bytes<'a>(p: *const u8, len: c_int) -> &'a [u8] {
    match usize::try_from(len) {
        Ok(len) if len > 0 && !p.is_null() => {
            // SAFETY: the caller's promise.
            unsafe { std::slice::from_raw_parts(p, len) }
        }
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(row: &Columns<'_>, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{:?}", row.get(i).map_err(|e| e.to_string()))).collect()
    }

    /// Every kind of SQLite value reads the same through the C API as through rusqlite.
    #[test]
    fn columns_read_as_rusqlite_reads_them() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (a, b, c, d, e);
             INSERT INTO t VALUES (0, 0, 0, 0, 0); -- the first row is read through rusqlite
             INSERT INTO t VALUES (NULL, 1, -2.5, 'text', x'00ff');
             INSERT INTO t VALUES ('', x'', 9223372036854775807, 'é€😀', 0.0);
             INSERT INTO t VALUES (-9223372036854775808, 'a' || char(0) || 'b', 1e308, NULL, 'x');",
        )
        .unwrap();
        let sql = "SELECT a, b, c, d, e FROM t ORDER BY rowid";
        let mut expected = Vec::new();
        {
            let mut st = conn.prepare(sql).unwrap();
            let mut rows = st.raw_query();
            while let Some(row) = rows.next().unwrap() {
                expected.push(
                    (0..6).map(|i| format!("{:?}", row.get_ref(i).map_err(|e| e.to_string()))).collect::<Vec<_>>(),
                );
            }
        }
        let mut st = conn.prepare_cached(sql).unwrap();
        let mut rows = RawRows::new(&conn, st.raw_query());
        let mut got = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            got.push(values(&row, 6));
        }
        assert!(rows.is_raw(), "the statement was found");
        assert_eq!(got, expected);
        assert_eq!(got.len(), 4);
        assert!(got[1][5].starts_with("Err("), "{:?}", got[1][5]);
    }

    /// Another statement busy meanwhile (SQLite lists it before ours): ours cannot be told
    /// for certain, and rows are read through rusqlite, right.
    #[test]
    fn another_busy_statement_means_rusqlite() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (a); INSERT INTO t VALUES (1), (2), (3);").unwrap();
        let sql = "SELECT a FROM t ORDER BY a";
        let mut ours = conn.prepare(sql).unwrap();
        let mut other = conn.prepare(sql).unwrap();
        let mut other_rows = other.raw_query();
        assert!(other_rows.next().unwrap().is_some());
        assert!(other_rows.next().unwrap().is_some()); // at 2
        let mut rows = RawRows::new(&conn, ours.raw_query());
        let mut got = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            got.push(values(&row, 1));
        }
        assert!(!rows.is_raw());
        assert_eq!(got, [["Ok(Integer(1))"], ["Ok(Integer(2))"], ["Ok(Integer(3))"]]);
        drop(rows);
        drop(other_rows);
        // The other statement done, the same stream finds its own.
        let mut rows = RawRows::new(&conn, ours.raw_query());
        let mut got = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            got.push(values(&row, 1));
        }
        assert!(rows.is_raw());
        assert_eq!(got, [["Ok(Integer(1))"], ["Ok(Integer(2))"], ["Ok(Integer(3))"]]);
    }

    /// A statement of no row or one row is never looked for.
    #[test]
    fn one_row_no_search() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (a)").unwrap();
        let mut st = conn.prepare("SELECT a FROM t").unwrap();
        let mut rows = RawRows::new(&conn, st.raw_query());
        assert!(rows.next().unwrap().is_none());
        assert!(!rows.is_raw());
        drop(rows);
        conn.execute_batch("INSERT INTO t VALUES (1)").unwrap();
        let mut rows = RawRows::new(&conn, st.raw_query());
        assert_eq!(values(&rows.next().unwrap().unwrap(), 1), ["Ok(Integer(1))"]);
        assert!(rows.next().unwrap().is_none());
        assert!(!rows.is_raw());
    }
}
