//! The client against an in-process fake server that writes and reads raw protocol bytes, so the
//! client's framing is checked against the wire text of amga.md §2 rather than against our own
//! codec. Covers handshake, execute, errors, inline CAN, cancel, upload, streaming, escape and
//! session resume. Must not start the real server.

use std::time::Duration;

use ardacat_client::{BlockingClient, Client, ClientConfig, ClientError};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::task::JoinHandle;

const GREETING: &str = "ARDA Metadata Server 9.9.9\nProtocol 2\nplain resume escape session\n";
const CAN: &str = "\u{18}";

/// One accepted connection, seen from the server side.
struct Fake {
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
}

impl Fake {
    async fn accept(listener: &TcpListener) -> Fake {
        let (stream, _) = listener.accept().await.expect("accept");
        let (r, w) = stream.into_split();
        Fake { r: BufReader::new(r), w }
    }

    /// The next client line without `\n`; a CAN byte comes back on its own as "\x18".
    async fn line(&mut self) -> String {
        let mut out = Vec::new();
        loop {
            let b = self.r.read_u8().await.expect("client closed the connection");
            match b {
                b'\n' => break,
                0x18 if out.is_empty() => return CAN.to_owned(),
                b => out.push(b),
            }
        }
        String::from_utf8(out).expect("utf-8 line")
    }

    async fn expect(&mut self, want: &str) {
        assert_eq!(self.line().await, want);
    }

    async fn send(&mut self, bytes: &str) {
        self.w.write_all(bytes.as_bytes()).await.expect("write");
    }

    /// Lines up to the next empty line.
    async fn block(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let l = self.line().await;
            if l.is_empty() {
                return lines;
            }
            lines.push(l);
        }
    }

    /// Greeting, options, OK, login block; returns (options, login lines).
    async fn handshake(&mut self) -> (Vec<String>, Vec<String>) {
        self.send(GREETING).await;
        let options = self.block().await;
        self.send("OK\n").await;
        let login = self.block().await;
        (options, login)
    }

    /// The client has closed its end.
    async fn expect_eof(&mut self) {
        let mut rest = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(5), self.r.read_to_end(&mut rest))
            .await
            .expect("client did not close")
            .expect("read");
        assert_eq!(n, 0, "unexpected bytes {:?}", String::from_utf8_lossy(&rest));
    }
}

async fn listener() -> (TcpListener, ClientConfig) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let config = ClientConfig {
        host: "127.0.0.1".into(),
        port,
        login: "alice".into(),
        password: Some("pw d".into()),
        ..ClientConfig::default()
    };
    (listener, config)
}

async fn join(server: JoinHandle<()>) {
    tokio::time::timeout(Duration::from_secs(10), server).await.expect("server timed out").expect("server panicked");
}

#[tokio::test]
async fn handshake_execute_and_typed_helpers() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        let (options, login) = s.handshake().await;
        assert_eq!(options, ["plain"]);
        assert_eq!(login, ["0 alice", "5 pw d"]);
        s.expect("pwd").await;
        s.send("0\n/home\n\u{4}\u{4}").await;
        s.expect("dir /x").await;
        s.send("0\n/x/sub\ncollection\n/x/e1\nentry\n\u{4}\u{4}").await;
        s.expect("getattr '/x/my dir/*' a b").await;
        s.send("0\ne1\n1\n\ne2\n2\nz\n\u{4}\u{4}").await;
        s.expect("selectattr /x:FILE /x:a '/x:a > 1 and /x:b = \"it\\'s\"'").await;
        s.send("0 2\ne2\n2\n\u{4}\u{4}").await;
        s.expect("listattr /x").await;
        s.send("0\na\nint\nb\nvarchar(20)\n\u{4}\u{4}").await;
        s.expect("addentry /x/e3 a 3 b 'two words'").await;
        s.send("0\n\u{4}\u{4}").await;
        s.expect("find /x a>1").await;
        s.send("0\ne2\n\u{4}\u{4}").await;
        s.expect("whoami").await;
        s.send("0\nalice\n\u{4}\u{4}").await;
        s.expect_eof().await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    assert_eq!(c.greeting().version(), "9.9.9");
    assert!(!c.escape());
    assert_eq!(c.pwd().await.expect("pwd"), "/home");
    assert_eq!(c.execute("dir /x").await.expect("dir"), ["/x/sub", "collection", "/x/e1", "entry"]);
    let rows = c.getattr("/x/my dir/*", &["a", "b"]).await.expect("getattr");
    assert_eq!(
        rows,
        vec![
            ("e1".to_owned(), vec![Some("1".to_owned()), Some(String::new())]),
            ("e2".to_owned(), vec![Some("2".to_owned()), Some("z".to_owned())]),
        ]
    );
    let rows = c.selectattr(&["/x:FILE", "/x:a"], "/x:a > 1 and /x:b = \"it's\"").await.expect("selectattr");
    assert_eq!(rows, vec![vec![Some("e2".to_owned()), Some("2".to_owned())]]);
    assert_eq!(
        c.listattr("/x").await.expect("listattr"),
        vec![("a".to_owned(), "int".to_owned()), ("b".to_owned(), "varchar(20)".to_owned())]
    );
    c.addentry("/x/e3", &[("a", "3"), ("b", "two words")]).await.expect("addentry");
    assert_eq!(c.find("/x", "a>1").await.expect("find"), ["e2"]);
    assert_eq!(c.whoami().await.expect("whoami"), "alice");
    c.close().await.expect("close");
    join(server).await;
}

