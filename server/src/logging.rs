//! Log output and request logging: the subscriber (`--log-format text|json`, filter from
//! `RUST_LOG`, default `info`), request ids, and the one line per request (target
//! `ardacat::request`) with its id, frontend, user, peer, command or operation, outcome code,
//! rows returned and duration. Each request runs inside a `request` span carrying the same id,
//! so every event logged on its behalf — frontend, catalogue, store — carries it too. The request
//! line itself has every field, so only JSON writes it inside the span (its `span` object).
//!
//! Audit lines (target `audit`: logins, writes, denials) are separate events written where the
//! decision is taken (`crate::auth`, the TCP command loop); this module never writes or filters
//! them. It decides the shape of log lines, not what is logged.
//!
//! Text lines' fields are written by [`PlainFields`] and every timestamp by [`UtcMicros`]: the
//! bytes tracing-subscriber's own would write, at a fraction of the cost on each request. The
//! request line itself, in text without colours and outside any span (TCP and SOAP write it
//! once the request has left its span), is written here directly in the same bytes
//! ([`RequestLine::emit`]): going through tracing's event formatting was a fifteenth of a `get`.
//!
//! Lines reach stderr through a shared buffer ([`LineQueue`]): a request thread formats its
//! line into its own buffer (kept for its next line) and appends it under a lock (no system
//! call; the shared buffer is two that swap, so neither grows anew each batch); a writer thread
//! writes what has gathered `GATHER` after the first line of a batch arrived, so under load
//! many lines share one `write` instead of each request paying for its own. A line is out at
//! most a few milliseconds after it was logged; the guard held by `main` writes out the rest
//! when the process ends, and a flood larger than `MAX_BUFFERED` is written by the thread that
//! finds the buffer full (so the buffer stays bounded and no line is dropped).

use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry, filter::Targets};

use crate::config::LogFormat;

mod fields;
mod timestamp;
pub use fields::PlainFields;
pub use timestamp::UtcMicros;

/// How long the writer lets lines gather after the first one of a batch.
const GATHER: Duration = Duration::from_millis(2);
/// Bytes buffered at most before the logging thread writes them itself.
const MAX_BUFFERED: usize = 1 << 20;

/// Install the global subscriber, writing to stderr through the shared buffer. JSON lines are
/// flat objects: the event's fields at the top level plus `timestamp`, `level`, `target`, and
/// `span`/`spans` (the request span's fields). Keep the guard until the process ends:
/// dropping it writes out every line still buffered.
#[must_use = "dropping the guard flushes the log; hold it until the process ends"]
pub fn init(format: LogFormat) -> LogGuard {
    let (queue, guard) = LineQueue::start(std::io::stderr());
    // Colours only for a terminal: a journal or log file gets plain text (and formatting the
    // escape codes was a cost on every request line).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    LINE_IN_SPAN.store(matches!(format, LogFormat::Json), Ordering::Relaxed);
    match static_targets(std::env::var("RUST_LOG").ok().as_deref()) {
        Some(targets) => install(targets, format, queue, ansi),
        None => install(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()), format, queue, ansi),
    }
    guard
}

/// `RUST_LOG` (default `info`) as a [`Targets`] filter when it is a plain list of
/// `target=level`, `target` and `level` directives, which both filters read alike. An
/// `EnvFilter` keeps per-span state behind locks that every request's span takes on each enter,
/// exit and close, from whichever thread polls it (docs/benchmarks.md, round 14); `Targets`
/// decides by a callsite's target and level alone. Span and field directives (`[`, `{`), spaces
/// and anything `Targets` cannot parse are left to `EnvFilter`.
fn static_targets(spec: Option<&str>) -> Option<Targets> {
    let spec = spec.unwrap_or("info");
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '=' | ',' | '-');
    if spec.is_empty() || !spec.chars().all(plain) || spec.split(',').any(|d| d.is_empty() || d.starts_with('=')) {
        return None;
    }
    spec.parse().ok()
}

/// The global subscriber: `filter`, then the text or JSON lines into `queue`.
fn install<F>(filter: F, format: LogFormat, queue: LineQueue, ansi: bool)
where
    F: Layer<Registry> + Send + Sync + 'static,
{
    let base = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Text => {
            let installed = base.with(text_lines(queue.clone(), ansi)).try_init().is_ok();
            if installed && !ansi {
                let _ = DIRECT_REQUEST_LINES.set(queue);
            }
        }
        LogFormat::Json => {
            let lines = tracing_subscriber::fmt::layer().with_writer(queue).with_ansi(ansi).with_timer(UtcMicros);
            let _ = base.with(lines.json().flatten_event(true).with_current_span(true).with_span_list(true)).try_init();
        }
    }
}

