//! Fixed statements on entry permissions: entry owner/group/mode and the `entry_acls` table
//! (migration 0004), collection ACLs (`acls`), and the listings of users and groups. Every value
//! is a bound parameter; table names come from ids.

use ardacat_core::store::EntryMetaChange;
use ardacat_core::types::{Value, ValueType};

use super::Dialect;
use super::compile::{Compiled, ENTRY_ACLS, literal_of_like, table_name};

/// Columns of [`select_entry_meta`]: id, file, owner, grp, perms.
pub const ENTRY_META_TYPES: [ValueType; 5] =
    [ValueType::Int, ValueType::Text, ValueType::Text, ValueType::Text, ValueType::Int];

/// Columns of [`select_entry_acl`]: principal, is_group, rights.
pub const ENTRY_ACL_TYPES: [ValueType; 3] = [ValueType::Text, ValueType::Bool, ValueType::Int];

/// Collects parameters and hands out their placeholders.
pub(super) struct Params {
    d: Dialect,
    values: Vec<Value>,
}

impl Params {
    pub(super) fn new(d: Dialect) -> Self {
        Params { d, values: Vec::new() }
    }

    /// Binds `v` as the next parameter, cast to `t` on PostgreSQL (a NULL too).
    pub(super) fn bind(&mut self, v: Value, t: ValueType) -> String {
        self.values.push(v);
        self.d.param(self.values.len(), t)
    }

    pub(super) fn text(&mut self, s: &str) -> String {
        self.bind(Value::Text(s.to_string()), ValueType::Text)
    }

    pub(super) fn int(&mut self, i: i64) -> String {
        self.bind(Value::Int(i), ValueType::Int)
    }

    pub(super) fn bool(&mut self, b: bool) -> String {
        self.bind(Value::Bool(b), ValueType::Bool)
    }

    /// `file = ?` for a plain name (the unique index), else `file LIKE ? ESCAPE '\'`.
    fn name_match(&mut self, column: &str, pattern: &str) -> String {
        match literal_of_like(pattern) {
            Some(name) => format!("{column} = {}", self.text(&name)),
            None => format!("{column} LIKE {} ESCAPE '\\'", self.text(pattern)),
        }
    }

    pub(super) fn done(self, sql: String, types: Vec<ValueType>) -> Compiled {
        Compiled { sql, params: self.values, types }
    }
}

/// `SELECT id, file, owner, grp, perms FROM e<c> WHERE <name> ORDER BY file`; with `lock` on
/// PostgreSQL `FOR UPDATE` (SQLite's write transaction already excludes other writers).
pub fn select_entry_meta(d: Dialect, collection_id: i64, pattern: &str, lock: bool) -> Compiled {
    let mut p = Params::new(d);
    let cond = p.name_match("file", pattern);
    let mut sql =
        format!("SELECT id, file, owner, grp, perms FROM {} WHERE {cond} ORDER BY file", table_name(collection_id));
    if lock && d == Dialect::Postgres {
        sql.push_str(" FOR UPDATE");
    }
    p.done(sql, ENTRY_META_TYPES.to_vec())
}

/// `UPDATE e<c> SET owner = ?, grp = ?, perms = ? WHERE <name> [AND owner = ?]` with only the
/// fields the change sets; `None` when it sets nothing.
pub fn update_entry_meta(
    d: Dialect,
    collection_id: i64,
    pattern: &str,
    only_owner: Option<&str>,
    change: &EntryMetaChange,
) -> Option<Compiled> {
    let mut p = Params::new(d);
    let mut sets = Vec::new();
    if let Some(owner) = &change.owner {
        sets.push(format!("owner = {}", p.text(owner)));
    }
    if let Some(group) = &change.group {
        sets.push(format!("grp = {}", p.text(group)));
    }
    if let Some(perms) = change.perms {
        sets.push(format!("perms = {}", p.int(perms as i64)));
    }
    if sets.is_empty() {
        return None;
    }
    let mut conds = vec![p.name_match("file", pattern)];
    if let Some(owner) = only_owner {
        conds.push(format!("owner = {}", p.text(owner)));
    }
    let sql = format!("UPDATE {} SET {} WHERE {}", table_name(collection_id), sets.join(", "), conds.join(" AND "));
    Some(p.done(sql, Vec::new()))
}

/// The ACL rows of one entry, users first, by name.
pub fn select_entry_acl(d: Dialect, collection_id: i64, entry_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT principal, is_group, rights FROM {ENTRY_ACLS} WHERE collection_id = {} AND entry_id = {} \
         ORDER BY is_group, principal",
        p.int(collection_id),
        p.int(entry_id)
    );
    p.done(sql, ENTRY_ACL_TYPES.to_vec())
}

/// Adds an ACL row to an entry or replaces the rights of an existing one.
pub fn upsert_entry_acl(
    d: Dialect,
    collection_id: i64,
    entry_id: i64,
    principal: &str,
    is_group: bool,
    rights: u16,
) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO {ENTRY_ACLS} (collection_id, entry_id, principal, is_group, rights) VALUES ({}, {}, {}, {}, {}) \
         ON CONFLICT (collection_id, entry_id, principal, is_group) DO UPDATE SET rights = excluded.rights",
        p.int(collection_id),
        p.int(entry_id),
        p.text(principal),
        p.bind(Value::Bool(is_group), ValueType::Bool),
        p.int(rights as i64)
    );
    p.done(sql, Vec::new())
}

/// Removes the ACL rows of `principal` (user and group of that name) from one entry.
pub fn delete_entry_acl(d: Dialect, collection_id: i64, entry_id: i64, principal: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "DELETE FROM {ENTRY_ACLS} WHERE collection_id = {} AND entry_id = {} AND principal = {}",
        p.int(collection_id),
        p.int(entry_id),
        p.text(principal)
    );
    p.done(sql, Vec::new())
}