#[tokio::test]
async fn error_status_and_inline_can_keep_the_stream_in_step() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("cd /nope").await;
        s.send("1 No such directory: /nope\n\u{4}\u{4}").await;
        s.expect("selectattr /d:a ''").await;
        s.send("0\nr1\nr2\n\u{18}99 backend failed\n\u{4}\u{4}").await;
        s.expect("bogus").await;
        s.send("3\n\u{4}\u{4}").await;
        s.expect("pwd").await;
        s.send("0\n/\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    match c.cd("/nope").await {
        Err(ClientError::Server { code: 1, message }) => assert_eq!(message, "No such directory: /nope"),
        other => panic!("expected error 1, got {other:?}"),
    }
    match c.execute("selectattr /d:a ''").await {
        Err(ClientError::Server { code: 99, message }) => assert_eq!(message, "backend failed"),
        other => panic!("expected an inline abort, got {other:?}"),
    }
    let e = c.execute("bogus").await.expect_err("error 3");
    assert_eq!((e.code(), e.message()), (3, String::new()));
    assert_eq!(c.pwd().await.expect("pwd"), "/");
    join(server).await;
}

#[tokio::test]
async fn cancel_sends_can_and_drains_to_the_end_marker() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("find / ''").await;
        s.send("0\nr1\nr2\n").await;
        // Keep "running" until the client's out-of-band CAN arrives.
        s.expect(CAN).await;
        s.send("r3\n\u{18}20 Cancelled by client\n\u{4}\u{4}").await;
        s.expect("pwd").await;
        s.send("0\n/\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    let mut rows = c.stream("find / ''").await.expect("stream");
    assert_eq!(rows.next_line().await.expect("r1").as_deref(), Some("r1"));
    match rows.cancel().await {
        Err(ClientError::Cancelled { code: 20, message }) => assert_eq!(message, "Cancelled by client"),
        other => panic!("expected Cancelled, got {other:?}"),
    }
    assert_eq!(c.pwd().await.expect("pwd after cancel"), "/");
    join(server).await;
}

#[tokio::test]
async fn cancel_before_the_status_line() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("selectattr /big:a ''").await;
        s.expect(CAN).await;
        s.send("20 Cancelled by client\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    let rows = c.start("selectattr /big:a ''").await.expect("start");
    assert!(matches!(rows.cancel().await, Err(ClientError::Cancelled { code: 20, .. })));
    join(server).await;
}

#[tokio::test]
async fn cancel_after_completion_is_ok() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("ls /").await;
        s.send("0\na\n\u{4}\u{4}").await;
        // The late CAN reaches an idle server, which ignores it.
        s.expect(CAN).await;
        s.expect("pwd").await;
        s.send("0\n/\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    let rows = c.stream("ls /").await.expect("stream");
    tokio::time::sleep(Duration::from_millis(50)).await;
    rows.cancel().await.expect("reply was complete");
    assert_eq!(c.pwd().await.expect("pwd"), "/");
    join(server).await;
}

