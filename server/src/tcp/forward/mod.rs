//! Forwarding from a site replica (`--primary`): which command lines of a session go to the
//! primary's ardacat instead of the local standby — the one decision, [`decide`] — and what a
//! forward leaves behind in the session (an open transaction or upload there, the WAL position
//! the next local read waits for). The upstream connection itself is `upstream`; the rules a
//! forwarded command meets are the primary's, the read-your-writes wait is the catalogue's
//! (`Catalogue::catch_up`). This module must not interpret a command's meaning beyond its kind.

mod upstream;

use std::time::Duration;

use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::ConnState;
use super::command::{Command, Outcome};
use super::reply::Reply;
use crate::state::Shared;
use upstream::Upstream;

/// What is open on the primary for this session: until its `commit`/`abort` every line goes
/// there (reads too, so they see the transaction's own writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Transaction,
    /// An `upload`: the primary answers nothing but its `commit`/`abort`.
    Upload,
}

/// A session's forwarding state (part of `ConnState`). The upstream connection is opened at
/// the first forward and closes with the session.
#[derive(Default)]
pub struct Forwarding {
    upstream: Option<Upstream>,
    open: Option<Open>,
}

impl Forwarding {
    /// A transaction or upload is open on the primary (no session token is handed out then:
    /// it lives only as long as this connection).
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }
}

/// One command line as the decision sees it.
pub enum Line<'a> {
    Command(&'a Command),
    /// A native SQL statement; `write`: `INSERT`, `UPDATE` or `DELETE`.
    Sql {
        write: bool,
    },
}

/// A line to forward: how the primary answers it, and whether it writes (then the session
/// notes the primary's WAL position afterwards).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    answer: Answer,
    write: bool,
}

/// How a forwarded line is answered on the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// A status line and data lines, relayed to the client.
    Reply,
    /// Nothing (`upload`, `put`, anything inside an upload but its end).
    None,
}

/// Commands that only change this connection's own state: always run here (the upstream
/// follows the session's user and directory before each forward).
const LOCAL_ALWAYS: &[&str] = &["help", "pwd", "cd", "whoami", "sudo", "wal_lsn"];

/// `restore` is root's, and root's writes are not forwarded: the restore family stays local
/// (and is refused there with code 20).
const NEVER_FORWARDED: &[&str] = &["restore", "restore_put", "restore_end", "restore_abort"];

/// THE decision: run this line locally (`None`) or forward it (`Some`), or refuse it. Forwarded:
/// everything while a transaction or upload is open on the primary; on a standby with
/// `--primary`, every write (native SQL writes included) of a non-root session, and a read of a
/// session whose last forwarded write the standby has not replayed within `replica_wait_ms`.
pub async fn decide(shared: &Shared, st: &mut ConnState, line: Line<'_>) -> Result<Option<Plan>, Error> {
    let Some(primary) = shared.config.primary.as_deref() else { return Ok(None) };
    let name = match &line {
        Line::Command(c) => c.spec.name,
        Line::Sql { .. } => "sql",
    };
    if LOCAL_ALWAYS.contains(&name) {
        return Ok(None);
    }
    if let Some(open) = st.forward.open {
        let ends = matches!(name, "commit" | "abort");
        let answer = if open == Open::Upload && !ends { Answer::None } else { Answer::Reply };
        return Ok(Some(Plan { answer, write: name == "commit" }));
    }
    let cat = &shared.catalogue;
    // Promoted: the catalogue takes writes itself.
    if !cat.is_read_only() {
        return Ok(None);
    }
    let write = match line {
        Line::Command(c) => c.is_write() && !NEVER_FORWARDED.contains(&name),
        Line::Sql { write } => write,
    };
    if write {
        // Nothing open upstream: `commit`/`abort`/`put` belong to a local transaction or upload.
        if matches!(name, "commit" | "abort" | "put") {
            return Ok(None);
        }
        if st.session.principal.is_root() {
            // The service account cannot become root: root's reading transactions stay local,
            // its writes go to the primary by hand.
            if matches!(name, "transaction" | "upload") {
                return Ok(None);
            }
            return Err(Error::ReadOnlyReplica(Some(format!("{primary}; root writes go to the primary"))));
        }
        let answer = if name == "upload" { Answer::None } else { Answer::Reply };
        // A transaction or upload writes at its commit.
        return Ok(Some(Plan { answer, write: !matches!(name, "transaction" | "upload") }));
    }
    // A read: local once the standby has replayed this session's last forwarded write.
    let bound = Duration::from_millis(shared.config.replica_wait_ms);
    if st.session.wait_lsn().is_some() && !cat.catch_up(&mut st.session, bound).await? {
        return Ok(Some(Plan { answer: Answer::Reply, write: false }));
    }
    Ok(None)
}

