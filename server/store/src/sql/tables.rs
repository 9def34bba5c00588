//! Statements of an entry table's lifecycle: the `collections.has_table` flag and its row lock,
//! dropping the table, whether it holds a row, and the planner's statistics of it. It builds SQL
//! only (the DDL of a new table is `Dialect::create_entry_table`); it must not decide when a table
//! is created or analyzed.

use ardacat_core::types::ValueType;

use super::Dialect;
use super::compile::{Compiled, table_name};
use super::statements::Params;

pub fn select_has_table(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT has_table FROM collections WHERE id = {}", p.int(id));
    p.done(sql, vec![ValueType::Bool])
}

/// Locks the collection row until the transaction ends and returns `has_table`.
pub fn lock_table_state(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("UPDATE collections SET has_table = has_table WHERE id = {} RETURNING has_table", p.int(id));
    p.done(sql, vec![ValueType::Bool])
}

/// Marks the collection's entry table as created.
pub fn set_has_table(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("UPDATE collections SET has_table = {} WHERE id = {}", p.bool(true), p.int(id));
    p.done(sql, Vec::new())
}

pub fn drop_entry_table(collection_id: i64) -> String {
    format!("DROP TABLE IF EXISTS {}", table_name(collection_id))
}

/// One row id of the entry table, if it has a row.
pub fn select_any_entry(d: Dialect, collection_id: i64) -> Compiled {
    Params::new(d).done(format!("SELECT id FROM {} LIMIT 1", table_name(collection_id)), vec![ValueType::Int])
}

/// Whether PostgreSQL has never gathered statistics of the entry table (`reltuples` is -1 until
/// the first `ANALYZE` or `VACUUM`); `None` on SQLite, whose planner keeps no such statistics
/// unless asked.
pub fn select_lacks_statistics(d: Dialect, collection_id: i64) -> Option<Compiled> {
    match d {
        Dialect::Sqlite => None,
        Dialect::Postgres => {
            let mut p = Params::new(d);
            let sql = format!(
                "SELECT reltuples < 0 FROM pg_class WHERE oid = to_regclass({})",
                p.text(&table_name(collection_id))
            );
            Some(p.done(sql, vec![ValueType::Bool]))
        }
    }
}

/// Gathers the planner's statistics of the entry table.
pub fn analyze_entry_table(collection_id: i64) -> String {
    format!("ANALYZE {}", table_name(collection_id))
}
