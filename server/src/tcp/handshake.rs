//! The opening of a TCP connection, exactly as AMGA clients expect it: greeting, option block,
//! `ssl` (TLS on the same stream), then the login block or a resumed session; logging in itself
//! is `crate::auth`'s. Then it hands the connection to the command loop (`conn`). Protocol bytes
//! come from ardacat-proto.
//!
//! The greeting and the option block are read on the whole `TcpStream` (one `Framed`). For
//! `ssl`/`resumeSSL<id>` the server answers `OK`, checks that the client sent nothing more,
//! and runs the TLS handshake on that same stream (amga.md §2.2); the login block and every
//! command then travel inside TLS. Only then is the stream split into its read half (read by the
//! command loop itself, also while a command runs) and the writer, which is wrapped in the
//! write-stall guard (`idle_timeout_secs`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ardacat_core::{Error, Session};
use ardacat_proto::{
    ClientFrame, ClientOptions, Greeting, HandshakeError, LoginContext, LoginParser, OptionsParser, ProtoError,
    ReplyPiece, ServerCodec, Transport,
};
use futures::{SinkExt, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant as Deadline;
use tokio_util::codec::{Framed, FramedParts, FramedWrite};
use tokio_util::sync::CancellationToken;

use super::ConnState;
use super::reply::Writer;
use super::stall::StallGuard;
use crate::auth::{self, Credentials, Via, anonymous};
use crate::config::SessionMode;
use crate::state::{SERVER_VERSION, Shared};

pub(super) fn proto_fault(e: &ProtoError) -> Error {
    match e {
        ProtoError::LineTooLong { .. } => Error::LimitExceeded(e.to_string()),
        other => Error::IllegalCommand(other.to_string()),
    }
}

/// What the option block and the transport set-up leave for the login phase.
struct Opening {
    opts: ClientOptions,
    /// The connection runs inside TLS (`OK` was sent before the handshake).
    tls: bool,
    /// The subject DN of the client certificate the TLS handshake verified, if one was sent.
    subject: Option<String>,
}

/// Serve one connection until the client leaves, idles out, or the server shuts down.
pub async fn serve(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>, shutdown: CancellationToken) {
    let cfg = shared.config.clone();
    // One budget for greeting, options, TLS handshake and login block (slowloris guard).
    let deadline = Deadline::now() + Duration::from_secs(cfg.handshake_timeout_secs);
    let mut framed = Framed::new(stream, ServerCodec::new(cfg.max_line_bytes));
    let opts = match tokio::time::timeout_at(deadline, options(&mut framed, &shared)).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "handshake failed");
            return;
        }
        Err(_) => {
            tracing::info!(%peer, "handshake timed out");
            return;
        }
    };
    if opts.transport == Transport::Ssl {
        let Some(tls) = shared.tls.clone() else {
            // Refuse before the client starts a handshake.
            let _ = framed.send(ReplyPiece::error(4, "TLS is not available on this server")).await;
            tracing::debug!(%peer, "client asked for TLS, which is not configured");
            return;
        };
        if framed.send(ReplyPiece::Ok).await.is_err() {
            return;
        }
        let parts = framed.into_parts();
        if !parts.read_buf.is_empty() {
            // A client must wait for OK; bytes read already cannot be handed to rustls.
            tracing::debug!(%peer, "client sent data between its options and the TLS handshake");
            return;
        }
        let stream = match tokio::time::timeout_at(deadline, tls.get().tcp.accept(parts.io)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                tracing::info!(%peer, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::info!(%peer, "TLS handshake timed out");
                return;
            }
        };
        let subject = crate::tls::peer_subject(stream.get_ref().1);
        let (rd, wr) = tokio::io::split(stream);
        let reader = Framed::from_parts(FramedParts::new::<ReplyPiece<'_>>(rd, ServerCodec::new(cfg.max_line_bytes)));
        let opening = Opening { opts, tls: true, subject };
        session(reader, wr, opening, deadline, peer, shared, shutdown).await;
    } else {
        // Bytes the client sent after its options (its login block, maybe commands) stay
        // buffered for the reader.
        let parts = framed.into_parts();
        let (rd, wr) = parts.io.into_split();
        let mut rparts = FramedParts::new::<ReplyPiece<'_>>(rd, parts.codec);
        rparts.read_buf = parts.read_buf;
        let reader = Framed::from_parts(rparts);
        let opening = Opening { opts, tls: false, subject: None };
        session(reader, wr, opening, deadline, peer, shared, shutdown).await;
    }
}

/// Login (or resume), then the command loop, on a plain or TLS stream.
async fn session<R, W>(
    mut reader: Framed<R, ServerCodec>,
    wr: W,
    opening: Opening,
    deadline: Deadline,
    peer: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send,
{
    let cfg = shared.config.clone();
    // A client that stops reading its reply for the idle time is cut off (its slot frees).
    let wr = StallGuard::new(wr, Duration::from_secs(cfg.idle_timeout_secs.max(1)));
    let mut writer = FramedWrite::new(wr, ServerCodec::new(cfg.max_line_bytes));
    writer.set_backpressure_boundary(cfg.tcp_write_buffer_bytes);
    let handshake = tokio::time::timeout_at(deadline, login(&mut reader, &mut writer, opening, &shared, peer)).await;
    let (state, pending_error) = match handshake {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "handshake failed");
            return;
        }
        Err(_) => {
            tracing::info!(%peer, "handshake timed out");
            return;
        }
    };
    super::conn::command_loop(reader, writer, state, pending_error, peer, shared, shutdown).await;
}