#[tokio::test]
async fn upload_sends_put_lines_without_reading_and_reads_commit() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        // Nothing is answered until commit: a client waiting for a reply would hang here.
        s.expect("upload /d a b").await;
        s.expect("put e1 1 x").await;
        s.expect("put e2 2 'y z'").await;
        s.expect("put e3 '' ''").await;
        s.expect("commit").await;
        s.send("0\n\u{4}\u{4}").await;
        // Second upload: the commit fails.
        s.expect("upload /d a b").await;
        s.expect("put e1 1 x").await;
        s.expect("commit").await;
        s.send("15 Entry exists: e1\n\u{4}\u{4}").await;
        // Third: a row of the wrong width is refused and the upload aborted.
        s.expect("upload /d a b").await;
        s.expect("put ok 1 2").await;
        s.expect("abort").await;
        s.send("0\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    let row =
        |n: &str, a: Option<&str>, b: Option<&str>| (n.to_owned(), vec![a.map(str::to_owned), b.map(str::to_owned)]);
    let sent = c
        .upload(
            "/d",
            &["a", "b"],
            vec![row("e1", Some("1"), Some("x")), row("e2", Some("2"), Some("y z")), row("e3", None, Some(""))],
        )
        .await
        .expect("upload");
    assert_eq!(sent, 3);
    let e = c.upload("/d", &["a", "b"], vec![row("e1", Some("1"), Some("x"))]).await.expect_err("exists");
    assert_eq!(e.code(), 15);
    let bad = vec![row("ok", Some("1"), Some("2")), ("short".to_owned(), vec![Some("1".to_owned())])];
    assert!(matches!(c.upload("/d", &["a", "b"], bad).await, Err(ClientError::InvalidArgument(_))));
    join(server).await;
}

#[tokio::test]
async fn stream_is_lazy_and_a_dropped_stream_is_drained() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("find /a ''").await;
        s.send("0\na1\na2\na3\n\u{4}\u{4}").await;
        s.expect("find /b ''").await;
        s.send("0\nb1\nb2\n\u{4}\u{4}").await;
        // The client dropped that stream after one line: it cancels, drains, then sends pwd.
        s.expect(CAN).await;
        s.expect("pwd").await;
        s.send("0\n/b\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    {
        let rows = c.stream("find /a ''").await.expect("stream");
        let lines: Vec<String> = rows.map(|l| l.expect("line")).collect().await;
        assert_eq!(lines, ["a1", "a2", "a3"]);
    }
    {
        let mut rows = c.stream("find /b ''").await.expect("stream");
        assert_eq!(rows.next_line().await.expect("b1").as_deref(), Some("b1"));
    }
    assert_eq!(c.pwd().await.expect("pwd"), "/b");
    join(server).await;
}

#[tokio::test]
async fn line_runs_hold_the_same_lines_and_keep_the_stream_in_step() {
    let (listener, config) = listener().await;
    // The client says when it has read b1..b3, so that b4 arrives apart from them.
    let (go_tx, mut go_rx) = tokio::sync::mpsc::channel::<()>(1);
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("find /a ''").await;
        s.send("0\na1\na2\n\na\r4\n\u{4}\u{4}").await;
        s.expect("find /b ''").await;
        s.send("0\nb1\nb2\nb3\n").await;
        go_rx.recv().await.expect("the client read b1..b3");
        s.send("b4\n\u{4}\u{4}").await;
        s.expect("find /c ''").await;
        s.send("0\nc1\nc2\n\u{18}99 backend failed\n\u{4}\u{4}").await;
        s.expect("find /d ''").await;
        s.send("5 No such collection\n\u{4}\u{4}").await;
        s.expect("pwd").await;
        s.send("0\n/\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");

    // Runs: the status line is not among the lines; every line ends with its newline.
    let mut rows = c.stream("find /a ''").await.expect("stream");
    let mut text = String::new();
    while let Some(run) = rows.next_lines().await.expect("run") {
        assert_eq!(run.lines().count(), run.count());
        text.push_str(run.text());
    }
    assert_eq!(text, "a1\na2\n\na\r4\n");
    assert_eq!(rows.lines_read(), 4);
    assert!(rows.is_finished());

    // One line, then the rest of what arrived as a run, then one line again.
    let mut rows = c.stream("find /b ''").await.expect("stream");
    assert_eq!(rows.next_line().await.expect("b1").as_deref(), Some("b1"));
    let mut rest = Vec::new();
    while rest.len() < 2 {
        let run = rows.next_lines().await.expect("run").expect("b2 and b3");
        rest.extend(run.lines().map(str::to_owned));
    }
    assert_eq!(rest, ["b2", "b3"]);
    go_tx.send(()).await.expect("server waits");
    assert_eq!(rows.next_line().await.expect("b4").as_deref(), Some("b4"));
    assert_eq!(rows.next_lines().await.expect("end"), None);
    assert_eq!(rows.lines_read(), 4);

    // The lines before an inline abort come first, then its error.
    let mut rows = c.stream("find /c ''").await.expect("stream");
    let mut got = Vec::new();
    let error = loop {
        match rows.next_lines().await {
            Ok(Some(run)) => got.extend(run.lines().map(str::to_owned)),
            Ok(None) => panic!("the abort was lost"),
            Err(e) => break e,
        }
    };
    assert_eq!(got, ["c1", "c2"]);
    assert!(matches!(error, ClientError::Server { code: 99, .. }), "{error:?}");

    // An error status is an error, not a run holding it.
    let mut rows = c.start("find /d ''").await.expect("start");
    match rows.next_lines().await {
        Err(ClientError::Server { code: 5, message }) => assert_eq!(message, "No such collection"),
        other => panic!("expected error 5, got {other:?}"),
    }
    assert_eq!(c.pwd().await.expect("pwd"), "/");
    join(server).await;
}

