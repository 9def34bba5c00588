//! Test harness shared by the end-to-end tests: fresh databases on both backends, the real
//! `ardacat-server` binary on loopback ports, and a raw AMGA protocol connection.
//! PostgreSQL is never optional: if it cannot be reached the test fails, it does not skip.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One test per backend for each scenario: `<scenario>::sqlite` and `<scenario>::postgres`.
/// The scenario futures are boxed: unoptimized, they are too big for a test thread's stack.
#[allow(unused_macros)]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                Box::pin(super::$name(super::Backend::Sqlite)).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                Box::pin(super::$name(super::Backend::Postgres)).await
            }
        }
    )*};
}

pub const ROOT_PASSWORD: &str = "test-root-secret";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub const BACKENDS: [Backend; 2] = [Backend::Sqlite, Backend::Postgres];

/// Two collections with the same attribute names, a user and a group: what the tests of kept
/// `getattr` plans (TCP sessions, the SOAP shelf) change under a repeated read.
pub const REPEATED_GETATTR_SETUP: &[&str] = &[
    "user_create bob bpw",
    "grp_create team",
    "createdir /g",
    "addattr /g n int",
    "addattr /g s varchar(20)",
    "addentry /g/e1 n 1 s one",
    "addentry /g/e2 n 2 s two",
    "createdir /h",
    "addattr /h n int",
    "addattr /h s varchar(20)",
    "addentry /h/e1 n 9 s nine",
];

/// The `getattr_plans_total` counters as `stats` prints them: plans `getattr` took from a
/// session's own kept plan, lent from the catalogue's shelf, and built anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GetattrPlans {
    pub session: u64,
    pub shared: u64,
    pub built: u64,
}

pub async fn getattr_plans(c: &mut RawConn) -> GetattrPlans {
    let (code, lines) = c.lines("stats").await;
    assert_eq!(code, 0, "stats: {lines:?}");
    let n = |source: &str| -> u64 {
        let prefix = format!("getattr_plans_total{{source=\"{source}\"}} ");
        let value = lines.iter().find_map(|l| l.strip_prefix(&prefix));
        value.unwrap_or_else(|| panic!("no {prefix} in {lines:?}")).trim().parse().expect("a count")
    };
    GetattrPlans { session: n("session"), shared: n("shared"), built: n("built") }
}

/// Admin URL of the PostgreSQL server the tests create databases on.
pub fn pg_admin_url() -> String {
    std::env::var("ARDACAT_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A database that exists for one test and is removed afterwards.
pub struct TestDb {
    pub url: String,
    pub backend: Backend,
    _dir: Option<tempfile::TempDir>,
    pg_name: Option<String>,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite:{}", dir.path().join("cat.db").display());
                TestDb { url, backend, _dir: Some(dir), pg_name: None }
            }
            Backend::Postgres => {
                let name = format!("ardacat_t_{:016x}", rand::random::<u64>());
                let admin = pg_admin_url();
                let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
                    .await
                    .unwrap_or_else(|e| panic!("PostgreSQL is required for this test ({admin}): {e}"));
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&mut conn)
                    .await
                    .expect("create test database");
                let url = match admin.rfind('/') {
                    Some(i) => format!("{}/{name}", &admin[..i]),
                    None => panic!("bad ARDACAT_TEST_PG"),
                };
                TestDb { url, backend, _dir: None, pg_name: Some(name) }
            }
        }
    }
}

impl TestDb {
    /// A PostgreSQL database the test manages itself (e.g. on a throwaway cluster); dropping
    /// the handle removes nothing.
    pub fn external(url: String) -> TestDb {
        TestDb { url, backend: Backend::Postgres, _dir: None, pg_name: None }
    }

    /// Another handle on the same database, for a second server process on it. Dropping the
    /// handle removes nothing; the original `TestDb` still owns (and removes) the database.
    pub fn share(&self) -> TestDb {
        TestDb { url: self.url.clone(), backend: self.backend, _dir: None, pg_name: None }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(name) = self.pg_name.take() {
            let admin = pg_admin_url();
            // Drop runs inside a runtime; do the async cleanup on a thread of its own.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
                rt.block_on(async {
                    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await.ok()?;
                    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
                        .execute(&mut conn)
                        .await
                        .ok()
                })
            })
            .join();
        }
    }
}

