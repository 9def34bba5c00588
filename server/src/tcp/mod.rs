//! The TCP streaming frontend (AMGA-compatible): the accept loop, which refuses connections past
//! the port's limits at once (`crate::admission` decides), and the state of one connection. A connection is opened by `handshake` (greeting, options, TLS,
//! login), then served by the command loop in `conn`, which looks each line up in the command
//! table (`command`); `reply` writes replies,
//! `stall` guards writes, `forward` sends the writes of a site replica to its primary. Wire syntax is ardacat-proto's; the meaning of commands is the
//! catalogue's. This module only translates.

pub mod command;
mod conn;
pub mod forward;
mod handshake;
pub mod reply;
pub mod stall;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use std::net::SocketAddr;

use ardacat_core::Session;

use crate::admission::Refusal;
use crate::state::Shared;

/// What one connection carries between commands.
pub struct ConnState {
    pub session: Session<crate::Store>,
    /// The client negotiated the `escape` option.
    pub escape: bool,
    pub session_id: Option<u64>,
    /// The bulk load `upload` opened, until `commit` or `abort`.
    pub upload: Option<ardacat_core::service::composite::BulkLoad>,
    /// The restore `restore` opened, until `restore_end` or `restore_abort`.
    pub restore: Option<ardacat_core::service::dump::restore::Restore>,
    pub peer: SocketAddr,
    /// On a site replica with `--primary`: the session's connection to the primary and what is
    /// open there.
    pub forward: forward::Forwarding,
    /// The last `getattr`'s attribute list, for a next `getattr` of the same list.
    pub last_getattr: command::repeat::LastGetattr,
}

impl ConnState {
    pub fn new(session: Session<crate::Store>, escape: bool, session_id: Option<u64>, peer: SocketAddr) -> Self {
        ConnState {
            session,
            escape,
            session_id,
            upload: None,
            restore: None,
            peer,
            forward: Default::default(),
            last_getattr: Default::default(),
        }
    }

    /// The session id to put in a reply's end marker. A token tells the client it may hang up
    /// and resume later (the original client does so at once), but an open transaction or upload
    /// lives only as long as this connection; so while one is open no token is sent and the
    /// client keeps the connection.
    fn token(&self) -> Option<u64> {
        self.session_id.filter(|_| {
            !self.session.in_transaction() && self.upload.is_none() && self.restore.is_none() && !self.forward.is_open()
        })
    }
}

/// Refused connections whose refusal is still being delivered (see [`refuse`]); past this many
/// a refused connection is closed right after its refusal is written.
const MAX_LINGERING_REFUSALS: usize = 256;

/// How long a refused connection is kept open to read what its client sent, so that closing it
/// does not reset the connection before the client has read the refusal.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);

/// The bytes a refused client gets instead of the greeting: one AMGA status line with code 19
/// (limit exceeded), then the server closes. An AMGA client reads the greeting first and
/// reports a connection closed before three greeting lines as a failed connect; ardacat's own
/// clients show the line.
pub fn refusal_line(r: Refusal) -> Vec<u8> {
    use tokio_util::codec::Encoder;
    let message = match r {
        Refusal::Full => "Server busy: too many connections; try again later",
        Refusal::PeerFull => "Server busy: too many connections from your address; try again later",
    };
    let mut buf = bytes::BytesMut::new();
    // Encoding a status line cannot fail (the message holds no framing byte).
    let _ = ardacat_proto::ServerCodec::new(1024).encode(ardacat_proto::ReplyPiece::error(19, message), &mut buf);
    buf.to_vec()
}

/// Write `refusal` on a connection that gets no slot and close it. Never waits: the refusal fits
/// the empty send buffer of a new socket. A few refused connections linger briefly (bounded in
/// number and time) so the client reads the refusal rather than a reset.
pub fn refuse(stream: TcpStream, refusal: &[u8], lingering: &Arc<Semaphore>) {
    let _ = stream.try_write(refusal);
    if let Ok(permit) = lingering.clone().try_acquire_owned() {
        tokio::spawn(async move {
            linger(stream).await;
            drop(permit);
        });
    }
}

/// Half-close, then read and drop what the client sends until it closes or `REFUSAL_LINGER`
/// passes: closing a socket with unread input sends a reset, which can destroy the refusal
/// before the client reads it.
pub async fn linger<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut stream: S) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = stream.shutdown().await;
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        let mut sink = [0u8; 1024];
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// The next accepted connection of either port, or `None` once `shutdown` is cancelled. An
/// accept error (out of file descriptors, most likely) is logged and retried after a pause, so
/// that closing connections can free some.
pub(crate) async fn next_connection(
    listener: &TcpListener,
    shutdown: &CancellationToken,
) -> Option<(tokio::net::TcpStream, std::net::SocketAddr)> {
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok(v) => return Some(v),
                Err(e) => {
                    tracing::warn!(error = %e, port = ?listener.local_addr().ok(), "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.cancelled() => return None,
        }
    }
}

/// Accept connections until `shutdown`; then wait (bounded) for open connections to finish
/// their current command. A connection past `max_connections`, or past
/// `max_connections_per_peer` from its address, is refused at once ([`refusal_line`]).
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    let refusals = [Refusal::Full, Refusal::PeerFull].map(refusal_line);
    let lingering = Arc::new(Semaphore::new(MAX_LINGERING_REFUSALS));
    let tracker = TaskTracker::new();
    while let Some((stream, peer)) = next_connection(&listener, &shutdown).await {
        let slot = match shared.tcp_gate.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(r) => {
                tracing::debug!(%peer, reason = r.label(), "connection refused");
                refuse(stream, &refusals[(r == Refusal::PeerFull) as usize], &lingering);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            shared.stats.connections_open.fetch_add(1, Ordering::Relaxed);
            shared.stats.connections_total.fetch_add(1, Ordering::Relaxed);
            handshake::serve(stream, peer, shared.clone(), shutdown).await;
            shared.stats.connections_open.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
    tracker.close();
    if tokio::time::timeout(Duration::from_secs(10), tracker.wait()).await.is_err() {
        tracing::warn!("connections still busy after 10 s; closing them");
    }
}