#[tokio::test]
async fn stream_reads_only_as_the_caller_consumes() {
    const ROWS: usize = 32 * 1024;
    let (listener, config) = listener().await;
    let (progress_tx, mut progress_rx) = tokio::sync::watch::channel(0usize);
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("find /huge ''").await;
        s.send("0\n").await;
        let row = format!("{}\n", "x".repeat(1023));
        for i in 0..ROWS {
            s.send(&row).await;
            let _ = progress_tx.send(i + 1);
        }
        s.send("\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    let mut rows = c.stream("find /huge ''").await.expect("stream");
    rows.next_line().await.expect("first").expect("a line");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let written = *progress_rx.borrow_and_update();
    assert!(written < ROWS / 2, "server wrote {written} of {ROWS} rows while the client read one");
    let rest = rows.drain().await.expect("drain");
    assert_eq!(rest as usize, ROWS - 1);
    join(server).await;
}

#[tokio::test]
async fn escape_option_encodes_arguments_and_decodes_values() {
    let (listener, mut config) = listener().await;
    config.escape = true;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        let (options, _) = s.handshake().await;
        assert_eq!(options, ["plain", "escape"]);
        s.expect("addentry /d/e a two\\nlines b back\\\\slash").await;
        s.send("0\n\u{4}\u{4}").await;
        s.expect("getattr /d a b").await;
        s.send("0\ne\n\\N\nline\\none\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    assert!(c.escape());
    c.addentry("/d/e", &[("a", "two\nlines"), ("b", "back\\slash")]).await.expect("addentry");
    let rows = c.getattr("/d", &["a", "b"]).await.expect("getattr");
    assert_eq!(rows, vec![("e".to_owned(), vec![None, Some("line\none".to_owned())])]);
    join(server).await;
}

#[tokio::test]
async fn without_escape_unsendable_values_are_refused_locally() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("pwd").await;
        s.send("0\n/\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    let e = c.addentry("/d/e", &[("a", "two\nlines")]).await.expect_err("refused");
    assert!(matches!(e, ClientError::InvalidArgument(_)), "{e:?}");
    assert!(matches!(c.execute("cd /a\nrm x").await, Err(ClientError::InvalidArgument(_))));
    assert_eq!(c.pwd().await.expect("still usable"), "/");
    join(server).await;
}

#[tokio::test]
async fn session_id_is_kept_and_resumed() {
    let (listener, mut config) = listener().await;
    config.session = true;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        let (options, _) = s.handshake().await;
        assert_eq!(options, ["plain", "session"]);
        s.expect("cd /work").await;
        s.send("0\n\u{4}session42\u{4}").await;
        drop(s);
        // The resumed connection: `resume42`, no OK, no login block.
        let mut s = Fake::accept(&listener).await;
        s.send(GREETING).await;
        assert_eq!(s.block().await, ["resume42"]);
        s.expect("pwd").await;
        s.send("0\n/work\n\u{4}session42\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    assert_eq!(c.session_id(), None);
    c.cd("/work").await.expect("cd");
    assert_eq!(c.session_id(), Some(42));
    c.reconnect_resume().await.expect("resume");
    assert_eq!(c.pwd().await.expect("pwd"), "/work");
    join(server).await;
}

#[tokio::test]
async fn failed_login_is_the_first_commands_error_then_closed() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.handshake().await;
        s.expect("pwd").await;
        s.send("4 Permission denied: bad login\n\u{4}\u{4}").await;
    });
    let mut c = Client::connect(config).await.expect("connect");
    assert_eq!(c.pwd().await.expect_err("denied").code(), 4);
    join(server).await;
    let e = c.pwd().await.expect_err("closed");
    assert!(e.is_connection_lost(), "{e:?}");
    assert!(c.is_broken());
    assert!(matches!(c.pwd().await, Err(ClientError::Closed)));
}

