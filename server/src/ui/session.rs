//! Web sessions of the UI: the random session id behind the `ardacat_session` cookie, who it
//! belongs to, its CSRF token and its expiry. It holds state only (in this process's memory, like
//! the TCP sessions); it must not check passwords (`crate::auth`) nor decide permissions (the
//! catalogue does, per request, for the session's user).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ardacat_core::perm::Principal;
use axum::http::HeaderMap;
use axum::http::header::COOKIE;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "ardacat_session";
/// The cookie carrying the login form's CSRF token (double submit: the form field must match).
pub const LOGIN_CSRF_COOKIE: &str = "ardacat_login_csrf";
/// A session ends this long after login (the cookie's `Max-Age` says the same).
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// Sessions held at most; the oldest go first when more log in (a memory bound).
const MAX_SESSIONS: usize = 10_000;

/// One logged-in browser.
#[derive(Debug, Clone)]
pub struct WebSession {
    pub principal: Principal,
    /// Must come back in the `csrf` field of every POST.
    pub csrf: String,
    pub expires: Instant,
}

/// Every live web session of this process, by session id.
#[derive(Default)]
pub struct WebSessions {
    map: Mutex<HashMap<String, WebSession>>,
}

/// A random token: 32 bytes as hex (ids and CSRF tokens).
pub fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two tokens in time independent of where they differ.
pub fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl WebSessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, WebSession>> {
        // A poisoned lock only means another task panicked mid-update of a plain map.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for `principal`; returns its id (the cookie value).
    pub fn open(&self, principal: Principal) -> String {
        let id = random_token();
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, s| s.expires > now);
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(id.clone(), WebSession { principal, csrf: random_token(), expires: now + SESSION_TTL });
        id
    }

    /// The live session `id` names, if any.
    pub fn get(&self, id: &str) -> Option<WebSession> {
        let mut map = self.lock();
        match map.get(id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    pub fn close(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Ends every session of `user` but `keep` (after a password change or removal).
    pub fn close_user(&self, user: &str, keep: Option<&str>) {
        self.lock().retain(|id, s| s.principal.user != user || Some(id.as_str()) == keep);
    }
}

/// The value of cookie `name` in the request, if sent.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_name() {
        let mut h = HeaderMap::new();
        h.insert(COOKIE, "a=1; ardacat_session=xyz; b=2".parse().unwrap());
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("xyz"));
        assert_eq!(cookie(&h, "c"), None);
    }

    #[test]
    fn sessions_open_and_close() {
        let s = WebSessions::default();
        let id = s.open(Principal { user: "bob".into(), groups: vec![], may_sudo: false });
        assert_eq!(s.get(&id).unwrap().principal.user, "bob");
        assert!(s.get("other").is_none());
        s.close(&id);
        assert!(s.get(&id).is_none());
        let a = s.open(Principal { user: "bob".into(), groups: vec![], may_sudo: false });
        let b = s.open(Principal { user: "bob".into(), groups: vec![], may_sudo: false });
        let c = s.open(Principal { user: "carol".into(), groups: vec![], may_sudo: false });
        s.close_user("bob", Some(&a));
        assert!(s.get(&a).is_some() && s.get(&b).is_none() && s.get(&c).is_some());
        assert!(same_token("abc", "abc") && !same_token("abc", "abd") && !same_token("a", "ab"));
    }
}
