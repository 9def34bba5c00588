//! Admission of connections on one listening port: the port's total cap (`max_connections`,
//! `max_http_connections`) and the per-address cap (`max_connections_per_peer`, with
//! `trusted_peers` exempt), and the count of refusals by reason. It decides at once whether a
//! connection gets a slot; it must not wait, read or write a socket (the TCP and HTTP frontends
//! write their refusals in their own protocol) or know what a connection does.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::config::IpNet;

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The port serves its maximum number of connections.
    Full,
    /// The client's address holds its maximum number of connections on this port.
    PeerFull,
}

impl Refusal {
    /// The `reason` label of the refusal counters.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Full => "max_connections",
            Refusal::PeerFull => "per_peer",
        }
    }
}

/// The connection slots of one port.
pub struct Gate {
    max_total: usize,
    /// 0: no per-address cap.
    max_per_peer: usize,
    trusted: Vec<IpNet>,
    /// Slots held now: in total, and per untrusted address (an address leaves the map with its
    /// last connection, so the map is as large as the set of connected addresses).
    held: Mutex<Held>,
    refused_full: AtomicU64,
    refused_peer: AtomicU64,
}

#[derive(Default)]
struct Held {
    total: usize,
    per_peer: HashMap<IpAddr, usize>,
}

/// One admitted connection's slot; dropping it frees the slot.
pub struct Slot {
    gate: Arc<Gate>,
    /// The address counted against the per-address cap (none for a trusted peer).
    peer: Option<IpAddr>,
}

impl Gate {
    pub fn new(max_total: usize, max_per_peer: usize, trusted: Vec<IpNet>) -> Arc<Gate> {
        Arc::new(Gate {
            max_total: max_total.max(1),
            max_per_peer,
            trusted,
            held: Mutex::new(Held::default()),
            refused_full: AtomicU64::new(0),
            refused_peer: AtomicU64::new(0),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a connection from `peer`, or why not. The per-address cap is checked first,
    /// so a flooding address is told so even when the port is full as well.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Slot, Refusal> {
        let peer = peer.to_canonical();
        let capped = self.max_per_peer > 0 && !self.trusted.iter().any(|n| n.contains(peer));
        let mut held = self.held();
        let refusal = if capped && held.per_peer.get(&peer).is_some_and(|n| *n >= self.max_per_peer) {
            Some(Refusal::PeerFull)
        } else if held.total >= self.max_total {
            Some(Refusal::Full)
        } else {
            None
        };
        if let Some(r) = refusal {
            drop(held);
            match r {
                Refusal::Full => self.refused_full.fetch_add(1, Ordering::Relaxed),
                Refusal::PeerFull => self.refused_peer.fetch_add(1, Ordering::Relaxed),
            };
            return Err(r);
        }
        held.total += 1;
        if capped {
            *held.per_peer.entry(peer).or_insert(0) += 1;
        }
        Ok(Slot { gate: self.clone(), peer: capped.then_some(peer) })
    }

    /// Connections holding a slot now.
    pub fn open(&self) -> usize {
        self.held().total
    }

    /// Refusals so far, by reason.
    pub fn refused(&self, r: Refusal) -> u64 {
        match r {
            Refusal::Full => self.refused_full.load(Ordering::Relaxed),
            Refusal::PeerFull => self.refused_peer.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.gate.held();
        held.total = held.total.saturating_sub(1);
        if let Some(peer) = self.peer
            && let Some(n) = held.per_peer.get_mut(&peer)
        {
            *n -= 1;
            if *n == 0 {
                held.per_peer.remove(&peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn total_and_per_peer_caps() {
        let gate = Gate::new(4, 2, vec!["127.0.0.3".parse().unwrap()]);
        let a1 = gate.admit(ip("127.0.0.2")).unwrap();
        let _a2 = gate.admit(ip("127.0.0.2")).unwrap();
        // The same address as an IPv4-mapped IPv6 address is the same peer.
        assert_eq!(gate.admit(ip("::ffff:127.0.0.2")).err(), Some(Refusal::PeerFull));
        // A trusted peer is not capped per address, but counts toward the total.
        let _t1 = gate.admit(ip("127.0.0.3")).unwrap();
        let _t2 = gate.admit(ip("127.0.0.3")).unwrap();
        assert_eq!(gate.admit(ip("127.0.0.1")).err(), Some(Refusal::Full));
        assert_eq!(gate.open(), 4);
        drop(a1);
        assert_eq!(gate.open(), 3);
        let _b = gate.admit(ip("127.0.0.1")).unwrap();
        assert_eq!((gate.refused(Refusal::Full), gate.refused(Refusal::PeerFull)), (1, 1));
        // The map forgets an address with its last connection.
        drop(_a2);
        assert!(!gate.held().per_peer.contains_key(&ip("127.0.0.2")));
    }

    #[test]
    fn zero_means_no_per_peer_cap() {
        let gate = Gate::new(3, 0, Vec::new());
        let slots: Vec<_> = (0..3).map(|_| gate.admit(ip("127.0.0.2")).unwrap()).collect();
        assert_eq!(gate.admit(ip("127.0.0.2")).err(), Some(Refusal::Full));
        assert!(gate.held().per_peer.is_empty());
        drop(slots);
        assert_eq!(gate.open(), 0);
    }
}