/// The text lines' layer; [`RequestLine::write_text`] writes the bytes it writes for the
/// request line (checked by the tests against this very layer).
fn text_lines<S>(queue: LineQueue, ansi: bool) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer().with_writer(queue).with_ansi(ansi).with_timer(UtcMicros).fmt_fields(PlainFields)
}

/// Where request lines are written directly ([`RequestLine::emit`]): set when the installed
/// subscriber writes text without colours into this queue.
static DIRECT_REQUEST_LINES: std::sync::OnceLock<LineQueue> = std::sync::OnceLock::new();

struct Shared {
    /// Lines not yet written.
    pending: Mutex<Vec<u8>>,
    /// Signalled when a line arrives in an empty buffer.
    arrived: Condvar,
    /// Held while a batch is taken and written, so batches go out in the order they were taken.
    out: Mutex<Output>,
}

struct Output {
    to: Box<dyn Write + Send>,
    /// The last batch's buffer, emptied: it becomes `pending` when the next batch is taken, so
    /// appending lines does not grow a new buffer from nothing every batch.
    spare: Vec<u8>,
}

impl Shared {
    /// Take what is pending and write it (under `out`, so order is kept).
    fn write_pending(&self) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let mut batch = std::mem::take(&mut out.spare);
        std::mem::swap(&mut batch, &mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        if !batch.is_empty() {
            let _ = out.to.write_all(&batch);
            let _ = out.to.flush();
        }
        batch.clear();
        // A flood's buffer (see `MAX_BUFFERED`) is not kept.
        if batch.capacity() <= MAX_BUFFERED {
            out.spare = batch;
        }
    }
}

/// The subscriber's writer: each event is formatted into a [`QueuedLine`] that joins the
/// shared buffer when the subscriber drops it.
#[derive(Clone)]
pub struct LineQueue {
    shared: Arc<Shared>,
}

impl LineQueue {
    /// Start the writer thread over `out`.
    pub fn start<W: Write + Send + 'static>(out: W) -> (LineQueue, LogGuard) {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            out: Mutex::new(Output { to: Box::new(out), spare: Vec::new() }),
        });
        let writer = shared.clone();
        let spawned = std::thread::Builder::new().name("ardacat-log".into()).spawn(move || write_batches(&writer));
        if let Err(e) = spawned {
            // Lines then wait for the buffer to fill or the guard; say why on stderr directly.
            eprintln!("ardacat-server: cannot start the log writer thread: {e}");
        }
        (LineQueue { shared: shared.clone() }, LogGuard { shared })
    }

    fn append(&self, line: &[u8]) {
        let mut pending = self.shared.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let first = pending.is_empty();
        pending.extend_from_slice(line);
        let full = pending.len() >= MAX_BUFFERED;
        drop(pending);
        if full {
            self.shared.write_pending();
        } else if first {
            self.shared.arrived.notify_one();
        }
    }
}

thread_local! {
    /// A thread's buffer for the event it is formatting, kept between events (a line costs no
    /// allocation); an event formatted while another is (never seen) gets a new one.
    static LINE_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Lines longer than this do not keep their buffer for the thread's next line.
const KEEP_LINE_BUFFER: usize = 4096;

/// One event's text; joins the buffer when dropped.
pub struct QueuedLine<'a> {
    buf: Vec<u8>,
    queue: &'a LineQueue,
}

impl Write for QueuedLine<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for QueuedLine<'_> {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            self.queue.append(&self.buf);
        }
        let mut buf = std::mem::take(&mut self.buf);
        if buf.capacity() <= KEEP_LINE_BUFFER {
            buf.clear();
            // Fails only while the thread is exiting; the buffer is then simply freed.
            let _ = LINE_BUFFER.try_with(|b| b.set(buf));
        }
    }
}

impl<'a> MakeWriter<'a> for LineQueue {
    type Writer = QueuedLine<'a>;

