//! Resumable TCP sessions (AMGA's `Sessions = no|allow|force`): numeric, unguessable ids that
//! map to a caller's identity and current directory between connections. Open transactions are
//! never carried over. Held in this process's memory (a cache: a client that reaches another
//! process simply logs in again).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ardacat_core::perm::Principal;

#[derive(Debug, Clone)]
pub struct SavedSession {
    pub principal: Principal,
    pub cwd: String,
    pub escape: bool,
}

pub struct SessionRegistry {
    idle: Duration,
    inner: Mutex<HashMap<u64, (SavedSession, Instant)>>,
}

impl SessionRegistry {
    pub fn new(idle: Duration) -> Self {
        SessionRegistry { idle, inner: Mutex::new(HashMap::new()) }
    }

    /// A fresh id: 63 random bits, so old clients that parse it as a signed integer cope.
    pub fn new_id(&self) -> u64 {
        loop {
            let id = rand::random::<u64>() >> 1;
            if id != 0 && !self.lock().contains_key(&id) {
                return id;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (SavedSession, Instant)>> {
        // A poisoned lock only means another connection panicked mid-update of a plain map.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn save(&self, id: u64, s: SavedSession) {
        let mut map = self.lock();
        let now = Instant::now();
        map.retain(|_, (_, t)| now.duration_since(*t) < self.idle);
        map.insert(id, (s, now));
    }

    /// The session for a resuming connection; expired or unknown ids give `None`. The entry
    /// stays (refreshed by the next `save`), so a client may resume the same id repeatedly.
    pub fn resume(&self, id: u64) -> Option<SavedSession> {
        let map = self.lock();
        let (s, t) = map.get(&id)?;
        (t.elapsed() < self.idle).then(|| s.clone())
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_once_and_expire() {
        let r = SessionRegistry::new(Duration::from_secs(60));
        let id = r.new_id();
        let s =
            SavedSession { principal: Principal { user: "a".into(), groups: vec![] }, cwd: "/x".into(), escape: false };
        r.save(id, s);
        assert_eq!(r.resume(id).unwrap().cwd, "/x");
        assert_eq!(r.resume(id).unwrap().cwd, "/x");
        assert!(r.resume(id + 1).is_none());
        let r = SessionRegistry::new(Duration::ZERO);
        r.save(
            id,
            SavedSession { principal: Principal { user: "a".into(), groups: vec![] }, cwd: "/".into(), escape: false },
        );
        assert!(r.resume(id).is_none());
    }
}
