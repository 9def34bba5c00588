//! The HTTP listener and THE place its router is composed ([`router`]): the SOAP endpoint and
//! WSDL (routes from `soap`), `/metrics` and the probes (`health`). A new set of routes (a web UI, health endpoints) is
//! one more `merge` in [`router`]. With a certificate configured the port speaks HTTPS only: a
//! background task accepts TCP connections and runs the TLS handshakes (bounded in number and
//! time), and axum serves the finished streams. It must not hold catalogue rules or login
//! policy (`crate::auth`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::extract::connect_info::Connected;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::serve::{IncomingStream, Listener};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

use crate::auth::Peer;
use crate::state::Shared;
use crate::tls::TlsSlot;

/// The plain HTTP listener: every accepted socket gets TCP_NODELAY (as on the AMGA port and the
/// TLS listener); without it the small tail of a streamed (chunked) response waited for the
/// client's delayed ACK, ~40 ms.
pub struct PlainListener(TcpListener);

impl Listener for PlainListener {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = Listener::accept(&mut self.0).await;
        let _ = stream.set_nodelay(true);
        (stream, addr)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Listener::local_addr(&self.0)
    }
}

impl Connected<IncomingStream<'_, PlainListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, PlainListener>) -> Self {
        Peer { addr: *stream.remote_addr(), subject: None }
    }
}

impl Connected<IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        Peer { addr: *stream.remote_addr(), subject: crate::tls::peer_subject(stream.io().get_ref().1) }
    }
}

/// TLS handshakes in progress at once; further connections wait in the kernel backlog.
const MAX_PENDING_HANDSHAKES: usize = 256;

/// A listener that yields connections whose TLS handshake has completed.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `listener` until `shutdown`; a handshake that fails or takes longer than
    /// `timeout` is dropped without disturbing the others. Each handshake uses the settings in
    /// force when its connection arrived (`tls`, replaced on reload).
    pub fn new(listener: TcpListener, tls: Arc<TlsSlot>, timeout: Duration, shutdown: CancellationToken) -> Self {
        let local = listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, ready) = mpsc::channel(64);
        let pending = Arc::new(Semaphore::new(MAX_PENDING_HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let permit = tokio::select! {
                    p = pending.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                    _ = shutdown.cancelled() => break,
                };
                let (stream, peer) = tokio::select! {
                    r = listener.accept() => match r {
                        Ok(v) => v,
                        Err(e) => {
                            tracing::warn!(error = %e, "https accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                    _ = shutdown.cancelled() => break,
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, tx): (TlsAcceptor, _) = (tls.get().http.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(timeout, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            drop(permit);
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "https handshake failed"),
                        Err(_) => tracing::debug!(%peer, "https handshake timed out"),
                    }
                });
            }
        });
        TlsListener { ready, local }
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(v) => v,
            // The accept loop ended (shutdown): graceful shutdown finishes `serve`.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

pub async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    let bound = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "http listener has no address");
            return;
        }
    };
    let service = router(shared.clone(), bound).into_make_service_with_connect_info::<Peer>();
    let result = match shared.tls.as_ref() {
        Some(tls) => {
            let timeout = Duration::from_secs(shared.config.handshake_timeout_secs.max(1));
            let listener = TlsListener::new(listener, tls.clone(), timeout, shutdown.clone());
            axum::serve(listener, service).with_graceful_shutdown(shutdown.cancelled_owned()).await
        }
        None => {
            let listener = PlainListener(listener);
            axum::serve(listener, service).with_graceful_shutdown(shutdown.cancelled_owned()).await
        }
    };
    if let Err(e) = result {
        tracing::error!(error = %e, "http server failed");
    }
}

/// Every route of the HTTP port. The service must be run with
/// `into_make_service_with_connect_info::<Peer>()`: handlers read the peer's address (login
/// throttling) and certificate subject (login by certificate) from it. `/metrics` moves to the
/// metrics listener when `metrics_bind` is set; the probes stay here too (load balancers probe
/// the service port).
pub fn router(shared: Arc<Shared>, bound: SocketAddr) -> Router {
    let mut r = Router::new();
    if shared.config.metrics_bind.is_none() {
        r = r.route("/metrics", get(metrics));
    }
    r.with_state(shared.clone())
        .merge(crate::health::router(shared.clone()))
        .merge(crate::soap::router(shared.clone(), bound))
        .merge(crate::ui::router(shared))
}

/// The routes of the metrics listener (`metrics_bind`): `/metrics`, `/healthz`, `/readyz`.
pub fn ops_router(shared: Arc<Shared>) -> Router {
    Router::new().route("/metrics", get(metrics)).with_state(shared.clone()).merge(crate::health::router(shared))
}

/// Serve [`ops_router`] on its own plain-HTTP listener until `shutdown`.
pub async fn serve_ops(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    let service = ops_router(shared).into_make_service();
    if let Err(e) =
        axum::serve(PlainListener(listener), service).with_graceful_shutdown(shutdown.cancelled_owned()).await
    {
        tracing::error!(error = %e, "metrics listener failed");
    }
}

/// Prometheus text format (`crate::metrics::page`): the counters report ([`Shared::counters`]:
/// connections, sessions, database pool, DDS), per-operation and per-stage latency histograms,
/// process metrics.
async fn metrics(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let body = crate::metrics::page::render(&shared.counters(), &shared.metrics);
    ([(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn plain_listener_sets_no_delay() {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let mut listener = PlainListener(tcp);
        assert_eq!(Listener::local_addr(&listener).unwrap(), addr);
        let client = TcpStream::connect(addr).await.unwrap();
        let (accepted, peer) = Listener::accept(&mut listener).await;
        assert_eq!(peer, client.local_addr().unwrap());
        assert!(accepted.nodelay().unwrap());
    }
}