    fn make_writer(&'a self) -> QueuedLine<'a> {
        QueuedLine { buf: LINE_BUFFER.try_with(|b| b.take()).unwrap_or_default(), queue: self }
    }
}

/// `fmt::Write` into a line's bytes.
struct FmtBytes<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for FmtBytes<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Writes out the buffered lines when dropped.
pub struct LogGuard {
    shared: Arc<Shared>,
}

impl LogGuard {
    /// Write out every line logged before this call.
    pub fn flush(&self) {
        self.shared.write_pending();
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The writer thread: waits for a line, lets more gather for [`GATHER`], writes them in one go.
fn write_batches(shared: &Shared) {
    loop {
        let mut pending = shared.pending.lock().unwrap_or_else(PoisonError::into_inner);
        while pending.is_empty() {
            pending = shared.arrived.wait(pending).unwrap_or_else(PoisonError::into_inner);
        }
        drop(pending);
        std::thread::sleep(GATHER);
        shared.write_pending();
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Whether the request line is written inside its request span: for JSON (the line's `span`
/// object carries the id, as every other event of the request does), not for text, where the
/// span's prefix would repeat five fields the line already has (half of every line's bytes).
static LINE_IN_SPAN: AtomicBool = AtomicBool::new(true);

/// `3fa2c1d0-`: this process's random tag, the start of each of its request ids.
fn id_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| format!("{:08x}-", rand::random::<u32>()))
}

/// A request id unique across the processes sharing a database: a random tag of this process
/// and a counter (`3fa2c1d0-17`).
pub fn next_id() -> String {
    let mut number = itoa::Buffer::new();
    let number = number.format(NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let prefix = id_prefix();
    let mut id = String::with_capacity(prefix.len() + number.len());
    id.push_str(prefix);
    id.push_str(number);
    id
}

tokio::task_local! {
    /// Rows returned by the request running in this task (SOAP; TCP counts in its reply).
    static ROWS: Arc<AtomicU64>;
}

/// Run `f` with a fresh rows counter, which it may hand to tasks it spawns ([`rows_handle`]).
/// Not an `async fn`: that would hold `f` twice in its state (before and inside the scope),
/// doubling the size of every request future that goes through it.
pub fn with_rows<F: Future>(rows: Arc<AtomicU64>, f: F) -> impl Future<Output = F::Output> {
    ROWS.scope(rows, f)
}

/// The current request's rows counter, to carry into a spawned task.
pub fn rows_handle() -> Option<Arc<AtomicU64>> {
    ROWS.try_with(Arc::clone).ok()
}

/// Count `n` rows returned by the current request (nothing outside a request).
pub fn add_rows(n: u64) {
    let _ = ROWS.try_with(|r| r.fetch_add(n, Ordering::Relaxed));
}

/// What a request's log line says.
#[derive(Debug, Clone, Default)]
pub struct RequestLine {
    pub request_id: String,
    pub frontend: &'static str,
    pub user: String,
    /// Formatted once per connection where the frontend can (TCP), not once per request.
    pub peer: Arc<str>,
    /// The TCP command or SOAP operation (a static name), or the web page.
    pub command: Cow<'static, str>,
    /// 0 for success, else the catalogue's error code.
    pub code: i64,
    pub rows: u64,
    pub duration: Duration,
}

impl RequestLine {
    /// Write the line (target `ardacat::request`; `RUST_LOG=ardacat::request=off` silences it),
    /// inside the request's `span` for JSON output only (text would repeat the span's fields).
    pub fn emit(&self, span: &tracing::Span) {
        if LINE_IN_SPAN.load(Ordering::Relaxed) {
            span.in_scope(|| self.event());
            return;
        }
        self.emit_text(DIRECT_REQUEST_LINES.get());
    }

    /// Outside the span: directly into `direct` when tracing would write plain text there and
    /// nothing else (the filter lets the line through and no span is entered, whose name and
    /// fields would prefix it); else through tracing.
    fn emit_text(&self, direct: Option<&LineQueue>) {
        match direct {
            Some(queue)
                if tracing::enabled!(target: "ardacat::request", tracing::Level::INFO)
                    && tracing::dispatcher::get_default(|d| d.current_span().id().is_none()) =>
            {
                self.write_text(queue);
            }
            _ => self.event(),
        }
    }

    /// The line as the text layer ([`text_lines`]) writes [`event`](Self::event) without
    /// colours: `<time>  INFO ardacat::request: request request_id=… frontend="…" user=… peer=…
    /// command=… code=… rows=… duration_ms=…`, each field as [`PlainFields`] writes it.
    fn write_text(&self, queue: &LineQueue) {
        use tracing_subscriber::fmt::format::Writer;
        use tracing_subscriber::fmt::time::FormatTime;
        let mut line = queue.make_writer();
        let mut text = FmtBytes(&mut line.buf);
        let mut w = Writer::new(&mut text);
        let written = (|| {
            UtcMicros.format_time(&mut w)?;
            w.write_str("  INFO ardacat::request: request request_id=")?;
            w.write_str(&self.request_id)?;
            w.write_str(" frontend=")?;
            fields::write_quoted(&mut w, self.frontend)?;
            for (name, value) in [(" user=", &*self.user), (" peer=", &*self.peer), (" command=", &*self.command)] {
                w.write_str(name)?;
                w.write_str(value)?;
            }
            w.write_str(" code=")?;
            w.write_str(itoa::Buffer::new().format(self.code))?;
            w.write_str(" rows=")?;
            w.write_str(itoa::Buffer::new().format(self.rows))?;
            w.write_str(" duration_ms=")?;
            fields::write_f64(&mut w, duration_ms(self.duration))?;
            w.write_char('\n')
        })();
        if written.is_err() {
            // Never seen (the writes go to memory); tracing would drop the line too.
            line.buf.clear();
        }
    }

    fn event(&self) {
        tracing::info!(
            target: "ardacat::request",
            request_id = %self.request_id,
            frontend = self.frontend,
            user = %self.user,
            peer = %self.peer,
            command = %self.command,
            code = self.code,
            rows = self.rows,
            duration_ms = duration_ms(self.duration),
            "request"
        );
    }
}

/// Milliseconds to the microsecond (`0.036`, not `0.035602999999999996`): the clock's noise
/// is larger than that, and the shortest form is cheaper to print.
fn duration_ms(d: Duration) -> f64 {
    d.as_micros() as f64 / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A `Write` into shared memory, to read what the writer thread wrote.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What the text layer writes for `emit` under `filter` (the timestamps cut off), through
    /// the direct path when `direct`; inside a span named `outer` when `in_span`.
    fn request_text(line: &RequestLine, filter: &str, direct: bool, in_span: bool) -> String {
        let out = Shared::default();
        let (queue, guard) = LineQueue::start(out.clone());
        let subscriber = tracing_subscriber::registry()
            .with(static_targets(Some(filter)).unwrap())
            .with(text_lines(queue.clone(), false));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("outer", id = 7u64);
            let _in = in_span.then(|| span.enter());
            line.emit_text(direct.then_some(&queue));
        });
        guard.flush();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| {
                // `2026-12-06T11:01:13.595912Z`: 27 bytes.
                assert!(l.len() > 27 && l.as_bytes()[26] == b'Z', "{l}");
                format!("{}\n", &l[27..])
            })
            .collect()
    }

    /// The request line written directly is the text layer's, byte for byte, for every kind of
    /// value; it is not written when the filter drops it, and inside a span tracing writes it.
    #[test]
    fn direct_request_lines_are_the_text_layers() {
        let texts =
            ["root", "", "CN=Alice Smith, O=Grid", "say \"hi\"", "back\\slash", "tab\there", "esc\x1b[31m", "é ü"];
        let mut lines = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            lines.push(RequestLine {
                request_id: format!("3fa2c1d0-{i}"),
                frontend: ["tcp", "soap", "web"][i % 3],
                user: text.to_string(),
                peer: format!("127.0.0.1:{}", 40000 + i).into(),
                command: Cow::Owned(text.to_string()),
                code: [0, 1, -7, i64::MIN][i % 4],
                rows: [0, 1, u64::MAX][i % 3],
                duration: Duration::from_micros([0, 36, 1_500, 123_456_789, u64::MAX / 4][i % 5]),
            });
        }
        lines.push(RequestLine { frontend: "odd \"front\"\n", ..RequestLine::default() });
        for line in &lines {
            let theirs = request_text(line, "info", false, false);
            assert!(theirs.starts_with("  INFO ardacat::request: request request_id="), "{theirs}");
            assert_eq!(request_text(line, "info", true, false), theirs, "{line:?}");
            assert_eq!(request_text(line, "info,ardacat::request=off", true, false), "");
            let in_span = request_text(line, "info", true, true);
            assert_eq!(in_span, request_text(line, "info", false, true));
            assert!(in_span.starts_with("  INFO outer{id=7}: ardacat::request: request"), "{in_span}");
        }
    }

