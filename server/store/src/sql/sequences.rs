//! Fixed statements on `sequences` (per-collection counters). It builds SQL only; the catalogue
//! decides who may use them. Every value is a bound parameter.

use ardacat_core::types::ValueType;

use super::Dialect;
use super::compile::Compiled;
use super::statements::Params;

pub fn insert_sequence(d: Dialect, collection_id: i64, name: &str, increment: i64, start: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO sequences (collection_id, name, increment, next_value) VALUES ({}, {}, {}, {})",
        p.int(collection_id),
        p.text(name),
        p.int(increment),
        p.int(start)
    );
    p.done(sql, Vec::new())
}

/// Advances the sequence and returns the value it had (no row: no such sequence).
pub fn advance_sequence(d: Dialect, collection_id: i64, name: &str) -> Compiled {
    // SQLite turns an integer overflow into a float (which the STRICT column then refuses
    // with a message, not a code); its checked addition fails like PostgreSQL's bigint, as
    // an overflow: a sequence at the end of its range is exhausted, not broken.
    let next = match d {
        Dialect::Sqlite => "ardacat_add(next_value, increment)",
        Dialect::Postgres => "next_value + increment",
    };
    let mut p = Params::new(d);
    let sql = format!(
        "UPDATE sequences SET next_value = {next} WHERE collection_id = {} AND name = {} \
         RETURNING next_value - increment",
        p.int(collection_id),
        p.text(name)
    );
    p.done(sql, vec![ValueType::Int])
}

pub fn delete_sequence(d: Dialect, collection_id: i64, name: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql =
        format!("DELETE FROM sequences WHERE collection_id = {} AND name = {}", p.int(collection_id), p.text(name));
    p.done(sql, Vec::new())
}
