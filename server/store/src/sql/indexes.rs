//! Fixed statements on `entry_indexes` and `entry_index_columns`, and the DDL of per-attribute
//! (`e<c>_a<attribute id>`) and composite (`e<c>_x<index id>`) indexes. It builds SQL only; the
//! catalogue decides which indexes exist. Every value is a bound parameter; names come from ids.

use ardacat_core::store::{IndexColumn, IndexDef};
use ardacat_core::types::{Value, ValueType};

use super::Dialect;
use super::compile::{Compiled, attr_column, table_name};
use super::statements::Params;

/// SQL name of a composite index: `e<collection id>_x<index id>` (per-attribute ones are `_a<id>`).
pub fn composite_index_name(collection_id: i64, index_id: i64) -> String {
    format!("{}_x{index_id}", table_name(collection_id))
}

/// `CREATE INDEX e<c>_a<id> ON e<c> (a<id>)`.
pub fn create_attribute_index_ddl(collection_id: i64, attr_id: i64) -> String {
    let t = table_name(collection_id);
    let c = attr_column(attr_id);
    format!("CREATE INDEX {t}_{c} ON {t} ({c})")
}

pub fn drop_attribute_index_ddl(collection_id: i64, attr_id: i64) -> String {
    format!("DROP INDEX IF EXISTS {}_{}", table_name(collection_id), attr_column(attr_id))
}

/// `CREATE INDEX e<c>_x<index id> ON e<c> (<columns>)`: every identifier comes from an id.
pub fn create_composite_index_ddl(collection_id: i64, ix: &IndexDef) -> String {
    let t = table_name(collection_id);
    let cols: Vec<String> = ix
        .columns
        .iter()
        .map(|c| match c {
            IndexColumn::File => "file".to_string(),
            IndexColumn::Attr(a) => attr_column(*a),
        })
        .collect();
    format!("CREATE INDEX {} ON {t} ({})", composite_index_name(collection_id, ix.id), cols.join(", "))
}

pub fn drop_composite_index_ddl(collection_id: i64, index_id: i64) -> String {
    format!("DROP INDEX IF EXISTS {}", composite_index_name(collection_id, index_id))
}

/// Columns of [`select_indexes`]: index id, index name, attribute id (NULL for `file`).
pub fn select_indexes(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT i.id, i.name, c.attribute_id FROM entry_indexes i \
         JOIN entry_index_columns c ON c.index_id = i.id \
         WHERE i.collection_id = {} ORDER BY i.id, c.position",
        p.int(collection_id)
    );
    p.done(sql, vec![ValueType::Int, ValueType::Text, ValueType::Int])
}

/// Names of the composite indexes that use an attribute.
pub fn select_indexes_using_attribute(d: Dialect, attr_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT i.name FROM entry_indexes i JOIN entry_index_columns c ON c.index_id = i.id \
         WHERE c.attribute_id = {} ORDER BY i.id",
        p.int(attr_id)
    );
    p.done(sql, vec![ValueType::Text])
}

/// The column rows, then the index rows, of every composite index of a collection.
pub fn delete_collection_indexes(d: Dialect, collection_id: i64) -> [Compiled; 2] {
    let mut p = Params::new(d);
    let sql = format!(
        "DELETE FROM entry_index_columns WHERE index_id IN (SELECT id FROM entry_indexes WHERE collection_id = {})",
        p.int(collection_id)
    );
    let columns = p.done(sql, Vec::new());
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM entry_indexes WHERE collection_id = {}", p.int(collection_id));
    [columns, p.done(sql, Vec::new())]
}

/// A new index row; returns its id.
pub fn insert_index(d: Dialect, collection_id: i64, name: &str, name_key: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO entry_indexes (collection_id, name, name_key) VALUES ({}, {}, {}) RETURNING id",
        p.int(collection_id),
        p.text(name),
        p.text(name_key)
    );
    p.done(sql, vec![ValueType::Int])
}

/// Column `position` of an index: an attribute, or `file` (NULL).
pub fn insert_index_column(d: Dialect, index_id: i64, position: i64, column: &IndexColumn) -> Compiled {
    let attr = match column {
        IndexColumn::File => Value::Null,
        IndexColumn::Attr(a) => Value::Int(*a),
    };
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO entry_index_columns (index_id, position, attribute_id) VALUES ({}, {}, {})",
        p.int(index_id),
        p.int(position),
        p.bind(attr, ValueType::Int)
    );
    p.done(sql, Vec::new())
}

/// The column rows, then the row, of one index.
pub fn delete_index(d: Dialect, index_id: i64) -> [Compiled; 2] {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM entry_index_columns WHERE index_id = {}", p.int(index_id));
    let columns = p.done(sql, Vec::new());
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM entry_indexes WHERE id = {}", p.int(index_id));
    [columns, p.done(sql, Vec::new())]
}