    #[test]
    fn buffered_lines_are_written_whole_in_order_and_by_the_guard() {
        let out = Shared::default();
        let (queue, guard) = LineQueue::start(out.clone());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let queue = queue.clone();
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        let mut line = queue.make_writer();
                        // An event may arrive in several writes; it stays one line.
                        // 4,000 lines of ~300 bytes: more than MAX_BUFFERED, so request
                        // threads also write batches themselves.
                        write!(line, "t{t} {} ", "x".repeat(290)).unwrap();
                        writeln!(line, "{i}").unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        guard.flush();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 4000);
        for t in 0..4 {
            let mine: Vec<usize> = text
                .lines()
                .filter_map(|l| l.strip_prefix(&format!("t{t} ")))
                .map(|n| n.rsplit(' ').next().unwrap().parse().unwrap())
                .collect();
            assert_eq!(mine, (0..1000).collect::<Vec<_>>(), "thread {t}'s lines in its order");
        }
        // Without a flush the writer thread writes a line on its own, soon.
        writeln!(queue.make_writer(), "unflushed").unwrap();
        let t0 = std::time::Instant::now();
        while !String::from_utf8_lossy(&out.0.lock().unwrap()).ends_with("unflushed\n") {
            assert!(t0.elapsed() < Duration::from_secs(10), "the writer thread never wrote the line");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Lines queued after a flush are written by the guard's drop.
        writeln!(queue.make_writer(), "last").unwrap();
        drop(guard);
        assert!(String::from_utf8(out.0.lock().unwrap().clone()).unwrap().ends_with("last\n"));
    }

