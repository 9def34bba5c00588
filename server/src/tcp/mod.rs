//! The TCP streaming frontend (AMGA-compatible): the accept loop with a connection limit and
//! the state of one connection. A connection is opened by `handshake` (greeting, options, TLS,
//! login), then served by the command loop in `conn`, which looks each line up in the command
//! table (`command`); `reply` writes replies,
//! `stall` guards writes. Wire syntax is ardacat-proto's; the meaning of commands is the
//! catalogue's. This module only translates.

pub mod command;
mod conn;
mod handshake;
pub mod reply;
pub mod stall;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use std::net::SocketAddr;

use ardacat_core::Session;

use crate::state::Shared;

/// What one connection carries between commands.
pub struct ConnState {
    pub session: Session<crate::Store>,
    /// The client negotiated the `escape` option.
    pub escape: bool,
    pub session_id: Option<u64>,
    /// The bulk load `upload` opened, until `commit` or `abort`.
    pub upload: Option<ardacat_core::service::composite::BulkLoad>,
    pub peer: SocketAddr,
}

impl ConnState {
    /// The session id to put in a reply's end marker. A token tells the client it may hang up
    /// and resume later (the original client does so at once), but an open transaction or upload
    /// lives only as long as this connection; so while one is open no token is sent and the
    /// client keeps the connection.
    fn token(&self) -> Option<u64> {
        self.session_id.filter(|_| !self.session.in_transaction() && self.upload.is_none())
    }
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
            handshake::serve(stream, peer, shared.clone(), shutdown).await;
            shared.stats.connections_open.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    tracker.close();
    if tokio::time::timeout(Duration::from_secs(10), tracker.wait()).await.is_err() {
        tracing::warn!("connections still busy after 10 s; closing them");
    }
}
