//! Site replicas on PostgreSQL streaming replication (issue #14, item 4): the tests start their
//! own primary and hot standby clusters (`initdb`, `pg_basebackup -R`) on loopback ports and an
//! `ardacat-server` on each. A server on the standby notices it, checks the schema version
//! instead of migrating, serves reads, refuses every kind of write (single command,
//! transaction, upload, native SQL, SOAP) with code 20 `read-only replica; primary is
//! <host:port>` and changes nothing; query tokens continue across the sites; a lagging standby
//! (`recovery_min_apply_delay`) serves older data and says so on `/readyz`; after
//! `pg_promote()` the same server process takes writes. With `--primary` the replica forwards
//! writes to the primary's ardacat as the session's user through a service account
//! (`user_may_sudo`), over TLS too, and a read after a forwarded write sees it (waiting for
//! replay, or forwarded past `--replica-wait-ms`); see docs/scale-out.md.

mod common;
#[path = "common/pgcluster.rs"]
mod pgcluster;
#[path = "common/soap_raw.rs"]
mod soap_raw;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use pgcluster::Cluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn text(r: &[u8]) -> String {
    String::from_utf8_lossy(r).into_owned()
}

/// A primary with a migrated catalogue (server `a` on it, `/d` with entry e1), and a standby.
async fn sites() -> (Cluster, Cluster, TestServer) {
    let primary = Cluster::primary();
    let a = TestServer::start_with(TestDb::external(primary.url("postgres")), &[]).await;
    let mut root = a.raw().await;
    ok(&mut root, "createdir /d").await;
    ok(&mut root, "addattr /d a int").await;
    ok(&mut root, "addentry /d/e1 a 1").await;
    let standby = Cluster::standby_of(&primary);
    (primary, standby, a)
}

/// Runs `ardacat-server` with `args` (ephemeral ports, no config file or forwarding login from
/// the environment), which must refuse to start; returns what it said on standard error.
fn refused_start(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ardacat-server"))
        .args(args)
        .args(["--tcp-port", "0", "--http-port", "0"])
        .env("ARDACAT_ROOT_PASSWORD", ROOT_PASSWORD)
        .env_remove("ARDACAT_CONFIG")
        .env_remove("ARDACAT_PRIMARY_LOGIN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run ardacat-server");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "must not start: {err}");
    err
}

