//! Login, the one path every frontend takes: [`authenticate`] checks a password (TCP login
//! block, SOAP HTTP Basic) or maps a verified client certificate's subject to a user (TCP over
//! TLS, HTTPS), asks the login limiter first, counts denials against the peer's address, and
//! writes the audit line. It decides who the caller is; it must not decide what the caller may
//! do (the catalogue's job), nor speak any protocol (the frontends turn [`AuthError`] into their
//! own replies), nor keep passwords (the SOAP credential cache keeps digests, `soap::auth`).
//!
//! Subject mapping: a mapping made with `user_subject_add` first, then the grid-mapfile
//! (`tls_grid_mapfile`); the user must exist in the catalogue.

use std::net::{IpAddr, SocketAddr};

use ardacat_core::perm::Principal;
use ardacat_core::{Error, Session};

use crate::state::Shared;

/// Who is at the other end of a connection: the address (login throttling, audit) and, over
/// TLS with a verified client certificate, its subject DN (login by certificate).
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    pub subject: Option<String>,
}

/// Which frontend asks (for the audit line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Tcp,
    Soap,
    /// The web interface (`crate::ui`).
    Web,
}

/// What the caller presented.
#[derive(Debug, Clone, Copy)]
pub enum Credentials<'a> {
    /// A user name and its password (`None`: the client sent no password line).
    Password { user: &'a str, password: Option<&'a str> },
    /// The verified client certificate's subject (`None`: no certificate), and the user name the
    /// client claimed (empty: none), which must then be the one the subject maps to.
    Certificate { subject: Option<&'a str>, claimed: &'a str },
}

/// Why a login did not succeed.
#[derive(Debug)]
pub enum AuthError {
    /// Too many failed logins from this address in the last minute.
    Throttled,
    /// Unknown user, wrong password, unmapped or missing certificate (code 4).
    Denied(Error),
    /// The catalogue could not be asked (database down, ...).
    Internal(Error),
}

impl AuthError {
    /// The catalogue error a frontend answers with.
    pub fn into_error(self) -> Error {
        match self {
            AuthError::Throttled => Error::PermissionDenied(THROTTLED.into()),
            AuthError::Denied(e) | AuthError::Internal(e) => e,
        }
    }
}

/// A successful login: who, and the auth epoch taken before their groups were read.
#[derive(Debug, Clone)]
pub struct Login {
    pub principal: Principal,
    pub epoch: u64,
}

impl Login {
    /// A fresh session (cwd `/`) whose groups count as read at the login's epoch.
    pub fn session(self) -> Session<crate::Store> {
        Session::new(self.principal).with_auth_epoch(self.epoch)
    }
}

/// The message of a throttled login, on every frontend.
pub const THROTTLED: &str = "too many failed logins; try again later";

/// The principal of a session that has not logged in.
pub fn anonymous() -> Principal {
    Principal { user: "anonymous".into(), groups: vec![], may_sudo: false }
}

/// Logs a caller in. The returned epoch was read before the principal's groups were, so a
/// change in between is seen at the first command.
pub async fn authenticate(
    shared: &Shared,
    via: Via,
    peer: Option<IpAddr>,
    credentials: Credentials<'_>,
) -> Result<Login, AuthError> {
    if let Some(ip) = peer
        && !shared.login_limiter.allow(ip)
    {
        return Err(AuthError::Throttled);
    }
    let cat = &shared.catalogue;
    let epoch = cat.auth_epoch();
    let result = match credentials {
        Credentials::Password { user, password } => cat.authenticate(user, password).await,
        Credentials::Certificate { subject, claimed } => certificate_principal(shared, subject, claimed).await,
    };
    match result {
        Ok(p) => {
            if let Credentials::Certificate { subject, .. } = credentials {
                tracing::info!(target: "audit", ?via, user = %p.user, peer = ?peer, subject = subject.unwrap_or(""), "certificate login");
            }
            Ok(Login { principal: p, epoch })
        }
        Err(e @ Error::PermissionDenied(_)) => {
            if let Some(ip) = peer {
                shared.login_limiter.failed(ip);
            }
            let (user, subject) = match credentials {
                Credentials::Password { user, .. } => (user, ""),
                Credentials::Certificate { subject, claimed } => (claimed, subject.unwrap_or("")),
            };
            tracing::info!(target: "audit", ?via, %user, peer = ?peer, subject, "login failed");
            Err(AuthError::Denied(e))
        }
        Err(e) => Err(AuthError::Internal(e)),
    }
}

/// The user a verified certificate subject stands for (and `claimed`, when the client named
/// one).
async fn certificate_principal(shared: &Shared, subject: Option<&str>, claimed: &str) -> Result<Principal, Error> {
    let (Some(tls), Some(dn)) = (shared.tls.as_ref(), subject) else {
        return Err(Error::PermissionDenied("no login name and no verified client certificate".into()));
    };
    let cat = &shared.catalogue;
    let denied = || Error::PermissionDenied(format!("certificate subject {dn} is not mapped to a user"));
    let user = match cat.user_for_subject(dn).await? {
        Some(u) => u,
        None => tls.get().gridmap_user(dn).ok_or_else(denied)?.to_string(),
    };
    let p = cat.principal(&user).await.map_err(|e| match e {
        Error::NotFound(_) => denied(),
        other => other,
    })?;
    if !claimed.is_empty() && p.user != claimed {
        return Err(Error::PermissionDenied(format!("the client certificate does not belong to {claimed}")));
    }
    Ok(p)
}
