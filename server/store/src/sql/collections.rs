//! Fixed statements on `collections` and the rows that belong to a collection. It builds SQL
//! only; the catalogue decides who may create, change or remove a collection. Every value is a
//! bound parameter.

use ardacat_core::types::{Value, ValueType};

use super::Dialect;
use super::compile::Compiled;
use super::statements::Params;

/// Columns of a collection row: id, parent_id, path, owner, grp, perms.
pub const COLLECTION_COLS: &str = "id, parent_id, path, owner, grp, perms";
pub const COLLECTION_TYPES: [ValueType; 6] =
    [ValueType::Int, ValueType::Int, ValueType::Text, ValueType::Text, ValueType::Text, ValueType::Int];

pub fn select_collection_by_path(d: Dialect, path: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT {COLLECTION_COLS} FROM collections WHERE path = {}", p.text(path));
    p.done(sql, COLLECTION_TYPES.to_vec())
}

/// One row if the collection has a child collection, none if it is a leaf of the tree.
pub fn select_any_child(d: Dialect, parent_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT 1 FROM collections WHERE parent_id = {} LIMIT 1", p.int(parent_id));
    p.done(sql, vec![ValueType::Int])
}

pub fn select_collection_by_id(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT {COLLECTION_COLS} FROM collections WHERE id = {}", p.int(id));
    p.done(sql, COLLECTION_TYPES.to_vec())
}

pub fn select_children(d: Dialect, parent_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT {COLLECTION_COLS} FROM collections WHERE parent_id = {} ORDER BY name", p.int(parent_id));
    p.done(sql, COLLECTION_TYPES.to_vec())
}

/// A new collection row without its entry table (`has_table` false); returns its id.
#[allow(clippy::too_many_arguments)]
pub fn insert_collection(
    d: Dialect,
    parent_id: i64,
    path: &str,
    name: &str,
    owner: &str,
    group: &str,
    perms: u16,
    created: Value,
) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO collections (parent_id, path, name, owner, grp, perms, created, has_table) VALUES ({}, {}, {}, {}, {}, {}, {}, {}) RETURNING id",
        p.int(parent_id),
        p.text(path),
        p.text(name),
        p.text(owner),
        p.text(group),
        p.int(perms as i64),
        p.bind(created, ValueType::Timestamp),
        p.bool(false),
    );
    p.done(sql, vec![ValueType::Int])
}

/// The attribute, ACL and sequence rows of a collection, in that order.
pub fn delete_collection_rows(d: Dialect, id: i64) -> Vec<Compiled> {
    ["attributes", "acls", "sequences"]
        .into_iter()
        .map(|t| {
            let mut p = Params::new(d);
            let sql = format!("DELETE FROM {t} WHERE collection_id = {}", p.int(id));
            p.done(sql, Vec::new())
        })
        .collect()
}

pub fn delete_collection(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM collections WHERE id = {}", p.int(id));
    p.done(sql, Vec::new())
}

pub fn update_collection_owner(d: Dialect, id: i64, owner: &str, group: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql =
        format!("UPDATE collections SET owner = {}, grp = {} WHERE id = {}", p.text(owner), p.text(group), p.int(id));
    p.done(sql, Vec::new())
}

pub fn update_collection_perms(d: Dialect, id: i64, perms: u16) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("UPDATE collections SET perms = {} WHERE id = {}", p.int(perms as i64), p.int(id));
    p.done(sql, Vec::new())
}