/// Polls `line` on a fresh connection to `srv` until its reply satisfies `done` (bounded).
async fn eventually(srv: &TestServer, line: &str, bound: Duration, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + bound;
    loop {
        let mut c = srv.raw().await;
        let r = text(&c.cmd(line).await);
        if done(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "`{line}` still answers {r:?} after {bound:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_serves_reads_and_refuses_every_write() {
    let (primary, standby, a) = sites().await;
    let r = TestServer::start_with(TestDb::external(standby.url("postgres")), &[]).await;
    let refusal = format!("20 read-only replica; primary is {}\n\x04\x04", primary.addr());

    // Reads.
    let mut c = r.raw().await;
    assert_eq!(ok(&mut c, "listentries /d").await, vec!["/d/e1"]);
    assert_eq!(ok(&mut c, "getattr /d/e1 a").await, vec!["e1", "1"]);
    assert_eq!(ok(&mut c, "whoami").await, vec!["root"]);

    // Every kind of write: refused with code 20, naming the primary.
    for line in [
        "addentry /d/e2 a 2",
        "setattr /d/e1 a 5",
        "createdir /x",
        "user_create bob bpw",
        "chmod /d rwx------",
        "INSERT INTO /d (file, a) VALUES ('e3', 3)",
    ] {
        assert_eq!(text(&c.cmd(line).await), refusal, "{line}");
    }
    // Inside a transaction: the write is refused, the transaction goes on (reads work).
    assert_eq!(text(&c.cmd("transaction").await), "0\n\x04\x04");
    assert_eq!(text(&c.cmd("addentry /d/t1 a 1").await), refusal);
    assert_eq!(ok(&mut c, "listentries /d").await, vec!["/d/e1"]);
    assert_eq!(text(&c.cmd("commit").await), "0\n\x04\x04");
    // An upload: refused at its commit.
    c.send(b"upload /d a\nput u1 1\nput u2 2\n").await;
    assert_eq!(text(&c.cmd("commit").await), refusal);
    // SOAP: fault 20 with the same text.
    let (status, body) =
        soap(r.http, "createEntry", "<m:schemaName>/d</m:schemaName><m:entry><m:name>s1</m:name></m:entry>").await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("<code>20</code>") || body.contains(">20<"), "{body}");
    assert!(body.contains(&format!("read-only replica; primary is {}", primary.addr())), "{body}");

    // Nothing changed, on either site.
    let mut on_a = a.raw().await;
    assert_eq!(ok(&mut on_a, "listentries /d").await, vec!["/d/e1"]);
    assert_eq!(ok(&mut on_a, "getattr /d/e1 a").await, vec!["e1", "1"]);

    // Writes on the primary reach the standby's readers.
    ok(&mut on_a, "addentry /d/e9 a 9").await;
    eventually(&r, "listentries /d", Duration::from_secs(20), |t| t.contains("/d/e9")).await;
    r.assert_no_internal_errors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_tokens_continue_across_sites() {
    let (_primary, standby, a) = sites().await;
    let mut root = a.raw().await;
    for i in 2..=9 {
        ok(&mut root, &format!("addentry /d/e{i} a {i}")).await;
    }
    let r = TestServer::start_with(TestDb::external(standby.url("postgres")), &[]).await;
    eventually(&r, "listentries /d", Duration::from_secs(20), |t| t.contains("/d/e9")).await;
    let q = "<m:select>/d:a</m:select><m:orderBy>/d:a</m:orderBy><m:pageSize>3</m:pageSize>";
    let page = |t: &str| format!("<m:token>{t}</m:token><m:pageSize>3</m:pageSize>");
    // Started on the primary, continued on the replica, finished on the primary.
    let (st, b1) = soap(a.http, "query", q).await;
    assert_eq!(st, 200, "{b1}");
    let (st, b2) = soap(r.http, "nextQuery", &page(&token(&b1))).await;
    assert_eq!(st, 200, "{b2}");
    let (st, b3) = soap(a.http, "nextQuery", &page(&token(&b2))).await;
    assert_eq!(st, 200, "{b3}");
    let got: Vec<String> = [&b1, &b2, &b3].iter().flat_map(|b| values(b)).collect();
    assert_eq!(got, (1..=9).map(|i| i.to_string()).collect::<Vec<_>>());
    // And the other way round.
    let (st, c1) = soap(r.http, "query", q).await;
    assert_eq!(st, 200, "{c1}");
    let (st, c2) = soap(a.http, "nextQuery", &page(&token(&c1))).await;
    assert_eq!(st, 200, "{c2}");
    assert_eq!(values(&c2), vec!["4", "5", "6"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promoted_standby_takes_writes_without_restart() {
    let (_primary, standby, _a) = sites().await;
    let r = TestServer::start_with(TestDb::external(standby.url("postgres")), &[]).await;
    let mut c = r.raw().await;
    let e = text(&c.cmd("addentry /d/p1 a 1").await);
    assert!(e.starts_with("20 read-only replica"), "{e}");
    standby.sql("SELECT pg_promote()").await;
    let pid = r.pid();
    eventually(&r, "addentry /d/p1 a 1", Duration::from_secs(20), |t| t == "0\n\x04\x04").await;
    assert_eq!(r.pid(), pid, "the same process");
    let mut c = r.raw().await;
    assert_eq!(ok(&mut c, "listentries /d").await, vec!["/d/e1", "/d/p1"]);
    // Every kind of write now.
    assert_eq!(text(&c.cmd("transaction").await), "0\n\x04\x04");
    ok(&mut c, "addentry /d/p2 a 2").await;
    assert_eq!(text(&c.cmd("commit").await), "0\n\x04\x04");
    c.send(b"upload /d a\nput p3 3\n").await;
    assert_eq!(text(&c.cmd("commit").await), "0\n\x04\x04");
    let (st, body) =
        soap(r.http, "createEntry", "<m:schemaName>/d</m:schemaName><m:entry><m:name>p4</m:name></m:entry>").await;
    assert_eq!(st, 200, "{body}");
    assert_eq!(ok(&mut c, "listentries /d").await, vec!["/d/e1", "/d/p1", "/d/p2", "/d/p3", "/d/p4"]);
    r.assert_no_internal_errors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_behind_the_schema_is_refused_at_start() {
    let primary = Cluster::primary();
    // A database nobody migrated: its standby copy has no schema, and a standby cannot migrate.
    primary.sql("CREATE DATABASE unmigrated").await;
    let standby = Cluster::standby_of(&primary);
    let err = refused_start(&["--database", &standby.url("unmigrated")]);
    assert!(err.contains("read-only standby at schema version none"), "{err}");
    // The primary's copy is untouched (no migration ran anywhere).
    let tables = primary.value("SELECT count(*)::text FROM pg_database WHERE datname = 'unmigrated'").await;
    assert_eq!(tables.as_deref(), Some("1"));
}

// ---- SOAP over raw HTTP ----

async fn soap(addr: SocketAddr, op: &str, inner: &str) -> (u16, String) {
    soap_raw::soap(addr, "root", ROOT_PASSWORD, op, inner).await
}

/// The texts of the `<…name>` elements of a response.
fn elements(xml: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in xml.split('<').skip(1) {
        let Some((tag, rest)) = part.split_once('>') else { continue };
        let local = tag.rsplit(':').next().unwrap_or(tag);
        if local == name && !tag.ends_with('/') {
            out.push(rest.to_string());
        }
    }
    out
}

fn token(xml: &str) -> String {
    elements(xml, "token").pop().unwrap_or_else(|| panic!("no token in {xml}"))
}

fn values(xml: &str) -> Vec<String> {
    elements(xml, "value")
}

/// Asynchronous replication as the documentation states it: a write acknowledged by the
/// primary is not yet visible at a standby that lags (`recovery_min_apply_delay` injects the
/// lag), `/readyz` of the standby's server says so, and the write arrives once replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_standby_serves_older_data_and_reports_it() {
    let (_primary, standby, a) = sites().await;
    standby.sql("ALTER SYSTEM SET recovery_min_apply_delay = '6s'").await;
    standby.sql("SELECT pg_reload_conf()").await;
    let r = TestServer::start_with(TestDb::external(standby.url("postgres")), &["--ready-max-lag-ms", "1000"]).await;
    let mut on_a = a.raw().await;
    ok(&mut on_a, "addentry /d/late a 7").await;
    let written = Instant::now();
    let mut c = r.raw().await;
    let seen = ok(&mut c, "listentries /d").await;
    if written.elapsed() < Duration::from_secs(5) {
        assert_eq!(seen, vec!["/d/e1"], "applied before the injected delay");
    }
    // The probe reports the lag while the write waits to be applied, then recovers.
    let mut saw_lag = false;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = get(r.http, "/readyz").await;
        if status == 503 {
            assert!(body.contains("\"check\":\"replication\""), "{body}");
            saw_lag = true;
        } else if status == 200 && saw_lag {
            break;
        }
        assert!(Instant::now() < deadline, "readyz: {status} {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eventually(&r, "listentries /d", Duration::from_secs(20), |t| t.contains("/d/late")).await;
}

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out)).await.expect("answer").expect("read");
    let out = String::from_utf8_lossy(&out).into_owned();
    (out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0), out)
}

// ---- forwarding from a site replica (`--primary`), read-your-writes ----

const FORWARDER_PASSWORD: &str = "fwd-pw";

/// A primary site for forwarding: server `a` (with `extra` flags) on a fresh primary cluster,
/// the service account `forwarder` (`user_may_sudo … on`), `alice` who owns `/w` (attribute
/// `a`), `bob` who may only read it; then a standby of it.
async fn forwarding_sites(extra: &[&str]) -> (Cluster, Cluster, TestServer) {
    let primary = Cluster::primary();
    let a = TestServer::start_with(TestDb::external(primary.url("postgres")), extra).await;
    let mut root = a.raw().await;
    for line in [
        &format!("user_create forwarder {FORWARDER_PASSWORD}"),
        "user_may_sudo forwarder on",
        "user_create alice apw",
        "user_create bob bpw",
        "createdir /w",
        "addattr /w a int",
        "chown /w alice",
        "createdir /d",
        "addattr /d a int",
    ] {
        ok(&mut root, line).await;
    }
    let standby = Cluster::standby_of(&primary);
    (primary, standby, a)
}

/// The site's server on `standby`, forwarding to `primary` (`host:port`) as `forwarder`.
async fn replica(standby: &Cluster, primary: &str, extra: &[&str]) -> TestServer {
    let mut flags = vec!["--primary", primary, "--primary-login", "forwarder"];
    flags.extend_from_slice(extra);
    TestServer::start_with_env(
        TestDb::external(standby.url("postgres")),
        &flags,
        &[("ARDACAT_PRIMARY_PASSWORD", FORWARDER_PASSWORD)],
    )
    .await
}

/// The entries of `/w` as the primary's root sees them.
async fn entries_on(srv: &TestServer, dir: &str) -> Vec<String> {
    let mut root = srv.raw().await;
    ok(&mut root, &format!("listentries {dir}")).await
}

/// The service account's privilege, on the primary alone: as itself only `sudo` to a non-root
/// user and a few session commands; after `sudo` exactly the user; root alone grants it; it
/// survives a dump and restore.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_may_only_sudo() {
    let srv = TestServer::start(Backend::Sqlite).await;
    let mut root = srv.raw().await;
    ok(&mut root, &format!("user_create forwarder {FORWARDER_PASSWORD}")).await;
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, "user_create bob bpw").await;
    ok(&mut root, "createdir /w").await;
    ok(&mut root, "chown /w alice").await;
    // Bad uses of the command change nothing.
    fails(&mut root, "user_may_sudo forwarder maybe", 3).await;
    fails(&mut root, "user_may_sudo nosuch on", 1).await;
    fails(&mut root, "user_may_sudo root on", 3).await;
    ok(&mut root, "user_may_sudo forwarder on").await;

    let mut f = srv.raw_as("forwarder", FORWARDER_PASSWORD).await;
    assert_eq!(ok(&mut f, "whoami").await, vec!["forwarder"]);
    assert_eq!(ok(&mut f, "pwd").await, vec!["/"]);
    assert!(!ok(&mut f, "help").await.is_empty());
    // wal_lsn is allowed; on SQLite it has no answer (a clear error, not code 20).
    fails(&mut f, "wal_lsn", 3).await;
    for line in ["listentries /", "ls /", "createdir /x", "addentry /w/e a 1", "SELECT file FROM /w", "cd /w"] {
        let reply = text(&f.cmd(line).await);
        assert!(reply.starts_with("4 ") && reply.contains("service account"), "{line}: {reply:?}");
    }
    fails(&mut f, "sudo root", 4).await;
    fails(&mut f, "user_may_sudo alice on", 4).await;
    // SOAP cannot sudo: a service account may do nothing there.
    let (status, body) = soap_raw::soap(
        srv.http,
        "forwarder",
        FORWARDER_PASSWORD,
        "createEntry",
        "<m:schemaName>/w</m:schemaName><m:entry><m:name>s1</m:name></m:entry>",
    )
    .await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("service account"), "{body}");
    // As alice: alice's rights, alice's name on what it creates; then it may switch again.
    ok(&mut f, "sudo alice").await;
    assert_eq!(ok(&mut f, "whoami").await, vec!["alice"]);
    ok(&mut f, "createdir /w/sub").await;
    fails(&mut f, "createdir /x", 4).await;
    fails(&mut f, "user_may_sudo bob on", 4).await;
    ok(&mut f, "sudo bob").await;
    fails(&mut f, "createdir /w/bobs", 4).await;
    fails(&mut f, "sudo root", 4).await;
    // Users themselves cannot sudo.
    let mut alice = srv.raw_as("alice", "apw").await;
    fails(&mut alice, "sudo bob", 4).await;
    fails(&mut alice, "user_may_sudo alice on", 4).await;
    // Root keeps its own sudo.
    ok(&mut root, "sudo bob").await;
    let mut root = srv.raw().await;

    // The privilege is in the dump (a `SUDO` record) and comes back with a restore.
    let dump = ok(&mut root, "dump").await;
    assert!(dump.iter().any(|l| l == "SUDO\tforwarder"), "{dump:?}");
    assert!(!dump.iter().any(|l| l == "SUDO\talice"), "{dump:?}");
    let fresh = TestServer::start(Backend::Sqlite).await;
    let mut c = ardacat_client::Client::connect(ardacat_client::ClientConfig {
        host: "127.0.0.1".into(),
        port: fresh.tcp.port(),
        login: "root".into(),
        password: Some(ROOT_PASSWORD.into()),
        ..Default::default()
    })
    .await
    .expect("connect");
    c.restore(None, dump.into_iter().map(Ok::<String, std::io::Error>), |_| {}).await.expect("restore");
    let mut f2 = fresh.raw_as("forwarder", FORWARDER_PASSWORD).await;
    fails(&mut f2, "listentries /", 4).await;
    ok(&mut f2, "sudo alice").await;

    // Withdrawn: a session that had switched to a user cannot switch again.
    ok(&mut root, "user_may_sudo forwarder off").await;
    fails(&mut f, "sudo alice", 4).await;
    let mut f = srv.raw_as("forwarder", FORWARDER_PASSWORD).await;
    // An ordinary user now: its own rights, no sudo.
    ok(&mut f, "listentries /w").await;
    fails(&mut f, "sudo alice", 4).await;
    srv.assert_no_internal_errors();
}

