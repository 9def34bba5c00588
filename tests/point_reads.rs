//! Point reads (`getattr` of one entry) under concurrency, over the real server on both
//! backends, with `--db-point-reads-in-flight 1`: on PostgreSQL the reads of one shape that
//! queue are answered together by one statement (`catalog::point_lane`), and each must still
//! get exactly its own answer — its entry's values, code 1 for a missing name, code 4 for an
//! entry its user may not read — whoever else's reads shared the statement; a read inside a
//! transaction sees the transaction's own writes. `/metrics` must show that batches ran on
//! PostgreSQL and that none did on SQLite (which reads alone).

#[macro_use]
mod common;

use common::{Backend, RawConn, TestServer, ok};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

on_both_backends!(concurrent_point_reads_get_their_own_answers);

const ENTRIES: usize = 40;
/// Names `e40`..`e44` do not exist.
const NAMES: usize = ENTRIES + 5;
const PER_USER: usize = 6;
const READS: usize = 150;

/// What `getattr /p/e<i> a s` answers `user`: its lines, or an error code.
fn expected(user: &str, i: usize) -> Result<Vec<String>, i32> {
    if i >= ENTRIES {
        return Err(1);
    }
    // Every fifth entry is root's alone; every seventh is readable by group g2 only, through
    // an ACL (its mode gives nobody else anything).
    let readable = match user {
        "root" => true,
        _ if i.is_multiple_of(5) => false,
        "u2" => true,
        _ => !i.is_multiple_of(7),
    };
    if readable { Ok(vec![format!("e{i}"), (i * 3).to_string(), format!("s{i}")]) } else { Err(4) }
}

async fn metric(srv: &TestServer, name: &str) -> u64 {
    let mut s = TcpStream::connect(srv.http).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let line = out.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name} in {out}"));
    line[name.len() + 1..].trim().parse().unwrap()
}

async fn reader(mut c: RawConn, user: &'static str, seed: usize) -> usize {
    let mut checked = 0;
    for k in 0..READS {
        let i = (seed * 31 + k * 17) % NAMES;
        let (code, lines) = c.lines(&format!("getattr /p/e{i} a s")).await;
        let got = if code == 0 { Ok(lines) } else { Err(code) };
        assert_eq!(got, expected(user, i), "{user} reading e{i}");
        checked += 1;
    }
    checked
}

async fn concurrent_point_reads_get_their_own_answers(b: Backend) {
    let srv = TestServer::start_flags(b, &["--db-point-reads-in-flight", "1"]).await;
    let mut root = srv.raw().await;
    for setup in [
        "createdir /p",
        "addattr /p a int",
        "addattr /p s varchar(20)",
        "chmod /p rwxr-xr-x",
        "user_create u1 pw1",
        "user_create u2 pw2",
        "grp_create g2",
        "grp_adduser g2 u2",
    ] {
        ok(&mut root, setup).await;
    }
    for i in 0..ENTRIES {
        ok(&mut root, &format!("addentry /p/e{i} a {} s s{i}", i * 3)).await;
        if i.is_multiple_of(5) {
            ok(&mut root, &format!("chmod /p/e{i} rw-------")).await;
        } else if i.is_multiple_of(7) {
            ok(&mut root, &format!("chmod /p/e{i} rw-------")).await;
            ok(&mut root, &format!("acl_add /p/e{i} g2 r")).await;
        }
    }
    let mut reads = Vec::new();
    for (user, password) in [("root", common::ROOT_PASSWORD), ("u1", "pw1"), ("u2", "pw2")] {
        for k in 0..PER_USER {
            let c = srv.raw_as(user, password).await;
            reads.push(tokio::spawn(reader(c, user, k * 7 + user.len())));
        }
    }
    // Meanwhile a transaction reads what it wrote, which no other read can see yet.
    ok(&mut root, "transaction").await;
    ok(&mut root, "addentry /p/fresh a 7 s new").await;
    // Root's readers read the same shape meanwhile: were these reads queued with theirs, another
    // connection would answer them, without the transaction's row.
    for _ in 0..READS {
        assert_eq!(ok(&mut root, "getattr /p/fresh a s").await, ["fresh", "7", "new"]);
    }
    let mut other = srv.raw().await;
    assert_eq!(other.lines("getattr /p/fresh a s").await.0, 1, "not committed yet");
    ok(&mut root, "commit").await;
    assert_eq!(ok(&mut other, "getattr /p/fresh a s").await, ["fresh", "7", "new"]);
    let mut total = 0;
    for r in reads {
        total += r.await.unwrap();
    }
    assert_eq!(total, 3 * PER_USER * READS);
    let batches = metric(&srv, "ardacat_db_point_batches_total").await;
    let batched = metric(&srv, "ardacat_db_point_batched_reads_total").await;
    match b {
        Backend::Postgres => {
            assert!(batches > 0, "18 readers and one statement at a time: reads must have queued");
            assert!(batched >= 2 * batches, "{batched} reads in {batches} batches");
        }
        Backend::Sqlite => assert_eq!((batches, batched), (0, 0), "SQLite reads alone"),
    }
    srv.assert_no_internal_errors();
}