/// Removes the ACL rows of entries of a collection that no longer exist (after a delete, in
/// its transaction). Entry ids may be reused by SQLite, so no row may outlive its entry.
pub fn delete_orphan_entry_acls(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let t = table_name(collection_id);
    let sql = format!(
        "DELETE FROM {ENTRY_ACLS} WHERE collection_id = {} \
         AND NOT EXISTS (SELECT 1 FROM {t} WHERE {t}.id = {ENTRY_ACLS}.entry_id)",
        p.int(collection_id)
    );
    p.done(sql, Vec::new())
}

/// Removes every entry ACL row of a collection (it is being dropped).
pub fn delete_collection_entry_acls(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM {ENTRY_ACLS} WHERE collection_id = {}", p.int(collection_id));
    p.done(sql, Vec::new())
}

/// Removes every entry ACL row naming a user (`is_group` false) or a group that is removed.
pub fn delete_principal_entry_acls(d: Dialect, principal: &str, is_group: bool) -> Compiled {
    let mut p = Params::new(d);
    let not = if is_group { "" } else { "NOT " };
    let sql = format!("DELETE FROM {ENTRY_ACLS} WHERE principal = {} AND {not}is_group", p.text(principal));
    p.done(sql, Vec::new())
}

/// Every user name (the catalogue sorts by bytes: the backends' collations differ).
pub fn select_user_names() -> Compiled {
    Compiled { sql: "SELECT name FROM users ORDER BY name".into(), params: Vec::new(), types: vec![ValueType::Text] }
}

/// Every group name.
pub fn select_group_names() -> Compiled {
    Compiled {
        sql: "SELECT name FROM user_groups ORDER BY name".into(),
        params: Vec::new(),
        types: vec![ValueType::Text],
    }
}

/// Removes one certificate subject of a user.
pub fn delete_user_subject(d: Dialect, user: &str, subject: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM user_subjects WHERE user_name = {} AND subject = {}", p.text(user), p.text(subject));
    p.done(sql, Vec::new())
}

/// The members of one group.
pub fn select_group_members(d: Dialect, group: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT user_name FROM group_members WHERE grp = {} ORDER BY user_name", p.text(group));
    p.done(sql, vec![ValueType::Text])
}

/// The ACL of a collection (`acls`), groups after users, by principal; columns as
/// [`ENTRY_ACL_TYPES`].
pub fn select_collection_acl(d: Dialect, collection_id: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "SELECT principal, is_group, rights FROM acls WHERE collection_id = {} ORDER BY is_group, principal",
        p.int(collection_id)
    );
    p.done(sql, ENTRY_ACL_TYPES.to_vec())
}

/// Sets (inserts or replaces) one principal's rights on a collection.
pub fn upsert_collection_acl(d: Dialect, collection_id: i64, principal: &str, is_group: bool, rights: u16) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO acls (collection_id, principal, is_group, rights) VALUES ({}, {}, {}, {}) \
         ON CONFLICT (collection_id, principal, is_group) DO UPDATE SET rights = excluded.rights",
        p.int(collection_id),
        p.text(principal),
        p.bind(Value::Bool(is_group), ValueType::Bool),
        p.int(rights as i64)
    );
    p.done(sql, Vec::new())
}

pub fn delete_collection_acl(d: Dialect, collection_id: i64, principal: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "DELETE FROM acls WHERE collection_id = {} AND principal = {}",
        p.int(collection_id),
        p.text(principal)
    );
    p.done(sql, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_statements() {
        let c = select_entry_meta(Dialect::Postgres, 7, "a\\_b", true);
        assert_eq!(c.sql, "SELECT id, file, owner, grp, perms FROM e7 WHERE file = $1::text ORDER BY file FOR UPDATE");
        assert_eq!(c.params, vec![Value::Text("a_b".into())]);
        let c = select_entry_meta(Dialect::Sqlite, 7, "a%", true);
        assert_eq!(c.sql, "SELECT id, file, owner, grp, perms FROM e7 WHERE file LIKE ?1 ESCAPE '\\' ORDER BY file");
        let change = EntryMetaChange { owner: None, group: Some("g".into()), perms: Some(0o640) };
        let c = update_entry_meta(Dialect::Sqlite, 7, "x", Some("alice"), &change).expect("a change");
        assert_eq!(c.sql, "UPDATE e7 SET grp = ?1, perms = ?2 WHERE file = ?3 AND owner = ?4");
        assert_eq!(
            c.params,
            vec![Value::Text("g".into()), Value::Int(0o640), Value::Text("x".into()), Value::Text("alice".into())]
        );
        assert!(update_entry_meta(Dialect::Sqlite, 7, "x", None, &EntryMetaChange::default()).is_none());
    }

    #[test]
    fn acl_statements() {
        let c = upsert_entry_acl(Dialect::Postgres, 3, 9, "bob", false, 4);
        assert!(c.sql.starts_with("INSERT INTO entry_acls (collection_id, entry_id, principal, is_group, rights)"));
        assert!(c.sql.contains("$4::bool"), "{}", c.sql);
        let c = delete_orphan_entry_acls(Dialect::Sqlite, 3);
        assert_eq!(
            c.sql,
            "DELETE FROM entry_acls WHERE collection_id = ?1 AND NOT EXISTS (SELECT 1 FROM e3 WHERE e3.id = entry_acls.entry_id)"
        );
        assert_eq!(
            delete_principal_entry_acls(Dialect::Sqlite, "team", true).sql,
            "DELETE FROM entry_acls WHERE principal = ?1 AND is_group"
        );
    }
}
