//! Fair under floods (issue #18), against the real server binary on both backends: connections
//! past the limits are refused at once with bytes the client can show (TCP: one status line
//! instead of the greeting, checked with the original-style Python client too; HTTP: `503` with
//! `Retry-After`), one address cannot take every slot (`max_connections_per_peer`, with
//! `trusted_peers` exempt), slow and idle HTTP clients are closed and counted, and a request
//! that finds every database connection busy fails within `db_acquire_timeout_ms`. Floods come
//! from other loopback addresses (127.0.0.2, 127.0.0.3) than the legitimate client (127.0.0.1).

#[macro_use]
mod common;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

on_both_backends!(
    tcp_refusal_past_max_connections,
    tcp_flood_from_one_address,
    http_refusal_past_max_http_connections,
    http_flood_from_one_address,
    http_slow_and_idle_clients_closed,
    http_unread_responses_closed,
    db_pool_exhaustion_answered_within_the_wait,
);

const REFUSED_FULL: &[u8] = b"19 Server busy: too many connections; try again later\n";
const REFUSED_PEER: &[u8] = b"19 Server busy: too many connections from your address; try again later\n";

/// A TCP connection to `to` from the loopback address `from`.
async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    let local: IpAddr = from.parse().expect("address");
    socket.bind(SocketAddr::new(local, 0)).expect("bind the client to a loopback address");
    socket.connect(to).await.expect("connect")
}

/// What the server says first: the bytes up to its third newline (a greeting), or everything
/// up to EOF when it closes sooner (a refusal).
async fn first_words(stream: &mut TcpStream) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut chunk))
            .await
            .expect("the server neither greets nor refuses")
            .unwrap_or(0);
        if n == 0 {
            return (got, true);
        }
        got.extend_from_slice(&chunk[..n]);
        if got.iter().filter(|b| **b == b'\n').count() >= 3 {
            return (got, false);
        }
    }
}

/// Value of one line of the `stats` command (`name{labels} value`).
async fn stat(c: &mut RawConn, key: &str) -> u64 {
    let lines = ok(c, "stats").await;
    lines
        .iter()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no `{key}` in stats: {lines:?}"))
}

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/interop")
}