async fn next_line<St>(reader: &mut St) -> Result<String, Error>
where
    St: Stream<Item = Result<ClientFrame, ProtoError>> + Unpin,
{
    match reader.next().await {
        Some(Ok(ClientFrame::Line(l))) => Ok(l),
        Some(Ok(other)) => Err(Error::IllegalCommand(format!("unexpected {other:?} during handshake"))),
        Some(Err(e)) => Err(proto_fault(&e)),
        None => Err(Error::IllegalCommand("connection closed during handshake".into())),
    }
}

/// Greeting and option block, on the whole stream (nothing is read past the empty line's
/// segment; see `serve`).
async fn options(framed: &mut Framed<TcpStream, ServerCodec>, shared: &Shared) -> Result<ClientOptions, Error> {
    let io = |e: ProtoError| Error::Internal(e.to_string());
    let mut offered = vec!["plain", "resume", "escape", "session"];
    if shared.tls.is_some() {
        offered.insert(1, "ssl");
    }
    let greeting = Greeting::new(SERVER_VERSION, offered).map_err(|e| Error::Internal(e.to_string()))?;
    framed.send(ReplyPiece::greeting(&greeting)).await.map_err(io)?;
    let mut options = OptionsParser::new();
    loop {
        let line = next_line(framed).await?;
        if let Some(o) = options.push_line(&line).map_err(|e| Error::IllegalCommand(e.to_string()))? {
            return Ok(o);
        }
    }
}

/// `OK` (unless sent before TLS, or after a plain resume), then the login block or the resumed
/// session. Returns the connection state and, for a failed login, the error to answer the
/// first command with.
async fn login<St, W>(
    reader: &mut St,
    writer: &mut Writer<W>,
    opening: Opening,
    shared: &Shared,
    peer: SocketAddr,
) -> Result<(ConnState, Option<Error>), Error>
where
    St: Stream<Item = Result<ClientFrame, ProtoError>> + Unpin,
    W: AsyncWrite + Unpin + Send,
{
    let io = |e: ProtoError| Error::Internal(e.to_string());
    let Opening { opts, tls, subject } = opening;
    let wants_session = opts.other.iter().any(|o| o == "session");
    let cfg = &shared.config;
    let issue_session = match cfg.sessions {
        SessionMode::No => false,
        SessionMode::Allow => wants_session || opts.resume.is_some(),
        SessionMode::Force => true,
    };
    if let Some(id) = opts.resume {
        // No OK and no login block after a plain resume: the original client reads neither.
        // (`resumeSSL<id>` got its OK before the TLS handshake.)
        return Ok(
            match shared.sessions.resume(&shared.catalogue, id).await.filter(|_| cfg.sessions != SessionMode::No) {
                Some(saved) => {
                    // Groups are re-read before the first command (the epoch of a new Session is 0).
                    let mut session = Session::new(saved.principal);
                    session.cwd = saved.cwd;
                    (ConnState::new(session, saved.escape || opts.escape, Some(id), peer), None)
                }
                None => (
                    ConnState::new(Session::new(anonymous()), opts.escape, None, peer),
                    Some(Error::PermissionDenied(format!("session {id} is unknown or expired; log in again"))),
                ),
            },
        );
    }
    if !tls {
        writer.send(ReplyPiece::Ok).await.map_err(io)?;
    }
    let mut login = LoginParser::new();
    let ctx = loop {
        let line = next_line(reader).await?;
        match login.push_line(&line) {
            Ok(Some(c)) => break c,
            Ok(None) => {}
            // An empty block (no `0` line): log in by certificate.
            Err(HandshakeError::MissingLogin) => break LoginContext::default(),
            Err(e) => return Err(Error::IllegalCommand(e.to_string())),
        }
    };
    let session_id = issue_session.then(|| shared.sessions.new_id(&shared.catalogue));
    let base = |session| ConnState::new(session, opts.escape, session_id, peer);
    // An empty login name, or a certificate and no password: log in by certificate.
    let by_certificate = ctx.login.is_empty() || (ctx.password.is_none() && subject.is_some());
    let credentials = if by_certificate {
        Credentials::Certificate { subject: subject.as_deref(), claimed: &ctx.login }
    } else {
        Credentials::Password { user: &ctx.login, password: ctx.password.as_deref() }
    };
    Ok(match auth::authenticate(shared, Via::Tcp, Some(peer.ip()), credentials).await {
        Ok(login) => (base(login.session()), None),
        Err(e) => (base(Session::new(anonymous()).with_auth_epoch(0)), Some(e.into_error())),
    })
}
