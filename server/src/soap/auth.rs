//! HTTP Basic authentication of SOAP requests against the catalogue's users, with a short-lived
//! in-memory cache of successful checks. It decides who the caller is; it must not decide what
//! the caller may do (that is the catalogue's job) nor keep passwords in memory (only digests).
//!
//! argon2 is slow by design, so verifying the password on every request would cap throughput
//! at a few dozen requests per second per core. A successful (user, password) check is kept
//! for [`CACHE_TTL`], keyed by SHA-256 of the credentials. Any failed login for a user drops
//! that user's cached entries, so a changed password stops working from the cache at the
//! latest after [`CACHE_TTL`] and at once after a failed attempt.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ardacat_core::perm::Principal;
use ardacat_core::{Error, Session};
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::Cat;
use crate::tcp::Shared;

/// How long a verified (user, password) pair is trusted without running argon2 again.
pub const CACHE_TTL: Duration = Duration::from_secs(60);
/// Most cached pairs; beyond it expired entries are purged, and if that is not enough the
/// cache starts over (a cache, never a memory leak).
const CACHE_MAX: usize = 10_000;

/// Why a request is not authenticated.
#[derive(Debug)]
pub enum AuthFailure {
    /// No `Authorization` header (and anonymous access is off).
    Missing,
    /// Malformed header, unknown user or wrong password.
    Denied,
    /// Too many failed logins from this address in the last minute.
    Throttled,
    /// The catalogue could not be asked (database down, ...).
    Internal(Error),
}

/// Successful logins, keyed by SHA-256 of `user NUL password`.
#[derive(Default)]
pub struct AuthCache {
    entries: Mutex<HashMap<[u8; 32], (Principal, Instant)>>,
}

impl AuthCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], (Principal, Instant)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, key: &[u8; 32]) -> Option<Principal> {
        let mut map = self.lock();
        match map.get(key) {
            Some((p, expires)) if *expires > Instant::now() => Some(p.clone()),
            Some(_) => {
                map.remove(key);
                None
            }
            None => None,
        }
    }

    fn put(&self, key: [u8; 32], p: Principal) {
        let mut map = self.lock();
        let now = Instant::now();
        if map.len() >= CACHE_MAX {
            map.retain(|_, (_, expires)| *expires > now);
            if map.len() >= CACHE_MAX {
                map.clear();
            }
        }
        map.insert(key, (p, now + CACHE_TTL));
    }

    fn forget_user(&self, user: &str) {
        self.lock().retain(|_, (p, _)| p.user != user);
    }
}

fn digest(user: &str, password: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(user.as_bytes());
    h.update([0u8]);
    h.update(password.as_bytes());
    h.finalize().into()
}

/// `Authorization: Basic base64(user:password)` → (user, password). `None` if the header is
/// absent; `Some(Err)` if it is present but unusable.
fn basic_credentials(headers: &HeaderMap) -> Option<Result<(String, String), ()>> {
    let value = headers.get(AUTHORIZATION)?;
    Some((|| {
        let value = value.to_str().map_err(|_| ())?.trim();
        let (scheme, b64) = value.split_once(' ').ok_or(())?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return Err(());
        }
        let raw = base64::engine::general_purpose::STANDARD.decode(b64.trim()).map_err(|_| ())?;
        let text = String::from_utf8(raw).map_err(|_| ())?;
        let (user, password) = text.split_once(':').ok_or(())?;
        Ok((user.to_string(), password.to_string()))
    })())
}

fn anonymous() -> Principal {
    Principal { user: "anonymous".into(), groups: vec![] }
}

/// Authenticates a request and returns a fresh session (cwd `/`) for its principal.
pub async fn session_for(
    shared: &Shared,
    cache: &AuthCache,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
) -> Result<Session<crate::Store>, AuthFailure> {
    let cat: &Cat = &shared.catalogue;
    let (user, password) = match basic_credentials(headers) {
        None if shared.config.allow_anonymous => {
            let p = cat.principal("anonymous").await.unwrap_or_else(|_| anonymous());
            return Ok(Session::new(p));
        }
        None => return Err(AuthFailure::Missing),
        Some(Err(())) => return Err(AuthFailure::Denied),
        Some(Ok(c)) => c,
    };
    let key = digest(&user, &password);
    if let Some(p) = cache.get(&key) {
        let mut s = Session::new(p);
        // Group membership changes apply at once, as for live TCP sessions.
        cat.refresh(&mut s).await.map_err(AuthFailure::Internal)?;
        return Ok(s);
    }
    if let Some(ip) = peer
        && !shared.login_limiter.allow(ip)
    {
        return Err(AuthFailure::Throttled);
    }
    match cat.authenticate(&user, Some(&password)).await {
        Ok(p) => {
            cache.put(key, p.clone());
            Ok(Session::new(p))
        }
        Err(Error::PermissionDenied(_)) => {
            cache.forget_user(&user);
            if let Some(ip) = peer {
                shared.login_limiter.failed(ip);
            }
            tracing::info!(target: "audit", %user, peer = ?peer, "SOAP login failed");
            Err(AuthFailure::Denied)
        }
        Err(e) => Err(AuthFailure::Internal(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn parses_basic_header() {
        let mut h = HeaderMap::new();
        assert!(basic_credentials(&h).is_none());
        h.insert(AUTHORIZATION, HeaderValue::from_static("Basic cm9vdDpzM2M6cmV0"));
        assert_eq!(basic_credentials(&h), Some(Ok(("root".into(), "s3c:ret".into()))));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert_eq!(basic_credentials(&h), Some(Err(())));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Basic !!!"));
        assert_eq!(basic_credentials(&h), Some(Err(())));
    }

    #[test]
    fn cache_expires_and_forgets() {
        let c = AuthCache::default();
        let k = digest("u", "p");
        assert_ne!(k, digest("u", "q"));
        assert_ne!(digest("ab", "c"), digest("a", "bc"));
        c.put(k, Principal { user: "u".into(), groups: vec![] });
        assert_eq!(c.get(&k).map(|p| p.user), Some("u".to_string()));
        c.forget_user("u");
        assert!(c.get(&k).is_none());
    }
}
