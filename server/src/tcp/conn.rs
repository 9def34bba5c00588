//! The command loop of one TCP connection (after `handshake`): command line → the command
//! table (`command`) → catalogue call → reply, watching for an out-of-band CAN while a reply
//! streams, with the idle timeout, per-command metrics, audit of writes and the save of a
//! resumable session. Meaning comes from ardacat-core; this file only drives the loop.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ardacat_core::Error;
use ardacat_core::query::sql;
use ardacat_core::service::WireScratch;
use ardacat_proto::{ClientFrame, ProtoError, ServerCodec};
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant as Deadline;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::ConnState;
use super::command::{self, Command, Ctx, Outcome};
use super::forward;
use super::handshake::proto_fault;
use super::reply::{Reply, Writer};
use super::stall::StallGuard;
use crate::metrics::{Frontend, Stage};
use crate::state::Shared;
use crate::state::sessions::SavedSession;

/// Bounds on the input read ahead while a command runs (a CAN among it is acted on at once).
const QUEUE_MAX_FRAMES: usize = 1024;
const QUEUE_MAX_BYTES: usize = 4 << 20;

fn frame_bytes(f: &Result<ClientFrame, ProtoError>) -> usize {
    match f {
        Ok(ClientFrame::Line(l)) => l.len() + 1,
        _ => 1,
    }
}

/// The command loop: one line → one command → one reply, until the client leaves, idles out,
/// or the server shuts down. `pending_error` is a failed login's: the first command is answered
/// with it, then the connection closes.
pub(super) async fn command_loop<R, W>(
    mut reader: Framed<R, ServerCodec>,
    mut writer: Writer<StallGuard<W>>,
    mut state: ConnState,
    pending_error: Option<Error>,
    peer: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send,
{
    let cfg = shared.config.clone();
    // The peer as the request log and span print it: formatted once, not twice per command.
    let peer_text: Arc<str> = peer.to_string().into();

    if let Some(e) = pending_error {
        // The login failed: the first command is answered with the error, then we hang up.
        let first = tokio::time::timeout(Duration::from_secs(cfg.handshake_timeout_secs), reader.next()).await;
        if matches!(first, Ok(Some(Ok(ClientFrame::Line(_))))) {
            let _ = Reply::new(&mut writer, false, &mut WireScratch::default()).fail(&e, None).await;
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
    // Where replies format their rows' numbers: one per connection, grown once.
    let mut scratch = WireScratch::default();
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
                if Reply::new(&mut writer, state.escape, &mut scratch).fail(&e, state.token()).await.is_err() {
                    break;
                }
                continue;
            }
            Some(Err(e)) => {
                // Framing is lost (line too long, broken socket): say why, then close.
                let _ = Reply::new(&mut writer, state.escape, &mut scratch).fail(&proto_fault(&e), None).await;
                break;
            }
            Some(Ok(ClientFrame::Line(line))) => line,
        };
        shared.stats.commands.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let op = if sql::is_statement(&line) { "sql" } else { command::label(first_word(&line)) };
        // The request span: every event of this command (catalogue, store) carries its id.
        let request_id = crate::logging::next_id();
        let user = state.session.principal.user.clone();
        let span = tracing::info_span!("request", request_id = %request_id, frontend = "tcp", user = %user, peer = %peer_text, command = op);
        let mut reply = Reply::new(&mut writer, state.escape, &mut scratch);
        let mut cancelled = false;
        let result = {
            // Pinned where it is made, then instrumented through the pin: wrapping first and
            // pinning after moved the command's whole future twice (two `memcpy`s of its state).
            let pinned = std::pin::pin!(run_line(&shared, &mut state, &line, &mut reply));
            let mut exec = pinned.instrument(span.clone());
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
            let saved = SavedSession {
                principal: state.session.principal.clone(),
                cwd: state.session.cwd.clone(),
                escape: state.escape,
            };
            if !shared.sessions.save(&shared.catalogue, id, saved).await {
                state.session_id = None;
            }
        }
        let ok = result.is_ok();
        let mut log = crate::logging::RequestLine {
            request_id,
            frontend: "tcp",
            user,
            peer: peer_text.clone(),
            command: op.into(),
            code: result.as_ref().err().map_or(0, |e| i64::from(e.code())),
            rows: reply.rows(),
            duration: Duration::ZERO,
        };
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
        log.duration = started.elapsed();
        log.emit(&span);
        if sent.is_err() {
            break;
        }
        if matches!(queued.front(), Some(Err(ProtoError::UnexpectedEof))) {
            break;
        }
    }
    // Dropping the session's pinned connection rolls back an open transaction.
}