/// Every kind of write through the replica, over TLS to the primary, as the session's user:
/// a single command, a transaction (whose reads see its own writes), an upload, a native SQL
/// INSERT; the primary's refusals and errors relayed with nothing changed; root's writes refused
/// with code 20; after promotion writes stay local.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_forwards_every_write_kind_over_tls() {
    let pki = test_pki();
    let p = |n: &str| pki.path().join(n).display().to_string();
    let (_primary, standby, a) =
        forwarding_sites(&["--tls-cert", &p("server.pem"), "--tls-key", &p("server.key")]).await;
    let target = format!("localhost:{}", a.tcp.port());
    let r = replica(&standby, &target, &["--primary-ssl", "--primary-tls-ca", &p("ca.pem")]).await;

    let mut c = r.raw_as("alice", "apw").await;
    // One command.
    ok(&mut c, "addentry /w/x1 a 1").await;
    assert_eq!(entries_on(&a, "/w").await, vec!["/w/x1"]);
    // The next read on the replica sees it (read-your-writes).
    assert_eq!(ok(&mut c, "getattr /w/x1 a").await, vec!["x1", "1"]);
    // A transaction: its read sees its own write, which the primary has once committed.
    ok(&mut c, "transaction").await;
    ok(&mut c, "addentry /w/t1 a 2").await;
    assert_eq!(ok(&mut c, "listentries /w").await, vec!["/w/t1", "/w/x1"]);
    assert_eq!(entries_on(&a, "/w").await, vec!["/w/x1"], "not committed yet");
    ok(&mut c, "commit").await;
    assert_eq!(entries_on(&a, "/w").await, vec!["/w/t1", "/w/x1"]);
    // An aborted transaction leaves nothing.
    ok(&mut c, "begin").await;
    ok(&mut c, "addentry /w/t2 a 2").await;
    ok(&mut c, "abort").await;
    // An upload.
    c.send(b"upload /w a\nput u1 11\nput u2 12\n").await;
    ok(&mut c, "commit").await;
    // Native SQL.
    ok(&mut c, "INSERT INTO /w (file, a) VALUES ('s1', 3)").await;
    let all = vec!["/w/s1", "/w/t1", "/w/u1", "/w/u2", "/w/x1"];
    assert_eq!(entries_on(&a, "/w").await, all);
    assert_eq!(ok(&mut c, "listentries /w").await, all);
    // The client's directory goes along.
    ok(&mut c, "cd /w").await;
    ok(&mut c, "addentry x2 a 5").await;
    assert_eq!(ok(&mut c, "getattr /w/x2 a").await, vec!["x2", "5"]);

    // Errors of the primary, relayed: exists, no such collection, no such attribute, usage.
    fails(&mut c, "addentry /w/x1 a 9", 15).await;
    fails(&mut c, "addentry /nowhere/e a 1", 1).await;
    fails(&mut c, "setattr /w/x1 nosuch 1", 10).await;
    fails(&mut c, "INSERT INTO /w (file, nosuch) VALUES ('s2', 1)", 10).await;
    // A user without the right: the primary's code 4.
    let mut bob = r.raw_as("bob", "bpw").await;
    let reply = text(&bob.cmd("addentry /w/b1 a 1").await);
    assert!(reply.starts_with("4 permission denied"), "{reply:?}");
    // Root's writes are not forwarded.
    let mut root = r.raw().await;
    let refusal = format!("20 read-only replica; primary is {target}; root writes go to the primary\n\x04\x04");
    assert_eq!(text(&root.cmd("addentry /d/r1 a 1").await), refusal);
    // Nothing of the failures arrived.
    let mut ra = a.raw().await;
    assert_eq!(ok(&mut ra, "getattr /w/x1 a").await, vec!["x1", "1"]);
    assert_eq!(entries_on(&a, "/w").await, vec!["/w/s1", "/w/t1", "/w/u1", "/w/u2", "/w/x1", "/w/x2"]);
    assert!(entries_on(&a, "/d").await.is_empty());

    // A forwarded transaction open across the promotion finishes where it began.
    let mut open = r.raw_as("alice", "apw").await;
    ok(&mut open, "transaction").await;
    ok(&mut open, "addentry /w/o1 a 1").await;
    // Promoted: writes go to the promoted database, not to the old primary.
    standby.sql("SELECT pg_promote()").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut c = r.raw().await;
        if text(&c.cmd("createdir /after").await) == "0\n\x04\x04" {
            break;
        }
        assert!(Instant::now() < deadline, "not promoted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ok(&mut open, "commit").await;
    assert!(entries_on(&a, "/w").await.contains(&"/w/o1".to_string()));
    assert!(!entries_on(&r, "/w").await.contains(&"/w/o1".to_string()));
    ok(&mut c, "addentry /w/p1 a 1").await;
    assert_eq!(ok(&mut c, "getattr /w/p1 a").await, vec!["p1", "1"]);
    assert!(!entries_on(&a, "/w").await.contains(&"/w/p1".to_string()));
    let mut ra = a.raw().await;
    fails(&mut ra, "listentries /after", 1).await;
    r.assert_no_internal_errors();
}