/// Forwards one line (as the client sent it) and relays the primary's answer through `reply`.
/// After a write that took effect on its own, and after a forwarded `commit`, the session
/// notes the primary's WAL position for read-your-writes.
pub async fn forward<W: AsyncWrite + Unpin + Send>(
    shared: &Shared,
    st: &mut ConnState,
    command: &str,
    raw: &str,
    plan: Plan,
    reply: &mut Reply<'_, W>,
) -> Result<Outcome, Error> {
    let limit = Duration::from_secs(shared.config.primary_timeout_secs.max(1));
    let primary = shared.config.primary.clone().unwrap_or_default();
    let result = tokio::time::timeout(limit, run(shared, st, command, raw, plan, reply)).await;
    let result = match result {
        Ok(r) => r,
        Err(_) => Err(Failure::Unreachable(format!("no answer within {} s", limit.as_secs()))),
    };
    match result {
        Ok(outcome) => Ok(outcome),
        Err(Failure::Relayed(e)) => Err(e),
        Err(Failure::Refused(why)) => {
            st.forward.upstream = None;
            st.forward.open = None;
            tracing::warn!(primary = %primary, error = %why, "the primary refused the forwarding login");
            Err(Error::ReadOnlyReplica(Some(format!("{primary} (forwarding refused: {why})"))))
        }
        Err(Failure::Unreachable(why)) => {
            // The connection is out of step or gone: whatever was open there is gone with it.
            st.forward.upstream = None;
            let lost = if st.forward.open.take().is_some() { "; the open transaction or upload is gone" } else { "" };
            tracing::warn!(primary = %primary, error = %why, "forwarding to the primary failed");
            Err(Error::ReadOnlyReplica(Some(format!("{primary} (unreachable: {why}{lost})"))))
        }
    }
}

/// Why a forward failed.
enum Failure {
    /// The primary answered with an error (relayed as it is), or this side could not write the
    /// reply; the upstream connection stays usable.
    Relayed(Error),
    /// The service account's login, `sudo` or `cd` was refused (the primary's text).
    Refused(String),
    /// No usable upstream connection (connect, I/O, timeout).
    Unreachable(String),
}

async fn run<W: AsyncWrite + Unpin + Send>(
    shared: &Shared,
    st: &mut ConnState,
    command: &str,
    raw: &str,
    plan: Plan,
    reply: &mut Reply<'_, W>,
) -> Result<Outcome, Failure> {
    let reuse = st.forward.upstream.take().filter(|u| !u.is_broken());
    if reuse.is_none() && st.forward.open.is_some() {
        // The connection that held the transaction or upload went away (a cancelled forward
        // drops it): the primary rolled it back.
        return Err(Failure::Unreachable("the connection to the primary was lost".into()));
    }
    let mut up = match reuse {
        Some(u) => u,
        None => Upstream::open(&shared.config, st.escape).await?,
    };
    let result = async {
        up.follow(&st.session.principal.user, &st.session.cwd).await?;
        match plan.answer {
            Answer::None => up.send_unanswered(raw).await.map(|()| Outcome::Silent),
            Answer::Reply => up.relay(raw, reply).await.map(|()| Outcome::Done),
        }
    }
    .await;
    let ended = matches!(command, "commit" | "abort");
    let opened = match (result.is_ok(), command) {
        (true, "transaction") => Some(Open::Transaction),
        (_, "upload") => Some(Open::Upload),
        _ => None,
    };
    if ended {
        // The primary ends a transaction or upload at its commit/abort, failed or not.
        st.forward.open = None;
    } else if opened.is_some() {
        st.forward.open = opened;
    }
    if plan.write && result.is_ok() {
        // Read-your-writes: where the primary's WAL was after this write. On a primary
        // without WAL positions (SQLite) there is nothing to wait for.
        if let Some(lsn) = up.wal_lsn().await? {
            st.session.set_wait_lsn(lsn);
        }
    }
    st.forward.upstream = Some(up);
    result
}
