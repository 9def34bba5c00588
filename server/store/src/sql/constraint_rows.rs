//! Fixed statements on `entry_constraints` and `entry_constraint_columns` (the definitions; their
//! DDL is `constraints`). It builds SQL only; the catalogue decides which constraints exist and
//! the database enforces them. Every value is a bound parameter.

use ardacat_core::types::{Value, ValueType};

use super::Dialect;
use super::compile::Compiled;
use super::statements::Params;

/// Columns of a constraint row: id, collection_id, name, kind, attribute_id, ref_collection_id,
/// ref_attribute_id, condition, check_sql.
pub const CONSTRAINT_COLS: &str =
    "id, collection_id, name, kind, attribute_id, ref_collection_id, ref_attribute_id, condition, check_sql";
pub const CONSTRAINT_TYPES: [ValueType; 9] = [
    ValueType::Int,
    ValueType::Int,
    ValueType::Text,
    ValueType::Text,
    ValueType::Int,
    ValueType::Int,
    ValueType::Int,
    ValueType::Text,
    ValueType::Text,
];

pub fn select_constraints(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT {CONSTRAINT_COLS} FROM entry_constraints WHERE collection_id = {} ORDER BY id",
        p.int(collection_id)
    );
    p.done(sql, CONSTRAINT_TYPES.to_vec())
}

pub fn select_constraint(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT {CONSTRAINT_COLS} FROM entry_constraints WHERE id = {}", p.int(id));
    p.done(sql, CONSTRAINT_TYPES.to_vec())
}

/// Name and collection path of the references to `collection_id` (with `column`, only those to
/// that column; without, only those of other collections).
pub fn select_references_to(d: Dialect, collection_id: i64, column: Option<i64>) -> Compiled {
    let mut p = Params::new(d);
    let mut sql = format!(
        "SELECT k.name, c.path FROM entry_constraints k JOIN collections c ON c.id = k.collection_id \
         WHERE k.kind = 'reference' AND k.ref_collection_id = {}",
        p.int(collection_id)
    );
    match column {
        Some(a) => sql.push_str(&format!(" AND k.ref_attribute_id = {}", p.int(a))),
        None => sql.push_str(&format!(" AND k.collection_id <> {}", p.int(collection_id))),
    }
    sql.push_str(" ORDER BY k.id");
    p.done(sql, vec![ValueType::Text, ValueType::Text])
}

/// Names of the constraints that use an attribute.
pub fn select_constraints_using_attribute(d: Dialect, attr_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT k.name FROM entry_constraints k JOIN entry_constraint_columns u ON u.constraint_id = k.id \
         WHERE u.attribute_id = {} ORDER BY k.id",
        p.int(attr_id)
    );
    p.done(sql, vec![ValueType::Text])
}

/// The column rows, then the rows, of every constraint of a collection.
pub fn delete_collection_constraints(d: Dialect, collection_id: i64) -> [Compiled; 2] {
    let mut p = Params::new(d);
    let sql = format!(
        "DELETE FROM entry_constraint_columns WHERE constraint_id IN \
         (SELECT id FROM entry_constraints WHERE collection_id = {})",
        p.int(collection_id)
    );
    let columns = p.done(sql, Vec::new());
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM entry_constraints WHERE collection_id = {}", p.int(collection_id));
    [columns, p.done(sql, Vec::new())]
}

/// The values of a constraint row besides its collection and name.
pub struct ConstraintRow {
    pub kind: String,
    pub attribute_id: Value,
    pub ref_collection_id: Value,
    pub ref_attribute_id: Value,
    pub condition: Value,
    pub check_sql: Value,
}

/// A new constraint row; returns its id.
pub fn insert_constraint(d: Dialect, collection_id: i64, name: &str, name_key: &str, row: ConstraintRow) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO entry_constraints (collection_id, name, name_key, kind, attribute_id, ref_collection_id, \
         ref_attribute_id, condition, check_sql) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}) RETURNING id",
        p.int(collection_id),
        p.text(name),
        p.text(name_key),
        p.text(&row.kind),
        p.bind(row.attribute_id, ValueType::Int),
        p.bind(row.ref_collection_id, ValueType::Int),
        p.bind(row.ref_attribute_id, ValueType::Int),
        p.bind(row.condition, ValueType::Text),
        p.bind(row.check_sql, ValueType::Text)
    );
    p.done(sql, vec![ValueType::Int])
}

/// Records that a constraint uses an attribute (once).
pub fn insert_constraint_column(d: Dialect, constraint_id: i64, attr_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO entry_constraint_columns (constraint_id, attribute_id) VALUES ({}, {}) ON CONFLICT DO NOTHING",
        p.int(constraint_id),
        p.int(attr_id)
    );
    p.done(sql, Vec::new())
}

/// The column rows, then the row, of one constraint.
pub fn delete_constraint(d: Dialect, constraint_id: i64) -> [Compiled; 2] {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM entry_constraint_columns WHERE constraint_id = {}", p.int(constraint_id));
    let columns = p.done(sql, Vec::new());
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM entry_constraints WHERE id = {}", p.int(constraint_id));
    [columns, p.done(sql, Vec::new())]
}
