//! Sites and replicas (AMGA 2.x): a small replica catalogue beside the collections. Sites are
//! root's to add and remove; a GUID record belongs to the user who created it, and only that
//! user (or root) registers or unregisters its replicas; anyone may list. It decides and
//! validates; it must not know wire syntax or SQL (the rows are the store's, migration 0006).

use super::{Catalogue, Names, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::Principal;
use crate::store::{SiteRecord, Store, StoreConn};

/// The longest site name, server and GUID accepted.
pub const MAX_SITE_NAME: usize = 64;
pub const MAX_SITE_SERVER: usize = 1024;
pub const MAX_GUID: usize = 255;

/// A site name: like a user name, and not all digits (a number names a site by its id).
fn valid_site_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SITE_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'))
        && !name.chars().all(|c| c.is_ascii_digit())
}

fn check_guid(guid: &str) -> Result<()> {
    let ok = !guid.is_empty()
        && guid.len() <= MAX_GUID
        && !guid.starts_with('-')
        && !guid.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(Error::IllegalCommand(format!(
            "invalid GUID '{guid}' (1 to {MAX_GUID} characters, no spaces, not starting with -)"
        )))
    }
}

fn require_root(who: &Principal) -> Result<()> {
    if who.is_root() { Ok(()) } else { Err(Error::PermissionDenied("only root may manage sites".into())) }
}

/// Registering and unregistering replicas needs a real user: anonymous sessions only read.
fn require_user(who: &Principal) -> Result<()> {
    if who.user == "anonymous" {
        Err(Error::PermissionDenied("anonymous users may not register or unregister replicas".into()))
    } else {
        Ok(())
    }
}

/// A site by name, or by id when the argument is a number; missing is 1.
async fn resolve_site<C: StoreConn>(conn: &mut C, site: &str) -> Result<SiteRecord> {
    let found = match site.parse::<i64>() {
        Ok(id) if site.chars().all(|c| c.is_ascii_digit()) => conn.site_by_id(id).await?,
        _ => conn.site_by_name(site).await?,
    };
    found.ok_or_else(|| Error::NotFound(format!("site {site}")))
}

/// The owner of a GUID record, locked, for a change by `who`: missing is 1, another user's is 4.
async fn owned_guid<C: StoreConn>(conn: &mut C, who: &Principal, guid: &str) -> Result<()> {
    let owner = conn.replica_owner(guid, true).await?.ok_or_else(|| Error::NotFound(format!("GUID {guid}")))?;
    if who.is_root() || owner == who.user {
        Ok(())
    } else {
        Err(Error::PermissionDenied(format!("GUID {guid} belongs to {owner}")))
    }
}

