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

on_both_backends!(tcp_refusal_past_max_connections, tcp_flood_from_one_address);

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
