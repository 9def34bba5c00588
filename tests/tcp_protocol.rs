//! The TCP streaming protocol, byte for byte, against the real `ardacat-server` binary on both
//! backends: handshake, reply shapes, every error code, the amga.md §8.3 scenario, bulk upload,
//! transactions, session resume, CAN cancel of huge streams with bounded memory, hostile input
//! and injection attempts. Each scenario is one `async fn` run once per backend.

#[macro_use]
mod common;

use std::io::Write as _;
use std::time::{Duration, Instant};

use common::{
    Backend, REPEATED_GETATTR_SETUP, RawConn, RssMonitor, TestServer, getattr_plans, proc_status_kb, session_of,
};
use rand::{RngCore, SeedableRng};
use tokio::io::AsyncWriteExt;

on_both_backends!(
    handshake,
    reply_shapes,
    error_codes,
    scenario_8_3,
    upload,
    transactions,
    sessions,
    cancel_and_backpressure,
    bad_input,
    injection,
    indexes,
    repeated_getattr_follows_every_change,
);

const END: &str = "\x04\x04";
const SILENCE: Duration = Duration::from_millis(400);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The bytes of a successful reply with these data lines.
fn ok_reply(lines: &[&str]) -> String {
    let mut s = String::from("0\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(END);
    s
}

/// Run `line` and require exactly `want` back.
async fn exact(c: &mut RawConn, line: &str, want: &str) {
    let got = text(&c.cmd(line).await);
    assert_eq!(got, want, "reply to {line:?}");
}

/// Run `line` and require success with exactly these data lines.
async fn ok(c: &mut RawConn, line: &str, lines: &[&str]) {
    exact(c, line, &ok_reply(lines)).await;
}

/// Run `line` and require one error status line `<code> <message>` and the plain end marker;
/// returns the message.
async fn err(c: &mut RawConn, line: &str, code: u16) -> String {
    let got = text(&c.cmd(line).await);
    let prefix = format!("{code} ");
    let well_formed = got.starts_with(&prefix) && got.ends_with(&format!("\n{END}")) && got.matches('\n').count() == 1;
    assert!(well_formed, "{line:?}: expected one '{code} <message>' line and the end marker, got {got:?}");
    let msg = got[prefix.len()..got.len() - 3].to_string();
    assert!(!msg.trim().is_empty(), "{line:?}: empty error message");
    msg
}

/// Data lines of a successful reply (status and end marker checked).
async fn data(c: &mut RawConn, line: &str) -> Vec<String> {
    let got = text(&c.cmd(line).await);
    assert!(got.starts_with("0\n") && got.ends_with(END), "{line:?} failed: {got:?}");
    got[2..got.len() - 2].lines().map(String::from).collect()
}

/// `n` puts of `put e<i> <i>` into an open upload of `dir x`, then `commit`, written in big blocks
/// (the server answers none of the puts).
async fn bulk_load(c: &mut RawConn, dir: &str, n: usize) {
    c.send(format!("upload {dir} x\n").as_bytes()).await;
    let mut buf = Vec::with_capacity(2 << 20);
    for i in 0..n {
        writeln!(buf, "put e{i} {i}").expect("buffer");
        if buf.len() >= 1 << 20 {
            c.send(&buf).await;
            buf.clear();
        }
    }
    c.send(&buf).await;
    let before = c.timeout;
    c.timeout = Duration::from_secs(180);
    exact(c, "commit", &ok_reply(&[])).await;
    c.timeout = before;
}

/// Whether the server process is still running.
fn alive(srv: &mut TestServer) -> bool {
    matches!(srv.child.try_wait(), Ok(None))
}

// ------------------------------------------------------------------------------------------

/// Greeting, `OK`, silence after login, `pwd`, all byte for byte.
async fn handshake(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = RawConn::connect(srv.tcp).await;
    let greeting = text(&c.read_lines(3).await);
    let lines: Vec<&str> = greeting.split('\n').collect();
    assert_eq!(lines.len(), 4, "{greeting:?}");
    assert!(lines[0].starts_with("ARDA Metadata Server "), "banner {greeting:?}");
    assert_eq!(lines[1], "Protocol 2", "the original clients take the single digit after 'Protocol '");
    assert!(lines[2].split(' ').any(|o| o == "plain"), "options {:?}", lines[2]);
    assert!(!greeting.contains('\r'));
    assert_eq!(text(&c.silence(SILENCE).await), "", "nothing may follow the greeting until the client speaks");
    c.send(b"plain\n\n").await;
    assert_eq!(text(&c.read_lines(1).await), "OK\n");
    assert_eq!(text(&c.silence(SILENCE).await), "", "nothing after OK");
    c.send(format!("0 root\n5 {}\n\n", common::ROOT_PASSWORD).as_bytes()).await;
    assert_eq!(text(&c.silence(Duration::from_millis(800)).await), "", "nothing at all after the login block");
    exact(&mut c, "pwd", "0\n/\n\x04\x04").await;
    exact(&mut c, "whoami", "0\nroot\n\x04\x04").await;
    // Without --sessions force and without asking for one, no session token comes.
    assert_eq!(session_of(&c.cmd("pwd").await), None);

    // The same handshake dribbled in one byte per write, with CR LF line ends in the login.
    let mut c = RawConn::connect(srv.tcp).await;
    c.read_lines(3).await;
    for byte in b"plain\n\n" {
        c.send(&[*byte]).await;
    }
    assert_eq!(text(&c.read_lines(1).await), "OK\n");
    for byte in format!("0 root\r\n5 {}\r\n\r\n", common::ROOT_PASSWORD).as_bytes() {
        c.send(&[*byte]).await;
    }
    for byte in b"pwd\n" {
        c.send(&[*byte]).await;
    }
    assert_eq!(text(&c.reply().await), "0\n/\n\x04\x04");

    // Several commands in one write: replies come back in order, each with its own end marker.
    c.send(b"pwd\nwhoami\ncd /\npwd\n").await;
    assert_eq!(text(&c.reply().await), "0\n/\n\x04\x04");
    assert_eq!(text(&c.reply().await), "0\nroot\n\x04\x04");
    assert_eq!(text(&c.reply().await), "0\n\x04\x04");
    assert_eq!(text(&c.reply().await), "0\n/\n\x04\x04");
    assert_eq!(text(&c.silence(Duration::from_millis(200)).await), "");

    // SSL is refused cleanly (no TLS on this listener), and nothing is logged in.
    let mut c = RawConn::connect(srv.tcp).await;
    c.read_lines(3).await;
    c.send(b"ssl\n\n").await;
    let r = text(&c.silence(Duration::from_secs(2)).await);
    assert!(!r.starts_with("OK"), "ssl must not be accepted: {r:?}");
    assert!(c.closed().await);
}

/// A small fixture and the exact reply bytes of every read command.
async fn reply_shapes(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /d", &[]).await;
    ok(&mut c, "addattr /d a int", &[]).await;
    ok(&mut c, "addattr /d s varchar(20)", &[]).await;
    ok(&mut c, "addattr /d f float", &[]).await;
    ok(&mut c, "addentry /d/e1 a 1 s 'hello world' f 1.5", &[]).await;
    ok(&mut c, "addentry /d/e2 a 2", &[]).await;
    ok(&mut c, "addentries /d/e3 /d/e4", &[]).await;
    ok(&mut c, "createdir /d/sub", &[]).await;

    // getattr: per entry the name line, then one line per attribute; NULL is an empty line.
    ok(&mut c, "getattr /d a s", &["e1", "1", "hello world", "e2", "2", "", "e3", "", "", "e4", "", ""]).await;
    ok(&mut c, "getattr /d/e2 s f a", &["e2", "", "", "2"]).await;
    ok(&mut c, "getattr /d/e? f", &["e1", "1.5", "e2", "", "e3", "", "e4", ""]).await;
    ok(&mut c, "getattr /d/e1 FILE a", &["e1", "e1", "1"]).await;

    // selectattr: N lines per row, no name line.
    ok(&mut c, "selectattr /d:a /d:s 'a = 1'", &["1", "hello world"]).await;
    let mut rows: Vec<Vec<String>> =
        data(&mut c, "selectattr /d:FILE /d:a /d:s 'a > 0'").await.chunks(3).map(|r| r.to_vec()).collect();
    rows.sort();
    assert_eq!(rows, vec![vec!["e1", "1", "hello world"], vec!["e2", "2", ""]]);
    ok(&mut c, "selectattr /d:FILE 'a > 5'", &[]).await;
    ok(&mut c, "selectattr /d:a+10 /d:f*2 '/d:FILE = \"e1\"'", &["11", "3"]).await;

    // find: one name per line.
    ok(&mut c, "find /d 'a > 1'", &["e2"]).await;
    let mut all = data(&mut c, "find /d ''").await;
    all.sort();
    assert_eq!(all, ["e1", "e2", "e3", "e4"]);

    // dir: name/type pairs, collections first (full path), then entries.
    ok(&mut c, "dir /d", &["/d/sub", "collection", "e1", "entry", "e2", "entry", "e3", "entry", "e4", "entry"]).await;
    ok(&mut c, "dir /", &["/d", "collection"]).await;
    ok(&mut c, "ls /d", &["/d/sub", "/d/e1", "/d/e2", "/d/e3", "/d/e4"]).await;
    ok(&mut c, "listentries /d", &["/d/e1", "/d/e2", "/d/e3", "/d/e4"]).await;
    ok(&mut c, "listattr /d", &["a", "int", "s", "varchar(20)", "f", "float"]).await;
    // A sub-collection inherits its parent's schema unless created `plain`.
    ok(&mut c, "listattr /d/sub", &["a", "int", "s", "varchar(20)", "f", "float"]).await;
    ok(&mut c, "createdir /d/p plain", &[]).await;
    ok(&mut c, "listattr /d/p", &[]).await;
    ok(&mut c, "rmdir /d/p", &[]).await;
    ok(&mut c, "stat /d", &["/d", "collection", "root", "root", "rwxr-xr-x"]).await;
    let st = data(&mut c, "stat /d/e1").await;
    assert_eq!(st.len(), 5, "{st:?}");
    assert_eq!(&st[..4], ["/d/e1", "entry", "root", "root"]);
    assert_eq!(st[4].len(), 9, "mode {:?}", st[4]);

    // Sequences: one line per next.
    ok(&mut c, "sequence_create sq /d", &[]).await;
    ok(&mut c, "sequence_next /d/sq", &["1"]).await;
    ok(&mut c, "sequence_next /d/sq", &["2"]).await;
    ok(&mut c, "sequence_create sq10 /d 10 100", &[]).await;
    ok(&mut c, "sequence_next /d/sq10", &["100"]).await;
    ok(&mut c, "sequence_next /d/sq10", &["110"]).await;

    // Session and navigation.
    ok(&mut c, "whoami", &["root"]).await;
    let help = data(&mut c, "help").await;
    assert!(help.len() >= 20 && help.iter().any(|l| l.starts_with("getattr")), "{help:?}");
    ok(&mut c, "help pwd", &["pwd"]).await;
    ok(&mut c, "cd /d", &[]).await;
    ok(&mut c, "pwd", &["/d"]).await;
    ok(&mut c, "getattr e1 a", &["e1", "1"]).await;
    ok(&mut c, "cd sub", &[]).await;
    ok(&mut c, "pwd", &["/d/sub"]).await;
    ok(&mut c, "cd ..", &[]).await;
    ok(&mut c, "pwd", &["/d"]).await;
    ok(&mut c, "cd", &[]).await;
    ok(&mut c, "pwd", &["/"]).await;

    // Writes: status only; effects checked by reads.
    ok(&mut c, "setattr /d/e1 a 5 s 'two words'", &[]).await;
    ok(&mut c, "clearattr /d/e1 f", &[]).await;
    ok(&mut c, "getattr /d/e1 a s f", &["e1", "5", "two words", ""]).await;
    ok(&mut c, "updateattr /d a 'a + 10' 'a > 1'", &[]).await;
    ok(&mut c, "getattr /d/e? a", &["e1", "15", "e2", "12", "e3", "", "e4", ""]).await;
    ok(&mut c, "rm /d/e4", &[]).await;
    ok(&mut c, "listentries /d", &["/d/e1", "/d/e2", "/d/e3"]).await;
    ok(&mut c, "removeattr /d f", &[]).await;
    ok(&mut c, "listattr /d", &["a", "int", "s", "varchar(20)"]).await;
    ok(&mut c, "rmdir /d/sub", &[]).await;
    ok(&mut c, "dir /d", &["e1", "entry", "e2", "entry", "e3", "entry"]).await;

    // Quoting: an escaped quote inside a quoted value, and values that look like syntax.
    ok(&mut c, r"addentry /d/q s 'it\'s a \'test\''", &[]).await;
    ok(&mut c, "getattr /d/q s", &["q", "it's a 'test'"]).await;
    ok(&mut c, "setattr /d/q s '\"double\" and spaces '", &[]).await;
    ok(&mut c, "getattr /d/q s", &["q", "\"double\" and spaces "]).await;
}

/// Every error code in the situation that causes it; the connection continues after each.
async fn error_codes(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /d", &[]).await;
    ok(&mut c, "addattr /d a int", &[]).await;
    ok(&mut c, "addentry /d/e1 a 1", &[]).await;
    ok(&mut c, "sequence_create sq /d", &[]).await;

    // 1: not found
    err(&mut c, "cd /nope", 1).await;
    err(&mut c, "getattr /nope/x a", 1).await;
    err(&mut c, "getattr /d/nope a", 1).await;
    err(&mut c, "rm /d/nope", 1).await;
    err(&mut c, "rmdir /nope", 1).await;
    err(&mut c, "dir /nope", 1).await;
    err(&mut c, "ls /d/nope", 1).await;
    err(&mut c, "listattr /nope", 1).await;
    err(&mut c, "find /nope ''", 1).await;
    err(&mut c, "addentry /nope/x", 1).await;
    // 3: illegal command
    err(&mut c, "frobnicate", 3).await;
    err(&mut c, "addattr /d", 3).await;
    err(&mut c, "pwd extra", 3).await;
    err(&mut c, "addentry /d/x a", 3).await;
    err(&mut c, "put x 1", 3).await;
    err(&mut c, "getattr /d 'a", 3).await;
    // 8: illegal query
    err(&mut c, "selectattr /d:a 'a >>> 1'", 8).await;
    err(&mut c, "find /d 'a = = 1'", 8).await;
    err(&mut c, "updateattr /d a 'a +' 'a > 0'", 8).await;
    // 9: transaction
    err(&mut c, "commit", 9).await;
    err(&mut c, "abort", 9).await;
    ok(&mut c, "transaction", &[]).await;
    err(&mut c, "transaction", 9).await;
    ok(&mut c, "abort", &[]).await;
    // 10: no such attribute
    err(&mut c, "getattr /d nosuch", 10).await;
    err(&mut c, "setattr /d/e1 nosuch 1", 10).await;
    err(&mut c, "selectattr /d:nosuch ''", 10).await;
    err(&mut c, "removeattr /d nosuch", 10).await;
    // 11: not empty
    err(&mut c, "rmdir /d", 11).await;
    // 15: exists
    err(&mut c, "addattr /d a int", 15).await;
    let msg = err(&mut c, "addentry /d/e1", 15).await;
    assert!(msg.contains("/d/e1"), "the message names the entry: {msg:?}");
    ok(&mut c, "createdir /d/sub", &[]).await;
    err(&mut c, "addentry /d/sub", 15).await;
    // 16: directory exists
    err(&mut c, "createdir /d", 16).await;
    err(&mut c, "createdir /d/sub", 16).await;
    // 17: not a sequence
    err(&mut c, "sequence_next /d/e1", 17).await;
    err(&mut c, "sequence_next /d/nosuch", 17).await;
    // 18: invalid value
    err(&mut c, "addentry /d/e2 a notanint", 18).await;
    err(&mut c, "setattr /d/e1 a 1.5x", 18).await;
    err(&mut c, "addattr /d b nosuchtype", 18).await;
    // Nothing of the failed writes is there.
    ok(&mut c, "dir /d", &["/d/sub", "collection", "e1", "entry"]).await;
    ok(&mut c, "getattr /d a", &["e1", "1"]).await;

    // 4: permission denied.
    ok(&mut c, "user_create bob bobpw", &[]).await;
    ok(&mut c, "createdir /priv", &[]).await;
    ok(&mut c, "addattr /priv x int", &[]).await;
    ok(&mut c, "addentry /priv/p1 x 7", &[]).await;
    ok(&mut c, "chmod /priv 700", &[]).await;
    let mut bob = srv.raw_as("bob", "bobpw").await;
    ok(&mut bob, "whoami", &["bob"]).await;
    err(&mut bob, "user_create eve evepw", 4).await;
    err(&mut bob, "getattr /priv x", 4).await;
    err(&mut bob, "dir /priv", 4).await;
    err(&mut bob, "ls /priv", 4).await;
    err(&mut bob, "listentries /priv", 4).await;
    err(&mut bob, "selectattr /priv:x ''", 4).await;
    err(&mut bob, "find /priv ''", 4).await;
    err(&mut bob, "cd /priv", 4).await;
    err(&mut bob, "addentry /priv/p2", 4).await;
    err(&mut bob, "createdir /bobdir", 4).await;
    err(&mut bob, "sudo root", 4).await;
    // 4 for a missing entry inside it too: no existence leaks through the permission check.
    err(&mut bob, "getattr /priv/nothere x", 4).await;
    ok(&mut bob, "getattr /d/e1 a", &["e1", "1"]).await;
    ok(&mut c, "getattr /priv x", &["p1", "7"]).await;

    // 4: wrong password: nothing after the login block, the first command gets 4, then close.
    let mut w = RawConn::login(srv.tcp, "root", Some("not-the-password")).await;
    assert_eq!(text(&w.silence(SILENCE).await), "");
    let r = text(&w.cmd("pwd").await);
    assert!(r.starts_with("4 ") && r.ends_with(&format!("\n{END}")), "{r:?}");
    assert!(w.closed().await, "the connection closes after a failed login");
    let mut w = RawConn::login(srv.tcp, "nosuchuser", Some("x")).await;
    let r = text(&w.cmd("whoami").await);
    assert!(r.starts_with("4 "), "{r:?}");
    assert!(w.closed().await);
    // The good connections are unaffected.
    ok(&mut c, "whoami", &["root"]).await;

    // 19: a line longer than --max-line; error then close.
    let srv = TestServer::start_flags(b, &["--max-line", "4096"]).await;
    let mut c = srv.raw().await;
    ok(&mut c, &format!("help {}", "x".repeat(4000)), &[]).await;
    let r = text(&c.cmd(&format!("pwd {}", "x".repeat(5000))).await);
    assert!(r.starts_with("19 ") && r.ends_with(&format!("\n{END}")), "{r:?}");
    assert!(c.closed().await, "framing is lost after a too long line: the server closes");
    let mut c = srv.raw().await;
    ok(&mut c, "pwd", &["/"]).await;
}

/// amga.md §8.3, end to end over raw bytes, with the negative cases.
async fn scenario_8_3(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    // 1-3
    ok(&mut c, "createdir /pytest", &[]).await;
    ok(&mut c, "addentries /pytest/a /pytest/b /pytest/c", &[]).await;
    ok(&mut c, "addattr /pytest events int", &[]).await;
    ok(&mut c, "addattr /pytest eventGen varchar(20)", &[]).await;
    ok(&mut c, "addattr /pytest sssin float", &[]).await;
    ok(&mut c, "addattr /pytest l1 int", &[]).await;
    // 4
    ok(&mut c, "listattr /pytest", &["events", "int", "eventGen", "varchar(20)", "sssin", "float", "l1", "int"]).await;
    // 5
    for n in 0..10 {
        ok(&mut c, &format!("addentry /pytest/t{n} events '{n}00' eventGen 'myGen' sssin '{n}.5' l1 {n}"), &[]).await;
    }
    // 6
    let mut want: Vec<String> = Vec::new();
    for n in ["a", "b", "c"] {
        want.extend([n.to_string(), String::new(), String::new(), String::new()]);
    }
    for n in 0..10 {
        want.extend([format!("t{n}"), "myGen".into(), format!("{n}.5"), format!("{}", n * 100)]);
    }
    let want_refs: Vec<&str> = want.iter().map(String::as_str).collect();
    ok(&mut c, "getattr /pytest eventGen sssin events", &want_refs).await;
    // 7
    ok(&mut c, "createdir /pytest/testdir", &[]).await;
    let mut dir = vec!["/pytest/testdir".to_string(), "collection".into()];
    for n in ["a", "b", "c"].into_iter().map(String::from).chain((0..10).map(|n| format!("t{n}"))) {
        dir.extend([n, "entry".into()]);
    }
    let dir_refs: Vec<&str> = dir.iter().map(String::as_str).collect();
    ok(&mut c, "dir /pytest", &dir_refs).await;
    // 8
    ok(&mut c, "createdir /pylock", &[]).await;
    ok(&mut c, "addattr /pylock id int", &[]).await;
    ok(&mut c, "addentry /pylock/lock id '4711'", &[]).await;
    // 9
    ok(
        &mut c,
        "selectattr /pytest:eventGen /pytest:sssin /pytest:events '/pytest:FILE=\"t1\"'",
        &["myGen", "1.5", "100"],
    )
    .await;
    // 10: the join matches nothing (4711), then one entry (300 = t3's events).
    ok(&mut c, "updateattr /pytest sssin 'sssin + 1' '/pytest:events = /pylock:id'", &[]).await;
    ok(&mut c, "getattr /pytest/t3 sssin", &["t3", "3.5"]).await;
    ok(&mut c, "addentry /pylock/lock2 id 300", &[]).await;
    ok(&mut c, "updateattr /pytest sssin 'sssin + 1' '/pytest:events = /pylock:id'", &[]).await;
    ok(
        &mut c,
        "getattr /pytest/t? sssin",
        &[
            "t0", "0.5", "t1", "1.5", "t2", "2.5", "t3", "4.5", "t4", "4.5", "t5", "5.5", "t6", "6.5", "t7", "7.5",
            "t8", "8.5", "t9", "9.5",
        ],
    )
    .await;
    // 11
    ok(&mut c, "setattr /pytest/? events '42'", &[]).await;
    ok(&mut c, "getattr /pytest/? events", &["a", "42", "b", "42", "c", "42"]).await;
    ok(&mut c, "getattr /pytest/t1 events", &["t1", "100"]).await;
    // negative cases
    err(&mut c, "createdir /pytest", 16).await;
    err(&mut c, "addattr /pytest events int", 15).await;
    err(&mut c, "rmdir /pytest", 11).await;
    err(&mut c, "cd /pytest/nothere", 1).await;
    err(&mut c, "rm /pytest/nothere", 1).await;
    err(&mut c, "sequence_next /pytest/t1", 17).await;
    // 12
    ok(&mut c, "rmdir /pytest/testdir", &[]).await;
    ok(&mut c, "rm /pytest/*", &[]).await;
    ok(&mut c, "dir /pytest", &[]).await;
    for a in ["events", "eventGen", "sssin", "l1"] {
        ok(&mut c, &format!("removeattr /pytest {a}"), &[]).await;
    }
    ok(&mut c, "listattr /pytest", &[]).await;
    // 13
    ok(&mut c, "sequence_create seq /pytest", &[]).await;
    ok(&mut c, "sequence_next /pytest/seq", &["1"]).await;
    ok(&mut c, "sequence_next /pytest/seq", &["2"]).await;
    ok(&mut c, "sequence_remove /pytest/seq", &[]).await;
    err(&mut c, "sequence_next /pytest/seq", 17).await;
    // 14
    ok(&mut c, "rm /pylock/*", &[]).await;
    ok(&mut c, "removeattr /pylock id", &[]).await;
    ok(&mut c, "rmdir /pytest", &[]).await;
    ok(&mut c, "rmdir /pylock", &[]).await;
    err(&mut c, "cd /pytest", 1).await;
    err(&mut c, "rmdir /pytest", 1).await;
    ok(&mut c, "dir /", &[]).await;
}

/// An upload that commits on its own leaves PostgreSQL's planner statistics of the table behind
/// (ten entries: below autovacuum's threshold, so only the server can have gathered them); a
/// single `addentry` and an upload inside a user transaction leave that to autovacuum.
#[tokio::test]
async fn an_upload_gathers_the_first_planner_statistics_postgres() {
    let srv = TestServer::start(Backend::Postgres).await;
    let mut c = srv.raw().await;
    for dir in ["/st", "/one", "/tx"] {
        ok(&mut c, &format!("createdir {dir}"), &[]).await;
        ok(&mut c, &format!("addattr {dir} n int"), &[]).await;
    }
    let mut buf = b"upload /st n\n".to_vec();
    for i in 0..10 {
        writeln!(buf, "put s{i} {i}").expect("buffer");
    }
    c.send(&buf).await;
    exact(&mut c, "commit", &ok_reply(&[])).await;
    ok(&mut c, "addentry /one/x n 1", &[]).await;
    ok(&mut c, "transaction", &[]).await;
    c.send(b"upload /tx n\nput t1 1\n").await;
    exact(&mut c, "commit", &ok_reply(&[])).await;
    ok(&mut c, "commit", &[]).await;
    for (dir, gathered) in [("/one", false), ("/st", true), ("/tx", false)] {
        assert_eq!(common::pg_planner_statistics(&srv.db, dir).await, [(dir.to_string(), gathered)]);
    }
    ok(&mut c, "selectattr /st:n '/st:n > 7'", &["8", "9"]).await;
}

/// upload/put/commit/abort: no replies to upload and put, commit's status is the very next
/// thing on the wire, bad puts store nothing, 10k entries in one upload.
async fn upload(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /up", &[]).await;
    ok(&mut c, "addattr /up n int", &[]).await;
    ok(&mut c, "addattr /up s varchar(32)", &[]).await;

    c.send(b"upload /up n s\n").await;
    assert_eq!(text(&c.silence(SILENCE).await), "", "no reply to upload");
    c.send(b"put x1 1 one\n").await;
    c.send(b"put x2 2 'two words'\n").await;
    assert_eq!(text(&c.silence(SILENCE).await), "", "no reply to put");
    exact(&mut c, "commit", &ok_reply(&[])).await;
    assert_eq!(text(&c.silence(Duration::from_millis(200)).await), "", "nothing after commit's reply");
    ok(&mut c, "getattr /up n s", &["x1", "1", "one", "x2", "2", "two words"]).await;

    // abort: nothing stored.
    c.send(b"upload /up n s\nput y1 1 a\nput y2 2 b\n").await;
    exact(&mut c, "abort", &ok_reply(&[])).await;
    ok(&mut c, "listentries /up", &["/up/x1", "/up/x2"]).await;

    // A bad value: no reply to the put, commit fails, nothing of the upload is stored.
    c.send(b"upload /up n s\nput z1 1 a\nput z2 notanint b\nput z3 3 c\n").await;
    assert_eq!(text(&c.silence(SILENCE).await), "", "a bad put gets no reply either");
    err(&mut c, "commit", 18).await;
    // Wrong number of values.
    c.send(b"upload /up n s\nput z1 1 a\nput z2 2\n").await;
    err(&mut c, "commit", 3).await;
    // An entry that already exists.
    c.send(b"upload /up n s\nput z1 1 a\nput x1 2 b\n").await;
    err(&mut c, "commit", 15).await;
    // An unknown attribute.
    c.send(b"upload /up n nosuch\nput z1 1 a\n").await;
    let code = text(&c.cmd("commit").await);
    assert!(code.starts_with("10 ") || code.starts_with("1 "), "{code:?}");
    // A bad put after several thousand good ones (the upload writes in chunks as it goes):
    // still nothing stored.
    let mut buf = b"upload /up n s\n".to_vec();
    for i in 0..5000 {
        writeln!(buf, "put w{i} {i} v{i}").expect("buffer");
    }
    buf.extend_from_slice(b"put wbad x y\nput wlast 1 z\n");
    c.send(&buf).await;
    err(&mut c, "commit", 18).await;
    // Another command inside an upload spoils it.
    c.send(b"upload /up n s\nput v1 1 a\n").await;
    c.send(b"pwd\n").await;
    assert_eq!(text(&c.silence(SILENCE).await), "", "commands inside an upload are not answered");
    err(&mut c, "commit", 3).await;
    ok(&mut c, "listentries /up", &["/up/x1", "/up/x2"]).await;
    ok(&mut c, "pwd", &["/"]).await;

    // 10k entries in one upload.
    let t = Instant::now();
    let mut buf = b"upload /up n s\n".to_vec();
    for i in 0..10_000 {
        writeln!(buf, "put u{i:05} {i} 'value {i}'").expect("buffer");
    }
    c.send(&buf).await;
    exact(&mut c, "commit", &ok_reply(&[])).await;
    eprintln!("[{b:?}] upload of 10k entries: {:?}", t.elapsed());
    let names = data(&mut c, "listentries /up").await;
    assert_eq!(names.len(), 10_002);
    ok(&mut c, "getattr /up/u09999 n s", &["u09999", "9999", "value 9999"]).await;
    ok(&mut c, "selectattr /up:s '/up:n = 4321'", &["value 4321"]).await;

    // Inside a user transaction: commit ends the upload; abort of the transaction removes it.
    ok(&mut c, "transaction", &[]).await;
    c.send(b"upload /up n s\nput t1 1 a\n").await;
    exact(&mut c, "commit", &ok_reply(&[])).await;
    ok(&mut c, "getattr /up/t1 n", &["t1", "1"]).await;
    ok(&mut c, "abort", &[]).await;
    err(&mut c, "getattr /up/t1 n", 1).await;
}

/// transaction / commit / abort; abort leaves nothing; isolation from other connections.
async fn transactions(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    let mut other = srv.raw().await;
    ok(&mut c, "createdir /t", &[]).await;
    ok(&mut c, "addattr /t a int", &[]).await;

    ok(&mut c, "transaction", &[]).await;
    ok(&mut c, "addentry /t/x a 1", &[]).await;
    ok(&mut c, "createdir /t/sub", &[]).await;
    ok(&mut c, "getattr /t/x a", &["x", "1"]).await;
    // Another connection does not see uncommitted work (and is not blocked by it).
    ok(&mut other, "dir /t", &[]).await;
    // Schema changes are transactional too. (On PostgreSQL they lock the collection's table
    // until the end of the transaction, so other readers of /t would wait.)
    ok(&mut c, "addattr /t b int", &[]).await;
    ok(&mut c, "listattr /t", &["a", "int", "b", "int"]).await;
    ok(&mut c, "abort", &[]).await;
    ok(&mut c, "dir /t", &[]).await;
    ok(&mut c, "listattr /t", &["a", "int"]).await;

    ok(&mut c, "begin", &[]).await;
    ok(&mut c, "addentry /t/y a 2", &[]).await;
    ok(&mut c, "addentry /t/z a 3", &[]).await;
    ok(&mut c, "setattr /t/y a 20", &[]).await;
    ok(&mut c, "commit", &[]).await;
    ok(&mut other, "getattr /t a", &["y", "20", "z", "3"]).await;

    // A failed statement inside a transaction does not poison it: the rest commits.
    ok(&mut c, "transaction", &[]).await;
    ok(&mut c, "addentry /t/w a 4", &[]).await;
    err(&mut c, "addentry /t/w a 5", 15).await;
    err(&mut c, "addentry /t/v a bad", 18).await;
    ok(&mut c, "addentry /t/v a 6", &[]).await;
    ok(&mut c, "commit", &[]).await;
    ok(&mut other, "getattr /t a", &["v", "6", "w", "4", "y", "20", "z", "3"]).await;

    // rollback is a synonym of abort.
    ok(&mut c, "transaction", &[]).await;
    ok(&mut c, "rm /t/*", &[]).await;
    ok(&mut c, "rollback", &[]).await;
    ok(&mut c, "listentries /t", &["/t/v", "/t/w", "/t/y", "/t/z"]).await;

    // A connection that goes away with an open transaction leaves nothing behind.
    ok(&mut c, "transaction", &[]).await;
    ok(&mut c, "addentry /t/gone a 1", &[]).await;
    drop(c);
    let mut c = srv.raw().await;
    // The write lock of the dropped connection is released, so new writes go through.
    ok(&mut c, "addentry /t/after a 1", &[]).await;
    ok(&mut c, "listentries /t", &["/t/after", "/t/v", "/t/w", "/t/y", "/t/z"]).await;
}

/// `--sessions force`: every reply carries `\x04session<id>\x04`; `resume<id>` on a new
/// connection gets no OK, no login, and the saved cwd; open transactions are not carried over.
async fn sessions(b: Backend) {
    let srv = TestServer::start_flags(b, &["--sessions", "force"]).await;
    let mut c = srv.raw().await;
    let r = c.cmd("pwd").await;
    let id = session_of(&r).unwrap_or_else(|| panic!("no session token in {:?}", text(&r)));
    let marker = format!("\x04session{id}\x04");
    assert_eq!(text(&r), format!("0\n/\n{marker}"));
    assert!(r[r.len() - marker.len() + 8..r.len() - 1].iter().all(u8::is_ascii_digit));
    exact(&mut c, "createdir /s", &format!("0\n{marker}")).await;
    let e = text(&c.cmd("cd /nope").await);
    assert!(e.starts_with("1 ") && e.ends_with(&format!("\n{marker}")), "errors carry the token too: {e:?}");
    exact(&mut c, "addattr /s a int", &format!("0\n{marker}")).await;
    exact(&mut c, "cd /s", &format!("0\n{marker}")).await;
    // While a transaction is open no token is sent: the client must keep this connection, as
    // the transaction cannot outlive it.
    exact(&mut c, "transaction", "0\n\x04\x04").await;
    exact(&mut c, "addentry kept a 1", "0\n\x04\x04").await;
    err(&mut c, "cd /nope", 1).await;
    exact(&mut c, "commit", &format!("0\n{marker}")).await;
    exact(&mut c, "transaction", "0\n\x04\x04").await;
    exact(&mut c, "addentry pending a 1", "0\n\x04\x04").await;
    // Likewise during an upload (commit's reply is the first one after upload and put).
    c.send(b"upload /s a\nput up1 5\n").await;
    exact(&mut c, "commit", "0\n\x04\x04").await;
    drop(c);

    let mut r = RawConn::resume(srv.tcp, id).await;
    assert_eq!(text(&r.silence(Duration::from_millis(500)).await), "", "no OK after a plain resume");
    exact(&mut r, "pwd", &format!("0\n/s\n{marker}")).await;
    exact(&mut r, "whoami", &format!("0\nroot\n{marker}")).await;
    let e = text(&r.cmd("commit").await);
    assert!(e.starts_with("9 "), "the transaction is not carried over: {e:?}");
    exact(&mut r, "listentries /s", &format!("0\n/s/kept\n{marker}")).await;
    exact(&mut r, "addentry e1 a 2", &format!("0\n{marker}")).await;
    upload_outside_transaction(&mut r, &marker).await;
    exact(&mut r, "cd /", &format!("0\n{marker}")).await;
    drop(r);

    // The original client: one command per connection, each a resume.
    for (line, want) in [("pwd", "0\n/\n"), ("cd /s", "0\n"), ("getattr e1 a", "0\ne1\n2\n"), ("pwd", "0\n/s\n")] {
        let mut r = RawConn::resume(srv.tcp, id).await;
        exact(&mut r, line, &format!("{want}{marker}")).await;
    }
    // A second login gets a session of its own.
    let mut c2 = srv.raw().await;
    let id2 = session_of(&c2.cmd("pwd").await).expect("token");
    assert_ne!(id, id2);
    // An unknown session id: the first command is refused, then the connection closes.
    let bogus = if id == 1 { 2 } else { 1 };
    let mut r = RawConn::resume(srv.tcp, bogus).await;
    let e = text(&r.cmd("pwd").await);
    assert!(e.starts_with("4 "), "{e:?}");
    assert!(r.closed().await);
}

/// An upload outside a transaction: no token until its commit.
async fn upload_outside_transaction(r: &mut RawConn, marker: &str) {
    r.send(b"upload /s a\nput up2 6\n").await;
    exact(r, "commit", &format!("0\n{marker}")).await;
    exact(r, "getattr /s/up2 a", &format!("0\nup2\n6\n{marker}")).await;
    exact(r, "rm /s/up2", &format!("0\n{marker}")).await;
}

/// CAN cancel of a huge query, another connection answering meanwhile, and a slow reader —
/// with the server's memory bounded throughout.
async fn cancel_and_backpressure(b: Backend) {
    let rows = match b {
        Backend::Sqlite => 1_000_000,
        Backend::Postgres => 200_000,
    };
    let srv = TestServer::start(b).await;
    let pid = srv.pid();
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /big", &[]).await;
    ok(&mut c, "addattr /big x int", &[]).await;
    let t = Instant::now();
    bulk_load(&mut c, "/big", rows).await;
    eprintln!("[{b:?}] loaded {rows} entries by upload in {:?}", t.elapsed());
    ok(&mut c, &format!("getattr /big/e{} x", rows - 1), &[&format!("e{}", rows - 1), &format!("{}", rows - 1)]).await;
    let rss_before = proc_status_kb(pid, "VmRSS").unwrap_or(0);
    let monitor = RssMonitor::start(pid);
    // Every row is repeated ten times over, so even 200k rows are more than the socket buffers hold.
    let queries = [
        "getattr /big x x x x x x x x x x".to_string(),
        "selectattr /big:FILE /big:x /big:x /big:x /big:x /big:x /big:x /big:x /big:x /big:x 'x >= 0'".to_string(),
    ];
    for q in &queries {
        let t = Instant::now();
        c.send(format!("{q}\n").as_bytes()).await;
        let mut head = Vec::new();
        while head.len() < 8192 {
            let chunk = c.read_some(8192 - head.len()).await;
            assert!(!chunk.is_empty(), "closed");
            head.extend(chunk);
        }
        assert!(head.starts_with(b"0\ne"), "{q}: {:?}", text(&head[..40]));
        // Another connection is served while this one streams.
        let mut c2 = srv.raw().await;
        ok(&mut c2, "pwd", &["/"]).await;
        ok(&mut c2, "getattr /big/e5 x", &["e5", "5"]).await;
        c.send(b"\x18").await;
        let (n, tail) = c.drain_reply(512).await;
        let tail = text(&tail);
        let cut = tail.rfind('\x18').unwrap_or_else(|| panic!("{q}: no CAN line at the end: {tail:?}"));
        assert!(cut > 0 && tail[..cut].ends_with('\n'), "the CAN line starts a line: {tail:?}");
        let can_line = &tail[cut..];
        assert!(can_line.starts_with("\x1820 ") && can_line.ends_with(&format!("\n{END}")), "{can_line:?}");
        assert_eq!(can_line.matches('\n').count(), 1, "{can_line:?}");
        eprintln!("[{b:?}] {q:.30}…: cancelled after {} KB of reply in {:?}", (head.len() + n) / 1024, t.elapsed());
        // The same connection is in step again.
        ok(&mut c, "pwd", &["/"]).await;
    }

    // A slow reader: a trickle for a few seconds, memory stays flat, then cancel.
    c.send(format!("{}\n", queries[0]).as_bytes()).await;
    let t = Instant::now();
    let mut got = 0;
    while t.elapsed() < Duration::from_secs(4) {
        got += c.read_some(4096).await.len();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rss_slow = proc_status_kb(pid, "VmRSS").unwrap_or(0);
    c.send(b"\x18").await;
    let (_, tail) = c.drain_reply(64).await;
    assert!(text(&tail).contains("\x1820 "), "{:?}", text(&tail));
    ok(&mut c, "pwd", &["/"]).await;

    // A cancel that arrives after the reply ended is harmless.
    exact(&mut c, "getattr /big/e7 x", &ok_reply(&["e7", "7"])).await;
    c.send(b"\x18").await;
    ok(&mut c, "whoami", &["root"]).await;

    // A client that keeps sending while it does not read its reply: the server stops reading
    // (TCP pushes back) rather than queueing the input in memory.
    let mut f = srv.raw().await;
    ok(&mut f, "pwd", &["/"]).await;
    f.send(format!("{}\n", queries[0]).as_bytes()).await;
    let mut line = b"help ".to_vec();
    line.resize(1 << 20, b'x');
    line.push(b'\n');
    let mut flooded = 0usize;
    let flood = async {
        while f.stream.write_all(&line).await.is_ok() {
            flooded += line.len();
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(3), flood).await;
    let rss_flood = proc_status_kb(pid, "VmRSS").unwrap_or(0);
    eprintln!(
        "[{b:?}] flood while not reading: {} MB accepted in 3 s, server RSS {} MB",
        flooded >> 20,
        rss_flood / 1024
    );
    assert!(flooded < 64 << 20, "the server kept reading ({} MB) while its reply was blocked", flooded >> 20);
    drop(f);
    ok(&mut c, "pwd", &["/"]).await;

    let peak = monitor.stop();
    let hwm = proc_status_kb(pid, "VmHWM").unwrap_or(0);
    eprintln!(
        "[{b:?}] server RSS: {} MB before streaming, {} MB while a slow reader trickled {} KB, peak {} MB while \
         streaming; VmHWM (whole run incl. loading) {} MB",
        rss_before / 1024,
        rss_slow / 1024,
        got / 1024,
        peak / 1024,
        hwm / 1024
    );
    assert!(peak < 300 * 1024, "server RSS peaked at {} MB while streaming", peak / 1024);
    assert!(rss_slow < 300 * 1024);
    // Nothing was lost or changed by the cancels.
    ok(&mut c, &format!("getattr /big/e{} x", rows / 2), &[&format!("e{}", rows / 2), &format!("{}", rows / 2)]).await;
}

/// Garbage, huge lines, bad quotes, NUL, half-close, invalid UTF-8: clean errors, the server
/// keeps serving, nothing changes.
async fn bad_input(b: Backend) {
    let mut srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /keep", &[]).await;
    ok(&mut c, "addattr /keep v varchar(50)", &[]).await;
    ok(&mut c, "addentry /keep/k1 v 'precious value'", &[]).await;
    let snapshot = c.cmd("getattr /keep v").await;
    let listing = c.cmd("dir /").await;

    // Unterminated quotes: 3, and the connection goes on.
    err(&mut c, "addentry /keep/k2 v 'abc", 3).await;
    err(&mut c, "getattr '/keep v", 3).await;
    ok(&mut c, "pwd", &["/"]).await;
    // NUL bytes in a line: 3, the connection goes on.
    c.send(b"addentry /keep/k3\0 v x\n").await;
    let r = text(&c.reply().await);
    assert!(r.starts_with("3 ") && r.ends_with(&format!("\n{END}")), "{r:?}");
    c.send(b"pw\0d\n").await;
    assert!(text(&c.reply().await).starts_with("3 "));
    ok(&mut c, "pwd", &["/"]).await;
    // Invalid UTF-8: 3, the connection goes on.
    c.send(b"addentry /keep/\xff\xfe v x\n").await;
    let r = text(&c.reply().await);
    assert!(r.starts_with("3 ") && r.ends_with(&format!("\n{END}")), "{r:?}");
    c.send(b"cd /\xc3\n").await;
    assert!(text(&c.reply().await).starts_with("3 "));
    // Empty and blank lines, CR LF.
    err(&mut c, "", 3).await;
    err(&mut c, "   ", 3).await;
    c.send(b"pwd\r\n").await;
    assert_eq!(text(&c.reply().await), "0\n/\n\x04\x04");
    ok(&mut c, "whoami", &["root"]).await;

    // Random binary garbage on a connection of its own (deterministic seed).
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed_a7da);
    let mut g = srv.raw().await;
    ok(&mut g, "pwd", &["/"]).await;
    let mut garbage = vec![0u8; 256 * 1024];
    rng.fill_bytes(&mut garbage);
    g.send(&garbage).await;
    g.send(b"\n").await;
    let answer = g.silence(Duration::from_secs(2)).await;
    assert!(!answer.is_empty(), "the garbage gets error replies");
    assert!(alive(&mut srv), "server died on garbage");
    drop(g);
    // Garbage before and during the handshake.
    let mut g = RawConn::connect(srv.tcp).await;
    g.read_lines(3).await;
    g.stream.write_all(&garbage[..4096]).await.ok();
    drop(g);
    let mut g = RawConn::connect(srv.tcp).await;
    g.read_lines(3).await;
    g.send(b"plain\n\n").await;
    g.read_lines(1).await;
    g.stream.write_all(&garbage[..4096]).await.ok();
    drop(g);
    ok(&mut c, "pwd", &["/"]).await;

    // A 10 MB line (the default limit is 1 MiB): error 19, then the server closes.
    let mut big = srv.raw().await;
    ok(&mut big, "pwd", &["/"]).await;
    let mut line = b"addentry /keep/huge v ".to_vec();
    line.resize(10 << 20, b'x');
    line.push(b'\n');
    let (_, got) = big.send_and_read_to_eof(&line).await;
    let got = text(&got);
    assert!(got.starts_with("19 ") && got.ends_with(&format!("\n{END}")), "{:?}", &got[..got.len().min(200)]);
    // Meanwhile and afterwards the others are served.
    ok(&mut c, "pwd", &["/"]).await;

    // Half-closed socket: the reply to the last command still arrives, then EOF.
    let mut h = srv.raw().await;
    h.send(b"getattr /keep v\n").await;
    h.shutdown_write().await;
    assert_eq!(h.reply().await, snapshot);
    assert!(h.closed().await);
    let mut h = srv.raw().await;
    h.send(b"pwd\nwhoami\n").await;
    h.shutdown_write().await;
    assert_eq!(text(&h.reply().await), "0\n/\n\x04\x04");
    assert_eq!(text(&h.reply().await), "0\nroot\n\x04\x04");
    assert!(h.closed().await);
    // A half-close in the middle of a line: an error for the fragment, then EOF.
    let mut h = srv.raw().await;
    h.send(b"pw").await;
    h.shutdown_write().await;
    let r = h.silence(Duration::from_secs(2)).await;
    assert!(r.is_empty() || text(&r).starts_with("3 "), "{:?}", text(&r));
    // Closing right after connecting, and in the middle of the handshake.
    drop(RawConn::connect(srv.tcp).await);
    let mut h = RawConn::connect(srv.tcp).await;
    h.send(b"pla").await;
    drop(h);

    // The server is alive, a new connection works, nothing changed.
    assert!(alive(&mut srv));
    let mut fresh = srv.raw().await;
    assert_eq!(fresh.cmd("getattr /keep v").await, snapshot);
    assert_eq!(fresh.cmd("dir /").await, listing);
    ok(&mut fresh, "listentries /keep", &["/keep/k1"]).await;
}

/// SQL injection attempts through every kind of argument: clean errors or literal storage, and
/// every table intact afterwards.
async fn injection(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /inj", &[]).await;
    ok(&mut c, "addattr /inj s varchar(100)", &[]).await;
    ok(&mut c, "addattr /inj n int", &[]).await;
    ok(&mut c, "addentry /inj/e1 s safe n 1", &[]).await;
    ok(&mut c, "sequence_create sq /inj", &[]).await;
    let before = c.cmd("getattr /inj s n").await;

    // The classic with an unbalanced quote: a tokenizer error, nothing runs.
    err(&mut c, "addentry '/inj/x'; drop table e1; --'", 3).await;
    // A quote inside an entry name is refused; the rest of the name is stored literally.
    err(&mut c, r"addentry '/inj/x\'; drop table e1; --'", 3).await;
    ok(&mut c, "addentry '/inj/x; DROP TABLE e1; --' s v", &[]).await;
    ok(&mut c, "addentry '/inj/y) OR 1=1 --' n 2", &[]).await;
    // Values with quotes and SQL are stored as they are.
    let evil = [r"'); DROP TABLE collections; --", r#"" OR ""=""#, r"\'; DELETE FROM users; --", "%_*?[]"];
    for (i, v) in evil.iter().enumerate() {
        let quoted = v.replace('\\', "\\\\").replace('\'', "\\'");
        ok(&mut c, &format!("addentry /inj/v{i} s '{quoted}'"), &[]).await;
        ok(&mut c, &format!("getattr /inj/v{i} s"), &[&format!("v{i}"), v]).await;
    }
    ok(&mut c, r#"selectattr /inj:FILE '/inj:s = "\"); DROP TABLE collections; --"'"#, &[]).await;
    ok(&mut c, r#"find /inj 's = "safe\"; DROP TABLE e1; --"'"#, &[]).await;
    ok(&mut c, r#"find /inj 's = "safe"'"#, &["e1"]).await;
    // Conditions and expressions that try to smuggle SQL: illegal query.
    err(&mut c, "selectattr /inj:FILE '1=1; DROP TABLE e1'", 8).await;
    let r = text(&c.cmd("selectattr /inj:FILE 'n = 1 -- comment'").await);
    assert!(r.starts_with("8 ") || r.starts_with("10 "), "{r:?}");
    err(&mut c, "find /inj 'n = 1; DELETE FROM collections'", 8).await;
    err(&mut c, "selectattr '/inj:n); DROP TABLE e1; --' ''", 8).await;
    err(&mut c, "updateattr /inj n '1; DROP TABLE e1' 'n = 1'", 8).await;
    err(&mut c, "rm /inj/e1 'n = 1 OR 1=1; DROP TABLE e1'", 8).await;
    // Names of attributes, types, users, sequences.
    err(&mut c, "getattr /inj 'n; DROP TABLE e1'", 10).await;
    err(&mut c, "addattr /inj 'z int; DROP TABLE e1; --' int", 3).await;
    err(&mut c, "addattr /inj z 'int; DROP TABLE e1'", 18).await;
    err(&mut c, "setattr /inj/e1 n '1; DROP TABLE e1'", 18).await;
    let r = text(&c.cmd(r"user_create 'u\'; DROP TABLE users; --' pw").await);
    assert!(!r.starts_with("99"), "{r:?}");
    let r = text(&c.cmd("sequence_create 'q; DROP TABLE sequences' /inj").await);
    assert!(!r.starts_with("99"), "{r:?}");
    let r = text(&c.cmd("createdir '/inj2; DROP TABLE collections; --'").await);
    assert!(!r.starts_with("99"), "{r:?}");

    // Everything is intact: the fixture, the literal names, users, sequences, the root collection.
    let mut all = data(&mut c, "find /inj ''").await;
    all.sort();
    assert_eq!(all, ["e1", "v0", "v1", "v2", "v3", "x; DROP TABLE e1; --", "y) OR 1=1 --"]);
    ok(&mut c, "getattr /inj/e1 s n", &["e1", "safe", "1"]).await;
    ok(&mut c, "getattr '/inj/x; DROP TABLE e1; --' s", &["x; DROP TABLE e1; --", "v"]).await;
    ok(&mut c, "listattr /inj", &["s", "varchar(100)", "n", "int"]).await;
    ok(&mut c, "sequence_next /inj/sq", &["1"]).await;
    ok(&mut c, "rm '/inj/x; DROP TABLE e1; --'", &[]).await;
    ok(&mut c, "rm '/inj/y) OR 1=1 --'", &[]).await;
    for i in 0..evil.len() {
        ok(&mut c, &format!("rm /inj/v{i}"), &[]).await;
    }
    assert_eq!(c.cmd("getattr /inj s n").await, before);
    let mut fresh = srv.raw().await;
    ok(&mut fresh, "whoami", &["root"]).await;
    ok(&mut fresh, "createdir /after", &[]).await;
    ok(&mut fresh, "addattr /after a int", &[]).await;
    ok(&mut fresh, "addentry /after/a a 1", &[]).await;
    ok(&mut fresh, "getattr /after a", &["a", "1"]).await;
}

/// `index_create` / `index_list` / `index_remove` (ardacat extension), byte for byte, with every
/// error code and the `removeattr` refusal.
async fn indexes(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /d", &[]).await;
    ok(&mut c, "addattr /d i0 int", &[]).await;
    ok(&mut c, "addattr /d s0 varchar(32)", &[]).await;
    ok(&mut c, "addentry /d/e1 i0 1 s0 x", &[]).await;
    ok(&mut c, "index_list /d", &[]).await;
    ok(&mut c, "index_create /d by_s_i s0 i0", &[]).await;
    ok(&mut c, "INDEX_CREATE /d byName FILE i0", &[]).await;
    ok(&mut c, "index_list /d", &["by_s_i s0,i0", "byName FILE,i0"]).await;
    ok(&mut c, "help index_create", &["index_create <dir> <name> <attr> [<attr>]..."]).await;

    err(&mut c, "index_create /missing ix i0", 1).await;
    err(&mut c, "index_create /d ix nosuch", 10).await;
    err(&mut c, "index_create /d BY_S_I i0", 15).await;
    err(&mut c, "index_create /d 'bad name' i0", 3).await;
    err(&mut c, "index_create /d ix i0 i0", 3).await;
    err(&mut c, "index_create /d ix", 3).await;
    exact(&mut c, "index_remove /d nosuch", "1 /d: index nosuch: no such file or directory\n\x04\x04").await;
    err(&mut c, "index_remove /d", 3).await;
    err(&mut c, "index_list", 3).await;
    err(&mut c, "index_list /missing", 1).await;
    let refused = "3 attribute s0 is used by index by_s_i; remove the index first (index_remove)\n\x04\x04";
    exact(&mut c, "removeattr /d s0", refused).await;

    ok(&mut c, "user_create bob bobpw", &[]).await;
    let mut bob = srv.raw_as("bob", "bobpw").await;
    err(&mut bob, "index_create /d ix i0", 4).await;
    err(&mut bob, "index_remove /d by_s_i", 4).await;
    ok(&mut bob, "index_list /d", &["by_s_i s0,i0", "byName FILE,i0"]).await;

    ok(&mut c, "index_remove /d by_s_i", &[]).await;
    ok(&mut c, "removeattr /d s0", &[]).await;
    ok(&mut c, "selectattr /d:FILE 'i0 = 1'", &["e1"]).await;
    ok(&mut c, "index_remove /d BYNAME", &[]).await;
    ok(&mut c, "index_list /d", &[]).await;
}

/// A session reuses its last `getattr` plan for the next one of the same shape (the hot path of
/// a job system reading entry after entry); whatever the plan was made from — the collection,
/// its schema, the attribute names and their order, the caller and the caller's groups — changes
/// the answer at once on the same connection.
async fn repeated_getattr_follows_every_change(b: Backend) {
    let server = TestServer::start(b).await;
    let mut root = server.raw().await;
    for line in REPEATED_GETATTR_SETUP {
        ok(&mut root, line, &[]).await;
    }
    let before = getattr_plans(&mut root).await;
    ok(&mut root, "getattr /g/e1 n s", &["e1", "1", "one"]).await;
    ok(&mut root, "getattr /g/e2 n s", &["e2", "2", "two"]).await;
    ok(&mut root, "getattr /g/e* n s", &["e1", "1", "one", "e2", "2", "two"]).await;
    // The first builds the plan, the next two are served by the session's kept one.
    let after = getattr_plans(&mut root).await;
    assert_eq!(
        (after.session - before.session, after.shared - before.shared, after.built - before.built),
        (2, 0, 1),
        "{before:?} → {after:?}"
    );
    // The same names in another collection, and in another order.
    ok(&mut root, "getattr /h/e1 n s", &["e1", "9", "nine"]).await;
    ok(&mut root, "getattr /g/e1 s n", &["e1", "one", "1"]).await;
    ok(&mut root, "getattr /g/e1 S N", &["e1", "one", "1"]).await;
    err(&mut root, "getattr /g/e1 s nosuch", 10).await;
    ok(&mut root, "getattr /g/e1 s n", &["e1", "one", "1"]).await;
    // The schema changes under the same names: `s` is now another attribute of another type.
    ok(&mut root, "removeattr /g s", &[]).await;
    err(&mut root, "getattr /g/e1 s n", 10).await;
    ok(&mut root, "addattr /g s int", &[]).await;
    ok(&mut root, "setattr /g/e1 s 5", &[]).await;
    ok(&mut root, "getattr /g/e1 s n", &["e1", "5", "1"]).await;
    // Inside a transaction the plan follows the transaction's own schema changes too.
    ok(&mut root, "transaction", &[]).await;
    ok(&mut root, "removeattr /g s", &[]).await;
    err(&mut root, "getattr /g/e1 s n", 10).await;
    ok(&mut root, "addattr /g s varchar(9)", &[]).await;
    ok(&mut root, "setattr /g/e1 s five", &[]).await;
    ok(&mut root, "getattr /g/e1 s n", &["e1", "five", "1"]).await;
    ok(&mut root, "abort", &[]).await;
    ok(&mut root, "getattr /g/e1 s n", &["e1", "5", "1"]).await;

    // The caller: bob reads e2 only through his group, on one live connection.
    ok(&mut root, "chmod /g rwxr-xr-x", &[]).await;
    ok(&mut root, "chown /g/e2 root:team", &[]).await;
    ok(&mut root, "chmod /g/e2 rw-r-----", &[]).await;
    let mut bob = server.raw_as("bob", "bpw").await;
    ok(&mut bob, "getattr /g/e1 n", &["e1", "1"]).await;
    err(&mut bob, "getattr /g/e2 n", 4).await;
    ok(&mut root, "grp_adduser team bob", &[]).await;
    ok(&mut bob, "getattr /g/e2 n", &["e2", "2"]).await;
    ok(&mut root, "grp_removeuser team bob", &[]).await;
    err(&mut bob, "getattr /g/e2 n", 4).await;
    // Root's plan of the same shape reads everything; bob's still does not.
    ok(&mut root, "getattr /g/e2 n", &["e2", "2"]).await;
    err(&mut bob, "getattr /g/e2 n", 4).await;

    // A line whose list is the previous line's text takes its parsed names (`tcp/command/repeat.rs`);
    // lines that only look alike are parsed, and each answers for its own pattern and names (`s`
    // is the integer attribute made above: 5 on e1, NULL on e2).
    ok(&mut root, "getattr /g/e1 n s", &["e1", "1", "5"]).await;
    ok(&mut root, "getattr /g/e2 n s", &["e2", "2", ""]).await;
    ok(&mut root, "getattr '/g/e1' n s", &["e1", "1", "5"]).await;
    ok(&mut root, "getattr /g/e2\tn s", &["e2", "2", ""]).await;
    ok(&mut root, "getattr /g/e1 n s ", &["e1", "1", "5"]).await;
    ok(&mut root, "getattr /g/e2 n s ", &["e2", "2", ""]).await;
    ok(&mut root, "getattr /g/e2 n 's'", &["e2", "2", ""]).await;
    ok(&mut root, "getattr /g/e2 n", &["e2", "2"]).await;
    err(&mut root, "getattr /g/e2 'n", 3).await;
    ok(&mut root, "getattr /g/e1 n", &["e1", "1"]).await;
    err(&mut root, "getattr /g/nope n", 1).await;
    ok(&mut root, "getattr /h/e1 n", &["e1", "9"]).await;
}
