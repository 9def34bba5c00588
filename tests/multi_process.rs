//! Many frontends on one PostgreSQL database behave as one service (issue #14, item 3): three
//! real server processes on one database, clients spread over them. TCP sessions resume on any
//! process (and forged, foreign or expired ids are refused as unknown ones are); user, group,
//! ACL, mode and schema changes made on one process are in force on the others at the next
//! command after at most 250 ms, also after the change listener was cut; SOAP page tokens
//! continue on another process.

mod common;
#[path = "common/soap_raw.rs"]
mod soap_raw;

use std::time::{Duration, Instant};

use common::*;
use soap_raw::soap;

/// How soon a change made on one process must be in force on another.
const PROPAGATION: Duration = Duration::from_millis(250);

async fn three(extra: &[&str]) -> (TestServer, TestServer, TestServer) {
    let db = TestDb::new(Backend::Postgres).await;
    let a = TestServer::start_with(db, extra).await;
    let b = TestServer::start_with(a.db.share(), extra).await;
    let c = TestServer::start_with(a.db.share(), extra).await;
    (a, b, c)
}

fn text(r: &[u8]) -> String {
    String::from_utf8_lossy(r).into_owned()
}

fn code_of(r: &[u8]) -> i32 {
    text(r).split([' ', '\n']).next().and_then(|c| c.parse().ok()).unwrap_or(-1)
}

