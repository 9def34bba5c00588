//! Every configurable limit, exceeded on purpose against the real server binary: the query time
//! limit (TCP and SOAP), the write-stall guard (a client that stops
//! reading its reply is cut off and its slot frees), the handshake and idle timeouts, the
//! connection limit, arguments per line, upload size, the failed-login rate limit, and the SOAP
//! body and nesting limits. Each check also runs a second client during the violation and
//! requires it to be served normally. Every check runs on SQLite and PostgreSQL. (Line length: `tcp_protocol` `error_codes`/`bad_input`.)

#[macro_use]
mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use base64::Engine;
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

on_both_backends!(
    query_time_limit,
    write_stall,
    handshake_and_idle_timeouts,
    connection_limit,
    argument_upload_and_login_limits,
    soap_body_and_depth_limits,
);

fn config_file(dir: &tempfile::TempDir, text: &str) -> String {
    let p = dir.path().join("ardacat.toml");
    std::fs::write(&p, text).expect("write config");
    p.display().to_string()
}

async fn with_config(b: Backend, text: &str, extra: &[&str]) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config_file(&dir, text);
    let mut args = vec!["--config", cfg.as_str()];
    args.extend_from_slice(extra);
    (TestServer::start_with(TestDb::new(b).await, &args).await, dir)
}

/// `n` entries `e<i>` with `v = i` in a new collection `dir` (and, with `text`, a long text
/// attribute `t`), loaded with one upload.
async fn load(c: &mut RawConn, dir: &str, n: usize, text: bool) {
    ok(c, &format!("createdir {dir}")).await;
    ok(c, &format!("addattr {dir} v int")).await;
    let mut block = String::new();
    if text {
        ok(c, &format!("addattr {dir} t text")).await;
        block.push_str(&format!("upload {dir} v t\n"));
    } else {
        block.push_str(&format!("upload {dir} v\n"));
    }
    let pad = "p".repeat(100);
    for i in 0..n {
        if text {
            block.push_str(&format!("put e{i} {i} {pad}{i}\n"));
        } else {
            block.push_str(&format!("put e{i} {i}\n"));
        }
    }
    c.send(block.as_bytes()).await;
    ok(c, "commit").await;
}

/// A 100^4-row cross join that returns nothing: minutes of work without a limit.
const SLOW: &str = "selectattr /a:v /b:v /c:v /d:v '/a:v + /b:v + /c:v + /d:v < 0'";

async fn query_time_limit(b: Backend) {
    let srv = TestServer::start_flags(b, &["--query-timeout", "1"]).await;
    let mut root = srv.raw().await;
    for d in ["/a", "/b", "/c", "/d"] {
        load(&mut root, d, 100, false).await;
    }
    // The slow statement runs on one connection while another is served normally.
    let addr = srv.tcp;
    let slow = tokio::spawn(async move {
        let mut c = RawConn::login(addr, "root", Some(ROOT_PASSWORD)).await;
        let started = Instant::now();
        let (code, lines) = c.lines(SLOW).await;
        let took = started.elapsed();
        // The connection stays usable.
        let after = c.lines("pwd").await;
        (code, lines, took, after)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    assert_eq!(ok(&mut root, "selectattr /a:v 'v < 3'").await, vec!["0", "1", "2"]);
    assert!(t.elapsed() < Duration::from_secs(5), "a second client waited {:?}", t.elapsed());
    let (code, lines, took, after) = slow.await.expect("slow task");
    assert_eq!(code, 19, "{lines:?}");
    assert!(lines.is_empty());
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(20), "cancelled after {took:?}");
    assert_eq!(after, (0, vec!["/".to_string()]));

    // Inside a transaction: the statement is cancelled, the transaction can be aborted, and
    // the connection goes on.
    ok(&mut root, "transaction").await;
    fails(&mut root, SLOW, 19).await;
    ok(&mut root, "abort").await;
    assert_eq!(ok(&mut root, "selectattr /a:v 'v = 5'").await, vec!["5"]);

    // SOAP: the same statement is a fault with code 19; other requests are served.
    let inner =
        ["/a:v", "/b:v", "/c:v", "/d:v"].iter().map(|s| format!("<m:select>{s}</m:select>")).collect::<String>()
            + "<m:condition>/a:v + /b:v + /c:v + /d:v &lt; 0</m:condition>";
    let (status, body) = soap(srv.http, "query", &inner).await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("<code>19</code>") || body.contains(">19<"), "{body}");
    let (status, _) = soap(srv.http, "ping", "").await;
    assert_eq!(status, 200);
}

