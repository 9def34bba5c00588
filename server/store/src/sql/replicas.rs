//! Fixed statements of the replica catalogue (migration 0006): sites, the GUID records and
//! their replicas. It builds SQL only; the catalogue decides who may run which. Every value is
//! a bound parameter.

use ardacat_core::types::ValueType;

use super::Dialect;
use super::compile::Compiled;
use super::statements::Params;

/// Columns of the site selects: id, name, server.
pub const SITE_TYPES: [ValueType; 3] = [ValueType::Int, ValueType::Text, ValueType::Text];

pub fn select_sites() -> Compiled {
    Compiled {
        sql: "SELECT id, name, server FROM sites ORDER BY id".into(),
        params: Vec::new(),
        types: SITE_TYPES.to_vec(),
    }
}

pub fn select_site_by_name(d: Dialect, name: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT id, name, server FROM sites WHERE name = {}", p.text(name));
    p.done(sql, SITE_TYPES.to_vec())
}

pub fn select_site_by_id(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT id, name, server FROM sites WHERE id = {}", p.int(id));
    p.done(sql, SITE_TYPES.to_vec())
}

/// `INSERT … RETURNING id`.
pub fn insert_site(d: Dialect, name: &str, server: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("INSERT INTO sites (name, server) VALUES ({}, {}) RETURNING id", p.text(name), p.text(server));
    p.done(sql, vec![ValueType::Int])
}

pub fn delete_site(d: Dialect, id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM sites WHERE id = {}", p.int(id));
    p.done(sql, Vec::new())
}

/// One replica at the site, if any.
pub fn select_site_replica(d: Dialect, site_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT guid FROM replicas WHERE site_id = {} LIMIT 1", p.int(site_id));
    p.done(sql, vec![ValueType::Text])
}

/// The owner of a GUID record; with `lock` on PostgreSQL `FOR UPDATE` (SQLite's write
/// transaction already excludes other writers).
pub fn select_replica_owner(d: Dialect, guid: &str, lock: bool) -> Compiled {
    let mut p = Params::new(d);
    let mut sql = format!("SELECT owner FROM replica_files WHERE guid = {}", p.text(guid));
    if lock && d == Dialect::Postgres {
        sql.push_str(" FOR UPDATE");
    }
    p.done(sql, vec![ValueType::Text])
}

pub fn insert_replica_file(d: Dialect, guid: &str, owner: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("INSERT INTO replica_files (guid, owner) VALUES ({}, {})", p.text(guid), p.text(owner));
    p.done(sql, Vec::new())
}

/// The GUID record; its replicas go with it (`ON DELETE CASCADE`, and explicitly first, so
/// the statement pair is right even where cascades are off).
pub fn delete_replica_file(d: Dialect, guid: &str) -> [Compiled; 2] {
    let mut p = Params::new(d);
    let replicas = format!("DELETE FROM replicas WHERE guid = {}", p.text(guid));
    let first = p.done(replicas, Vec::new());
    let mut p = Params::new(d);
    let file = format!("DELETE FROM replica_files WHERE guid = {}", p.text(guid));
    [first, p.done(file, Vec::new())]
}

pub fn select_replica_sites(d: Dialect, guid: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT site_id FROM replicas WHERE guid = {} ORDER BY site_id", p.text(guid));
    p.done(sql, vec![ValueType::Int])
}

pub fn insert_replica(d: Dialect, guid: &str, site_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("INSERT INTO replicas (guid, site_id) VALUES ({}, {})", p.text(guid), p.int(site_id));
    p.done(sql, Vec::new())
}

pub fn delete_replica(d: Dialect, guid: &str, site_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM replicas WHERE guid = {} AND site_id = {}", p.text(guid), p.int(site_id));
    p.done(sql, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_statements() {
        let c = select_replica_owner(Dialect::Postgres, "g1", true);
        assert_eq!(c.sql, "SELECT owner FROM replica_files WHERE guid = $1::text FOR UPDATE");
        let c = select_replica_owner(Dialect::Sqlite, "g1", true);
        assert_eq!(c.sql, "SELECT owner FROM replica_files WHERE guid = ?1");
        let c = insert_replica(Dialect::Sqlite, "g1", 3);
        assert_eq!(c.sql, "INSERT INTO replicas (guid, site_id) VALUES (?1, ?2)");
        let [a, b] = delete_replica_file(Dialect::Sqlite, "g");
        assert_eq!(a.sql, "DELETE FROM replicas WHERE guid = ?1");
        assert_eq!(b.sql, "DELETE FROM replica_files WHERE guid = ?1");
    }
}
