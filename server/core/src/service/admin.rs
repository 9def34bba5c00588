//! Identity and administration: login, users, groups, ACLs and sequences. Only root manages
//! users and groups; owners manage their collections' ACLs.

use super::{Catalogue, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{AclEntry, Mode, Principal, WRITE};
use crate::store::{Store, StoreConn};

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

fn valid_user_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'))
}

fn require_root(who: &Principal) -> Result<()> {
    if who.is_root() { Ok(()) } else { Err(Error::PermissionDenied("only root may manage users and groups".into())) }
}

/// Hash a password with argon2 on a blocking thread (it is deliberately slow).
pub async fn hash_password(password: &str) -> Result<String> {
    let pw = password.to_string();
    tokio::task::spawn_blocking(move || {
        argon2::Argon2::default()
            .hash_password(pw.as_bytes())
            .map(|h| h.to_string())
            .map_err(|e| Error::Internal(format!("password hashing failed: {e}")))
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?
}

async fn verify_password(password: &str, hash: &str) -> bool {
    let (pw, hash) = (password.to_string(), hash.to_string());
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash).is_ok_and(|h| argon2::Argon2::default().verify_password(pw.as_bytes(), &h).is_ok())
    })
    .await
    .unwrap_or(false)
}

impl<S: Store> Catalogue<S> {
    /// Creates `root` with this password unless a root user exists. Returns true if created.
    pub async fn ensure_root(&self, password: &str) -> Result<bool> {
        let mut conn = self.inner.store.acquire().await?;
        if conn.user("root").await?.is_some() {
            return Ok(false);
        }
        let hash = hash_password(password).await?;
        match conn.create_user("root", Some(&hash)).await {
            Ok(()) => Ok(true),
            // Another process sharing the database won the race.
            Err(Error::Exists(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Checks a login and password; returns the principal with its groups.
    pub async fn authenticate(&self, login: &str, password: Option<&str>) -> Result<Principal> {
        let denied = || Error::PermissionDenied("wrong user name or password".into());
        let mut conn = self.inner.store.acquire().await?;
        let user = conn.user(login).await?.ok_or_else(denied)?;
        match (&user.password_hash, password) {
            (Some(hash), Some(pw)) if verify_password(pw, hash).await => {}
            (None, None) => {}
            _ => return Err(denied()),
        }
        self.principal_of(&mut conn, login).await
    }

    /// The principal of a user already authenticated another way (certificate, sudo).
    pub async fn principal(&self, login: &str) -> Result<Principal> {
        let mut conn = self.inner.store.acquire().await?;
        if conn.user(login).await?.is_none() {
            return Err(Error::NotFound(format!("user {login}")));
        }
        self.principal_of(&mut conn, login).await
    }

    async fn principal_of(&self, conn: &mut S::Conn, login: &str) -> Result<Principal> {
        let groups = conn.groups_of(login).await?;
        Ok(Principal { user: login.to_string(), groups })
    }

    /// Maps a certificate subject DN to its user.
    pub async fn user_for_subject(&self, subject: &str) -> Result<Option<String>> {
        self.inner.store.acquire().await?.user_by_subject(subject).await
    }

    /// `sudo <user>`: root acts as another user for the rest of the session.
    pub async fn sudo(&self, s: &mut Session<S>, user: &str) -> Result<()> {
        require_root(&s.principal)?;
        s.principal = self.principal(user).await?;
        Ok(())
    }

    /// Re-reads the session's groups so membership changes apply to live sessions at once.
    pub async fn refresh(&self, s: &mut Session<S>) -> Result<()> {
        let user = s.principal.user.clone();
        let mut conn = self.conn(s).await?;
        let groups = conn.groups_of(&user).await?;
        drop(conn);
        s.principal.groups = groups;
        Ok(())
    }

    pub async fn user_create(&self, s: &mut Session<S>, name: &str, password: &str) -> Result<()> {
        require_root(&s.principal)?;
        if !valid_user_name(name) {
            return Err(Error::IllegalCommand(format!("invalid user name '{name}'")));
        }
        let hash = hash_password(password).await?;
        let mut conn = self.conn(s).await?;
        if conn.user(name).await?.is_some() {
            return Err(Error::Exists(format!("user {name}")));
        }
        conn.create_user(name, Some(&hash)).await
    }

    pub async fn user_remove(&self, s: &mut Session<S>, name: &str) -> Result<()> {
        require_root(&s.principal)?;
        if name == "root" {
            return Err(Error::PermissionDenied("root cannot be removed".into()));
        }
        let mut conn = self.conn(s).await?;
        if conn.remove_user(name).await? { Ok(()) } else { Err(Error::NotFound(format!("user {name}"))) }
    }

    /// Root sets anyone's password; a user may set their own.
    pub async fn user_passwd(&self, s: &mut Session<S>, name: &str, password: &str) -> Result<()> {
        if !s.principal.is_root() && s.principal.user != name {
            return Err(Error::PermissionDenied("you may only change your own password".into()));
        }
        let hash = hash_password(password).await?;
        let mut conn = self.conn(s).await?;
        if conn.set_password(name, &hash).await? { Ok(()) } else { Err(Error::NotFound(format!("user {name}"))) }
    }

    pub async fn user_subject_add(&self, s: &mut Session<S>, name: &str, subject: &str) -> Result<()> {
        require_root(&s.principal)?;
        let mut conn = self.conn(s).await?;
        if conn.user(name).await?.is_none() {
            return Err(Error::NotFound(format!("user {name}")));
        }
        conn.add_subject(name, subject).await
    }

    pub async fn user_listcred(&self, s: &mut Session<S>, name: &str) -> Result<Vec<String>> {
        if !s.principal.is_root() && s.principal.user != name {
            return Err(Error::PermissionDenied("you may only list your own credentials".into()));
        }
        let mut conn = self.conn(s).await?;
        if conn.user(name).await?.is_none() {
            return Err(Error::NotFound(format!("user {name}")));
        }
        conn.subjects(name).await
    }

    pub async fn grp_create(&self, s: &mut Session<S>, group: &str) -> Result<()> {
        require_root(&s.principal)?;
        if !valid_user_name(group) {
            return Err(Error::IllegalCommand(format!("invalid group name '{group}'")));
        }
        let owner = s.principal.user.clone();
        let mut conn = self.conn(s).await?;
        if conn.group_exists(group).await? {
            return Err(Error::Exists(format!("group {group}")));
        }
        conn.create_group(group, &owner).await
    }

    pub async fn grp_remove(&self, s: &mut Session<S>, group: &str) -> Result<()> {
        require_root(&s.principal)?;
        let mut conn = self.conn(s).await?;
        if conn.remove_group(group).await? { Ok(()) } else { Err(Error::NotFound(format!("group {group}"))) }
    }

    pub async fn grp_adduser(&self, s: &mut Session<S>, group: &str, user: &str) -> Result<()> {
        require_root(&s.principal)?;
        let mut conn = self.conn(s).await?;
        if !conn.group_exists(group).await? {
            return Err(Error::NotFound(format!("group {group}")));
        }
        if conn.user(user).await?.is_none() {
            return Err(Error::NotFound(format!("user {user}")));
        }
        conn.add_member(group, user).await
    }

    pub async fn grp_removeuser(&self, s: &mut Session<S>, group: &str, user: &str) -> Result<()> {
        require_root(&s.principal)?;
        let mut conn = self.conn(s).await?;
        if conn.remove_member(group, user).await? {
            Ok(())
        } else {
            Err(Error::NotFound(format!("{user} in group {group}")))
        }
    }

    /// `grp_member [user]`: the groups of a user (default: the caller).
    pub async fn grp_member(&self, s: &mut Session<S>, user: Option<&str>) -> Result<Vec<String>> {
        let user = user.unwrap_or(&s.principal.user).to_string();
        let mut conn = self.conn(s).await?;
        conn.groups_of(&user).await
    }

    pub async fn acl_add(&self, s: &mut Session<S>, target: &str, principal: &str, rights: &str) -> Result<()> {
        let rights = Mode::parse_rights(rights)?;
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        let mut conn = self.conn(s).await?;
        let c = Self::must_collection(&mut conn, &abs).await?;
        if !Self::is_owner(&who, &c) {
            return Err(Error::PermissionDenied(format!("only the owner may change the ACL of {abs}")));
        }
        let is_group = conn.group_exists(principal).await?;
        if !is_group && conn.user(principal).await?.is_none() {
            return Err(Error::NotFound(format!("user or group {principal}")));
        }
        conn.set_acl(c.id, &AclEntry { principal: principal.to_string(), is_group, rights }).await
    }

    pub async fn acl_remove(&self, s: &mut Session<S>, target: &str, principal: &str) -> Result<()> {
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        let mut conn = self.conn(s).await?;
        let c = Self::must_collection(&mut conn, &abs).await?;
        if !Self::is_owner(&who, &c) {
            return Err(Error::PermissionDenied(format!("only the owner may change the ACL of {abs}")));
        }
        if conn.remove_acl(c.id, principal).await? == 0 {
            return Err(Error::NotFound(format!("ACL entry {principal} on {abs}")));
        }
        Ok(())
    }

    /// `acl_show <path>`: rows `(principal, rights)`; groups are written `group:<name>`.
    pub async fn acl_show(&self, s: &mut Session<S>, target: &str) -> Result<Vec<(String, String)>> {
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        let mut conn = self.conn(s).await?;
        let c = Self::must_collection(&mut conn, &abs).await?;
        Self::check(&mut conn, &who, &c, crate::perm::READ).await?;
        Ok(conn
            .acl(c.id)
            .await?
            .into_iter()
            .map(|a| {
                let name = if a.is_group { format!("group:{}", a.principal) } else { a.principal };
                (name, Mode::rights_string(a.rights))
            })
            .collect())
    }

    fn split_sequence(cwd: &str, seq: &str) -> Result<(String, String)> {
        let abs = path::absolute(cwd, seq)?;
        let (dir, name) = path::split(&abs).ok_or_else(|| Error::NotASequence(abs.clone()))?;
        Ok((dir.to_string(), name.to_string()))
    }

    /// `sequence_create <name> <dir> [increment [start]]`
    pub async fn sequence_create(
        &self,
        s: &mut Session<S>,
        name: &str,
        dir: &str,
        increment: i64,
        start: i64,
    ) -> Result<()> {
        if !path::valid_component(name) || path::has_wildcard(name) {
            return Err(Error::IllegalCommand(format!("invalid sequence name '{name}'")));
        }
        if increment == 0 {
            return Err(Error::IllegalCommand("a sequence increment may not be 0".into()));
        }
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        let mut conn = self.conn(s).await?;
        let c = Self::must_collection(&mut conn, &abs).await?;
        Self::check(&mut conn, &who, &c, WRITE).await?;
        conn.create_sequence(c.id, name, increment, start).await
    }

    /// `sequence_next <dir>/<name>`: the next value, atomically.
    pub async fn sequence_next(&self, s: &mut Session<S>, seq: &str) -> Result<i64> {
        let (dir, name) = Self::split_sequence(&s.cwd, seq)?;
        let who = s.principal.clone();
        let mut conn = self.conn(s).await?;
        let c = conn.collection(&dir).await?.ok_or_else(|| Error::NotASequence(format!("{dir}/{name}")))?;
        Self::check(&mut conn, &who, &c, WRITE).await?;
        conn.next_sequence(c.id, &name).await?.ok_or_else(|| Error::NotASequence(format!("{dir}/{name}")))
    }

    pub async fn sequence_remove(&self, s: &mut Session<S>, seq: &str) -> Result<()> {
        let (dir, name) = Self::split_sequence(&s.cwd, seq)?;
        let who = s.principal.clone();
        let mut conn = self.conn(s).await?;
        let c = conn.collection(&dir).await?.ok_or_else(|| Error::NotASequence(format!("{dir}/{name}")))?;
        Self::check(&mut conn, &who, &c, WRITE).await?;
        if conn.remove_sequence(c.id, &name).await? {
            Ok(())
        } else {
            Err(Error::NotASequence(format!("{dir}/{name}")))
        }
    }
}
