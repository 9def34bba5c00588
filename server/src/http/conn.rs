//! How the HTTP port serves connections: the accept loop (admission by `crate::admission`, a
//! `503` with `Retry-After` for a refused client, TLS handshakes bounded in number and time,
//! TCP_NODELAY), and one connection served by hyper's HTTP/1 server under a watchdog that closes
//! slow and idle clients: the request header within `http_header_timeout_ms`, the body at
//! `http_body_min_rate` after `http_body_timeout_ms`, a kept-alive connection idle, or a response
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
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(error = %e, "http accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
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

/// Where a connection is in its request cycle, and since when.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for (the rest of) a request header.
    Header { since: Instant },
    /// Reading a request body: `bytes` of it so far.
    Body { since: Instant, bytes: u64 },
    /// The request is being handled and answered; `blocked` is set while a write waits for the
    /// client to read.
    Busy { blocked: Option<Instant> },
    /// Between requests on a kept-alive connection.
    Idle { since: Instant },
}

/// The watchdog's view of one connection, updated by the I/O wrapper, the service and the body
/// wrapper; every change wakes the watchdog ([`Clock::expired`]).
struct Clock {
    limits: Limits,
    phase: Mutex<Phase>,
    changed: Notify,
}

impl Clock {
    fn new(limits: Limits) -> Clock {
        Clock { limits, phase: Mutex::new(Phase::Header { since: Instant::now() }), changed: Notify::new() }
    }

    fn update(&self, f: impl FnOnce(&mut Phase) -> bool) {
        let changed = f(&mut self.phase.lock().unwrap_or_else(|e| e.into_inner()));
        if changed {
            self.changed.notify_one();
        }
    }

    /// When the current phase runs out, and what it is.
    fn deadline(&self) -> Option<(Instant, HttpTimeout)> {
        let l = &self.limits;
        match *self.phase.lock().unwrap_or_else(|e| e.into_inner()) {
            Phase::Header { since } => Some((since + l.header, HttpTimeout::Header)),
            Phase::Body { since, bytes } => {
                let earned = match l.body_rate {
                    0 => Duration::MAX,
                    rate => Duration::from_secs_f64(bytes as f64 / rate as f64),
                };
                since.checked_add(l.body.saturating_add(earned)).map(|d| (d, HttpTimeout::Body))
            }
            Phase::Busy { blocked: Some(since) } => Some((since + l.idle, HttpTimeout::Write)),
            Phase::Busy { blocked: None } => None,
            Phase::Idle { since } => Some((since + l.idle, HttpTimeout::Idle)),
        }
    }

    /// Resolves when the connection overstays its current phase.
    async fn expired(&self) -> HttpTimeout {
        loop {
            match self.deadline() {
                None => self.changed.notified().await,
                Some((at, what)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {
                            // The phase may have moved on (or its deadline later) meanwhile.
                            if let Some((now_at, now_what)) = self.deadline()
                                && now_what == what
                                && now_at <= Instant::now()
                            {
                                return what;
                            }
                        }
                        _ = self.changed.notified() => {}
                    }
                }
            }
        }
    }

    /// Bytes arrived: an idle connection starts reading a request header.
    fn read(&self) {
        self.update(|p| match p {
            Phase::Idle { .. } => {
                *p = Phase::Header { since: Instant::now() };
                true
            }
            _ => false,
        });
    }

    fn request(&self, has_body: bool) {
        self.update(|p| {
            *p = if has_body { Phase::Body { since: Instant::now(), bytes: 0 } } else { Phase::Busy { blocked: None } };
            true
        });
    }

    fn body_bytes(&self, n: u64) {
        self.update(|p| {
            if let Phase::Body { bytes, .. } = p {
                *bytes += n;
            }
            false
        });
    }

    fn body_done(&self) {
        self.update(|p| match p {
            Phase::Body { .. } => {
                *p = Phase::Busy { blocked: None };
                true
            }
            _ => false,
        });
    }

    fn response_done(&self) {
        self.update(|p| {
            *p = Phase::Idle { since: Instant::now() };
            true
        });
    }

    /// A write could not go on (`true`) or went on (`false`).
    fn write_blocked(&self, blocked_now: bool) {
        self.update(|p| match p {
            Phase::Busy { blocked } if blocked_now && blocked.is_none() => {
                *blocked = Some(Instant::now());
                true
            }
            Phase::Busy { blocked } if !blocked_now && blocked.is_some() => {
                *blocked = None;
                true
            }
            _ => false,
        });
    }
}