    /// The events a filter lets through, of a fixed set at several targets and levels.
    fn passed_by<F>(filter: F) -> String
    where
        F: Layer<Registry> + Send + Sync + 'static,
    {
        use tracing_subscriber::layer::SubscriberExt;
        let out = Shared::default();
        let writer = out.clone();
        let lines = tracing_subscriber::fmt::layer()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .without_time()
            .with_target(true)
            .with_level(true);
        let subscriber = tracing_subscriber::registry().with(filter).with(lines);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", request_id = "r1");
            let _in = span.enter();
            tracing::trace!(target: "ardacat::request", "t1");
            tracing::debug!(target: "ardacat::request", "d1");
            tracing::info!(target: "ardacat::request", "i1");
            tracing::info!(target: "ardacat::requests", "i1s");
            tracing::warn!(target: "ardacat::request", "w1");
            tracing::debug!(target: "ardacat_store::exec", "d2");
            tracing::info!(target: "ardacat_store::exec", "i2");
            tracing::error!(target: "ardacat_store", "e2");
            tracing::info!(target: "audit", "i3");
            tracing::warn!(target: "audit", "w3");
            tracing::debug!(target: "sqlx::query", "d4");
            tracing::info!(target: "sqlx::query", "i4");
            tracing::trace!(target: "sqlx", "t4");
        });
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn plain_rust_log_specs_filter_as_env_filter_does() {
        for spec in [
            "info",
            "warn",
            "trace",
            "off",
            "INFO",
            "info,ardacat::request=off",
            "warn,ardacat_store=debug",
            "ardacat::request=warn,audit=off,sqlx=trace",
            "ardacat_store",
            "error,ardacat=debug",
            "debug,sqlx::query=info,sqlx=off",
        ] {
            let targets = static_targets(Some(spec)).unwrap_or_else(|| panic!("{spec} is a plain list"));
            let env = EnvFilter::try_new(spec).unwrap();
            let (a, b) = (passed_by(targets), passed_by(env));
            assert_eq!(a, b, "RUST_LOG={spec}");
        }
        // Unset: `info` (as `init`'s EnvFilter fallback).
        assert_eq!(passed_by(static_targets(None).unwrap()), passed_by(EnvFilter::new("info")));
        assert!(passed_by(EnvFilter::new("info")).contains("i1"), "the comparison sees events");
        // What `Targets` would read differently, or not at all, stays with `EnvFilter`.
        for spec in ["", "info,", "info, sqlx=off", "ardacat[request]=debug", "ardacat[{code}]=debug", "x=y=z", "=info"]
        {
            assert!(static_targets(Some(spec)).is_none(), "{spec:?} is left to EnvFilter");
        }
    }
}
