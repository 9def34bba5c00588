//! Fixed statements that dump and copy need beyond the catalogue's own: every sequence of a
//! collection with its next value, every entry ACL row of a collection with its entry's name,
//! every group with its owner, every setting, and the whole replica catalogue. It builds SQL only; what a caller may read
//! is the catalogue's decision. Every value is a bound parameter; table names come from ids.

use ardacat_core::types::ValueType;

use super::Dialect;
use super::compile::{Compiled, ENTRY_ACLS, table_name};
use super::statements::Params;

/// Columns of [`select_sequences`]: name, increment, next_value.
pub fn select_sequences(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT name, increment, next_value FROM sequences WHERE collection_id = {} ORDER BY name",
        p.int(collection_id)
    );
    p.done(sql, vec![ValueType::Text, ValueType::Int, ValueType::Int])
}

/// Columns: the entry's name, principal, is_group, rights. Needs the entry table to exist.
pub fn select_entry_acls(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT t.file, a.principal, a.is_group, a.rights FROM {ENTRY_ACLS} a JOIN {} t ON t.id = a.entry_id \
         WHERE a.collection_id = {}",
        table_name(collection_id),
        p.int(collection_id)
    );
    p.done(sql, vec![ValueType::Text, ValueType::Text, ValueType::Bool, ValueType::Int])
}

/// Columns: name, owner.
pub fn select_groups() -> Compiled {
    Compiled {
        sql: "SELECT name, owner FROM user_groups".into(),
        params: Vec::new(),
        types: vec![ValueType::Text, ValueType::Text],
    }
}

/// Columns: key, value.
pub fn select_settings() -> Compiled {
    Compiled {
        sql: "SELECT key, value FROM settings".into(),
        params: Vec::new(),
        types: vec![ValueType::Text, ValueType::Text],
    }
}

/// Stores a setting, replacing the value it had.
pub fn upsert_setting(d: Dialect, key: &str, value: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO settings (key, value) VALUES ({}, {}) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        p.text(key),
        p.text(value)
    );
    p.done(sql, Vec::new())
}

/// Columns: guid, owner.
pub fn select_replica_files() -> Compiled {
    Compiled {
        sql: "SELECT guid, owner FROM replica_files".into(),
        params: Vec::new(),
        types: vec![ValueType::Text, ValueType::Text],
    }
}

/// Columns: guid, the site's name.
pub fn select_replicas() -> Compiled {
    Compiled {
        sql: "SELECT r.guid, s.name FROM replicas r JOIN sites s ON s.id = r.site_id".into(),
        params: Vec::new(),
        types: vec![ValueType::Text, ValueType::Text],
    }
}