/// The connection's stream, telling the clock about reads and blocked writes.
struct Watched<I> {
    inner: I,
    clock: Arc<Clock>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.read();
        }
        r
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        self.clock.write_blocked(r.is_pending());
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.clock.write_blocked(r.is_pending());
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.clock.write_blocked(r.is_pending());
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// hyper's service for one connection: the router, with the peer as axum `ConnectInfo` and the
/// bodies watched.
#[derive(Clone)]
struct ConnService {
    router: Router,
    peer: ConnectInfo<Peer>,
    clock: Arc<Clock>,
}

impl hyper::service::Service<Request<hyper::body::Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, req: Request<hyper::body::Incoming>) -> Self::Future {
        let (mut parts, body) = req.into_parts();
        self.clock.request(!body.is_end_stream());
        parts.extensions.insert(self.peer.clone());
        let body = Body::new(RequestBody { inner: Body::new(body), clock: self.clock.clone() });
        let req = Request::from_parts(parts, body);
        let (router, clock) = (self.router.clone(), self.clock.clone());
        Box::pin(async move {
            let response = match router.oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            Ok(response.map(|b| Body::new(ResponseBody { inner: b, clock: Some(clock) })))
        })
    }
}

/// A request body that reports its progress and its end to the clock.
struct RequestBody {
    inner: Body,
    clock: Arc<Clock>,
}

impl HttpBody for RequestBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.clock.body_bytes(data.len() as u64);
                }
                if self.inner.is_end_stream() {
                    self.clock.body_done();
                }
            }
            Poll::Ready(None) => self.clock.body_done(),
            _ => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that tells the clock when it has been sent (hyper drops it then).
struct ResponseBody {
    inner: Body,
    clock: Option<Arc<Clock>>,
}

impl HttpBody for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if let Some(clock) = self.clock.take() {
            clock.response_done();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header: Duration::from_secs(10),
            body: Duration::from_secs(20),
            body_rate: 500,
            idle: Duration::from_secs(60),
            handshake: Duration::from_secs(30),
        }
    }

    #[tokio::test]
    async fn phases_and_their_deadlines() {
        let clock = Clock::new(limits());
        let start = match clock.deadline() {
            Some((at, HttpTimeout::Header)) => at - Duration::from_secs(10),
            other => panic!("a new connection waits for a header: {other:?}"),
        };
        clock.request(true);
        let body_start = match *clock.phase.lock().unwrap() {
            Phase::Body { since, .. } => since,
            other => panic!("{other:?}"),
        };
        // 1000 bytes at 500 B/s earn two more seconds.
        clock.body_bytes(1000);
        assert_eq!(clock.deadline(), Some((body_start + Duration::from_secs(22), HttpTimeout::Body)));
        clock.body_done();
        assert_eq!(clock.deadline(), None);
        clock.write_blocked(true);
        assert!(matches!(clock.deadline(), Some((_, HttpTimeout::Write))));
        clock.write_blocked(false);
        assert_eq!(clock.deadline(), None);
        clock.response_done();
        assert!(matches!(clock.deadline(), Some((at, HttpTimeout::Idle)) if at >= start + Duration::from_secs(60)));
        // The first byte of the next request starts its header time.
        clock.read();
        assert!(matches!(clock.deadline(), Some((_, HttpTimeout::Header))));
        let quick = Clock::new(Limits { header: Duration::from_millis(10), ..limits() });
        assert_eq!(quick.expired().await, HttpTimeout::Header);
    }

    #[test]
    fn refusal_is_a_complete_503() {
        let text = String::from_utf8(refusal_response(Refusal::PeerFull)).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(head.contains("\r\nRetry-After: 5\r\n") && head.contains("\r\nConnection: close\r\n"));
        assert!(head.contains(&format!("\r\nContent-Length: {}", body.len())));
    }
}
