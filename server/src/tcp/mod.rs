//! The TCP streaming frontend (AMGA-compatible): accept loop with a connection limit, shared
//! per-server state, and the per-connection handler in `conn`. Wire syntax is ardacat-proto's;
//! the meaning of commands is the catalogue's. This module only translates.

pub mod command;
mod conn;
pub mod reply;
pub mod session;
pub mod stall;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::Cat;
use crate::config::Config;
use session::SessionRegistry;

/// The version in the greeting banner. AMGA clients only read the `Protocol` line's digit.
pub const SERVER_VERSION: &str = concat!("2.5.0 (ardacat ", env!("CARGO_PKG_VERSION"), ")");

/// Counters shown by `stats` and `/metrics`.
#[derive(Default)]
pub struct Stats {
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    pub commands: AtomicU64,
    pub errors: AtomicU64,
}

impl Stats {
    pub fn snapshot(&self, shared: &Shared) -> Vec<(&'static str, u64)> {
        vec![
            ("tcp_connections_open", self.connections_open.load(Ordering::Relaxed)),
            ("tcp_connections_total", self.connections_total.load(Ordering::Relaxed)),
            ("tcp_commands_total", self.commands.load(Ordering::Relaxed)),
            ("tcp_errors_total", self.errors.load(Ordering::Relaxed)),
            ("tcp_sessions", shared.sessions.len() as u64),
        ]
    }
}

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

/// State every connection shares.
pub struct Shared {
    pub catalogue: Cat,
    pub config: Arc<Config>,
    pub sessions: SessionRegistry,
    pub stats: Stats,
    pub login_limiter: LoginLimiter,
    pub metrics: crate::metrics::Metrics,
    /// Certificates and acceptors when TLS is configured (`ssl` on TCP, HTTPS on HTTP).
    pub tls: Option<Arc<crate::tls::TlsSetup>>,
    /// SOAP differential deserializer (None when `soap_dds` is off).
    pub dds: Option<ardacat_soap::DdsCache>,
}

/// Accept connections until `shutdown`; then wait (bounded) for open connections to finish
/// their current command.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    let limit = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    let tracker = TaskTracker::new();
    loop {
        // Take a permit before accepting, so excess clients wait in the kernel backlog.
        let permit = tokio::select! {
            p = limit.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = shutdown.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            shared.stats.connections_open.fetch_add(1, Ordering::Relaxed);
            shared.stats.connections_total.fetch_add(1, Ordering::Relaxed);
            conn::serve(stream, peer, shared.clone(), shutdown).await;
            shared.stats.connections_open.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    tracker.close();
    if tokio::time::timeout(Duration::from_secs(10), tracker.wait()).await.is_err() {
        tracing::warn!("connections still busy after 10 s; closing them");
    }
}