/// The audit line of a write: the user, and the service account acting as it (`via`) when a
/// site replica forwarded it.
fn audit_write(st: &ConnState, line: &str) {
    let (user, command) = (&st.session.principal.user, first_word(line));
    match st.session.service_account() {
        Some(via) => tracing::info!(target: "audit", %user, via, peer = %st.peer, %command, "write"),
        None => tracing::info!(target: "audit", %user, peer = %st.peer, %command, "write"),
    }
}

fn first_word(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

async fn run_line<W: AsyncWrite + Unpin + Send>(
    shared: &Shared,
    st: &mut ConnState,
    line: &str,
    reply: &mut Reply<'_, W>,
) -> Result<Outcome, Error> {
    let parse_started = Instant::now();
    // Native SQL (AMGA >= 1.9) is told apart by its shape and goes to the catalogue as the raw
    // line: AMGA's tokenizer would strip SQL's own quotes.
    if sql::is_statement(line) {
        return run_sql(shared, st, line, reply).await;
    }
    let cmd = match st.last_getattr.parse(line, st.escape) {
        // The previous `getattr`'s list again, for another entry: its names as parsed then.
        Some((cmd, args)) => {
            command::check_args(args, shared.config.max_args)?;
            cmd
        }
        None => {
            let cmd = Command::parse_line(line, st.escape, shared.config.max_args)?;
            st.last_getattr.remember(line, st.escape, &cmd);
            cmd
        }
    };
    // User, group and ACL changes made since the last command apply now (one atomic load when
    // nothing changed).
    shared.catalogue.refresh_if_changed(&mut st.session).await?;
    shared.metrics.stage(Frontend::Tcp, Stage::Parse, parse_started.elapsed());
    // A service account as itself may run only a few commands (code 4 otherwise).
    shared.catalogue.admit(&st.session, cmd.spec.name)?;
    if cmd.is_write() {
        audit_write(st, line);
    }
    // A site replica with `--primary` sends writes (and what they need) to the primary.
    if let Some(plan) = forward::decide(shared, st, forward::Line::Command(&cmd)).await? {
        return forward::forward(shared, st, cmd.spec.name, line, plan, reply).await;
    }
    // Inside an upload only put/commit/abort make sense.
    if !cmd.spec.in_upload
        && let Some(u) = st.upload.as_mut()
    {
        u.fail(Error::IllegalCommand("only put, commit or abort inside an upload".into()));
        return Ok(Outcome::Silent);
    }
    // Inside a restore only its own commands; another one spoils it.
    if !command::in_restore(cmd.spec.name)
        && let Some(r) = st.restore.as_mut()
    {
        let e = Error::IllegalCommand("only restore_put, restore_end or restore_abort inside a restore".into());
        r.fail(e.clone());
        return Err(e);
    }
    let catalogue = tracing::debug_span!("catalogue", op = cmd.spec.name);
    command::run(cmd.cmd, Ctx { shared, st, reply }).instrument(catalogue).await
}

/// A native SQL statement: `SELECT` answers one header line per column, then one line per
/// value; `INSERT`, `UPDATE` and `DELETE` answer no data lines.
async fn run_sql<W: AsyncWrite + Unpin + Send>(
    shared: &Shared,
    st: &mut ConnState,
    line: &str,
    reply: &mut Reply<'_, W>,
) -> Result<Outcome, Error> {
    if let Some(u) = st.upload.as_mut() {
        u.fail(Error::IllegalCommand("only put, commit or abort inside an upload".into()));
        return Ok(Outcome::Silent);
    }
    if let Some(r) = st.restore.as_mut() {
        let e = Error::IllegalCommand("only restore_put, restore_end or restore_abort inside a restore".into());
        r.fail(e.clone());
        return Err(e);
    }
    shared.catalogue.refresh_if_changed(&mut st.session).await?;
    shared.catalogue.admit(&st.session, "sql")?;
    let write = !first_word(line).eq_ignore_ascii_case("select");
    if write {
        audit_write(st, line);
    }
    if let Some(plan) = forward::decide(shared, st, forward::Line::Sql { write }).await? {
        return forward::forward(shared, st, "sql", line, plan, reply).await;
    }
    shared.catalogue.sql(&mut st.session, line, reply).await?;
    Ok(Outcome::Done)
}
