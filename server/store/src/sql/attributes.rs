//! Fixed statements on `attributes` and the DDL of attribute columns of entry tables. It builds
//! SQL only; the catalogue decides who may add or remove an attribute. Every value is a bound
//! parameter; column and table names come from ids.

use ardacat_core::types::{AttrType, ValueType};

use super::Dialect;
use super::compile::{Compiled, attr_column, table_name};
use super::statements::Params;

/// Columns of [`select_attributes`]: id, name, type, indexed.
pub const ATTRIBUTE_TYPES: [ValueType; 4] = [ValueType::Int, ValueType::Text, ValueType::Text, ValueType::Bool];

pub fn select_attributes(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT id, name, type, indexed FROM attributes WHERE collection_id = {} ORDER BY id",
        p.int(collection_id)
    );
    p.done(sql, ATTRIBUTE_TYPES.to_vec())
}

/// A new attribute row; returns its id.
pub fn insert_attribute(
    d: Dialect,
    collection_id: i64,
    name: &str,
    name_key: &str,
    attr_type: &str,
    indexed: bool,
) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO attributes (collection_id, name, name_key, type, indexed) VALUES ({}, {}, {}, {}, {}) RETURNING id",
        p.int(collection_id),
        p.text(name),
        p.text(name_key),
        p.text(attr_type),
        p.bool(indexed)
    );
    p.done(sql, vec![ValueType::Int])
}

/// The ids of a collection's attributes.
pub fn select_attribute_ids(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT id FROM attributes WHERE collection_id = {} ORDER BY id", p.int(collection_id));
    p.done(sql, vec![ValueType::Int])
}

/// The attribute's id if it still exists.
pub fn select_attribute_id(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT id FROM attributes WHERE id = {}", p.int(id));
    p.done(sql, vec![ValueType::Int])
}

pub fn delete_attribute(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM attributes WHERE id = {}", p.int(id));
    p.done(sql, Vec::new())
}

/// `ALTER TABLE e<c> ADD COLUMN a<id> <type>`.
pub fn add_column_ddl(d: Dialect, collection_id: i64, attr_id: i64, attr_type: AttrType) -> String {
    let col = attr_column(attr_id);
    let def = d.column_def(&col, attr_type);
    format!("ALTER TABLE {} ADD COLUMN {col} {def}", table_name(collection_id))
}

/// `ALTER TABLE e<c> DROP COLUMN a<id>`.
pub fn drop_column_ddl(collection_id: i64, attr_id: i64) -> String {
    format!("ALTER TABLE {} DROP COLUMN {}", table_name(collection_id), attr_column(attr_id))
}
