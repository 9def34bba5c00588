//! The login limiter: failed logins per peer address within a sliding minute. It only counts;
//! `crate::auth` decides what a failure is and when to ask. Held in this process's memory.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed logins per peer address within a sliding minute.
pub struct LoginLimiter {
    per_minute: u32,
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl LoginLimiter {
    pub fn new(per_minute: u32) -> Self {
        LoginLimiter { per_minute, failures: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, (u32, Instant)>> {
        // A poisoned lock only means another task panicked mid-update of a plain map.
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn allow(&self, ip: IpAddr) -> bool {
        match self.lock().get(&ip) {
            Some((n, since)) if since.elapsed() < Duration::from_secs(60) => *n < self.per_minute,
            _ => true,
        }
    }

    pub fn failed(&self, ip: IpAddr) {
        let mut map = self.lock();
        let e = map.entry(ip).or_insert((0, Instant::now()));
        if e.1.elapsed() >= Duration::from_secs(60) {
            *e = (0, Instant::now());
        }
        e.0 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_per_address() {
        let l = LoginLimiter::new(2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        assert!(l.allow(a));
        l.failed(a);
        assert!(l.allow(a));
        l.failed(a);
        assert!(!l.allow(a));
        assert!(l.allow(b), "another address is not affected");
    }
}
