//! HTTP Basic credentials of SOAP requests, with a short-lived in-memory cache of successful
//! checks; a miss logs in through `crate::auth` (the one login path: limiter, certificate
//! mapping, audit). It must not decide what the caller may do (that is the catalogue's job) nor
//! keep passwords in memory (only digests).
//!
//! argon2 is slow by design, so verifying the password on every request would cap throughput
//! at a few dozen requests per second per core. A successful (user, password) check is kept
//! for [`CACHE_TTL`], keyed by SHA-256 of the credentials, together with the catalogue's auth
//! epoch: any user, group or ACL change made through this process (a password change, a
//! removed user, a membership change) invalidates every entry at once. On PostgreSQL so does
//! any such change another process sharing the database announces (the store's change feed);
//! without the feed they apply after [`ardacat_core::service::AUTH_RECHECK`] (groups) or
//! [`CACHE_TTL`] (passwords). Any failed login for a user drops that user's entries.
//!
//! Without an `Authorization` header, a verified client certificate (HTTPS with
//! `tls_client_ca`) logs in as the user its subject maps to.

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
use crate::auth::{self, AuthError, Credentials, Login, Via};
use crate::state::Shared;

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

/// One verified login: who, until when, and at which auth epoch / instant its groups were read.
struct Entry {
    principal: Principal,
    expires: Instant,
    epoch: u64,
    read: Instant,
}

/// Successful logins, keyed by SHA-256 of `user NUL password`.
#[derive(Default)]
pub struct AuthCache {
    entries: Mutex<HashMap<[u8; 32], Entry>>,
}

impl AuthCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached principal if the entry is alive and from this auth epoch, and whether its
    /// groups were read recently enough to skip re-reading them.
    fn get(&self, key: &[u8; 32], epoch: u64, recheck: Duration) -> Option<(Principal, bool)> {
        let mut map = self.lock();
        let now = Instant::now();
        match map.get(key) {
            Some(e) if e.expires > now && e.epoch == epoch => {
                Some((e.principal.clone(), now.duration_since(e.read) < recheck))
            }
            Some(_) => {
                map.remove(key);
                None
            }
            None => None,
        }
    }

    fn put(&self, key: [u8; 32], principal: Principal, epoch: u64) {
        let mut map = self.lock();
        let now = Instant::now();
        if map.len() >= CACHE_MAX {
            map.retain(|_, e| e.expires > now);
            if map.len() >= CACHE_MAX {
                map.clear();
            }
        }
        map.insert(key, Entry { principal, expires: now + CACHE_TTL, epoch, read: now });
    }

    /// Groups were re-read: keep the entry's expiry, renew the rest.
    fn renew(&self, key: &[u8; 32], principal: Principal, epoch: u64) {
        if let Some(e) = self.lock().get_mut(key) {
            *e = Entry { principal, expires: e.expires, epoch, read: Instant::now() };
        }
    }

    fn forget_user(&self, user: &str) {
        self.lock().retain(|_, e| e.principal.user != user);
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

/// Authenticates a request and returns a fresh session (cwd `/`) for its principal. `subject`
/// is the verified client certificate's DN (HTTPS with client CA), used when the request has
/// no `Authorization` header. Checks that miss the cache log in through [`auth::authenticate`]
/// (limiter, subject mapping, audit).
pub async fn session_for(
    shared: &Shared,
    cache: &AuthCache,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
    subject: Option<&str>,
) -> Result<Session<crate::Store>, AuthFailure> {
    let cat: &Cat = &shared.catalogue;
    let (user, password) = match basic_credentials(headers) {
        None if subject.is_some() && shared.tls.is_some() => {
            let creds = Credentials::Certificate { subject, claimed: "" };
            return Box::pin(auth::authenticate(shared, Via::Soap, peer, creds))
                .await
                .map(Login::session)
                .map_err(AuthFailure::from);
        }
        None if shared.config.allow_anonymous => {
            let p = Box::pin(cat.principal("anonymous")).await.unwrap_or_else(|_| auth::anonymous());
            return Ok(Session::new(p));
        }
        None => return Err(AuthFailure::Missing),
        Some(Err(())) => return Err(AuthFailure::Denied),
        Some(Ok(c)) => c,
    };
    let key = digest(&user, &password);
    let epoch = cat.auth_epoch();
    if let Some((p, fresh)) = cache.get(&key, epoch, cat.auth_recheck()) {
        let s = Session::new(p).with_auth_epoch(epoch);
        if fresh {
            return Ok(s);
        }
        // Changes by other processes sharing the database: re-read the groups.
        return Box::pin(refreshed(cat, cache, &key, &user, s, epoch)).await;
    }
    let creds = Credentials::Password { user: &user, password: Some(&password) };
    match Box::pin(auth::authenticate(shared, Via::Soap, peer, creds)).await {
        Ok(login) => {
            cache.put(key, login.principal.clone(), login.epoch);
            Ok(login.session())
        }
        Err(e) => {
            if let AuthError::Denied(_) = e {
                cache.forget_user(&user);
            }
            Err(e.into())
        }
    }
}

/// `s` with its principal's groups read again, and the cache renewed. Apart from
/// [`session_for`], and boxed there like every await of its that is not taken on a cache hit:
/// a session held across an await would make every request's future larger by its size.
async fn refreshed(
    cat: &Cat,
    cache: &AuthCache,
    key: &[u8; 32],
    user: &str,
    mut s: Session<crate::Store>,
    epoch: u64,
) -> Result<Session<crate::Store>, AuthFailure> {
    match cat.refresh(&mut s).await {
        Ok(()) => {
            cache.renew(key, s.principal.clone(), epoch);
            Ok(s)
        }
        Err(Error::PermissionDenied(_)) => {
            cache.forget_user(user);
            Err(AuthFailure::Denied)
        }
        Err(e) => Err(AuthFailure::Internal(e)),
    }
}

impl From<AuthError> for AuthFailure {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Throttled => AuthFailure::Throttled,
            AuthError::Denied(_) => AuthFailure::Denied,
            AuthError::Internal(e) => AuthFailure::Internal(e),
        }
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
        c.put(k, Principal { user: "u".into(), groups: vec![], may_sudo: false }, 1);
        assert_eq!(
            c.get(&k, 1, ardacat_core::service::AUTH_RECHECK).map(|(p, fresh)| (p.user, fresh)),
            Some(("u".to_string(), true))
        );
        c.forget_user("u");
        assert!(c.get(&k, 1, ardacat_core::service::AUTH_RECHECK).is_none());
        c.put(k, Principal { user: "u".into(), groups: vec![], may_sudo: false }, 1);
        assert!(
            c.get(&k, 2, ardacat_core::service::AUTH_RECHECK).is_none(),
            "another auth epoch invalidates the entry"
        );
        assert!(c.get(&k, 1, ardacat_core::service::AUTH_RECHECK).is_none(), "and removes it");
    }
}
