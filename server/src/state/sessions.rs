//! Resumable TCP sessions (AMGA's `Sessions = no|allow|force`): numeric, signed, unguessable ids
//! (`ardacat_core::service::sessions`) that map to a caller's identity, current directory and
//! escape mode between connections. Open transactions are never carried over.
//!
//! Two homes, one behaviour: on SQLite (one process) and on a read-only standby the sessions
//! live in this process's memory; on a writable PostgreSQL database they live in the database
//! (`tcp_sessions`), so a session issued by one process resumes on any process sharing it. The
//! database row is written when the session's state changes or its expiry needs renewing (at
//! most every eighth of the idle timeout), not at every command. This module keeps state only; the
//! signature and the rows are the catalogue's.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ardacat_core::perm::Principal;
use ardacat_core::store::SavedTcpSession;

use crate::Cat;

#[derive(Debug, Clone)]
pub struct SavedSession {
    pub principal: Principal,
    pub cwd: String,
    pub escape: bool,
}

impl SavedSession {
    fn stored(&self) -> SavedTcpSession {
        SavedTcpSession { user: self.principal.user.clone(), cwd: self.cwd.clone(), escape: self.escape }
    }
}

/// A session as this process last saw it: its state, when, and (in the database) its expiry.
struct Held {
    saved: SavedSession,
    at: Instant,
    expires: i64,
}

pub struct SessionRegistry {
    idle: Duration,
    /// Sessions live in the database (writable PostgreSQL) rather than in this map alone.
    in_database: bool,
    inner: Mutex<HashMap<u64, Held>>,
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl SessionRegistry {
    pub fn new(idle: Duration, in_database: bool) -> Self {
        SessionRegistry { idle, in_database, inner: Mutex::new(HashMap::new()) }
    }

    /// Whether sessions resume on any process sharing the database.
    pub fn in_database(&self) -> bool {
        self.in_database
    }

    /// A fresh signed id: 63 bits, so old clients that parse it as a signed integer cope.
    pub fn new_id(&self, cat: &Cat) -> u64 {
        loop {
            let id = cat.new_tcp_session_id();
            if !self.lock().contains_key(&id) {
                return id;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Held>> {
        // A poisoned lock only means another connection panicked mid-update of a plain map.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn idle_secs(&self) -> i64 {
        i64::try_from(self.idle.as_secs()).unwrap_or(i64::MAX / 4)
    }

    /// Keeps the session's state after a command. False when the id cannot be kept (taken by
    /// another session, or the database refused): the caller then stops offering it.
    pub async fn save(&self, cat: &Cat, id: u64, s: SavedSession) -> bool {
        let now = Instant::now();
        if !self.in_database {
            let mut map = self.lock();
            map.retain(|_, h| now.duration_since(h.at) < self.idle);
            map.insert(id, Held { saved: s, at: now, expires: 0 });
            return true;
        }
        let unix = unix_now();
        let idle = self.idle_secs();
        let create = {
            let mut map = self.lock();
            map.retain(|_, h| h.expires > unix);
            match map.get(&id) {
                None => true,
                Some(h) => {
                    let same = h.saved.stored() == s.stored();
                    if same && h.expires - unix >= idle - (idle / 8).max(1) {
                        return true;
                    }
                    false
                }
            }
        };
        let expires = unix.saturating_add(idle);
        match cat.put_tcp_session(id, &s.stored(), expires, unix, create).await {
            Ok(true) => {
                self.lock().insert(id, Held { saved: s, at: now, expires });
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::warn!(error = %e, "cannot store the TCP session; it will not be offered");
                false
            }
        }
    }

    /// The session for a resuming connection; forged, expired or unknown ids give `None`. The
    /// session stays (refreshed by the next `save`), so a client may resume the same id repeatedly.
    pub async fn resume(&self, cat: &Cat, id: u64) -> Option<SavedSession> {
        if !cat.tcp_session_id_valid(id) {
            return None;
        }
        if !self.in_database {
            let map = self.lock();
            let h = map.get(&id)?;
            return (h.at.elapsed() < self.idle).then(|| h.saved.clone());
        }
        match cat.tcp_session(id, unix_now()).await {
            Ok(Some((stored, expires))) => {
                let saved = SavedSession {
                    principal: Principal { user: stored.user, groups: Vec::new(), may_sudo: false },
                    cwd: stored.cwd,
                    escape: stored.escape,
                };
                self.lock().insert(id, Held { saved: saved.clone(), at: Instant::now(), expires });
                Some(saved)
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the TCP session");
                None
            }
        }
    }

    /// Sessions this process holds (in memory; in the database mode, those it saw lately).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
