//! One TCP connection: handshake and login exactly as AMGA clients expect, then a loop of
//! command line → `Command` → catalogue call → reply, watching for an out-of-band CAN while a
//! reply streams. Protocol bytes come from ardacat-proto; meaning comes from ardacat-core.
//!
//! The greeting and the option block are read on the whole `TcpStream` (one `Framed`). For
//! `ssl`/`resumeSSL<id>` the server answers `OK`, checks that the client sent nothing more,
//! and runs the TLS handshake on that same stream (amga.md §2.2); the login block and every
//! command then travel inside TLS. Only then is the stream split into its read half (read by the
//! command loop itself, also while a command runs) and the writer, which is wrapped in the
//! write-stall guard (`idle_timeout_secs`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::metrics::{Frontend, Stage};

use ardacat_core::path;
use ardacat_core::{Error, Session};
use ardacat_proto::{
    ClientFrame, ClientOptions, Greeting, HandshakeError, LoginContext, LoginParser, OptionsParser, ProtoError,
    ReplyPiece, ServerCodec, Transport, tokenize, tokenize_escaped,
};
use futures::{SinkExt, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant as Deadline;
use tokio_util::codec::{Framed, FramedParts, FramedWrite};
use tokio_util::sync::CancellationToken;

use super::command::{Command, HELP};
use super::reply::{Reply, Writer};
use super::session::SavedSession;
use super::stall::StallGuard;
use super::{SERVER_VERSION, Shared};
use crate::Cat;
use crate::config::SessionMode;

/// A bulk load in progress: `upload` started it, `put` lines feed it, `commit` ends it.
struct Upload {
    dir: String,
    attrs: Vec<String>,
    rows: Vec<(String, Vec<String>)>,
    /// The first problem; reported by `commit`, which then stores nothing of the upload.
    error: Option<Error>,
    /// The upload opened the transaction itself (it was not inside the user's `transaction`).
    owns_tx: bool,
}

/// Rows buffered before an upload outside a user transaction writes them (in its own transaction).
const UPLOAD_CHUNK: usize = 2000;

struct State {
    session: Session<crate::Store>,
    escape: bool,
    session_id: Option<u64>,
    upload: Option<Upload>,
    peer: SocketAddr,
}

impl State {
    /// The session id to put in a reply's end marker. A token tells the client it may hang up
    /// and resume later (the original client does so at once), but an open transaction or upload
    /// lives only as long as this connection; so while one is open no token is sent and the
    /// client keeps the connection.
    fn token(&self) -> Option<u64> {
        self.session_id.filter(|_| !self.session.in_transaction() && self.upload.is_none())
    }
}

enum Outcome {
    /// Reply done by the command (normal case: `finish` follows).
    Done,
    /// No reply at all (`upload`, `put`).
    Silent,
}

/// Bounds on the input read ahead while a command runs (a CAN among it is acted on at once).
const QUEUE_MAX_FRAMES: usize = 1024;
const QUEUE_MAX_BYTES: usize = 4 << 20;

fn frame_bytes(f: &Result<ClientFrame, ProtoError>) -> usize {
    match f {
        Ok(ClientFrame::Line(l)) => l.len() + 1,
        _ => 1,
    }
}

fn proto_fault(e: &ProtoError) -> Error {
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
        let stream = match tokio::time::timeout_at(deadline, tls.tcp.accept(parts.io)).await {
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
    let mut state = state;

    if let Some(e) = pending_error {
        // The login failed: the first command is answered with the error, then we hang up.
        let first = tokio::time::timeout(Duration::from_secs(cfg.handshake_timeout_secs), reader.next()).await;
        if matches!(first, Ok(Some(Ok(ClientFrame::Line(_))))) {
            let _ = Reply::new(&mut writer, false).fail(&e, None).await;
        }
        return;
    }

    // The socket is read in this task, also while a command runs (so a CAN is seen while a
    // reply streams): no reader task, no channel hop per command. `Framed::next` is
    // cancel-safe, so dropping a pending read when the command ends loses nothing.
    let idle = Duration::from_secs(cfg.idle_timeout_secs);
    // One timer for the connection, re-armed only when it fires: a command costs a clock read,
    // not a timer registration.
    let idle_timer = tokio::time::sleep(idle);
    tokio::pin!(idle_timer);
    // The reader returned its end (EOF or a framing error): poll it no more.
    let mut reader_done = false;
    // Frames that arrived while a command ran (watched for CAN), with their size.
    let mut queued: VecDeque<Result<ClientFrame, ProtoError>> = VecDeque::new();
    let mut queued_bytes = 0usize;
    loop {
        let frame = match queued.pop_front() {
            Some(f) => {
                queued_bytes -= frame_bytes(&f);
                Some(f)
            }
            None if reader_done => None,
            None => {
                // Idleness counts from here, after the previous reply: a command that ran longer
                // than the idle time was not idle.
                let waiting_since = Deadline::now();
                loop {
                    tokio::select! {
                        f = reader.next() => break f,
                        () = &mut idle_timer => {
                            let due = waiting_since + idle;
                            if Deadline::now() >= due {
                                tracing::debug!(%peer, "idle timeout");
                                break None;
                            }
                            idle_timer.as_mut().reset(due);
                        }
                        _ = shutdown.cancelled() => break None,
                    }
                }
            }
        };
        if matches!(frame, None | Some(Err(_))) {
            reader_done = true;
        }
        let line = match frame {
            None => break,
            Some(Ok(ClientFrame::Cancel)) => continue,
            Some(Ok(ClientFrame::Invalid(fault))) => {
                let e = Error::IllegalCommand(format!("invalid command line: {fault}"));
                if Reply::new(&mut writer, state.escape).fail(&e, state.token()).await.is_err() {
                    break;
                }
                continue;
            }
            Some(Err(e)) => {
                // Framing is lost (line too long, broken socket): say why, then close.
                let _ = Reply::new(&mut writer, state.escape).fail(&proto_fault(&e), None).await;
                break;
            }
            Some(Ok(ClientFrame::Line(line))) => line,
        };
        shared.stats.commands.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let op = command_name(&line);
        let mut reply = Reply::new(&mut writer, state.escape);
        let mut cancelled = false;
        let result = {
            let exec = run_line(&shared, &mut state, &line, &mut reply);
            tokio::pin!(exec);
            loop {
                tokio::select! {
                    r = &mut exec => break r,
                    // Past the bounds, stop reading: TCP then pushes back on a client that
                    // keeps sending while it does not read the reply.
                    f = reader.next(), if !reader_done && queued.len() < QUEUE_MAX_FRAMES && queued_bytes < QUEUE_MAX_BYTES => match f {
                        Some(Ok(ClientFrame::Cancel)) => { cancelled = true; break Err(Error::Cancelled) }
                        Some(other) => {
                            reader_done = other.is_err();
                            queued_bytes += frame_bytes(&other);
                            queued.push_back(other)
                        }
                        // The client half-closed: finish this command, then stop.
                        None => {
                            reader_done = true;
                            queued_bytes += 1;
                            queued.push_back(Err(ProtoError::UnexpectedEof));
                            break (&mut exec).await
                        }
                    },
                }
            }
        };
        let executed = Instant::now();
        shared.metrics.stage(Frontend::Tcp, Stage::Execute, executed - started);
        if cancelled {
            tracing::debug!(%peer, "command cancelled by client");
        }
        if let Some(id) = state.session_id {
            shared.sessions.save(
                id,
                SavedSession {
                    principal: state.session.principal.clone(),
                    cwd: state.session.cwd.clone(),
                    escape: state.escape,
                },
            );
        }
        let ok = result.is_ok();
        let sent = match result {
            Ok(Outcome::Done) => reply.finish(state.token()).await,
            Ok(Outcome::Silent) => Ok(()),
            Err(e) => {
                shared.stats.errors.fetch_add(1, Ordering::Relaxed);
                // Code 99 is always a bug: say so in the log (the test suite fails on it), except
                // when the socket broke (a client that went away is not the server's fault).
                if let Error::Internal(cause) = &e
                    && !reply.broken
                {
                    tracing::error!(%peer, command = %first_word(&line), error = %cause, "internal error");
                }
                if e.code() == 4 {
                    tracing::info!(target: "audit", user = %state.session.principal.user, %peer, command = %first_word(&line), "denied");
                }
                reply.fail(&e, state.token()).await
            }
        };
        shared.metrics.stage(Frontend::Tcp, Stage::Write, executed.elapsed());
        shared.metrics.request(Frontend::Tcp, op, started.elapsed(), ok);
        if sent.is_err() {
            break;
        }
        if matches!(queued.front(), Some(Err(ProtoError::UnexpectedEof))) {
            break;
        }
    }
    // Dropping the session's pinned connection rolls back an open transaction.
}

/// The static name of a command line's command, for metrics ("other" when unknown).
fn command_name(line: &str) -> &'static str {
    let word = first_word(line);
    HELP.iter().find(|(k, _)| k.eq_ignore_ascii_case(word)).map(|(k, _)| *k).unwrap_or("other")
}

fn first_word(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
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
) -> Result<(State, Option<Error>), Error>
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
        return Ok(match shared.sessions.resume(id).filter(|_| cfg.sessions != SessionMode::No) {
            Some(saved) => {
                // Groups are re-read before the first command (the epoch of a new Session is 0).
                let mut session = Session::new(saved.principal);
                session.cwd = saved.cwd;
                (State { session, escape: saved.escape || opts.escape, session_id: Some(id), upload: None, peer }, None)
            }
            None => (
                State { session: Session::new(anonymous()), escape: opts.escape, session_id: None, upload: None, peer },
                Some(Error::PermissionDenied(format!("session {id} is unknown or expired; log in again"))),
            ),
        });
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
    let session_id = issue_session.then(|| shared.sessions.new_id());
    let base = |principal, epoch| State {
        session: Session::new(principal).with_auth_epoch(epoch),
        escape: opts.escape,
        session_id,
        upload: None,
        peer,
    };
    if !shared.login_limiter.allow(peer.ip()) {
        return Ok((
            base(anonymous(), 0),
            Some(Error::PermissionDenied("too many failed logins; try again later".into())),
        ));
    }
    // Read before the groups are, so a change in between is seen at the first command.
    let epoch = shared.catalogue.auth_epoch();
    let by_certificate = ctx.login.is_empty() || (ctx.password.is_none() && subject.is_some());
    let result = if by_certificate {
        certificate_login(shared, &ctx.login, subject.as_deref()).await
    } else {
        shared.catalogue.authenticate(&ctx.login, ctx.password.as_deref()).await
    };
    match result {
        Ok(p) => {
            if by_certificate {
                tracing::info!(target: "audit", user = %p.user, %peer, subject = subject.as_deref().unwrap_or(""), "certificate login");
            }
            Ok((base(p, epoch), None))
        }
        Err(e) => {
            shared.login_limiter.failed(peer.ip());
            tracing::info!(target: "audit", user = %ctx.login, %peer, subject = subject.as_deref().unwrap_or(""), "login failed");
            Ok((base(anonymous(), 0), Some(e)))
        }
    }
}

