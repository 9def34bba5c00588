//! Identity and administration: login, users, groups, ACLs and sequences. Only root manages
//! users and groups; owners manage the ACLs of their collections and entries.

use super::{Catalogue, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{AclEntry, Guard, Mode, Principal, READ, WRITE};
use crate::store::{CollectionInfo, EntryMeta, Store, StoreConn};

use argon2::password_hash::phc::{Output, ParamsString, PasswordHash, Salt};
use argon2::{Algorithm, Argon2, Block, Params, Version};

fn valid_user_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'))
}

fn require_root(who: &Principal) -> Result<()> {
    if who.is_root() { Ok(()) } else { Err(Error::PermissionDenied("only root may manage users and groups".into())) }
}

type HashJob = Box<dyn FnOnce(&mut Vec<Block>) + Send>;

/// The threads that run argon2: a few dedicated ones (at most 4, one per core), fed in order,
/// each with one reusable block of argon2 memory (~19 MiB with the default parameters). A storm
/// of logins queues here instead of starving everything else of CPU, and memory stays at one
/// block per thread: allocating a fresh 19 MiB (64-byte aligned) block per run, as argon2's
/// own `hash_password`/`verify_password` do, left the freed blocks resident in the allocator,
/// so every early login added ~19 MiB to the server's RSS.
fn hash_threads() -> &'static std::sync::Mutex<std::sync::mpsc::Sender<HashJob>> {
    static POOL: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<HashJob>>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<HashJob>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
        for i in 0..n {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new().name(format!("ardacat-argon2-{i}")).spawn(move || {
                let mut memory: Vec<Block> = Vec::new();
                loop {
                    let job = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(poisoned) => poisoned.into_inner().recv(),
                    };
                    match job {
                        Ok(job) => job(&mut memory),
                        Err(_) => break,
                    }
                }
            });
            if let Err(e) = spawned {
                tracing::error!("cannot start a password hashing thread: {e}");
            }
        }
        std::sync::Mutex::new(tx)
    })
}

/// Run `f` on a password hashing thread (with that thread's argon2 memory) and wait for it.
async fn on_hash_thread<R: Send + 'static>(f: impl FnOnce(&mut Vec<Block>) -> R + Send + 'static) -> Result<R> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: HashJob = Box::new(move |memory| {
        let _ = tx.send(f(memory));
    });
    hash_threads()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(job)
        .map_err(|_| Error::Internal("password hashing threads are gone".into()))?;
    rx.await.map_err(|_| Error::Internal("password hashing failed".into()))
}

/// argon2 of `pw` into `out`, in `memory` (grown to the parameters' block count once).
fn argon2_into(
    a: &Argon2<'_>,
    params: &Params,
    pw: &[u8],
    salt: &[u8],
    out: &mut [u8],
    memory: &mut Vec<Block>,
) -> bool {
    let n = params.block_count();
    if memory.len() < n {
        memory.resize(n, Block::new());
    }
    a.hash_password_into_with_memory(pw, salt, out, &mut memory[..n]).is_ok()
}

/// Hash a password with argon2id (default parameters, 16-byte random salt) into a PHC string,
/// on a hashing thread (it is deliberately slow).
pub async fn hash_password(password: &str) -> Result<String> {
    let pw = password.to_string();
    on_hash_thread(move |memory| {
        let fail = |e: String| Error::Internal(format!("password hashing failed: {e}"));
        let params = Params::default();
        let a = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone());
        let salt: [u8; 16] = rand::random();
        let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
        if !argon2_into(&a, &params, pw.as_bytes(), &salt, &mut out, memory) {
            return Err(fail("argon2 refused the input".into()));
        }
        let hash = PasswordHash {
            algorithm: Algorithm::Argon2id.ident(),
            version: Some(Version::V0x13.into()),
            params: ParamsString::try_from(&params).map_err(|e| fail(e.to_string()))?,
            salt: Some(Salt::new(&salt).map_err(|e| fail(e.to_string()))?),
            hash: Some(Output::new(&out).map_err(|e| fail(e.to_string()))?),
        };
        Ok(hash.to_string())
    })
    .await?
}

