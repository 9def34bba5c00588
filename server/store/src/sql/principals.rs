//! Fixed statements on `users`, `user_subjects`, `user_groups` and `group_members`, and the
//! collection ACL rows of a principal (the listings are in `statements`). It builds SQL only;
//! it must not hash passwords or decide logins. Every value is a bound parameter.

use ardacat_core::types::{Value, ValueType};

use super::Dialect;
use super::compile::Compiled;
use super::statements::Params;

/// One statement with one text parameter.
fn with_name(d: Dialect, sql: impl FnOnce(&str) -> String, name: &str, types: Vec<ValueType>) -> Compiled {
    let mut p = Params::new(d);
    let sql = sql(&p.text(name));
    p.done(sql, types)
}

/// name, password_hash, may_sudo.
pub fn select_user(d: Dialect, name: &str) -> Compiled {
    with_name(
        d,
        |p| format!("SELECT name, password_hash, may_sudo FROM users WHERE name = {p}"),
        name,
        vec![ValueType::Text, ValueType::Text, ValueType::Bool],
    )
}

/// The service-account privilege (`user_may_sudo`, migration 0009).
pub fn update_may_sudo(d: Dialect, name: &str, may_sudo: bool) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("UPDATE users SET may_sudo = {} WHERE name = {}", p.bool(may_sudo), p.text(name));
    p.done(sql, Vec::new())
}

pub fn select_user_by_subject(d: Dialect, subject: &str) -> Compiled {
    with_name(d, |p| format!("SELECT user_name FROM user_subjects WHERE subject = {p}"), subject, vec![ValueType::Text])
}

/// A new user; no hash (certificate-only) is NULL.
pub fn insert_user(d: Dialect, name: &str, password_hash: Option<&str>, created: Value) -> Compiled {
    let hash = password_hash.map(|h| Value::Text(h.into())).unwrap_or(Value::Null);
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO users (name, password_hash, created) VALUES ({}, {}, {})",
        p.text(name),
        p.bind(hash, ValueType::Text),
        p.bind(created, ValueType::Timestamp)
    );
    p.done(sql, Vec::new())
}

/// A user's group memberships, then its collection ACL rows, then the user row (the entry ACL
/// rows are `statements::delete_principal_entry_acls`).
pub fn delete_user(d: Dialect, name: &str) -> [Compiled; 3] {
    [
        with_name(d, |p| format!("DELETE FROM group_members WHERE user_name = {p}"), name, Vec::new()),
        with_name(d, |p| format!("DELETE FROM acls WHERE principal = {p} AND NOT is_group"), name, Vec::new()),
        with_name(d, |p| format!("DELETE FROM users WHERE name = {p}"), name, Vec::new()),
    ]
}

pub fn update_password(d: Dialect, name: &str, password_hash: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("UPDATE users SET password_hash = {} WHERE name = {}", p.text(password_hash), p.text(name));
    p.done(sql, Vec::new())
}

pub fn insert_subject(d: Dialect, name: &str, subject: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("INSERT INTO user_subjects (user_name, subject) VALUES ({}, {})", p.text(name), p.text(subject));
    p.done(sql, Vec::new())
}

pub fn select_subjects(d: Dialect, name: &str) -> Compiled {
    with_name(
        d,
        |p| format!("SELECT subject FROM user_subjects WHERE user_name = {p} ORDER BY subject"),
        name,
        vec![ValueType::Text],
    )
}

pub fn select_groups_of(d: Dialect, user: &str) -> Compiled {
    with_name(
        d,
        |p| format!("SELECT grp FROM group_members WHERE user_name = {p} ORDER BY grp"),
        user,
        vec![ValueType::Text],
    )
}

pub fn insert_group(d: Dialect, name: &str, owner: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("INSERT INTO user_groups (name, owner) VALUES ({}, {})", p.text(name), p.text(owner));
    p.done(sql, Vec::new())
}

/// A group's members, then its collection ACL rows, then the group row (the entry ACL rows are
/// `statements::delete_principal_entry_acls`).
pub fn delete_group(d: Dialect, name: &str) -> [Compiled; 3] {
    [
        with_name(d, |p| format!("DELETE FROM group_members WHERE grp = {p}"), name, Vec::new()),
        with_name(d, |p| format!("DELETE FROM acls WHERE principal = {p} AND is_group"), name, Vec::new()),
        with_name(d, |p| format!("DELETE FROM user_groups WHERE name = {p}"), name, Vec::new()),
    ]
}

/// Adds a member; a second time changes nothing.
pub fn insert_member(d: Dialect, group: &str, user: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO group_members (grp, user_name) VALUES ({}, {}) ON CONFLICT DO NOTHING",
        p.text(group),
        p.text(user)
    );
    p.done(sql, Vec::new())
}

pub fn delete_member(d: Dialect, group: &str, user: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM group_members WHERE grp = {} AND user_name = {}", p.text(group), p.text(user));
    p.done(sql, Vec::new())
}

pub fn select_group(d: Dialect, name: &str) -> Compiled {
    with_name(d, |p| format!("SELECT name FROM user_groups WHERE name = {p}"), name, vec![ValueType::Text])
}