/// Login by the verified client certificate: its subject must map to a user (and to `login`,
/// when the client named one).
async fn certificate_login(
    shared: &Shared,
    login: &str,
    subject: Option<&str>,
) -> Result<ardacat_core::perm::Principal, Error> {
    let (Some(tls), Some(dn)) = (shared.tls.as_ref(), subject) else {
        return Err(Error::PermissionDenied("no login name and no verified client certificate".into()));
    };
    let p = tls.principal_for(&shared.catalogue, dn).await?;
    if !login.is_empty() && p.user != login {
        return Err(Error::PermissionDenied(format!("the client certificate does not belong to {login}")));
    }
    Ok(p)
}

fn anonymous() -> ardacat_core::perm::Principal {
    ardacat_core::perm::Principal { user: "anonymous".into(), groups: vec![] }
}

async fn run_line<W: AsyncWrite + Unpin + Send>(
    shared: &Shared,
    st: &mut State,
    line: &str,
    reply: &mut Reply<'_, W>,
) -> Result<Outcome, Error> {
    let parse_started = Instant::now();
    let args: Vec<String> = if st.escape {
        tokenize_escaped(line)
            .map_err(|e| Error::IllegalCommand(e.to_string()))?
            .into_iter()
            .map(|a| a.unwrap_or_default())
            .collect()
    } else {
        tokenize(line).map_err(|e| Error::IllegalCommand(e.to_string()))?
    };
    if args.len() > shared.config.max_args {
        return Err(Error::LimitExceeded(format!("more than {} arguments", shared.config.max_args)));
    }
    let cmd = Command::parse(&args)?;
    // User, group and ACL changes made since the last command apply now (one atomic load when
    // nothing changed).
    shared.catalogue.refresh_if_changed(&mut st.session).await?;
    shared.metrics.stage(Frontend::Tcp, Stage::Parse, parse_started.elapsed());
    if cmd.is_write() {
        tracing::info!(target: "audit", user = %st.session.principal.user, peer = %st.peer, command = %first_word(line), "write");
    }
    // Inside an upload only put/commit/abort make sense.
    if st.upload.is_some() && !matches!(cmd, Command::Put { .. } | Command::Commit | Command::Abort) {
        if let Some(u) = st.upload.as_mut() {
            u.error.get_or_insert(Error::IllegalCommand("only put, commit or abort inside an upload".into()));
        }
        return Ok(Outcome::Silent);
    }
    execute(shared, st, cmd, reply).await
}