impl<S: Store> Catalogue<S> {
    /// `site_add <site> [<server>]`: root only; an existing name is 15. Returns the new id.
    pub async fn site_add(&self, s: &mut Session<S>, site: &str, server: &str) -> Result<i64> {
        require_root(&s.principal)?;
        if !valid_site_name(site) {
            return Err(Error::IllegalCommand(format!(
                "invalid site name '{site}' (letters, digits, _ - . @, at most {MAX_SITE_NAME}, not all digits)"
            )));
        }
        if server.len() > MAX_SITE_SERVER || server.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::IllegalCommand(format!(
                "invalid server '{server}' (no spaces, at most {MAX_SITE_SERVER} bytes)"
            )));
        }
        self.write(s, async |conn| {
            if conn.site_by_name(site).await?.is_some() {
                return Err(Error::Exists(format!("site {site}")));
            }
            conn.add_site(site, server).await
        })
        .await
    }

    /// `site_remove <site or id>`: root only; a site that still holds replicas is 11.
    pub async fn site_remove(&self, s: &mut Session<S>, site: &str) -> Result<()> {
        require_root(&s.principal)?;
        self.write(s, async |conn| {
            let found = resolve_site(conn, site).await?;
            if conn.site_in_use(found.id).await? {
                return Err(Error::NotEmpty(format!("site {} holds replicas", found.name)));
            }
            conn.remove_site(found.id).await.map(|_| ())
        })
        .await
    }

    /// `site_list`: every site, by id; any user.
    pub async fn site_list(&self, s: &mut Session<S>) -> Result<Vec<SiteRecord>> {
        self.read(s, async |conn| conn.sites().await).await
    }

    /// `replica_register [-c] (<guid> <site>)+`: all pairs or none. A GUID without a record is
    /// 1, unless `create` (the record is made, owned by the caller); a GUID record of another
    /// user is 4 (root may); a replica already registered is 15.
    pub async fn replica_register(&self, s: &mut Session<S>, create: bool, pairs: &[(String, String)]) -> Result<()> {
        require_user(&s.principal)?;
        for (guid, _) in pairs {
            check_guid(guid)?;
        }
        let who = s.principal.clone();
        self.write(s, async |conn| {
            for (guid, site) in pairs {
                let site = resolve_site(conn, site).await?;
                if create && conn.replica_owner(guid, true).await?.is_none() {
                    conn.add_replica_file(guid, &who.user).await?;
                } else {
                    owned_guid(conn, &who, guid).await?;
                }
                if conn.replica_sites(guid).await?.contains(&site.id) {
                    return Err(Error::Exists(format!("replica of {guid} at site {}", site.name)));
                }
                conn.add_replica(guid, site.id).await?;
            }
            Ok(())
        })
        .await
    }

    /// `replica_unregister [-d] <guid> <site>`: owner of the GUID record or root; a replica
    /// that is not registered is 1. With `delete`, the GUID record goes with its last replica
    /// (without it, a GUID record may stay with no replica: `replica_list` shows it bare).
    pub async fn replica_unregister(&self, s: &mut Session<S>, delete: bool, guid: &str, site: &str) -> Result<()> {
        require_user(&s.principal)?;
        check_guid(guid)?;
        let who = s.principal.clone();
        self.write(s, async |conn| {
            owned_guid(conn, &who, guid).await?;
            let site = resolve_site(conn, site).await?;
            if !conn.remove_replica(guid, site.id).await? {
                return Err(Error::NotFound(format!("replica of {guid} at site {}", site.name)));
            }
            if delete && conn.replica_sites(guid).await?.is_empty() {
                conn.remove_replica_file(guid).await?;
            }
            Ok(())
        })
        .await
    }

    /// `replica_list [-l] <file>+`: per argument, the argument and the ids of the sites that
    /// hold it. A file is a GUID, or with `by_entry` an entry path whose GUID is the value of
    /// its attribute `guid` (read permission as for `getattr`; a NULL GUID lists no sites). A
    /// GUID without a record is 1; nothing is answered unless every argument resolves.
    pub async fn replica_list(
        &self,
        s: &mut Session<S>,
        by_entry: bool,
        files: &[String],
    ) -> Result<Vec<(String, Vec<i64>)>> {
        let mut guids = Vec::with_capacity(files.len());
        for f in files {
            if !by_entry {
                check_guid(f)?;
                guids.push(Some(f.clone()));
                continue;
            }
            if path::has_wildcard(f) {
                return Err(Error::IllegalCommand(format!("replica_list -l takes entry paths, not patterns: {f}")));
            }
            let mut rows: Vec<Vec<Option<String>>> = Vec::new();
            self.getattr(s, f, &Names::from_iter(["guid"]), &mut rows).await?;
            let guid = rows.into_iter().next().and_then(|r| r.into_iter().nth(1)).flatten();
            guids.push(guid);
        }
        self.read(s, async |conn| {
            let mut out = Vec::with_capacity(files.len());
            for (f, guid) in files.iter().zip(&guids) {
                let sites = match guid {
                    None => Vec::new(),
                    Some(g) => {
                        if conn.replica_owner(g, false).await?.is_none() {
                            return Err(Error::NotFound(format!("GUID {g}")));
                        }
                        conn.replica_sites(g).await?
                    }
                };
                out.push((f.clone(), sites));
            }
            Ok(out)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_site_name("CERN-PROD"));
        assert!(valid_site_name("site1"));
        assert!(!valid_site_name("123"));
        assert!(!valid_site_name(""));
        assert!(!valid_site_name("a b"));
        assert!(check_guid("a1b2-c3").is_ok());
        assert_eq!(check_guid("-c").unwrap_err().code(), 3);
        assert_eq!(check_guid("").unwrap_err().code(), 3);
    }
}