/// Greeting, `plain`, login as root, on a socket with a small receive buffer.
async fn small_window_login(addr: SocketAddr) -> TcpStream {
    let sock = TcpSocket::new_v4().expect("socket");
    sock.set_recv_buffer_size(4096).expect("rcvbuf");
    let mut s = sock.connect(addr).await.expect("connect");
    let mut seen = Vec::new();
    let mut buf = [0u8; 512];
    while seen.iter().filter(|b| **b == b'\n').count() < 3 {
        let n = s.read(&mut buf).await.expect("greeting");
        assert!(n > 0);
        seen.extend_from_slice(&buf[..n]);
    }
    s.write_all(b"plain\n\n").await.expect("write");
    let mut ok_line = [0u8; 3];
    s.read_exact(&mut ok_line).await.expect("OK");
    assert_eq!(&ok_line, b"OK\n");
    s.write_all(format!("0 root\n5 {ROOT_PASSWORD}\n\n").as_bytes()).await.expect("login");
    s
}

/// `tcp_connections_open` from the `stats` command.
async fn open_connections(c: &mut RawConn) -> u64 {
    ok(c, "stats")
        .await
        .iter()
        .find_map(|l| l.strip_prefix("tcp_connections_open ")?.parse().ok())
        .expect("tcp_connections_open in stats")
}

async fn write_stall(b: Backend) {
    let srv = TestServer::start_flags(b, &["--idle-timeout", "2", "--max-connections", "3"]).await;
    let mut root = srv.raw().await;
    load(&mut root, "/a", 1000, true).await;
    load(&mut root, "/b", 1000, false).await;
    assert_eq!(open_connections(&mut root).await, 1);

    // ~100 MB of reply that the client never reads.
    let mut staller = small_window_login(srv.tcp).await;
    staller.write_all(b"selectattr /a:t /b:v ''\n").await.expect("write");
    let started = Instant::now();
    // Meanwhile the other client is served (and stays busy, so its own idle timer never runs out).
    let mut gone = false;
    while started.elapsed() < Duration::from_secs(60) {
        let t = Instant::now();
        assert_eq!(ok(&mut root, "selectattr /b:v 'v = 7'").await, vec!["7"]);
        assert!(t.elapsed() < Duration::from_secs(5), "second client waited {:?}", t.elapsed());
        if open_connections(&mut root).await == 1 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(gone, "the stalled client was not disconnected");
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(2), "disconnected before the idle time: {took:?}");
    // The stalled socket ends (EOF) after what was already in flight, far short of the reply.
    let mut total = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let drained = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match staller.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    })
    .await;
    assert!(drained.is_ok(), "the stalled connection was never closed");
    assert!(total < 50 << 20, "the reply was not cut short: {total} bytes");
    // Its slot is free again: two more clients fit under --max-connections 3.
    let mut c2 = srv.raw().await;
    let mut c3 = srv.raw().await;
    c2.timeout = Duration::from_secs(10);
    c3.timeout = Duration::from_secs(10);
    assert_eq!(ok(&mut c2, "whoami").await, vec!["root"]);
    assert_eq!(ok(&mut c3, "whoami").await, vec!["root"]);
}

