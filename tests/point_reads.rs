//! Single-entry reads (`getattr /c/<name> …`) under concurrency, over the real server on both
//! backends. On PostgreSQL concurrent reads of one shape share statements
//! (`server/store/src/catalog/batches.rs`); every client must still get exactly its own entry,
//! see its own writes at once, see nothing of another session's open transaction, and get its
//! own error for a missing name. `db_point_read_batch_max = 1` turns the sharing off.

#[macro_use]
mod common;

use common::{Backend, RawConn, TestDb, TestServer, ok};

on_both_backends!(concurrent_gets_get_their_own_entries, a_transaction_reads_alone);

const ENTRIES: usize = 64;
const CLIENTS: usize = 16;

async fn stat(c: &mut RawConn, key: &str) -> u64 {
    let lines = ok(c, "stats").await;
    lines
        .iter()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no `{key}` in stats: {lines:?}"))
}

/// `/p` with entries `e0…` (`a` = i, `b` = `v<i>`), readable by `alice` too.
async fn fill(srv: &TestServer) {
    let mut root = srv.raw().await;
    for line in ["createdir /p", "addattr /p a int", "addattr /p b varchar(20)", "user_create alice apw"] {
        ok(&mut root, line).await;
    }
    for i in 0..ENTRIES {
        ok(&mut root, &format!("addentry /p/e{i} a {i} b v{i}")).await;
    }
}

/// Sixteen clients (two users, so two shapes) read, write and miss entries at once; each owns
/// the entries `i ≡ client (mod 16)` and must read back exactly what it last wrote there.
async fn hammer(srv: &TestServer) {
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let tcp = srv.tcp;
        tasks.push(tokio::spawn(async move {
            let mut c = if client % 4 == 3 {
                RawConn::login(tcp, "alice", Some("apw")).await
            } else {
                RawConn::login(tcp, "root", Some(common::ROOT_PASSWORD)).await
            };
            let owned: Vec<usize> = (client..ENTRIES).step_by(CLIENTS).collect();
            let mut values: Vec<i64> = owned.iter().map(|&i| i as i64).collect();
            for round in 0..120 {
                let at = round % owned.len();
                let i = owned[at];
                // alice has read rights only (mode of root's entries): root writes.
                if round % 5 == 0 && client % 4 != 3 {
                    values[at] = (client * 10_000 + round) as i64;
                    ok(&mut c, &format!("setattr /p/e{i} a {}", values[at])).await;
                }
                let got = ok(&mut c, &format!("getattr /p/e{i} a b")).await;
                assert_eq!(got, [format!("e{i}"), values[at].to_string(), format!("v{i}")], "client {client}");
                if round % 7 == 0 {
                    let (code, lines) = c.lines(&format!("getattr /p/missing{client} a")).await;
                    assert_eq!((code, lines), (1, vec![]), "a missing entry is its own reader's error");
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

async fn concurrent_gets_get_their_own_entries(b: Backend) {
    let srv = TestServer::start(b).await;
    fill(&srv).await;
    hammer(&srv).await;
    let mut root = srv.raw().await;
    let statements = stat(&mut root, "db_point_read_statements_total").await;
    let names = stat(&mut root, "db_point_read_names_total").await;
    match b {
        // SQLite reads in process: nothing to share.
        Backend::Sqlite => assert_eq!((statements, names), (0, 0)),
        Backend::Postgres => {
            assert!(statements > 0, "point reads went through the coalescing path");
            assert!(names > statements, "{names} names in {statements} statements: none shared");
        }
    }
    srv.assert_no_internal_errors();
    drop(srv);

    // Turned off: the same answers, no shared statement.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ardacat.toml");
    std::fs::write(&config, "db_point_read_batch_max = 1\n").unwrap();
    let srv = TestServer::start_with(TestDb::new(b).await, &["--config", config.to_str().unwrap()]).await;
    fill(&srv).await;
    hammer(&srv).await;
    let mut root = srv.raw().await;
    assert_eq!(stat(&mut root, "db_point_read_names_total").await, 0);
    srv.assert_no_internal_errors();
}

/// A session's transaction reads its own uncommitted write, however many other clients read the
/// same entry at the same time; they see the committed value until the commit, then the new one.
async fn a_transaction_reads_alone(b: Backend) {
    let srv = TestServer::start(b).await;
    fill(&srv).await;
    let mut writer = srv.raw().await;
    ok(&mut writer, "transaction").await;
    ok(&mut writer, "setattr /p/e1 a 777").await;
    let readers = |expect: &'static str| {
        (0..CLIENTS)
            .map(|_| {
                let tcp = srv.tcp;
                tokio::spawn(async move {
                    let mut c = RawConn::login(tcp, "root", Some(common::ROOT_PASSWORD)).await;
                    for _ in 0..100 {
                        assert_eq!(ok(&mut c, "getattr /p/e1 a").await, ["e1", expect]);
                    }
                })
            })
            .collect::<Vec<_>>()
    };
    let during = readers("1");
    // Read all the while the others do, so that its reads meet theirs.
    let mut reads = 0;
    while reads < 50 || !during.iter().all(|t| t.is_finished()) {
        assert_eq!(ok(&mut writer, "getattr /p/e1 a").await, ["e1", "777"], "the transaction's own write");
        reads += 1;
    }
    for t in during {
        t.await.unwrap();
    }
    ok(&mut writer, "commit").await;
    for t in readers("777") {
        t.await.unwrap();
    }
    srv.assert_no_internal_errors();
}
