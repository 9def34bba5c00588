//! Site replicas on PostgreSQL streaming replication (issue #14, item 4): the tests start their
//! own primary and hot standby clusters (`initdb`, `pg_basebackup -R`) on loopback ports and an
//! `ardacat-server` on each. A server on the standby notices it, checks the schema version
//! instead of migrating, serves reads, refuses every kind of write (single command,
//! transaction, upload, native SQL, SOAP) with code 20 `read-only replica; primary is
//! <host:port>` and changes nothing; query tokens continue across the sites; a lagging standby
//! (`recovery_min_apply_delay`) serves older data and says so on `/readyz`; after
//! `pg_promote()` the same server process takes writes. Write forwarding and read-your-writes
//! are not implemented yet (docs/scale-out.md).

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
    let out = Command::new(env!("CARGO_BIN_EXE_ardacat-server"))
        .args(["--database", &standby.url("unmigrated"), "--tcp-port", "0", "--http-port", "0"])
        .env("ARDACAT_ROOT_PASSWORD", ROOT_PASSWORD)
        .env_remove("ARDACAT_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run ardacat-server");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "must not start: {err}");
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
