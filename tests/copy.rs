//! `ardacat-server copy --from URL --to URL` end to end: SQLite → PostgreSQL → SQLite keeps the
//! whole catalogue (the same dump byte for byte) and the token signing key; a target that holds
//! anything is refused with a clear message, a non-zero exit, and nothing changed.

#[macro_use]
mod common;
#[path = "common/cli.rs"]
mod cli;
#[path = "common/dump_fixture.rs"]
mod fixture;

use std::process::Command;

use common::{Backend, ROOT_PASSWORD, RawConn, TestDb, TestServer, ok};

fn copy(from: &str, to: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ardacat-server"))
        .args(["copy", "--from", from, "--to", to])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run ardacat-server copy");
    let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code().unwrap_or(-1), s(out.stdout), s(out.stderr))
}

async fn wire_dump(srv: &TestServer, password: &str) -> Vec<String> {
    let mut c = RawConn::login(srv.tcp, "root", Some(password)).await;
    ok(&mut c, "dump /").await
}

async fn token_key(db: &TestDb) -> String {
    match db.backend {
        Backend::Postgres => {
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url).await.expect("connect");
            sqlx::query_scalar("SELECT value FROM settings WHERE key = 'token_key'")
                .fetch_one(&mut conn)
                .await
                .expect("token key")
        }
        Backend::Sqlite => {
            let path = db.url.strip_prefix("sqlite:").unwrap();
            let conn = rusqlite::Connection::open(path).expect("open");
            conn.query_row("SELECT value FROM settings WHERE key = 'token_key'", [], |r| r.get(0)).expect("token key")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_to_postgres_and_back() {
    let src = TestServer::start(Backend::Sqlite).await;
    fixture::build(src.tcp, ROOT_PASSWORD).await;
    let pw = fixture::NEW_ROOT_PASSWORD;
    let original = wire_dump(&src, pw).await;
    let src_db = src.kill();
    let key = token_key(&src_db).await;
    let pg = TestDb::new(Backend::Postgres).await;
    let (code, out, err) = copy(&src_db.url, &pg.url);
    assert_eq!(code, 0, "copy to PostgreSQL: {err}");
    assert!(out.contains("entries"), "{out}");
    let back = TestDb::new(Backend::Sqlite).await;
    let (code, _, err) = copy(&pg.url, &back.url);
    assert_eq!(code, 0, "copy back to SQLite: {err}");
    assert_eq!(token_key(&pg).await, key, "the token key did not reach PostgreSQL");
    assert_eq!(token_key(&back).await, key, "the token key did not come back");
    let on_pg = TestServer::start_with(pg, &[]).await;
    assert_eq!(wire_dump(&on_pg, pw).await, original, "PostgreSQL's copy dumps differently");
    let on_back = TestServer::start_with(back, &[]).await;
    assert_eq!(wire_dump(&on_back, pw).await, original, "the copy back dumps differently");
    let mut alice = RawConn::login(on_back.tcp, "alice", Some(fixture::ALICE_PASSWORD)).await;
    assert_eq!(ok(&mut alice, "whoami").await, ["alice"]);
}

/// A target with a collection, or with only a user, is refused; it stays as it was.
async fn refuses_a_non_empty_target(backend: Backend) {
    let src = TestServer::start(match backend {
        Backend::Sqlite => Backend::Postgres,
        Backend::Postgres => Backend::Sqlite,
    })
    .await;
    let mut c = RawConn::login(src.tcp, "root", Some(ROOT_PASSWORD)).await;
    ok(&mut c, "createdir /from").await;
    let src_db = src.kill();
    // A target a server has run on has its root user: not empty.
    let used = TestServer::start(backend).await;
    let mut c = RawConn::login(used.tcp, "root", Some(ROOT_PASSWORD)).await;
    ok(&mut c, "createdir /mine").await;
    let before = wire_dump(&used, ROOT_PASSWORD).await;
    let used_db = used.kill();
    let (code, _, err) = copy(&src_db.url, &used_db.url);
    assert_eq!(code, 1, "copy into a non-empty target: {err}");
    assert!(err.contains("the target database is not empty (it has collections); nothing was copied"), "{err}");
    let used = TestServer::start_with(used_db, &[]).await;
    assert_eq!(wire_dump(&used, ROOT_PASSWORD).await, before, "the refused copy changed the target");
    let only_users = TestServer::start(backend).await.kill();
    let (code, _, err) = copy(&src_db.url, &only_users.url);
    assert_eq!(code, 1);
    assert!(err.contains("it has users"), "{err}");
    let (code, _, err) = copy(&src_db.url, &src_db.url);
    assert_eq!(code, 1);
    assert!(err.contains("the same database"), "{err}");
}

on_both_backends!(refuses_a_non_empty_target);