/// Checks a password against a stored PHC argon2 hash (any variant, version and parameters).
async fn verify_password(password: &str, hash: &str) -> bool {
    let (pw, hash) = (password.to_string(), hash.to_string());
    on_hash_thread(move |memory| {
        let Ok(h) = PasswordHash::new(&hash) else { return false };
        let (Some(salt), Some(expected)) = (&h.salt, &h.hash) else { return false };
        let Ok(algorithm) = Algorithm::try_from(h.algorithm.as_str()) else { return false };
        let version = match h.version.map(Version::try_from).transpose() {
            Ok(v) => v.unwrap_or_default(),
            Err(_) => return false,
        };
        let Ok(params) = Params::try_from(&h) else { return false };
        let a = Argon2::new(algorithm, version, params.clone());
        let mut out = vec![0u8; expected.len()];
        if !argon2_into(&a, &params, pw.as_bytes(), salt, &mut out, memory) {
            return false;
        }
        // Output's equality is constant-time.
        Output::new(&out).is_ok_and(|computed| &computed == expected)
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
        match Self::unit(&mut conn, async |c| c.create_user("root", Some(&hash)).await).await {
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
        let may_sudo = conn.user(login).await?.is_some_and(|u| u.may_sudo);
        let groups = conn.groups_of(login).await?;
        Ok(Principal { user: login.to_string(), groups, may_sudo })
    }

    /// Maps a certificate subject DN to its user.
    pub async fn user_for_subject(&self, subject: &str) -> Result<Option<String>> {
        self.inner.store.acquire().await?.user_by_subject(subject).await
    }

    /// `sudo <user>`: root acts as another user for the rest of the session; so does a service
    /// account (`user_may_sudo`), to non-root users only, as often as it likes
    /// (`service_account.rs`).
    pub async fn sudo(&self, s: &mut Session<S>, user: &str) -> Result<()> {
        if !s.principal.is_root() {
            let account = self.sudo_account(s, user).await?;
            s.principal = self.principal(user).await?;
            s.service_account = Some(account);
            return Ok(());
        }
        s.principal = self.principal(user).await?;
        Ok(())
    }

    /// Re-reads the session's groups so membership changes apply to live sessions at once.
    /// A user removed meanwhile is refused (code 4) from then on.
    pub async fn refresh(&self, s: &mut Session<S>) -> Result<()> {
        let epoch = self.auth_epoch();
        let user = s.principal.user.clone();
        let groups = self
            .read(s, async |conn| {
                let record = conn.user(&user).await?;
                if record.is_none() && user != "anonymous" {
                    return Err(Error::PermissionDenied(format!("user {user} no longer exists")));
                }
                Ok((conn.groups_of(&user).await?, record.is_some_and(|r| r.may_sudo)))
            })
            .await?;
        (s.principal.groups, s.principal.may_sudo) = groups;
        s.auth_epoch = epoch;
        s.auth_read = Some(std::time::Instant::now());
        Ok(())
    }

    /// [`Catalogue::refresh`] only when needed: a user, group or ACL change went through this
    /// process since the session's groups were read (the auth epoch moved), or they were read
    /// longer ago than [`Catalogue::auth_recheck`] (changes by other processes nobody announced).
    /// Otherwise free: two atomic loads. Frontends call it before every command.
    pub async fn refresh_if_changed(&self, s: &mut Session<S>) -> Result<()> {
        let fresh = s.auth_epoch == self.auth_epoch() && s.auth_read.is_some_and(|t| t.elapsed() < self.auth_recheck());
        if fresh { Ok(()) } else { self.refresh(s).await }
    }

    pub async fn user_create(&self, s: &mut Session<S>, name: &str, password: &str) -> Result<()> {
        require_root(&s.principal)?;
        if !valid_user_name(name) {
            return Err(Error::IllegalCommand(format!("invalid user name '{name}'")));
        }
        let hash = hash_password(password).await?;
        self.write(s, async |conn| {
            if conn.user(name).await?.is_some() {
                return Err(Error::Exists(format!("user {name}")));
            }
            conn.create_user(name, Some(&hash)).await?;
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    pub async fn user_remove(&self, s: &mut Session<S>, name: &str) -> Result<()> {
        require_root(&s.principal)?;
        if name == "root" {
            return Err(Error::PermissionDenied("root cannot be removed".into()));
        }
        self.write(s, async |conn| {
            if !conn.remove_user(name).await? {
                return Err(Error::NotFound(format!("user {name}")));
            }
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    /// Root sets anyone's password; a user may set their own.
    pub async fn user_passwd(&self, s: &mut Session<S>, name: &str, password: &str) -> Result<()> {
        if !s.principal.is_root() && s.principal.user != name {
            return Err(Error::PermissionDenied("you may only change your own password".into()));
        }
        let hash = hash_password(password).await?;
        self.write(s, async |conn| {
            if !conn.set_password(name, &hash).await? {
                return Err(Error::NotFound(format!("user {name}")));
            }
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    pub async fn user_subject_add(&self, s: &mut Session<S>, name: &str, subject: &str) -> Result<()> {
        require_root(&s.principal)?;
        self.write(s, async |conn| {
            if conn.user(name).await?.is_none() {
                return Err(Error::NotFound(format!("user {name}")));
            }
            conn.add_subject(name, subject).await?;
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    /// `user_subject_remove <name> '<DN>'`: root only; a subject the user does not have is 1.
    pub async fn user_subject_remove(&self, s: &mut Session<S>, name: &str, subject: &str) -> Result<()> {
        require_root(&s.principal)?;
        self.write(s, async |conn| {
            if conn.user(name).await?.is_none() {
                return Err(Error::NotFound(format!("user {name}")));
            }
            if !conn.remove_subject(name, subject).await? {
                return Err(Error::NotFound(format!("subject {subject} of user {name}")));
            }
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    pub async fn user_listcred(&self, s: &mut Session<S>, name: &str) -> Result<Vec<String>> {
        if !s.principal.is_root() && s.principal.user != name {
            return Err(Error::PermissionDenied("you may only list your own credentials".into()));
        }
        self.read(s, async |conn| {
            if conn.user(name).await?.is_none() {
                return Err(Error::NotFound(format!("user {name}")));
            }
            conn.subjects(name).await
        })
        .await
    }

    pub async fn grp_create(&self, s: &mut Session<S>, group: &str) -> Result<()> {
        require_root(&s.principal)?;
        if !valid_user_name(group) {
            return Err(Error::IllegalCommand(format!("invalid group name '{group}'")));
        }
        let owner = s.principal.user.clone();
        self.write(s, async |conn| {
            if conn.group_exists(group).await? {
                return Err(Error::Exists(format!("group {group}")));
            }
            conn.create_group(group, &owner).await?;
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    pub async fn grp_remove(&self, s: &mut Session<S>, group: &str) -> Result<()> {
        require_root(&s.principal)?;
        self.write(s, async |conn| {
            if !conn.remove_group(group).await? {
                return Err(Error::NotFound(format!("group {group}")));
            }
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    pub async fn grp_adduser(&self, s: &mut Session<S>, group: &str, user: &str) -> Result<()> {
        require_root(&s.principal)?;
        self.write(s, async |conn| {
            if !conn.group_exists(group).await? {
                return Err(Error::NotFound(format!("group {group}")));
            }
            if conn.user(user).await?.is_none() {
                return Err(Error::NotFound(format!("user {user}")));
            }
            conn.add_member(group, user).await?;
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    pub async fn grp_removeuser(&self, s: &mut Session<S>, group: &str, user: &str) -> Result<()> {
        require_root(&s.principal)?;
        self.write(s, async |conn| {
            if !conn.remove_member(group, user).await? {
                return Err(Error::NotFound(format!("{user} in group {group}")));
            }
            Ok(())
        })
        .await?;
        self.auth_changed(s);
        Ok(())
    }

    /// `grp_member [user]`: the groups of a user (default: the caller).
    pub async fn grp_member(&self, s: &mut Session<S>, user: Option<&str>) -> Result<Vec<String>> {
        let user = user.unwrap_or(&s.principal.user).to_string();
        self.read(s, async |conn| conn.groups_of(&user).await).await
    }

    /// `user_list`: every user name, sorted by bytes; root only.
    pub async fn user_list(&self, s: &mut Session<S>) -> Result<Vec<String>> {
        require_root(&s.principal)?;
        let mut names = self.read(s, async |conn| conn.user_names().await).await?;
        names.sort();
        Ok(names)
    }

    /// `grp_list`: every group name, sorted by bytes. Any user: ACLs name groups, so the names
    /// are no secret (members are: `grp_show`).
    pub async fn grp_list(&self, s: &mut Session<S>) -> Result<Vec<String>> {
        let mut names = self.read(s, async |conn| conn.group_names().await).await?;
        names.sort();
        Ok(names)
    }

    /// `grp_show <group>`: its members, sorted by bytes; root or a member of the group.
    pub async fn grp_show(&self, s: &mut Session<S>, group: &str) -> Result<Vec<String>> {
        let who = s.principal.clone();
        let mut members = self
            .read(s, async |conn| {
                if !conn.group_exists(group).await? {
                    return Err(Error::NotFound(format!("group {group}")));
                }
                let members = conn.group_members(group).await?;
                if !who.is_root() && !members.contains(&who.user) {
                    return Err(Error::PermissionDenied(format!("only root and members may list group {group}")));
                }
                Ok(members)
            })
            .await?;
        members.sort();
        Ok(members)
    }

    /// `acl_add <path> <user-or-group> <rwx>`: on a collection or one entry; owner or root.
    pub async fn acl_add(&self, s: &mut Session<S>, target: &str, principal: &str, rights: &str) -> Result<()> {
        let rights = Mode::parse_rights(rights)?;
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        let on_collection = self
            .write(s, async |conn| {
                let Some(c) = conn.collection(&abs).await? else {
                    let (c, e) = Self::owned_entry(conn, &who, &abs).await?;
                    let is_group = Self::acl_principal(conn, principal).await?;
                    let acl = AclEntry { principal: principal.to_string(), is_group, rights };
                    conn.set_entry_acl(c.id, e.id, &acl).await?;
                    return Ok(false);
                };
                if !Self::is_owner(&who, &c) {
                    return Err(Error::PermissionDenied(format!("only the owner may change the ACL of {abs}")));
                }
                let is_group = Self::acl_principal(conn, principal).await?;
                conn.set_acl(c.id, &AclEntry { principal: principal.to_string(), is_group, rights }).await?;
                Ok(true)
            })
            .await?;
        // Entry ACLs are row data every statement reads: nothing cached to invalidate.
        if on_collection {
            self.auth_changed(s);
        }
        Ok(())
    }

    /// `acl_remove <path> <user-or-group>`: on a collection or one entry; owner or root.
    pub async fn acl_remove(&self, s: &mut Session<S>, target: &str, principal: &str) -> Result<()> {
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        let on_collection = self
            .write(s, async |conn| {
                let Some(c) = conn.collection(&abs).await? else {
                    let (c, e) = Self::owned_entry(conn, &who, &abs).await?;
                    if conn.remove_entry_acl(c.id, e.id, principal).await? == 0 {
                        return Err(Error::NotFound(format!("ACL entry {principal} on {abs}")));
                    }
                    return Ok(false);
                };
                if !Self::is_owner(&who, &c) {
                    return Err(Error::PermissionDenied(format!("only the owner may change the ACL of {abs}")));
                }
                if conn.remove_acl(c.id, principal).await? == 0 {
                    return Err(Error::NotFound(format!("ACL entry {principal} on {abs}")));
                }
                Ok(true)
            })
            .await?;
        if on_collection {
            self.auth_changed(s);
        }
        Ok(())
    }

    /// `acl_show <path>`: rows `(principal, rights)`; groups are written `group:<name>`. Needs
    /// read on the collection, and for an entry read on the entry too (or owning it).
    pub async fn acl_show(&self, s: &mut Session<S>, target: &str) -> Result<Vec<(String, String)>> {
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let acl = match conn.collection(&abs).await? {
                Some(c) => {
                    Self::check(conn, &who, &c, READ).await?;
                    conn.acl(c.id).await?
                }
                None => {
                    let (c, e) = Self::named_entry(conn, &who, &abs, false).await?;
                    let acl = conn.entry_acl(c.id, e.id).await?;
                    let guard = Guard { owner: &e.owner, group: &e.group, mode: Mode(e.perms), acl: &acl };
                    if who.user != e.owner {
                        guard.check(&who, READ, &abs)?;
                    }
                    acl
                }
            };
            Ok(acl
                .into_iter()
                .map(|a| {
                    let name = if a.is_group { format!("group:{}", a.principal) } else { a.principal };
                    (name, Mode::rights_string(a.rights))
                })
                .collect())
        })
        .await
    }

    /// Whether an ACL names a group (else a user); neither existing is error 1.
    async fn acl_principal(conn: &mut S::Conn, principal: &str) -> Result<bool> {
        let is_group = conn.group_exists(principal).await?;
        if !is_group && conn.user(principal).await?.is_none() {
            return Err(Error::NotFound(format!("user or group {principal}")));
        }
        Ok(is_group)
    }

    /// The one entry `abs` names (no wildcards), after checking read on its collection; with
    /// `lock`, its row stays locked until the surrounding write unit ends.
    async fn named_entry(
        conn: &mut S::Conn,
        who: &Principal,
        abs: &str,
        lock: bool,
    ) -> Result<(CollectionInfo, EntryMeta)> {
        let (parent, name) = path::split(abs).ok_or_else(|| Error::NotFound(abs.to_string()))?;
        let c = conn.collection(parent).await?.ok_or_else(|| Error::NotFound(abs.to_string()))?;
        if path::has_wildcard(name) {
            return Err(Error::IllegalCommand(format!("an ACL belongs to one entry or collection: {abs}")));
        }
        Self::check(conn, who, &c, READ).await?;
        let e = conn
            .entry_meta(c.id, &path::glob_to_like(name), lock)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| Error::NotFound(abs.to_string()))?;
        Ok((c, e))
    }

    /// [`Self::named_entry`], locked, and only for its owner or root.
    async fn owned_entry(conn: &mut S::Conn, who: &Principal, abs: &str) -> Result<(CollectionInfo, EntryMeta)> {
        let (c, e) = Self::named_entry(conn, who, abs, true).await?;
        if !who.is_root() && who.user != e.owner {
            return Err(Error::PermissionDenied(format!("only the owner may change the ACL of {abs}")));
        }
        Ok((c, e))
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
        self.write(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, WRITE).await?;
            conn.create_sequence(c.id, name, increment, start).await
        })
        .await
    }

    /// `sequence_next <dir>/<name>`: the next value, atomically.
    pub async fn sequence_next(&self, s: &mut Session<S>, seq: &str) -> Result<i64> {
        let (dir, name) = Self::split_sequence(&s.cwd, seq)?;
        let who = s.principal.clone();
        // `UPDATE … RETURNING` is a write: it goes through the write path like every other one
        // (on SQLite, the reserved writer connection under the write gate).
        self.write(s, async |conn| {
            let c = conn.collection(&dir).await?.ok_or_else(|| Error::NotASequence(format!("{dir}/{name}")))?;
            Self::check(conn, &who, &c, WRITE).await?;
            conn.next_sequence(c.id, &name).await?.ok_or_else(|| Error::NotASequence(format!("{dir}/{name}")))
        })
        .await
    }

    pub async fn sequence_remove(&self, s: &mut Session<S>, seq: &str) -> Result<()> {
        let (dir, name) = Self::split_sequence(&s.cwd, seq)?;
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let c = conn.collection(&dir).await?.ok_or_else(|| Error::NotASequence(format!("{dir}/{name}")))?;
            Self::check(conn, &who, &c, WRITE).await?;
            if conn.remove_sequence(c.id, &name).await? {
                Ok(())
            } else {
                Err(Error::NotASequence(format!("{dir}/{name}")))
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHasher, PasswordVerifier};

    #[tokio::test]
    async fn hashes_agree_with_argon2s_own_api() {
        let ours = hash_password("s3cret pw").await.unwrap();
        assert!(ours.starts_with("$argon2id$v=19$"), "{ours}");
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(Argon2::default().verify_password(b"s3cret pw", &parsed).is_ok());
        assert!(verify_password("s3cret pw", &ours).await);
        assert!(!verify_password("s3cret pX", &ours).await);
        // A hash made by argon2's own hasher (as older servers stored them) still verifies.
        let theirs = Argon2::default().hash_password(b"old pw").unwrap().to_string();
        assert!(verify_password("old pw", &theirs).await);
        assert!(!verify_password("old", &theirs).await);
        // Other parameters and variants too.
        let light = Argon2::new(Algorithm::Argon2i, Version::V0x10, Params::new(64, 1, 1, Some(16)).unwrap());
        let h = light.hash_password(b"x").unwrap().to_string();
        assert!(verify_password("x", &h).await);
        assert!(!verify_password("x", "not a hash").await);
        assert!(!verify_password("x", "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ").await);
    }
}