/// Connect with the original-style Python client (tests/interop/amga_client.py) and report what
/// it says: `CONNECTED`, or `REFUSED <code> <message>` for the error it raised.
fn python_connect(addr: SocketAddr) -> String {
    let script = "import sys\n\
        sys.path.insert(0, sys.argv[1])\n\
        from amga_client import AmgaClient, CommandError\n\
        c = AmgaClient('127.0.0.1', int(sys.argv[2]), 'root', sys.argv[3], timeout=20)\n\
        try:\n    c.connect()\n    print('CONNECTED')\n\
        except CommandError as e:\n    print('REFUSED', e.code, e.msg)\n";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(interop_dir())
        .arg(addr.port().to_string())
        .arg(ROOT_PASSWORD)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3");
    assert!(out.status.success(), "python3 failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn tcp_refusal_past_max_connections(b: Backend) {
    let srv = TestServer::start_flags(b, &["--max-connections", "2"]).await;
    let mut a = srv.raw().await;
    let mut other = srv.raw().await;
    assert_eq!(ok(&mut a, "whoami").await, vec!["root"]);

    // A third client is refused at once: one status line instead of the greeting, then EOF.
    let mut c = TcpStream::connect(srv.tcp).await.unwrap();
    let (said, closed) = first_words(&mut c).await;
    assert!(closed, "the refused connection must close");
    assert_eq!(said, REFUSED_FULL, "{:?}", String::from_utf8_lossy(&said));

    // The original-style client reports it as a failed connect that carries the server's words.
    let py = python_connect(srv.tcp);
    assert!(py.starts_with("REFUSED -1 "), "{py}");
    assert!(py.contains("Server busy: too many connections; try again later"), "{py}");

    // ardacat's own client shows the refusal.
    let config = ardacat_client::ClientConfig {
        host: "127.0.0.1".into(),
        port: srv.tcp.port(),
        login: "root".into(),
        password: Some(ROOT_PASSWORD.into()),
        ..Default::default()
    };
    let err = match ardacat_client::Client::connect(config).await {
        Ok(_) => panic!("connected past --max-connections"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("refused the connection: 19 Server busy: too many connections"), "{err}");

    // The clients inside are served meanwhile; one leaves and its slot serves a newcomer.
    assert_eq!(ok(&mut other, "pwd").await, vec!["/"]);
    drop(a);
    let mut served = None;
    for _ in 0..100 {
        let mut c = TcpStream::connect(srv.tcp).await.unwrap();
        let (said, closed) = first_words(&mut c).await;
        if !closed && said.starts_with(b"ARDA Metadata Server ") {
            served = Some(c);
            break;
        }
        // The server may not have seen `a` leave yet.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut c = served.expect("a freed slot serves the next client");
    c.write_all(format!("plain\n\n0 root\n5 {ROOT_PASSWORD}\n\nwhoami\n").as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    while !reply.ends_with(END) {
        let mut chunk = [0u8; 256];
        let n = c.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed: {reply:?}");
        reply.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(reply, b"OK\n0\nroot\n\x04\x04");
    assert!(stat(&mut other, "tcp_connections_refused_total{reason=\"max_connections\"}").await >= 3);
    assert_eq!(stat(&mut other, "tcp_connections_refused_total{reason=\"per_peer\"}").await, 0);
}

/// 500 idle connections from 127.0.0.2: 64 (the per-address default) get a greeting, the rest
/// the per-address refusal; a client from 127.0.0.1 logs in and works normally meanwhile, and
/// a trusted address (127.0.0.3) is not capped.
async fn tcp_flood_from_one_address(b: Backend) {
    let srv = TestServer::start_flags(b, &["--max-connections", "300", "--trusted-peers", "127.0.0.3"]).await;
    let mut flood = Vec::new();
    let (mut greeted, mut refused) = (0, 0);
    for _ in 0..500 {
        let mut s = connect_from("127.0.0.2", srv.tcp).await;
        let (said, closed) = first_words(&mut s).await;
        if closed {
            assert_eq!(said, REFUSED_PEER, "{:?}", String::from_utf8_lossy(&said));
            refused += 1;
        } else {
            assert!(said.starts_with(b"ARDA Metadata Server "), "{said:?}");
            greeted += 1;
            flood.push(s);
        }
    }
    assert_eq!((greeted, refused), (64, 436));

    // The legitimate client is served as if nothing happened.
    let mut c = RawConn::login(srv.tcp, "root", Some(ROOT_PASSWORD)).await;
    ok(&mut c, "createdir /calm").await;
    ok(&mut c, "addattr /calm v int").await;
    ok(&mut c, "addentry /calm/e v 7").await;
    let (code, lines) = c.lines("getattr /calm/e v").await;
    assert_eq!((code, lines), (0, vec!["e".to_string(), "7".to_string()]));

    // A trusted address may hold more than the per-address cap.
    let mut trusted = Vec::new();
    for _ in 0..100 {
        let mut s = connect_from("127.0.0.3", srv.tcp).await;
        let (said, closed) = first_words(&mut s).await;
        assert!(!closed && said.starts_with(b"ARDA Metadata Server "), "trusted peer refused: {said:?}");
        trusted.push(s);
    }
    assert_eq!(stat(&mut c, "tcp_connections_refused_total{reason=\"per_peer\"}").await, 436);
    assert_eq!(stat(&mut c, "tcp_connections_refused_total{reason=\"max_connections\"}").await, 0);
    assert_eq!(stat(&mut c, "tcp_connections_open").await, 64 + 100 + 1);
}

/// Send a whole HTTP request on a new connection and read the answer to EOF.
async fn http_exchange(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("the server neither answered nor closed")
        .expect("read");
    String::from_utf8_lossy(&out).into_owned()
}

fn basic_auth() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("root:{ROOT_PASSWORD}"))
}

const PING: &str = "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
                    <ping xmlns=\"urn:ardacat:metadata:1\"/></soap:Body></soap:Envelope>";

fn soap_request(body: &str) -> String {
    format!(
        "POST /soap HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml; charset=utf-8\r\nAuthorization: Basic {}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        basic_auth(),
        body.len()
    )
}

/// One counter of `/metrics` (`ardacat_<key> value`). A connection the client just closed gives its
/// slot back only once the server has read that close, so on a port at its connection limit the
/// request may be refused for a moment (503): it is asked again then, for at most five seconds.
async fn metric(addr: SocketAddr, key: &str) -> f64 {
    let mut page = String::new();
    for _ in 0..100 {
        page = http_exchange(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
        if !page.starts_with("HTTP/1.1 503 ") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let key = format!("ardacat_{key} ");
    page.lines()
        .find_map(|l| l.strip_prefix(key.as_str())?.parse().ok())
        .unwrap_or_else(|| panic!("no `{key}` in /metrics:\n{page}"))
}

/// Read whatever the server sends until it closes, at most `wait`; `None` if it stays open.
async fn read_to_close(s: &mut TcpStream, wait: Duration) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let r = tokio::time::timeout(wait, s.read_to_end(&mut out)).await;
    match r {
        Ok(_) => Some(out),
        Err(_) => None,
    }
}

async fn http_refusal_past_max_http_connections(b: Backend) {
    let srv = TestServer::start_flags(b, &["--max-http-connections", "2"]).await;
    let holders = [TcpStream::connect(srv.http).await.unwrap(), TcpStream::connect(srv.http).await.unwrap()];
    // The third connection gets a 503 with Retry-After at once, then EOF.
    let answer = http_exchange(srv.http, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{answer}");
    assert!(answer.contains("\r\nRetry-After: 5\r\n") && answer.contains("\r\nConnection: close\r\n"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nServer busy: too many connections; try again later\n"), "{answer}");
    // A refused client that sends nothing gets the same answer.
    let mut quiet = TcpStream::connect(srv.http).await.unwrap();
    let said = read_to_close(&mut quiet, Duration::from_secs(20)).await.expect("refused and closed");
    assert!(said.starts_with(b"HTTP/1.1 503 "), "{said:?}");
    // The holders leave: the port serves again, and counted the refusals.
    drop(holders);
    let mut served = String::new();
    for _ in 0..100 {
        served = http_exchange(srv.http, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
        if served.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    let refused = metric(srv.http, "http_connections_refused_total{reason=\"max_connections\"}").await;
    assert!(refused >= 2.0, "{refused}");
    assert_eq!(metric(srv.http, "http_connections_refused_total{reason=\"per_peer\"}").await, 0.0);
}

/// 500 idle HTTP connections from 127.0.0.2: 64 are held open, 436 get the per-address 503; a
/// SOAP client from 127.0.0.1 is served normally meanwhile. The held ones are closed by the
/// header time limit in the end.
async fn http_flood_from_one_address(b: Backend) {
    let srv = TestServer::start_flags(b, &["--max-http-connections", "300", "--http-header-timeout-ms", "3000"]).await;
    let mut flood = Vec::new();
    for _ in 0..500 {
        flood.push(connect_from("127.0.0.2", srv.http).await);
    }
    // The server has looked at every connection once it counted 436 refusals.
    let key = "http_connections_refused_total{reason=\"per_peer\"}";
    let mut refused = 0.0;
    for _ in 0..400 {
        refused = metric(srv.http, key).await;
        if refused >= 436.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(refused, 436.0);
    // The flood's 64 and the metrics request itself. The previous metrics request's connection
    // gives its slot back only after the client has read its close, so it may still count for a
    // moment: wait for it, and only for it.
    let mut open = 0.0;
    for _ in 0..100 {
        open = metric(srv.http, "http_connections_open").await;
        if open <= 65.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(open, 65.0);
    let answer = http_exchange(srv.http, &soap_request(PING)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("pingResponse"), "{answer}");

    let answers = futures::future::join_all(flood.iter_mut().map(|s| read_to_close(s, Duration::from_secs(30)))).await;
    let (mut busy, mut timed_out) = (0, 0);
    for said in answers {
        let said = String::from_utf8_lossy(&said.expect("every flood connection is closed in the end")).into_owned();
        if said.is_empty() {
            timed_out += 1;
        } else {
            assert!(said.starts_with("HTTP/1.1 503 ") && said.contains("from your address"), "{said}");
            busy += 1;
        }
    }
    assert_eq!((busy, timed_out), (436, 64));
    assert_eq!(metric(srv.http, "http_timeouts_total{phase=\"header\"}").await, 64.0);
}

/// Short time limits: a header sent half, a connection that sends nothing, a body that trickles,
/// and a kept-alive connection left idle are each closed and counted; a normal client is served
/// throughout.
async fn http_slow_and_idle_clients_closed(b: Backend) {
    let srv = TestServer::start_flags(
        b,
        &[
            "--http-header-timeout-ms",
            "400",
            "--http-body-timeout-ms",
            "400",
            "--http-body-min-rate",
            "100",
            "--http-idle-timeout-ms",
            "400",
        ],
    )
    .await;
    let limit = Duration::from_secs(20);
    let mut half_header = TcpStream::connect(srv.http).await.unwrap();
    half_header.write_all(b"POST /soap HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let mut silent = TcpStream::connect(srv.http).await.unwrap();
    let mut slow_body = TcpStream::connect(srv.http).await.unwrap();
    let head = format!(
        "POST /soap HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nAuthorization: Basic {}\r\n\
         Content-Length: 100000\r\n\r\n<soap:Envelope",
        basic_auth()
    );
    slow_body.write_all(head.as_bytes()).await.unwrap();
    let mut idle = TcpStream::connect(srv.http).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();

    // A normal request is answered while they dawdle (its body comes at once).
    let answer = http_exchange(srv.http, &soap_request(PING)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    for (what, s) in [("half header", &mut half_header), ("silent", &mut silent), ("slow body", &mut slow_body)] {
        let said = read_to_close(s, limit).await.unwrap_or_else(|| panic!("{what}: not closed"));
        assert!(said.is_empty(), "{what}: closed without an answer, got {:?}", String::from_utf8_lossy(&said));
    }
    // The idle connection got its answer, then was closed.
    let said = read_to_close(&mut idle, limit).await.expect("idle keep-alive connection closed");
    assert!(said.starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&said));

    assert_eq!(metric(srv.http, "http_timeouts_total{phase=\"header\"}").await, 2.0);
    assert_eq!(metric(srv.http, "http_timeouts_total{phase=\"body\"}").await, 1.0);
    assert_eq!(metric(srv.http, "http_timeouts_total{phase=\"idle\"}").await, 1.0);
    assert_eq!(metric(srv.http, "http_timeouts_total{phase=\"write\"}").await, 0.0);
}

/// One pooled database connection, held by a transaction: another client's command and a SOAP
/// request fail with code 19 after `db_acquire_timeout_ms` instead of queueing without end, and
/// are counted; once the transaction ends both are served.
async fn db_pool_exhaustion_answered_within_the_wait(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ardacat.toml");
    std::fs::write(&cfg, "db_pool_size = 1\n").unwrap();
    let srv = TestServer::start_with(
        TestDb::new(b).await,
        &["--config", cfg.to_str().unwrap(), "--db-acquire-timeout-ms", "300"],
    )
    .await;
    // One login at a time (each takes the one database connection, for longer than the wait on
    // a busy machine), both settled before the pool is held.
    let mut holder = srv.raw().await;
    ok(&mut holder, "whoami").await;
    let mut other = srv.raw().await;
    ok(&mut other, "whoami").await;
    ok(&mut holder, "createdir /q").await;
    ok(&mut holder, "transaction").await;
    ok(&mut holder, "ls /").await;

    let (code, lines) = other.lines("ls /q").await;
    assert_eq!(code, 19, "{lines:?}");
    let listing = "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
                   <listSchemas xmlns=\"urn:ardacat:metadata:1\"><path>/q</path></listSchemas></soap:Body></soap:Envelope>";
    let answer = http_exchange(srv.http, &soap_request(listing)).await;
    assert!(answer.contains("<code>19</code>"), "{answer}");

    ok(&mut holder, "commit").await;
    ok(&mut other, "ls /q").await;
    let answer = http_exchange(srv.http, &soap_request(listing)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(stat(&mut other, "db_acquire_timeouts_total").await >= 2);
    assert_eq!(stat(&mut other, "db_acquire_waiting").await, 0);
}

/// A client that pipelines requests and never reads the answers: once the socket buffers are
/// full the server's write makes no progress, and after `http_idle_timeout_ms` the connection is
/// closed and counted; others are served meanwhile.
async fn http_unread_responses_closed(b: Backend) {
    let srv = TestServer::start_flags(b, &["--http-idle-timeout-ms", "500"]).await;
    let mut greedy = TcpStream::connect(srv.http).await.unwrap();
    let wsdl = "GET /soap?wsdl HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2000);
    greedy.write_all(wsdl.as_bytes()).await.unwrap();
    let key = "http_timeouts_total{phase=\"write\"}";
    let mut stalled = 0.0;
    for _ in 0..400 {
        let answer = http_exchange(srv.http, &soap_request(PING)).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        stalled = metric(srv.http, key).await;
        if stalled > 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(stalled, 1.0, "the stalled connection must be closed and counted");
    // What it can still read ends: the server closed it.
    let mut sink = vec![0u8; 1 << 20];
    let mut total = 0usize;
    loop {
        match tokio::time::timeout(Duration::from_secs(20), greedy.read(&mut sink)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => total += n,
            Err(_) => panic!("the stalled connection stays open"),
        }
    }
    assert!(total > 0, "some answers were written before the stall");
}