/// A running `ardacat-server` process.
///
/// Code 99 is always a bug, so every test server watches its own log: a line the server logs
/// at ERROR level or a storage error (which is what an internal error leaves in the log on both
/// frontends) fails the test when the server is dropped or killed, unless the test called
/// [`TestServer::expect_internal_errors`] and said why.
pub struct TestServer {
    pub child: Child,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    /// The metrics listener (`--metrics-bind`), when started with one.
    pub metrics: Option<SocketAddr>,
    pub db: TestDb,
    log: LogWatch,
}

/// The server's stderr, copied to the test's stderr by a thread that keeps the internal-error lines.
struct LogWatch {
    errors: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Set by [`TestServer::expect_internal_errors`]: the reason internal errors are expected.
    expected: Option<String>,
}

/// Does this server log line (ANSI colours removed) record an internal error?
pub fn is_internal_error_line(line: &str) -> bool {
    line.split_whitespace().take(3).any(|w| w == "ERROR") || line.contains("storage error")
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters… final byte in @..~
            for d in chars.by_ref() {
                if ('@'..='~').contains(&d) && d != '[' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl LogWatch {
    fn start(stderr: std::process::ChildStderr) -> LogWatch {
        let errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = errors.clone();
        let thread = std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut raw = Vec::new();
            while matches!(reader.read_until(b'\n', &mut raw), Ok(n) if n > 0) {
                let line = strip_ansi(String::from_utf8_lossy(&raw).trim_end());
                eprintln!("{line}");
                if is_internal_error_line(&line) {
                    seen.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                }
                raw.clear();
            }
        });
        LogWatch { errors, thread: Some(thread), expected: None }
    }

    /// For a server whose stderr the test reads itself (and checks itself).
    fn inert(why: &str) -> LogWatch {
        LogWatch { errors: Default::default(), thread: None, expected: Some(why.to_string()) }
    }
}

impl TestServer {
    /// A server the test started itself and whose stderr it reads (e.g. to parse JSON logs):
    /// the internal-error check of the log is then the test's own (`why` says how).
    #[allow(dead_code)]
    pub fn from_started(child: Child, tcp: SocketAddr, http: SocketAddr, db: TestDb, why: &str) -> TestServer {
        TestServer { child, tcp, http, metrics: None, db, log: LogWatch::inert(why) }
    }

    pub async fn start(backend: Backend) -> TestServer {
        Self::start_with(TestDb::new(backend).await, &[]).await
    }

    /// Start on an existing database with extra flags (e.g. `--sessions force`).
    pub async fn start_with(db: TestDb, extra: &[&str]) -> TestServer {
        Self::start_with_env(db, extra, &[]).await
    }

