//! The independent Python client (tests/interop/, written from the description of the original
//! 2007 `mdclient`) against the real server on both backends: the §8.3 scenario and the raw byte
//! checks with default settings, and once more with `--sessions force`, where every reply
//! carries a session token and the client reconnects and resumes before each command.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{Backend, TestServer};

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/interop")
}

/// Run one of the scripts and return its stdout; fail (with everything it printed) unless it
/// exits 0 and ends with "N passed, 0 failed".
fn run_script(srv: &TestServer, script: &str, extra: &[&str]) -> String {
    let port = srv.tcp.port().to_string();
    let out = Command::new("python3")
        .arg(interop_dir().join(script))
        .args(["--host", "127.0.0.1", "--port", &port])
        .args(extra)
        .env("ARDACAT_ROOT_PASSWORD", common::ROOT_PASSWORD)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {script}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = stdout.lines().last().unwrap_or_default();
    let passed = out.status.success() && summary.ends_with(" passed, 0 failed");
    assert!(
        passed,
        "{script} {extra:?} failed with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    eprintln!("{script} {extra:?}: {summary}");
    stdout
}

async fn plain(b: Backend) {
    let srv = TestServer::start(b).await;
    let out = run_script(&srv, "scenario.py", &["--dir-names", "any", "--completeness"]);
    assert!(out.contains("sessions issued 0"), "no session tokens without --sessions force:\n{out}");
    let out = run_script(&srv, "raw_checks.py", &[]);
    assert!(out.contains("SKIP session resume"), "{out}");
}

async fn sessions_force(b: Backend) {
    let srv = TestServer::start_flags(b, &["--sessions", "force"]).await;
    let out = run_script(&srv, "scenario.py", &["--dir-names", "any", "--completeness"]);
    let counts = out.lines().find(|l| l.contains("sessions issued")).unwrap_or_else(|| panic!("no counts in:\n{out}"));
    let number = |key: &str| -> u64 {
        counts
            .split(key)
            .nth(1)
            .and_then(|rest| rest.trim_start().split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no '{key}' count in {counts:?}"))
    };
    assert!(number("sessions issued") > 10, "session tokens must be issued: {counts}");
    assert!(number("resumes") > 10, "the client must resume: {counts}");
    let out = run_script(&srv, "raw_checks.py", &[]);
    assert!(out.contains("ok   session resume"), "raw checks must see and resume a session:\n{out}");
    assert!(out.contains("info pwd reply carried a session token"), "{out}");
}

mod plain {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::plain(super::Backend::Sqlite).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::plain(super::Backend::Postgres).await
    }
}

// Once more with --sessions force (on SQLite; tcp_protocol's `sessions` covers both backends).
mod sessions_force {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::sessions_force(super::Backend::Sqlite).await
    }
}
