//! What reading a stream's rows costs on the SQLite thread, three ways, on one connection:
//!   cargo run --release --manifest-path bench/sqlite-decode/Cargo.toml -- FILE TABLE [ROUNDS]
//! `rusqlite`: `Row::get_ref` per column, as the server reads a stream (the column count for the
//! index check, then `sqlite3_column_type` and the typed calls); `column`: the same calls made
//! directly; `value`: one `sqlite3_column_value` per column read by `sqlite3_value_*`. Each way
//! copies every value into a reused slot like the server's decoder (text into the slot's old
//! buffer, checked as UTF-8) and prints nanoseconds per row; the ways alternate in every round.
//! It measured the idea of docs/benchmarks.md round 18 apart from the server; since round 19 the
//! server reads a stream's rows the third way (server/store/src/exec/sqlite/columns.rs).

use std::time::Instant;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, ffi};

#[derive(Clone)]
enum Slot {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

/// A sum over the row's slots, printed: the three ways must read the same values.
fn checksum(slots: &[Slot]) -> u64 {
    slots.iter().fold(0u64, |sum, s| {
        sum.wrapping_add(match s {
            Slot::Null => 1,
            Slot::Int(n) => *n as u64,
            Slot::Float(f) => f.to_bits(),
            Slot::Text(t) => t.len() as u64,
        })
    })
}

fn put(slot: &mut Slot, v: ValueRef<'_>) {
    *slot = match v {
        ValueRef::Null | ValueRef::Blob(_) => Slot::Null,
        ValueRef::Integer(n) => Slot::Int(n),
        ValueRef::Real(f) => Slot::Float(f),
        ValueRef::Text(b) => {
            let s = std::str::from_utf8(b).expect("UTF-8 text");
            let mut t = match std::mem::replace(slot, Slot::Null) {
                Slot::Text(t) => t,
                _ => String::new(),
            };
            t.clear();
            t.push_str(s);
            Slot::Text(t)
        }
    };
}

fn via_rusqlite(conn: &Connection, sql: &str) -> (usize, u64) {
    let mut st = conn.prepare(sql).expect("prepare");
    let n = st.column_count();
    let mut slots = vec![Slot::Null; n];
    let mut rows = st.raw_query();
    let (mut count, mut sum) = (0, 0u64);
    while let Some(row) = rows.next().expect("step") {
        for (i, slot) in slots.iter_mut().enumerate() {
            put(slot, row.get_ref(i).expect("column"));
        }
        sum = sum.wrapping_add(checksum(&slots));
        count += 1;
    }
    (count, sum)
}

/// # Safety
/// `p` must point at `len` bytes (or be null).
unsafe fn bytes<'a>(p: *const u8, len: i32) -> &'a [u8] {
    if p.is_null() || len <= 0 { &[] } else { unsafe { std::slice::from_raw_parts(p, len as usize) } }
}

fn via_c_api(conn: &Connection, sql: &str, one_value_call: bool) -> (usize, u64) {
    let sql = std::ffi::CString::new(sql).expect("SQL without NUL");
    // SAFETY: the statement is prepared on `conn`'s handle, read only while on a row, and
    // finalized before return; nothing else uses the connection meanwhile.
    unsafe {
        let mut stmt = std::ptr::null_mut();
        let rc = ffi::sqlite3_prepare_v3(conn.handle(), sql.as_ptr(), -1, 0, &mut stmt, std::ptr::null_mut());
        assert_eq!(rc, ffi::SQLITE_OK, "prepare");
        let n = ffi::sqlite3_column_count(stmt);
        let mut slots = vec![Slot::Null; n as usize];
        let (mut count, mut sum) = (0, 0u64);
        loop {
            match ffi::sqlite3_step(stmt) {
                ffi::SQLITE_ROW => {}
                ffi::SQLITE_DONE => break,
                rc => panic!("step: {rc}"),
            }
            for (i, slot) in (0..n).zip(slots.iter_mut()) {
                let v = if one_value_call {
                    let v = ffi::sqlite3_column_value(stmt, i);
                    match ffi::sqlite3_value_type(v) {
                        ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_value_int64(v)),
                        ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_value_double(v)),
                        ffi::SQLITE_TEXT => {
                            ValueRef::Text(bytes(ffi::sqlite3_value_text(v), ffi::sqlite3_value_bytes(v)))
                        }
                        _ => ValueRef::Null,
                    }
                } else {
                    match ffi::sqlite3_column_type(stmt, i) {
                        ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_column_int64(stmt, i)),
                        ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_column_double(stmt, i)),
                        ffi::SQLITE_TEXT => {
                            ValueRef::Text(bytes(ffi::sqlite3_column_text(stmt, i), ffi::sqlite3_column_bytes(stmt, i)))
                        }
                        _ => ValueRef::Null,
                    }
                };
                put(slot, v);
            }
            sum = sum.wrapping_add(checksum(&slots));
            count += 1;
        }
        ffi::sqlite3_finalize(stmt);
        (count, sum)
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: sqlite-decode FILE TABLE [ROUNDS]";
    let (file, table) = (args.next().expect(usage), args.next().expect(usage));
    let rounds: usize = args.next().map_or(5, |r| r.parse().expect(usage));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&file, flags).expect("open");
    // The server's page cache (sqlite_cache_kib's default).
    conn.execute_batch("PRAGMA cache_size=-16384").expect("cache_size");
    let sql = format!("SELECT * FROM {table} ORDER BY id");
    for round in 1..=rounds {
        for way in ["rusqlite", "column", "value"] {
            let start = Instant::now();
            let (rows, sum) = match way {
                "rusqlite" => via_rusqlite(&conn, &sql),
                "column" => via_c_api(&conn, &sql, false),
                _ => via_c_api(&conn, &sql, true),
            };
            let ns = start.elapsed().as_nanos() as f64 / rows.max(1) as f64;
            println!("round {round} {way:<8} {rows} rows {ns:.0} ns/row checksum {sum:x}");
        }
    }
}
