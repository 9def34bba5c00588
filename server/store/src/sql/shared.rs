//! Fixed statements of the state that several server processes on one database share: resumable
//! TCP sessions (`tcp_sessions`, migration 0008) and the PostgreSQL change notification every
//! process listens to. It builds SQL only; the catalogue decides what a session is and when one
//! expires. Every value is a bound parameter.

use ardacat_core::types::{Value, ValueType};

use super::Dialect;
use super::compile::Compiled;

/// The PostgreSQL `LISTEN`/`NOTIFY` channel on which a process announces that users, groups,
/// ACLs, modes, owners or schema changed (`exec::notify` listens to it).
pub const CHANGES_CHANNEL: &str = "ardacat_changes";

/// Sent inside the transaction that made the change: PostgreSQL delivers it at commit, and
/// never for a transaction that rolled back. Collections, attributes, ACLs, modes or owners
/// changed: listeners drop their schema caches.
pub const NOTIFY_SCHEMA: &str = "NOTIFY ardacat_changes, 'schema'";

/// As [`NOTIFY_SCHEMA`], and users, groups, members, subjects or passwords changed too:
/// listeners also make every session re-read its groups (and drop cached credentials).
pub const NOTIFY_AUTH: &str = "NOTIFY ardacat_changes, 'auth'";

/// The payload of [`NOTIFY_SCHEMA`].
pub const SCHEMA_PAYLOAD: &str = "schema";

/// Columns of [`select_tcp_session`]: user, cwd, escape, expires.
pub const TCP_SESSION_TYPES: [ValueType; 4] = [ValueType::Text, ValueType::Text, ValueType::Bool, ValueType::Int];

fn compiled(
    d: Dialect,
    sql: impl FnOnce(&dyn Fn(usize, ValueType) -> String) -> String,
    params: Vec<Value>,
) -> Compiled {
    let p = |n: usize, t: ValueType| d.param(n, t);
    Compiled { sql: sql(&p), params, types: Vec::new() }
}

/// Stores a session's state and expiry: with `create` only when the id is free (no row
/// affected when it is taken), else replacing the row.
pub fn put_tcp_session(
    d: Dialect,
    id: i64,
    user: &str,
    cwd: &str,
    escape: bool,
    expires: i64,
    create: bool,
) -> Compiled {
    let conflict = if create {
        "DO NOTHING"
    } else {
        "DO UPDATE SET user_name = excluded.user_name, cwd = excluded.cwd, escaped = excluded.escaped, \
         expires = excluded.expires"
    };
    compiled(
        d,
        |p| {
            format!(
                "INSERT INTO tcp_sessions (id, user_name, cwd, escaped, expires) VALUES ({}, {}, {}, {}, {}) \
                 ON CONFLICT (id) {conflict}",
                p(1, ValueType::Int),
                p(2, ValueType::Text),
                p(3, ValueType::Text),
                p(4, ValueType::Bool),
                p(5, ValueType::Int)
            )
        },
        vec![
            Value::Int(id),
            Value::Text(user.to_string()),
            Value::Text(cwd.to_string()),
            Value::Bool(escape),
            Value::Int(expires),
        ],
    )
}

/// A session that has not expired at `now` (epoch seconds).
pub fn select_tcp_session(d: Dialect, id: i64, now: i64) -> Compiled {
    let mut c = compiled(
        d,
        |p| {
            format!(
                "SELECT user_name, cwd, escaped, expires FROM tcp_sessions WHERE id = {} AND expires > {}",
                p(1, ValueType::Int),
                p(2, ValueType::Int)
            )
        },
        vec![Value::Int(id), Value::Int(now)],
    );
    c.types = TCP_SESSION_TYPES.to_vec();
    c
}

/// Forgets sessions that expired before `now`.
pub fn purge_tcp_sessions(d: Dialect, now: i64) -> Compiled {
    compiled(
        d,
        |p| format!("DELETE FROM tcp_sessions WHERE expires <= {}", p(1, ValueType::Int)),
        vec![Value::Int(now)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        let c = put_tcp_session(Dialect::Postgres, 7, "u", "/", true, 9, false);
        assert!(c.sql.contains("$5"), "{}", c.sql);
        assert_eq!(c.params.len(), 5);
        let c = select_tcp_session(Dialect::Sqlite, 7, 1);
        assert!(c.sql.contains("?2"), "{}", c.sql);
        assert_eq!(c.types.len(), 4);
    }
}
