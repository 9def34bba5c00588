//! The TCP streaming frontend (AMGA-compatible): the accept loop with a connection limit, and
//! the per-connection handler in `conn`. Wire syntax is ardacat-proto's;
//! the meaning of commands is the catalogue's. This module only translates.

pub mod command;
mod conn;
pub mod reply;
pub mod stall;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::state::Shared;

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