async fn execute<W: AsyncWrite + Unpin + Send>(
    shared: &Shared,
    st: &mut State,
    cmd: Command,
    reply: &mut Reply<'_, W>,
) -> Result<Outcome, Error> {
    let cat: &Cat = &shared.catalogue;
    let s = &mut st.session;
    match cmd {
        Command::Help(topic) => {
            for (name, usage) in HELP {
                if topic.as_deref().is_none_or(|t| t.eq_ignore_ascii_case(name)) {
                    reply.value(Some(usage)).await?;
                }
            }
        }
        Command::Pwd => reply.value(Some(&cat.pwd(s))).await?,
        Command::Cd(d) => cat.cd(s, &d).await?,
        Command::Whoami => reply.value(Some(&s.principal.user)).await?,
        Command::Sudo(u) => cat.sudo(s, &u).await?,
        Command::Createdir { path, plain } => cat.createdir(s, &path, plain).await.map(|_| ())?,
        Command::Rmdir(d) => cat.rmdir(s, &d).await?,
        Command::Dir(d) => cat.dir(s, &d, reply).await.map(|_| ())?,
        Command::Ls(d) => cat.ls(s, &d, reply).await.map(|_| ())?,
        Command::Listentries(d) => cat.listentries(s, &d, reply).await.map(|_| ())?,
        Command::Stat(p) => {
            for row in cat.stat(s, &p).await? {
                ardacat_core::RowSink::row(reply, row).await?;
            }
        }
        Command::Addattr { dir, name, type_name, indexed } => cat.addattr(s, &dir, &name, &type_name, indexed).await?,
        Command::Removeattr { dir, name } => cat.removeattr(s, &dir, &name).await?,
        Command::Listattr(t) => {
            for a in cat.listattr(s, &t).await? {
                reply.value(Some(&a.name)).await?;
                reply.value(Some(&a.attr_type.to_string())).await?;
            }
        }
        Command::IndexCreate { dir, name, attrs } => cat.index_create(s, &dir, &name, &attrs).await?,
        Command::IndexRemove { dir, name } => cat.index_remove(s, &dir, &name).await?,
        Command::IndexList(d) => {
            for ix in cat.index_list(s, &d).await? {
                reply.value(Some(&format!("{} {}", ix.name, ix.columns.join(",")))).await?;
            }
        }
        Command::Addentry { path, pairs } => cat.addentry(s, &path, &pairs).await?,
        Command::Addentries(paths) => cat.addentries(s, &paths).await.map(|_| ())?,
        Command::Setattr { pattern, pairs } => cat.setattr(s, &pattern, &pairs).await.map(|_| ())?,
        Command::Getattr { pattern, attrs } => cat.getattr(s, &pattern, &attrs, reply).await.map(|_| ())?,
        Command::Clearattr { pattern, attrs } => cat.clearattr(s, &pattern, &attrs).await.map(|_| ())?,
        Command::Rm { pattern, condition } => cat.rm(s, &pattern, condition.as_deref()).await.map(|_| ())?,
        Command::Find { pattern, condition } => cat.find(s, &pattern, &condition, reply).await.map(|_| ())?,
        Command::Selectattr { exprs, condition } => {
            let spec = ardacat_core::service::SelectSpec { select: exprs, condition, order_by: None };
            cat.selectattr(s, &spec, reply).await.map(|_| ())?
        }
        Command::Updateattr { pattern, pairs, condition } => {
            cat.updateattr(s, &pattern, &pairs, &condition).await.map(|_| ())?
        }
        Command::Transaction => cat.begin(s).await?,
        Command::Commit => match st.upload.take() {
            Some(u) => finish_upload(cat, s, u).await?,
            None => cat.commit(s).await?,
        },
        Command::Abort => match st.upload.take() {
            Some(u) => {
                if u.owns_tx {
                    cat.abort(s).await?;
                }
            }
            None => cat.abort(s).await?,
        },
        Command::Upload { dir, attrs } => {
            let owns_tx = !s.in_transaction();
            let mut u = Upload { dir, attrs, rows: Vec::new(), error: None, owns_tx };
            if owns_tx && let Err(e) = cat.begin(s).await {
                u.error = Some(e);
            }
            st.upload = Some(u);
            return Ok(Outcome::Silent);
        }
        Command::Put { name, values } => {
            let max = shared.config.max_upload_entries;
            match st.upload.as_mut() {
                None => return Err(Error::IllegalCommand("put outside an upload".into())),
                Some(u) => {
                    if u.error.is_none() {
                        if values.len() != u.attrs.len() {
                            u.error = Some(Error::IllegalCommand(format!(
                                "put {name}: {} values for {} attributes",
                                values.len(),
                                u.attrs.len()
                            )));
                        } else if u.rows.len() >= max {
                            u.error = Some(Error::LimitExceeded(format!("more than {max} entries in one upload")));
                        } else {
                            u.rows.push((name, values));
                            if u.owns_tx && u.rows.len() >= UPLOAD_CHUNK {
                                let rows = std::mem::take(&mut u.rows);
                                if let Err(e) = cat.insert(s, &u.dir, &u.attrs, rows).await {
                                    u.error = Some(e);
                                }
                            }
                        }
                    }
                }
            }
            return Ok(Outcome::Silent);
        }
        Command::SequenceCreate { name, dir, increment, start } => {
            cat.sequence_create(s, &name, &dir, increment, start).await?
        }
        Command::SequenceNext(seq) => reply.value(Some(&cat.sequence_next(s, &seq).await?.to_string())).await?,
        Command::SequenceRemove(seq) => cat.sequence_remove(s, &seq).await?,
        Command::Chmod { path, mode } => cat.chmod(s, &path, &mode).await?,
        Command::Chown { path, spec } => cat.chown(s, &path, &spec).await?,
        Command::AclAdd { path, principal, rights } => cat.acl_add(s, &path, &principal, &rights).await?,
        Command::AclRemove { path, principal } => cat.acl_remove(s, &path, &principal).await?,
        Command::AclShow(p) => {
            for (who, rights) in cat.acl_show(s, &p).await? {
                reply.value(Some(&format!("{who} {rights}"))).await?;
            }
        }
        Command::UserCreate { name, password } => cat.user_create(s, &name, &password).await?,
        Command::UserRemove(name) => cat.user_remove(s, &name).await?,
        Command::UserPasswd { name, password } => cat.user_passwd(s, &name, &password).await?,
        Command::UserSubjectAdd { name, subject } => cat.user_subject_add(s, &name, &subject).await?,
        Command::UserListcred(name) => {
            for dn in cat.user_listcred(s, &name).await? {
                reply.value(Some(&dn)).await?;
            }
        }
        Command::GrpCreate(g) => cat.grp_create(s, &g).await?,
        Command::GrpRemove(g) => cat.grp_remove(s, &g).await?,
        Command::GrpAdduser { group, user } => cat.grp_adduser(s, &group, &user).await?,
        Command::GrpRemoveuser { group, user } => cat.grp_removeuser(s, &group, &user).await?,
        Command::GrpMember(user) => {
            let groups = cat.grp_member(s, user.as_deref()).await?;
            reply.value(Some(&groups.join(","))).await?
        }
        Command::Stats => {
            for (k, v) in shared.stats.snapshot(shared) {
                reply.value(Some(&format!("{k} {v}"))).await?;
            }
            for (k, v) in shared.metrics.summary() {
                reply.value(Some(&format!("{k} {v}"))).await?;
            }
            for (k, v) in crate::soap::dds_counters(shared) {
                reply.value(Some(&format!("{k} {v}"))).await?;
            }
        }
    }
    Ok(Outcome::Done)
}

/// `commit` of an upload: the rest of the rows go in, then the upload's own transaction commits.
/// Any earlier failure rolls the whole upload back.
async fn finish_upload(cat: &Cat, s: &mut Session<crate::Store>, u: Upload) -> Result<(), Error> {
    let result = match u.error {
        Some(e) => Err(e),
        None if u.rows.is_empty() => Ok(()),
        None => cat.insert(s, &u.dir, &u.attrs, u.rows).await.map(|_| ()),
    };
    match (result, u.owns_tx) {
        (Ok(()), true) => cat.commit(s).await,
        (Ok(()), false) => Ok(()),
        (Err(e), true) => {
            if s.in_transaction() {
                cat.abort(s).await?;
            }
            Err(e)
        }
        (Err(e), false) => Err(e),
    }
}

/// Paths in replies are absolute; keep the helper here for commands that print them.
#[allow(dead_code)]
fn abs(s: &Session<crate::Store>, p: &str) -> String {
    path::absolute(&s.cwd, p).unwrap_or_else(|_| p.to_string())
}