/// Read-your-writes with replay lag injected (`recovery_min_apply_delay` 3 s): a read right
/// after a forwarded write waits for the standby and sees it; with `--replica-wait-ms 100` it
/// is forwarded to the primary instead (and sees it), while another session, reading
/// locally, does not see the write yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_after_forwarded_writes_see_them_despite_lag() {
    let (_primary, standby, a) = forwarding_sites(&[]).await;
    standby.sql("ALTER SYSTEM SET recovery_min_apply_delay = '3s'").await;
    standby.sql("SELECT pg_reload_conf()").await;
    let target = a.tcp.to_string();
    let waiting = replica(&standby, &target, &[]).await;
    let forwarding = replica(&standby, &target, &["--replica-wait-ms", "100"]).await;

    // Waits (the default bound, 5 s, is above the lag).
    let mut c = waiting.raw_as("alice", "apw").await;
    ok(&mut c, "addentry /w/l1 a 1").await;
    assert_eq!(ok(&mut c, "getattr /w/l1 a").await, vec!["l1", "1"]);
    // Caught up: the wait is over, reads are local again.
    assert_eq!(ok(&mut c, "listentries /w").await, vec!["/w/l1"]);

    // Past the bound: forwarded.
    let mut c = forwarding.raw_as("alice", "apw").await;
    ok(&mut c, "addentry /w/l2 a 2").await;
    let written = Instant::now();
    assert_eq!(ok(&mut c, "getattr /w/l2 a").await, vec!["l2", "2"]);
    let mut other = forwarding.raw_as("alice", "apw").await;
    let seen = ok(&mut other, "listentries /w").await;
    if written.elapsed() < Duration::from_millis(2500) {
        assert_eq!(seen, vec!["/w/l1"], "the standby applied l2 before the injected delay");
    }
    eventually(&forwarding, "listentries /w", Duration::from_secs(20), |t| t.contains("/w/l2")).await;
    waiting.assert_no_internal_errors();
    forwarding.assert_no_internal_errors();
}

