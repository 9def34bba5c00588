//! Service accounts (`user_may_sudo`, migration 0009): the privilege a site replica's server
//! logs in to the primary with, to forward writes as each of its clients. As itself such an
//! account may only `sudo` to a non-root user and run the session commands of
//! [`SERVICE_ACCOUNT_COMMANDS`]; after `sudo alice` it is alice in every check, and may `sudo`
//! again. Only root grants or withdraws the privilege. This module owns those rules; it must
//! not know the wire (frontends pass the command's name).

use super::{Catalogue, Session};
use crate::error::{Error, Result};
use crate::store::{Store, StoreConn};

/// What a service account may run as itself (besides these it gets code 4).
pub const SERVICE_ACCOUNT_COMMANDS: &[&str] = &["sudo", "whoami", "pwd", "help", "wal_lsn"];

impl<S: Store> Catalogue<S> {
    /// Code 4 when the session is a service account acting as itself and `command` is not one
    /// of [`SERVICE_ACCOUNT_COMMANDS`]. Frontends call it before every command (`sql` for a
    /// native SQL statement, the operation name on SOAP).
    pub fn admit(&self, s: &Session<S>, command: &str) -> Result<()> {
        let who = &s.principal;
        if who.may_sudo && !who.is_root() && !SERVICE_ACCOUNT_COMMANDS.contains(&command) {
            return Err(Error::PermissionDenied(format!(
                "{} is a service account: as itself it may only sudo to a user",
                who.user
            )));
        }
        Ok(())
    }

    /// The service account a non-root session may `sudo` to `target` with: the one it logged
    /// in as (still holding the privilege), or its principal if that is one. Code 4 otherwise,
    /// and for `sudo root`.
    pub(super) async fn sudo_account(&self, s: &Session<S>, target: &str) -> Result<String> {
        let account = match &s.service_account {
            Some(a) => a.clone(),
            None if s.principal.may_sudo => s.principal.user.clone(),
            None => return Err(Error::PermissionDenied("only root may sudo".into())),
        };
        if target == "root" {
            return Err(Error::PermissionDenied(format!("the service account {account} may not sudo to root")));
        }
        let still = self.inner.store.acquire().await?.user(&account).await?.is_some_and(|u| u.may_sudo);
        if !still {
            return Err(Error::PermissionDenied(format!("{account} is no longer a service account")));
        }
        Ok(account)
    }

    /// `user_may_sudo <user> on|off`: root grants or withdraws the service-account privilege.
    pub async fn user_may_sudo(&self, s: &mut Session<S>, user: &str, on: bool) -> Result<()> {
        if !s.principal.is_root() {
            return Err(Error::PermissionDenied("only root may make service accounts".into()));
        }
        if user == "root" {
            return Err(Error::IllegalCommand("root cannot be a service account".into()));
        }
        let found = self.write(s, async |c| c.set_may_sudo(user, on).await).await?;
        if !found {
            return Err(Error::NotFound(format!("user {user}")));
        }
        self.auth_changed(s);
        Ok(())
    }
}