#[tokio::test]
async fn refused_options_and_bad_greeting_fail_connect() {
    let (listener, config) = listener().await;
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        s.send(GREETING).await;
        s.block().await;
        s.send("4 TLS is not available on this server\n\u{4}\u{4}").await;
        let mut s = Fake::accept(&listener).await;
        s.send("HTTP/1.1 400 Bad Request\r\n\r\nnope\n").await;
    });
    match Client::connect(config.clone()).await {
        Err(ClientError::Server { code: 4, message }) => assert_eq!(message, "TLS is not available on this server"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(matches!(Client::connect(config).await, Err(ClientError::Protocol(_))));
    join(server).await;
}

#[test]
fn blocking_client_executes() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async move {
            listener.set_nonblocking(true).expect("nonblocking");
            let listener = TcpListener::from_std(listener).expect("listener");
            let mut s = Fake::accept(&listener).await;
            s.handshake().await;
            s.expect("pwd").await;
            s.send("0\n/\n\u{4}\u{4}").await;
            s.expect("getattr /d a").await;
            s.send("0\ne1\n7\n\u{4}\u{4}").await;
        });
    });
    let config = ClientConfig { host: "127.0.0.1".into(), port, login: "bob".into(), ..ClientConfig::default() };
    let mut c = BlockingClient::connect(config).expect("connect");
    assert_eq!(c.execute("pwd").expect("pwd"), ["/"]);
    let rows = c.with(async |c| c.getattr("/d", &["a"]).await).expect("getattr");
    assert_eq!(rows, vec![("e1".to_owned(), vec![Some("7".to_owned())])]);
    server.join().expect("server thread");
}

#[tokio::test]
async fn connect_failure_is_a_connect_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        l.local_addr().expect("addr").port()
    };
    let config = ClientConfig { host: "127.0.0.1".into(), port, ..ClientConfig::default() };
    let e = Client::connect(config).await.expect_err("nobody listens");
    assert!(matches!(e, ClientError::Connect(_)), "{e:?}");
    assert_eq!(e.code(), -1);
}

/// `tls_optional` (mdclient's `UseSSL = try`): a server that offers no `ssl` gets a plain
/// connection; without it, TLS settings against such a server are a connect error.
#[tokio::test]
async fn tls_optional_falls_back_to_plain() {
    use ardacat_client::TlsClientConfig;
    let (listener, config) = listener().await;
    let tls = TlsClientConfig { ca: "/nonexistent/ca.pem".into(), cert: None, key: None };
    let server = tokio::spawn(async move {
        let mut s = Fake::accept(&listener).await;
        let (options, login) = s.handshake().await;
        assert_eq!(options, ["plain"]);
        assert_eq!(login, ["0 alice", "5 pw d"]);
        s.expect("whoami").await;
        s.send("0\nalice\n\u{4}\u{4}").await;
        s.expect_eof().await;
        // Required TLS: the client gives up after the greeting, before sending anything.
        let mut s = Fake::accept(&listener).await;
        s.send(GREETING).await;
        s.expect_eof().await;
    });
    let optional = ClientConfig { tls: Some(tls.clone()), tls_optional: true, ..config.clone() };
    let mut c = Client::connect(optional).await.expect("plain fallback");
    assert!(!c.is_tls());
    assert_eq!(c.whoami().await.expect("whoami"), "alice");
    c.close().await.expect("close");
    let required = ClientConfig { tls: Some(tls), ..config };
    let e = Client::connect(required).await.expect_err("TLS required");
    assert!(e.message().contains("does not offer TLS"), "{e:?}");
    join(server).await;
}