/// A primary that does not answer: code 20 naming it, `unreachable`; nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_primary_is_code_20() {
    let (_primary, standby, a) = forwarding_sites(&[]).await;
    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let gone = closed.local_addr().expect("addr").to_string();
    drop(closed);
    let r = replica(&standby, &gone, &[]).await;
    let mut c = r.raw_as("alice", "apw").await;
    let reply = text(&c.cmd("addentry /w/n1 a 1").await);
    assert!(reply.starts_with(&format!("20 read-only replica; primary is {gone} (unreachable: ")), "{reply}");
    // Reads still work, and the session too.
    assert!(ok(&mut c, "listentries /w").await.is_empty());
    assert!(entries_on(&a, "/w").await.is_empty());
    r.assert_no_internal_errors();
}

#[test]
fn primary_without_login_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("sqlite:{}", dir.path().join("c.db").display());
    let err = refused_start(&["--database", &db, "--primary", "127.0.0.1:8822"]);
    assert!(err.contains("--primary needs --primary-login"), "{err}");
}

/// A CA and a server certificate for `localhost` (rcgen), written to a temporary directory.
struct TestPki(tempfile::TempDir);

impl TestPki {
    fn path(&self) -> &std::path::Path {
        self.0.path()
    }
}

fn test_pki() -> TestPki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.distinguished_name.push(DnType::CommonName, "Forwarding test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("key");
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    leaf.distinguished_name.push(DnType::CommonName, "localhost");
    let cert = leaf.signed_by(&key, &issuer).expect("sign");
    std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).expect("write");
    std::fs::write(dir.path().join("server.pem"), cert.pem()).expect("write");
    std::fs::write(dir.path().join("server.key"), key.serialize_pem()).expect("write");
    TestPki(dir)
}