/// Runs `line` on `conn` until `done(reply)` holds. Fails if a command *started* more than
/// [`PROPAGATION`] after `since` still did not see the change.
async fn in_force_within(conn: &mut RawConn, line: &str, since: Instant, what: &str, done: impl Fn(&[u8]) -> bool) {
    loop {
        let started = since.elapsed();
        let r = conn.cmd(line).await;
        if done(&r) {
            return;
        }
        assert!(
            started <= PROPAGATION,
            "{what}: `{line}` started {started:?} after the change still answers {:?}",
            text(&r)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn session_login(srv: &TestServer, user: &str, pw: &str) -> (RawConn, u64) {
    let mut c = RawConn::login_with(srv.tcp, user, Some(pw), &["session"]).await;
    let r = c.cmd("pwd").await;
    let id = session_of(&r).unwrap_or_else(|| panic!("no session token in {:?}", text(&r)));
    (c, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_resume_on_any_process() {
    let (a, b, c) = three(&["--sessions", "allow"]).await;
    let mut root = a.raw().await;
    ok(&mut root, "createdir /s").await;
    ok(&mut root, "createdir /t").await;
    ok(&mut root, "user_create alice apw").await;

    // Issued on A, resumed on B and C; the directory travels with it.
    let (mut s, id) = session_login(&a, "alice", "apw").await;
    let marker = format!("\x04session{id}\x04");
    assert_eq!(text(&s.cmd("cd /s").await), format!("0\n{marker}"));
    drop(s);
    let mut s = RawConn::resume(b.tcp, id).await;
    assert_eq!(text(&s.cmd("pwd").await), format!("0\n/s\n{marker}"));
    assert_eq!(text(&s.cmd("whoami").await), format!("0\nalice\n{marker}"));
    assert_eq!(text(&s.cmd("cd /t").await), format!("0\n{marker}"));
    drop(s);
    // One command per connection, round robin over the three processes, as the original
    // client does with a session.
    for (i, srv) in [&c, &a, &b, &c].into_iter().enumerate() {
        let mut s = RawConn::resume(srv.tcp, id).await;
        let want = if i == 0 { "/t" } else { "/" };
        assert_eq!(text(&s.cmd("pwd").await), format!("0\n{want}\n{marker}"), "step {i}");
        if i == 0 {
            assert_eq!(text(&s.cmd("cd /").await), format!("0\n{marker}"));
        }
    }

    // A forged id (one bit changed, so the signature no longer matches) is refused like an
    // unknown one, on every process.
    for (srv, bad) in [(&a, id ^ 1), (&b, id ^ (1 << 40)), (&c, id + 1)] {
        let mut r = RawConn::resume(srv.tcp, bad).await;
        let e = text(&r.cmd("pwd").await);
        assert!(e.starts_with("4 "), "{bad}: {e:?}");
        assert!(r.closed().await);
    }

    // An id another catalogue (another database, another signing key) issued is refused.
    let other = TestServer::start_with(TestDb::new(Backend::Postgres).await, &["--sessions", "allow"]).await;
    let (_o, foreign) = session_login(&other, "root", ROOT_PASSWORD).await;
    let mut r = RawConn::resume(a.tcp, foreign).await;
    let e = text(&r.cmd("pwd").await);
    assert!(e.starts_with("4 "), "{e:?}");

    // A removed user's session is refused on every process.
    ok(&mut root, "user_remove alice").await;
    let mut r = RawConn::resume(c.tcp, id).await;
    let e = text(&r.cmd("pwd").await);
    assert!(e.starts_with("4 "), "a removed user: {e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_expire_everywhere() {
    let (a, b, _c) = three(&["--sessions", "force", "--idle-timeout", "2"]).await;
    let (s, id) = session_login(&a, "root", ROOT_PASSWORD).await;
    drop(s);
    let mut r = RawConn::resume(b.tcp, id).await;
    assert_eq!(code_of(&r.cmd("pwd").await), 0, "resumes within the idle timeout");
    drop(r);
    // Unused for longer than the idle timeout: unknown everywhere, also where it was issued.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    for srv in [&a, &b] {
        let mut r = RawConn::resume(srv.tcp, id).await;
        let e = text(&r.cmd("pwd").await);
        assert!(e.starts_with("4 ") && e.contains("unknown or expired"), "{e:?}");
    }
}

/// Whether a reply shows the change.
type Probe = dyn Fn(&[u8]) -> bool;

/// Every kind of change on A, seen by alice on B and C within [`PROPAGATION`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_are_in_force_everywhere_within_a_quarter_second() {
    let (a, b, c) = three(&[]).await;
    let mut root = a.raw().await;
    for d in ["/priv", "/grp", "/pub"] {
        ok(&mut root, &format!("createdir {d}")).await;
        ok(&mut root, &format!("addattr {d} x int")).await;
        ok(&mut root, &format!("addentry {d}/e1 x 1")).await;
    }
    ok(&mut root, "chmod /priv rwx------").await;
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, "grp_create team").await;
    ok(&mut root, "chown /grp root:team").await;
    ok(&mut root, "chmod /grp rwxrwx---").await;
    let mut on_b = b.raw_as("alice", "apw").await;
    let mut on_c = c.raw_as("alice", "apw").await;
    // Warm every cache on B and C: they have read the old state.
    for conn in [&mut on_b, &mut on_c] {
        fails(conn, "listentries /priv", 4).await;
        fails(conn, "listentries /grp", 4).await;
        assert_eq!(ok(conn, "listattr /pub").await.len(), 2);
    }
    let allowed = |r: &[u8]| code_of(r) == 0;
    let denied = |r: &[u8]| code_of(r) == 4;
    let steps: [(&str, &str, &str, &Probe); 7] = [
        ("ACL grant", "acl_add /priv alice r-x", "listentries /priv", &allowed),
        ("ACL revoke", "acl_remove /priv alice", "listentries /priv", &denied),
        ("group join", "grp_adduser team alice", "listentries /grp", &allowed),
        ("group leave", "grp_removeuser team alice", "listentries /grp", &denied),
        ("mode", "chmod /priv rwxr-xr-x", "listentries /priv", &allowed),
        ("owner", "chown /grp alice", "listentries /grp", &allowed),
        ("schema", "addattr /pub y int", "listattr /pub", &|r: &[u8]| text(r).contains("\ny\n")),
    ];
    for (what, change, probe, done) in steps {
        ok(&mut root, change).await;
        let since = Instant::now();
        in_force_within(&mut on_b, probe, since, what, done).await;
        in_force_within(&mut on_c, probe, since, what, done).await;
    }

    // The change listener of B is cut: B re-reads everything meanwhile and listens again.
    let mut pg = <sqlx::PgConnection as sqlx::Connection>::connect(&a.db.url).await.expect("connect");
    let cut: Vec<(bool,)> = sqlx::query_as(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    )
    .fetch_all(&mut pg)
    .await
    .expect("terminate listeners");
    assert_eq!(cut.len(), 3, "one listener per process");
    ok(&mut root, "chmod /priv rwx------").await;
    let since = Instant::now();
    in_force_within(&mut on_b, "listentries /priv", since, "mode after a lost listener", &denied).await;
    in_force_within(&mut on_c, "listentries /priv", since, "mode after a lost listener", &denied).await;
    // And back: every process listens again.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n: (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
        )
        .fetch_one(&mut pg)
        .await
        .expect("count listeners");
        if n.0 == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "the listeners did not come back: {}", n.0);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ok(&mut root, "chmod /priv rwxr-xr-x").await;
    let since = Instant::now();
    in_force_within(&mut on_b, "listentries /priv", since, "mode after reconnect", &allowed).await;
    in_force_within(&mut on_c, "listentries /priv", since, "mode after reconnect", &allowed).await;
}

// ---- SOAP over raw HTTP ----

fn el(name: &str, text: &str) -> String {
    format!("<m:{name}>{text}</m:{name}>")
}

/// The text of every `<…name>text</…name>` element in a response.
fn texts(xml: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&format!(":{name}>")).or_else(|| rest.find(&format!("<{name}>"))) {
        let after = &rest[i + name.len() + 2..];
        let end = after.find("</").unwrap_or(after.len());
        if !after.starts_with('<') || after[..end].is_empty() {
            out.push(after[..end].to_string());
        }
        rest = &after[end..];
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soap_tokens_and_changes_across_processes() {
    let (a, b, c) = three(&[]).await;
    let mut root = a.raw().await;
    ok(&mut root, "createdir /q").await;
    ok(&mut root, "addattr /q i int").await;
    for i in 0..12 {
        ok(&mut root, &format!("addentry /q/e{i:02} i {i}")).await;
    }
    // A query paged over the three processes: no row lost or repeated.
    let q = el("select", "/q:i") + &el("orderBy", "/q:i") + &el("pageSize", "5");
    let (st, r) = soap(a.http, "root", ROOT_PASSWORD, "query", &q).await;
    assert_eq!(st, 200, "{r}");
    let mut seen: Vec<String> = texts(&r, "value");
    let mut token = texts(&r, "token").pop().expect("a token");
    for srv in [&b, &c] {
        let (st, r) =
            soap(srv.http, "root", ROOT_PASSWORD, "nextQuery", &(el("token", &token) + &el("pageSize", "5"))).await;
        assert_eq!(st, 200, "{r}");
        seen.extend(texts(&r, "value"));
        if let Some(t) = texts(&r, "token").pop() {
            token = t;
        }
    }
    assert_eq!(seen, (0..12).map(|i| i.to_string()).collect::<Vec<_>>());

    // A grant on A is in force for a SOAP caller on B (whose credential cache holds the old
    // groups) within the bound.
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, "chmod /q rwx------").await;
    let list = el("select", "/q:i") + &el("pageSize", "1");
    let (st, r) = soap(b.http, "alice", "apw", "query", &list).await;
    assert_ne!(st, 200, "denied before the grant: {r}");
    ok(&mut root, "acl_add /q alice r-x").await;
    let since = Instant::now();
    loop {
        let started = since.elapsed();
        let (st, r) = soap(b.http, "alice", "apw", "query", &list).await;
        if st == 200 {
            break;
        }
        assert!(started <= PROPAGATION, "SOAP on B still denied {started:?} after the grant: {r}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
