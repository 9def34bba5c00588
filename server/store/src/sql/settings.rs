//! Fixed statements on `settings` and `revoked_tokens`. It builds SQL only; the catalogue decides
//! what a setting means and when a token is revoked. Every value is a bound parameter.

use ardacat_core::types::ValueType;

use super::Dialect;
use super::compile::Compiled;
use super::statements::Params;

/// Forgets revocations that expired before `now` (epoch seconds).
pub fn purge_revoked_tokens(d: Dialect, now: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("DELETE FROM revoked_tokens WHERE expires < {}", p.int(now));
    p.done(sql, Vec::new())
}

/// Records a revocation; a second one of the same token changes nothing.
pub fn insert_revoked_token(d: Dialect, id: &str, expires: i64) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO revoked_tokens (id, expires) VALUES ({}, {}) ON CONFLICT (id) DO NOTHING",
        p.text(id),
        p.int(expires)
    );
    p.done(sql, Vec::new())
}

pub fn select_revoked_token(d: Dialect, id: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT id FROM revoked_tokens WHERE id = {}", p.text(id));
    p.done(sql, vec![ValueType::Text])
}

pub fn select_setting(d: Dialect, key: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!("SELECT value FROM settings WHERE key = {}", p.text(key));
    p.done(sql, vec![ValueType::Text])
}

/// Stores a setting unless one is there already (the first value wins).
pub fn insert_setting(d: Dialect, key: &str, value: &str) -> Compiled {
    let mut p = Params::new(d);
    let sql = format!(
        "INSERT INTO settings (key, value) VALUES ({}, {}) ON CONFLICT (key) DO NOTHING",
        p.text(key),
        p.text(value)
    );
    p.done(sql, Vec::new())
}
