//! How the HTTP port serves connections: the accept loop (admission by `crate::admission`, a
//! `503` with `Retry-After` for a refused client, TLS handshakes bounded in number and time,
//! TCP_NODELAY), and one connection served by hyper's HTTP/1 server under a watchdog that closes
//! slow and idle clients: the request header within `http_header_timeout_ms`, the body (timed
//! from when the handler asks for it) at `http_body_min_rate` after `http_body_timeout_ms`, a kept-alive connection idle, or a response
//! left unread, for at most `http_idle_timeout_ms`. Each close is counted by phase. It serves
//! whatever router it is given; it must not route, authenticate or know SOAP.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::admission::Refusal;
use crate::auth::Peer;
use crate::state::{HttpTimeout, Shared};
use crate::tls::TlsSlot;

mod watchdog;
use watchdog::*;

/// TLS handshakes in progress at once; further admitted connections wait for a turn (within
/// their handshake time).
const MAX_PENDING_HANDSHAKES: usize = 256;

/// Refused connections whose `503` is still being delivered (see `crate::tcp::refuse`).
const MAX_LINGERING_REFUSALS: usize = 256;

/// What a refused client is told to wait before it tries again, in seconds.
pub const RETRY_AFTER_SECS: u32 = 5;

/// The response a refused client gets (the connection closes after it).
pub fn refusal_response(r: Refusal) -> Vec<u8> {
    let body = match r {
        Refusal::Full => "Server busy: too many connections; try again later\n",
        Refusal::PeerFull => "Server busy: too many connections from your address; try again later\n",
    };
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: {RETRY_AFTER_SECS}\r\nConnection: close\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The time limits of one connection.
#[derive(Debug, Clone, Copy)]
struct Limits {
    header: Duration,
    body: Duration,
    /// Bytes per second that extend `body` by one second each.
    body_rate: u64,
    idle: Duration,
    handshake: Duration,
}

/// Accept and serve HTTP connections on `listener` until `shutdown`, with TLS when `tls` is set;
/// then finish the requests in progress (bounded) and return.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shared: Arc<Shared>,
    tls: Option<Arc<TlsSlot>>,
    shutdown: CancellationToken,
) {
    let cfg = &shared.config;
    let limits = Limits {
        header: Duration::from_millis(cfg.http_header_timeout_ms.max(1)),
        body: Duration::from_millis(cfg.http_body_timeout_ms.max(1)),
        body_rate: cfg.http_body_min_rate,
        idle: Duration::from_millis(cfg.http_idle_timeout_ms.max(1)),
        handshake: Duration::from_secs(cfg.handshake_timeout_secs.max(1)),
    };
    let refusals = [Refusal::Full, Refusal::PeerFull].map(refusal_response);
    let lingering = Arc::new(Semaphore::new(MAX_LINGERING_REFUSALS));
    let handshakes = Arc::new(Semaphore::new(MAX_PENDING_HANDSHAKES));
    let tracker = TaskTracker::new();
    while let Some((stream, peer)) = crate::tcp::next_connection(&listener, &shutdown).await {
        // Without it the small tail of a streamed (chunked) response waits for the client's
        // delayed ACK, ~40 ms.
        let _ = stream.set_nodelay(true);
        let slot = match shared.http_gate.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(r) => {
                tracing::debug!(%peer, reason = r.label(), "http connection refused");
                let refusal = &refusals[(r == Refusal::PeerFull) as usize];
                match &tls {
                    None => crate::tcp::refuse(stream, refusal, &lingering),
                    // The refusal must travel inside TLS: only while handshakes are few.
                    Some(tls) => {
                        if let Ok(permit) = lingering.clone().try_acquire_owned() {
                            let (acceptor, refusal) = (tls.get().http.clone(), refusal.clone());
                            tokio::spawn(async move {
                                use tokio::io::AsyncWriteExt;
                                if let Ok(Ok(mut s)) =
                                    tokio::time::timeout(limits.handshake, acceptor.accept(stream)).await
                                {
                                    let _ = s.write_all(&refusal).await;
                                    crate::tcp::linger(s).await;
                                }
                                drop(permit);
                            });
                        }
                    }
                }
                continue;
            }
        };
        shared.http_stats.connections_total.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (router, shared, shutdown) = (router.clone(), shared.clone(), shutdown.clone());
        let (tls, handshakes) = (tls.clone(), handshakes.clone());
        tracker.spawn(async move {
            match tls {
                None => {
                    let peer = Peer { addr: peer, subject: None };
                    serve_one(stream, peer, router, limits, &shared, shutdown).await;
                }
                Some(tls) => {
                    let acceptor = tls.get().http.clone();
                    let handshake = async {
                        let _turn = handshakes.acquire().await;
                        acceptor.accept(stream).await
                    };
                    match tokio::time::timeout(limits.handshake, handshake).await {
                        Ok(Ok(s)) => {
                            let peer = Peer { addr: peer, subject: crate::tls::peer_subject(s.get_ref().1) };
                            serve_one(s, peer, router, limits, &shared, shutdown).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "https handshake failed"),
                        Err(_) => tracing::debug!(%peer, "https handshake timed out"),
                    }
                }
            }
            drop(slot);
        });
    }
    tracker.close();
    if tokio::time::timeout(Duration::from_secs(10), tracker.wait()).await.is_err() {
        tracing::warn!("http connections still busy after 10 s; closing them");
    }
}

/// Serve one connection until the client leaves, a time limit passes, or shutdown (which lets
/// the request in progress finish, for at most 10 s).
async fn serve_one<I>(io: I, peer: Peer, router: Router, limits: Limits, shared: &Shared, shutdown: CancellationToken)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let addr = peer.addr;
    let clock = Arc::new(Clock::new(limits));
    let io = hyper_util::rt::TokioIo::new(Watched { inner: io, clock: clock.clone() });
    let service = ConnService { router, peer: ConnectInfo(peer), clock: clock.clone() };
    let conn = hyper::server::conn::http1::Builder::new().keep_alive(true).serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(peer = %addr, error = %e, "http connection ended");
            }
        }
        phase = clock.expired() => {
            shared.http_stats.timed_out(phase);
            tracing::info!(peer = %addr, phase = phase.label(), "http client too slow; connection closed");
        }
        _ = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(10), conn).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_is_a_complete_503() {
        let text = String::from_utf8(refusal_response(Refusal::PeerFull)).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(head.contains("\r\nRetry-After: 5\r\n") && head.contains("\r\nConnection: close\r\n"));
        assert!(head.contains(&format!("\r\nContent-Length: {}", body.len())));
    }
}