    /// [`TestServer::start_with`] with extra environment variables (secrets that have no flag).
    pub async fn start_with_env(db: TestDb, extra: &[&str], env: &[(&str, &str)]) -> TestServer {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ardacat-server"));
        cmd.args(["--database", &db.url, "--tcp-port", "0", "--http-port", "0"])
            .args(extra)
            .envs(env.iter().copied())
            .env("ARDACAT_ROOT_PASSWORD", ROOT_PASSWORD)
            // Every test server checks each DDS answer against the full parser.
            .env("ARDACAT_SOAP_DDS_SHADOW", "true")
            .env("RUST_LOG", "warn")
            .env_remove("ARDACAT_CONFIG")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start ardacat-server");
        let log = LogWatch::start(child.stderr.take().expect("stderr"));
        let stdout = child.stdout.take().expect("stdout");
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        })
        .await
        .expect("join")
        .expect("read server banner");
        let addr = |key: &str| -> SocketAddr {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("no {key} in server output: {line:?}"))
        };
        let (tcp, http) = (addr("tcp="), addr("http="));
        let metrics = line.split_whitespace().find_map(|w| w.strip_prefix("metrics=")).and_then(|a| a.parse().ok());
        TestServer { child, tcp, http, metrics, db, log }
    }

    /// A fresh database and extra flags (e.g. `--max-line 4096`).
    pub async fn start_flags(backend: Backend, extra: &[&str]) -> TestServer {
        Self::start_with(TestDb::new(backend).await, extra).await
    }

    /// A raw connection logged in as another user.
    pub async fn raw_as(&self, user: &str, password: &str) -> RawConn {
        RawConn::login(self.tcp, user, Some(password)).await
    }

    pub async fn raw(&self) -> RawConn {
        RawConn::login(self.tcp, "root", Some(ROOT_PASSWORD)).await
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stop with SIGKILL and give back the database (for crash tests and restarts). The log
    /// check of [`TestServer`] runs as on drop.
    pub fn kill(mut self) -> TestDb {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(
            &mut self.db,
            TestDb { url: String::new(), backend: Backend::Sqlite, _dir: None, pg_name: None },
        )
    }

    /// Opt out of the internal-error check, visibly: for a test that provokes internal errors
    /// on purpose. `why` is printed.
    pub fn expect_internal_errors(&mut self, why: &str) {
        eprintln!("this test expects internal errors from the server: {why}");
        self.log.expected = Some(why.to_string());
    }

    /// The internal-error lines the server logged so far.
    pub fn internal_errors(&self) -> Vec<String> {
        self.log.errors.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Fail now if the server logged an internal error (the drop check does the same at the end).
    pub fn assert_no_internal_errors(&self) {
        let errors = self.internal_errors();
        assert!(errors.is_empty(), "the server logged internal errors (code 99 is a bug):\n{}", errors.join("\n"));
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The pipe closes with the process: the thread has then seen every line.
        if let Some(t) = self.log.thread.take() {
            let _ = t.join();
        }
        if self.log.expected.is_none() && !std::thread::panicking() {
            self.assert_no_internal_errors();
        }
    }
}

/// A raw protocol connection: bytes in, bytes out, no client library in between.
pub struct RawConn {
    pub stream: TcpStream,
    buf: Vec<u8>,
    /// How long one read may wait before the test fails (default 30 s).
    pub timeout: Duration,
}

pub const END: &[u8] = b"\x04\x04";

impl RawConn {
    pub async fn connect(addr: SocketAddr) -> RawConn {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).ok();
        RawConn { stream, buf: Vec::new(), timeout: Duration::from_secs(30) }
    }

    /// Greeting, `plain`, `OK`, login block — as the original client does.
    pub async fn login(addr: SocketAddr, user: &str, password: Option<&str>) -> RawConn {
        RawConn::login_with(addr, user, password, &[]).await
    }

    /// [`RawConn::login`] with options after `plain` on the options block (`escape`, `session`).
    pub async fn login_with(addr: SocketAddr, user: &str, password: Option<&str>, options: &[&str]) -> RawConn {
        let mut c = RawConn::connect(addr).await;
        let greeting = c.read_lines(3).await;
        assert!(greeting.starts_with(b"ARDA Metadata Server "), "{greeting:?}");
        let mut block = String::from("plain\n");
        for o in options {
            block.push_str(o);
            block.push('\n');
        }
        block.push('\n');
        c.send(block.as_bytes()).await;
        assert_eq!(c.read_lines(1).await, b"OK\n");
        let mut login = format!("0 {user}\n");
        if let Some(p) = password {
            login.push_str(&format!("5 {p}\n"));
        }
        login.push('\n');
        c.send(login.as_bytes()).await;
        c
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    async fn fill(&mut self) -> bool {
        let mut chunk = vec![0u8; 65536];
        match tokio::time::timeout(self.timeout, self.stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => false,
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(_) => panic!("timed out waiting for the server; have {:?}", String::from_utf8_lossy(&self.buf)),
        }
    }

    pub async fn read_lines(&mut self, n: usize) -> Vec<u8> {
        loop {
            let mut seen = 0;
            for (i, b) in self.buf.iter().enumerate() {
                if *b == b'\n' {
                    seen += 1;
                    if seen == n {
                        let rest = self.buf.split_off(i + 1);
                        return std::mem::replace(&mut self.buf, rest);
                    }
                }
            }
            assert!(self.fill().await, "connection closed before {n} lines");
        }
    }

    /// Read one whole reply, up to and including its end marker (`\x04\x04` or `\x04session<id>\x04`).
    pub async fn reply(&mut self) -> Vec<u8> {
        loop {
            if let Some(start) = self.buf.iter().position(|b| *b == 0x04)
                && let Some(end) = self.buf[start + 1..].iter().position(|b| *b == 0x04)
            {
                let cut = start + 1 + end + 1;
                let rest = self.buf.split_off(cut);
                return std::mem::replace(&mut self.buf, rest);
            }
            assert!(self.fill().await, "connection closed mid-reply: {:?}", String::from_utf8_lossy(&self.buf));
        }
    }

    /// Send a command line and return its reply bytes.
    pub async fn cmd(&mut self, line: &str) -> Vec<u8> {
        self.send(format!("{line}\n").as_bytes()).await;
        self.reply().await
    }

    /// Send a command and return (status code, data lines), asserting the plain `\x04\x04` end.
    pub async fn lines(&mut self, line: &str) -> (i32, Vec<String>) {
        let r = self.cmd(line).await;
        let text = String::from_utf8(r).expect("utf8 reply");
        let body = text.split('\x04').next().unwrap_or_default();
        let mut it = body.split('\n');
        let status = it.next().unwrap_or_default();
        let code = status.split(' ').next().unwrap_or_default().parse().unwrap_or(-1);
        let mut lines: Vec<String> = it.map(String::from).collect();
        lines.pop(); // after the last \n
        (code, lines)
    }

    /// A plain resume, as the original client does it: greeting, `resume<id>\n\n`, and no `OK`
    /// and no login block.
    pub async fn resume(addr: SocketAddr, id: u64) -> RawConn {
        let mut c = RawConn::connect(addr).await;
        let greeting = c.read_lines(3).await;
        assert!(greeting.starts_with(b"ARDA Metadata Server "), "{greeting:?}");
        c.send(format!("resume{id}\n\n").as_bytes()).await;
        c
    }

    /// Whatever arrives within `wait` (already buffered bytes included); empty means silence.
    /// The connection closing counts as silence too (see [`RawConn::closed`]).
    pub async fn silence(&mut self, wait: Duration) -> Vec<u8> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut chunk = vec![0u8; 4096];
        while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
            if n == 0 {
                break;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
        std::mem::take(&mut self.buf)
    }

    /// The next bytes from the server (buffered ones first), at most `max`; empty at EOF.
    pub async fn read_some(&mut self, max: usize) -> Vec<u8> {
        if self.buf.is_empty() && !self.fill().await {
            return Vec::new();
        }
        let n = self.buf.len().min(max);
        let rest = self.buf.split_off(n);
        std::mem::replace(&mut self.buf, rest)
    }

    /// Read and discard up to the end of the current reply without keeping it all in memory;
    /// returns (bytes read, the last `keep` bytes of the reply).
    pub async fn drain_reply(&mut self, keep: usize) -> (usize, Vec<u8>) {
        let mut total = 0;
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let chunk = self.read_some(1 << 20).await;
            assert!(!chunk.is_empty(), "connection closed mid-reply; tail {:?}", String::from_utf8_lossy(&tail));
            total += chunk.len();
            tail.extend_from_slice(&chunk);
            if let Some(end) = reply_end(&tail) {
                // Anything after the marker belongs to the next reply.
                let extra = tail.split_off(end);
                total -= extra.len();
                let mut rest = extra;
                rest.extend_from_slice(&self.buf);
                self.buf = rest;
                let cut = tail.len().saturating_sub(keep);
                return (total, tail.split_off(cut));
            }
            if tail.len() > 2 * keep + 64 {
                tail.drain(..tail.len() - keep - 64);
            }
        }
    }

    /// Write `bytes` while reading at the same time (the server may answer and hang up before it
    /// has read them all). Returns whether the whole write went through and every byte read up
    /// to EOF.
    pub async fn send_and_read_to_eof(&mut self, bytes: &[u8]) -> (bool, Vec<u8>) {
        let limit = self.timeout;
        let mut out = std::mem::take(&mut self.buf);
        let (mut rd, mut wr) = self.stream.split();
        let write = async { wr.write_all(bytes).await.is_ok() };
        let read = async {
            let mut chunk = vec![0u8; 65536];
            loop {
                match tokio::time::timeout(limit, rd.read(&mut chunk)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => break,
                    Ok(Ok(n)) => out.extend_from_slice(&chunk[..n]),
                    Err(_) => panic!("timed out waiting for EOF; have {:?}", String::from_utf8_lossy(&out)),
                }
            }
        };
        let (written, ()) = tokio::join!(write, read);
        (written, out)
    }

    /// Shut down the write half (the server sees EOF after what was sent).
    pub async fn shutdown_write(&mut self) {
        self.stream.shutdown().await.expect("shutdown");
    }

    /// Is the peer closed (EOF) within the timeout?
    pub async fn closed(&mut self) -> bool {
        let mut chunk = vec![0u8; 1024];
        loop {
            match tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// Expect success and return the data lines.
pub async fn ok(c: &mut RawConn, line: &str) -> Vec<String> {
    let (code, lines) = c.lines(line).await;
    assert_eq!(code, 0, "{line} failed: {lines:?}");
    lines
}

/// Expect failure with `code`.
pub async fn fails(c: &mut RawConn, line: &str, code: i32) {
    let (got, lines) = c.lines(line).await;
    assert_eq!(got, code, "{line}: expected error {code}, got {got} {lines:?}");
}

/// Where the first reply in `bytes` ends: just after `\x04\x04` or `\x04session<digits>\x04`.
/// Data lines never hold EOT, so the first EOT starts the end marker.
pub fn reply_end(bytes: &[u8]) -> Option<usize> {
    let start = bytes.iter().position(|b| *b == 0x04)?;
    let end = bytes[start + 1..].iter().position(|b| *b == 0x04)?;
    Some(start + 1 + end + 1)
}

/// The session id in a reply's end marker (`\x04session<id>\x04`), if any.
pub fn session_of(reply: &[u8]) -> Option<u64> {
    let end = reply.len().checked_sub(1).filter(|&i| reply[i] == 0x04)?;
    let start = reply[..end].iter().rposition(|b| *b == 0x04)?;
    std::str::from_utf8(reply[start + 1..end].strip_prefix(b"session")?).ok()?.parse().ok()
}

/// A `/proc/<pid>/status` field in kB (`VmRSS`, `VmHWM`, …); Linux only.
pub fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Samples a process's resident set size on a thread of its own and keeps the peak.
pub struct RssMonitor {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    peak: std::sync::Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssMonitor {
    pub fn start(pid: u32) -> RssMonitor {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Some(kb) = proc_status_kb(pid, "VmRSS") {
                    p.fetch_max(kb, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        RssMonitor { stop, peak, thread: Some(thread) }
    }

    /// Peak VmRSS seen so far, in kB.
    pub fn peak_kb(&self) -> u64 {
        self.peak.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stop sampling and return the peak in kB.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak_kb()
    }
}

impl Drop for RssMonitor {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// PostgreSQL: for each collection at or under `dir` with an entry table, whether the planner has
/// statistics of that table (`pg_class.reltuples` is -1 until the first `ANALYZE` or `VACUUM`).
pub async fn pg_planner_statistics(db: &TestDb, dir: &str) -> Vec<(String, bool)> {
    assert_eq!(db.backend, Backend::Postgres, "planner statistics are PostgreSQL's");
    let mut conn =
        <sqlx::PgConnection as sqlx::Connection>::connect(&db.url).await.expect("connect to the test database");
    sqlx::query_as::<_, (String, bool)>(
        "SELECT k.path, c.reltuples >= 0 FROM collections k JOIN pg_class c ON c.oid = to_regclass('e' || k.id) \
         WHERE k.has_table AND (k.path = $1 OR k.path LIKE $1 || '/%') ORDER BY k.path",
    )
    .bind(dir)
    .fetch_all(&mut conn)
    .await
    .expect("read pg_class")
}