async fn handshake_and_idle_timeouts(b: Backend) {
    let (srv, _dir) = with_config(b, "handshake_timeout_secs = 1\nidle_timeout_secs = 2\n", &[]).await;
    let mut busy = srv.raw().await;
    // Connected, greeted, silent: cut off after the handshake time.
    let mut silent = RawConn::connect(srv.tcp).await;
    silent.read_lines(3).await;
    // Options sent, login block dribbled slower than the budget allows.
    let mut slow = RawConn::connect(srv.tcp).await;
    slow.read_lines(3).await;
    slow.send(b"plain\n\n").await;
    assert_eq!(slow.read_lines(1).await, b"OK\n");
    slow.send(b"0 ro").await;
    let t = Instant::now();
    assert_eq!(ok(&mut busy, "whoami").await, vec!["root"]);
    assert!(silent.closed().await, "silent client not cut off");
    assert!(slow.closed().await, "slow login not cut off");
    assert!(t.elapsed() < Duration::from_secs(8));
    assert_eq!(ok(&mut busy, "whoami").await, vec!["root"]);
    // Logged in and idle: cut off after idle_timeout_secs; the busy client is not.
    let mut idle = srv.raw().await;
    ok(&mut idle, "pwd").await;
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(3500) {
        assert_eq!(ok(&mut busy, "pwd").await, vec!["/"]);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(idle.closed().await, "idle client not cut off");
    assert_eq!(ok(&mut busy, "whoami").await, vec!["root"]);

    // A command that runs longer than the idle time (it waits for another session's uncommitted
    // write) is not idleness: its client is answered and then served like any other.
    let mut holder = srv.raw().await;
    let mut waiter = srv.raw().await;
    waiter.timeout = Duration::from_secs(15);
    ok(&mut holder, "transaction").await;
    ok(&mut holder, "createdir /held").await;
    let waited = tokio::spawn(async move {
        let t = Instant::now();
        let (code, _) = waiter.lines("createdir /held").await;
        (waiter, code, t.elapsed())
    });
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(3500) {
        assert_eq!(ok(&mut holder, "pwd").await, vec!["/"]);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    ok(&mut holder, "commit").await;
    let (mut waiter, code, took) = waited.await.unwrap();
    assert!(took > Duration::from_secs(2), "the write did not wait for the transaction ({took:?}, code {code})");
    assert_ne!(code, 0, "created a directory that the other session had created");
    // Only the idle timer is due when the next command comes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(ok(&mut waiter, "whoami").await, vec!["root"]);
}

async fn connection_limit(b: Backend) {
    let srv = TestServer::start_flags(b, &["--max-connections", "2"]).await;
    let mut a = srv.raw().await;
    let mut b = srv.raw().await;
    assert_eq!(ok(&mut a, "whoami").await, vec!["root"]);
    // A third client is refused at once (one status line instead of the greeting, then close;
    // tests/floods.rs checks the bytes with every client).
    let mut c = RawConn::connect(srv.tcp).await;
    assert!(c.closed().await, "a client beyond --max-connections must be refused and closed");
    assert_eq!(ok(&mut b, "whoami").await, vec!["root"]);
    // One leaves: its slot serves the next client.
    drop(a);
    let mut tries = 0;
    let mut c = loop {
        let mut c = RawConn::connect(srv.tcp).await;
        if c.read_some(1).await == b"A" {
            break c;
        }
        // The server may not have seen `a` leave yet.
        tries += 1;
        assert!(tries < 200, "the freed slot never served a client");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(String::from_utf8_lossy(&c.read_lines(3).await).starts_with("RDA Metadata Server"));
    c.send(format!("plain\n\n0 root\n5 {ROOT_PASSWORD}\n\n").as_bytes()).await;
    assert_eq!(c.read_lines(1).await, b"OK\n");
    assert_eq!(ok(&mut c, "whoami").await, vec!["root"]);
}

async fn argument_upload_and_login_limits(b: Backend) {
    let (srv, _dir) = with_config(
        b,
        "max_args = 12\nmax_upload_entries = 3\nmax_failed_logins_per_minute = 2\n",
        &["--max-line", "4096"],
    )
    .await;
    let mut c = srv.raw().await;
    let mut other = srv.raw().await;
    // Line length: 19, then the server closes that connection (framing is lost); others go on.
    let mut long = srv.raw().await;
    let (_, reply) = long.send_and_read_to_eof(format!("pwd {}\n", "x".repeat(5000)).as_bytes()).await;
    assert!(String::from_utf8_lossy(&reply).starts_with("19 "), "{:?}", String::from_utf8_lossy(&reply));
    assert_eq!(ok(&mut other, "whoami").await, vec!["root"]);
    ok(&mut c, "createdir /u").await;
    ok(&mut c, "addattr /u v int").await;
    // Arguments per line: 19, and the connection goes on.
    fails(&mut c, "getattr /u a b c d e f g h i j k l", 19).await;
    // One under the limit is parsed and run as usual.
    ok(&mut c, "getattr /u v v v v v v v v v v").await;
    assert_eq!(ok(&mut c, "pwd").await, vec!["/"]);
    assert_eq!(ok(&mut other, "whoami").await, vec!["root"]);
    // Entries per upload: the commit fails with 19 and nothing is stored.
    c.send(b"upload /u v\nput e1 1\nput e2 2\nput e3 3\nput e4 4\n").await;
    fails(&mut c, "commit", 19).await;
    assert!(ok(&mut c, "selectattr /u:v ''").await.is_empty());
    assert_eq!(ok(&mut other, "whoami").await, vec!["root"]);
    // Collections joined in one query: at most 8 (ServiceConfig::max_join_tables).
    let mut cols = Vec::new();
    for i in 0..9 {
        ok(&mut c, &format!("createdir /j{i}")).await;
        ok(&mut c, &format!("addattr /j{i} v int")).await;
        cols.push(format!("/j{i}:v"));
    }
    ok(&mut c, &format!("selectattr {} ''", cols[..8].join(" "))).await;
    let wide = format!("selectattr {} '{} = 1'", cols[..4].join(" "), cols[4..].join(" + "));
    let msg = fails_msg(&mut c, &wide, 19).await;
    assert!(msg.contains("collections"), "{msg}");
    assert_eq!(ok(&mut other, "whoami").await, vec!["root"]);
    // Failed logins per address: after 2 failures even the right password is refused for now,
    // while connections already logged in carry on.
    for _ in 0..2 {
        let mut bad = RawConn::login(srv.tcp, "root", Some("wrong")).await;
        fails(&mut bad, "pwd", 4).await;
    }
    let mut locked = srv.raw().await;
    let (code, lines) = locked.lines("pwd").await;
    assert_eq!(code, 4, "{lines:?}");
    assert_eq!(ok(&mut other, "whoami").await, vec!["root"]);
}

async fn soap_body_and_depth_limits(b: Backend) {
    let (srv, _dir) =
        with_config(b, "soap_max_body_bytes = 20000\nsoap_max_depth = 16\nsoap_max_elements = 50\n", &[]).await;
    let mut tcp = srv.raw().await;
    // Body over the limit: 413.
    let big = format!("<m:x>{}</m:x>", "a".repeat(30_000));
    let (status, _) = soap(srv.http, "ping", &big).await;
    assert_eq!(status, 413);
    // Nesting deeper than the limit: a Client fault with code 3.
    // (inside an ignorable header block, which the parser skips element by element)
    let nest = format!("<x:h xmlns:x=\"urn:x\">{}{}</x:h>", "<x:a>".repeat(40), "</x:a>".repeat(40));
    let deep = envelope("ping", "").replace("<soap:Body>", &format!("<soap:Header>{nest}</soap:Header><soap:Body>"));
    let (status, body) = soap_post(srv.http, &deep).await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("Client") && body.contains("nesting depth"), "{body}");
    // More elements than allowed (each one valid on its own): a Client fault with code 3.
    let many = format!("<x:h xmlns:x=\"urn:x\">{}</x:h>", "<x:a/>".repeat(60));
    let wide = envelope("ping", "").replace("<soap:Body>", &format!("<soap:Header>{many}</soap:Header><soap:Body>"));
    let (status, body) = soap_post(srv.http, &wide).await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("Client") && body.contains("<code>3</code>"), "{body}");
    // Others are served.
    let (status, _) = soap(srv.http, "ping", "").await;
    assert_eq!(status, 200);
    assert_eq!(ok(&mut tcp, "whoami").await, vec!["root"]);
}

fn envelope(op: &str, inner: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body><m:{op} xmlns:m=\"urn:ardacat:metadata:1\">{inner}</m:{op}></soap:Body></soap:Envelope>"
    )
}

/// Expect failure with `code`; the error message.
async fn fails_msg(c: &mut RawConn, line: &str, code: i32) -> String {
    let r = String::from_utf8(c.cmd(line).await).expect("utf8");
    let status = r.split('\n').next().unwrap_or_default().to_string();
    assert!(status.starts_with(&format!("{code} ")), "{line}: {status}");
    status
}

/// One SOAP 1.1 request as root; (status, body).
async fn soap(addr: SocketAddr, op: &str, inner: &str) -> (u16, String) {
    soap_post(addr, &envelope(op, inner)).await
}

async fn soap_post(addr: SocketAddr, body: &str) -> (u16, String) {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("root:{ROOT_PASSWORD}"));
    let head = format!(
        "POST /soap HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: text/xml; charset=utf-8\r\nAuthorization: Basic {auth}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(head.as_bytes()).await.expect("write");
    // The server may answer (413) before it has read the whole body.
    let _ = s.write_all(body.as_bytes()).await;
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut raw)).await.expect("response in time");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}
