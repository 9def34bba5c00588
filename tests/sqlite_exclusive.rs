//! A SQLite file kept to one server (`sqlite_exclusive`, SQLite's `unix-excl` VFS): the server
//! works as with shared access, across its pooled connections (a commit on one connection is
//! seen at once by a read on another: the WAL index they share is in the server's memory); no
//! other process can read the file while it runs (a rusqlite connection here, as the `sqlite3`
//! shell would be), and a second server on the file stops at start with the reason. Without the
//! setting another process reads the file while the server runs (what the online `sqlite3
//! .backup` of docs/operations.md relies on). Crash safety with the setting: `crash.rs`.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Backend, TestDb, TestServer, ok};

fn path_of(db: &TestDb) -> PathBuf {
    db.url.strip_prefix("sqlite:").expect("a SQLite URL").into()
}

/// What another process sees: the number of collections at `path`, read straight from the file.
fn outside_count(file: &PathBuf, path: &str) -> rusqlite::Result<i64> {
    let conn = rusqlite::Connection::open(file)?;
    conn.busy_timeout(Duration::from_millis(300))?;
    conn.query_row("SELECT count(*) FROM collections WHERE path = ?1", [path], |r| r.get(0))
}

/// Starts a second server on `url` and waits for it to give up; its exit code and stderr.
fn second_server(url: &str, extra: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ardacat-server"))
        .args(["--database", url, "--tcp-port", "0", "--http-port", "0"])
        .args(extra)
        .env("ARDACAT_ROOT_PASSWORD", common::ROOT_PASSWORD)
        .env_remove("ARDACAT_CONFIG")
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a second server");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("a second server on a file another server keeps to itself started serving");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err).expect("stderr");
    (status.code(), err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exclusive_file_is_the_servers_alone() {
    let db = TestDb::new(Backend::Sqlite).await;
    let (url, file) = (db.url.clone(), path_of(&db));
    let server = TestServer::start_with(db, &["--sqlite-exclusive", "true"]).await;
    let (mut writer, mut reader) = (server.raw().await, server.raw().await);
    ok(&mut writer, "createdir /x").await;
    ok(&mut writer, "addattr /x n int").await;
    // Each commit is read back at once on another connection of the pool, and by a transaction.
    for i in 0..100 {
        ok(&mut writer, &format!("addentry /x/e{i} n {i}")).await;
        assert_eq!(ok(&mut reader, &format!("getattr /x/e{i} n")).await, [format!("e{i}"), i.to_string()]);
    }
    ok(&mut writer, "transaction").await;
    ok(&mut writer, "setattr /x/e7 n 70").await;
    assert_eq!(ok(&mut reader, "getattr /x/e7 n").await, ["e7", "7"], "an uncommitted write is seen");
    ok(&mut writer, "commit").await;
    assert_eq!(ok(&mut reader, "getattr /x/e7 n").await, ["e7", "70"]);

    // Another process can neither read the file nor serve it.
    match outside_count(&file, "/x") {
        Err(e) => assert_eq!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy), "{e}"),
        Ok(n) => panic!("another process read the file while the server kept it ({n} collections)"),
    }
    for extra in [&["--sqlite-exclusive", "true"][..], &[]] {
        let (code, err) = second_server(&url, extra);
        assert_eq!(code, Some(1), "{extra:?}: {err}");
        assert!(err.contains("is in use by another process"), "{extra:?}: {err}");
    }
    // The first server is unharmed.
    assert_eq!(ok(&mut reader, "getattr /x/e99 n").await, ["e99", "99"]);

    // Once it is gone the file is anyone's, with every commit in it.
    let db = server.kill();
    assert_eq!(outside_count(&file, "/x").expect("read after the server stopped"), 1);
    let conn = rusqlite::Connection::open(&file).expect("open");
    let id: i64 = conn.query_row("SELECT id FROM collections WHERE path = '/x'", [], |r| r.get(0)).expect("id");
    let rows: i64 = conn.query_row(&format!("SELECT count(*) FROM e{id}"), [], |r| r.get(0)).expect("rows");
    assert_eq!(rows, 100);
    drop(conn);
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_file_is_readable_by_other_processes() {
    let db = TestDb::new(Backend::Sqlite).await;
    let file = path_of(&db);
    let server = TestServer::start_with(db, &[]).await;
    let mut c = server.raw().await;
    ok(&mut c, "createdir /y").await;
    assert_eq!(outside_count(&file, "/y").expect("another process reads the file"), 1);
    ok(&mut c, "createdir /y2").await;
    assert_eq!(outside_count(&file, "/y2").expect("and again"), 1);
}
