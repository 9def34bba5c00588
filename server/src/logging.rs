//! Log output and request logging: the subscriber (`--log-format text|json`, filter from
//! `RUST_LOG`, default `info`), request ids, and the one line per request (target
//! `ardacat::request`) with its id, frontend, user, peer, command or operation, outcome code,
//! rows returned and duration. Each request runs inside a `request` span carrying the same id,
//! so every event logged on its behalf — frontend, catalogue, store — carries it too.
//!
//! Audit lines (target `audit`: logins, writes, denials) are separate events written where the
//! decision is taken (`crate::auth`, the TCP command loop); this module never writes or filters
//! them. It decides the shape of log lines, not what is logged.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Install the global subscriber, writing to stderr. JSON lines are flat objects: the event's
/// fields at the top level plus `timestamp`, `level`, `target`, and `span`/`spans` (the
/// request span's fields).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).with_span_list(true).try_init(),
    };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn process_tag() -> u32 {
    static TAG: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *TAG.get_or_init(rand::random)
}

/// A request id unique across the processes sharing a database: a random tag of this process
/// and a counter (`3fa2c1d0-17`).
pub fn next_id() -> String {
    format!("{:08x}-{}", process_tag(), NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

tokio::task_local! {
    /// Rows returned by the request running in this task (SOAP; TCP counts in its reply).
    static ROWS: Arc<AtomicU64>;
}

/// Run `f` with a fresh rows counter, which it may hand to tasks it spawns ([`rows_handle`]).
pub async fn with_rows<F: Future>(rows: Arc<AtomicU64>, f: F) -> F::Output {
    ROWS.scope(rows, f).await
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
    pub peer: String,
    /// The TCP command or SOAP operation.
    pub command: String,
    /// 0 for success, else the catalogue's error code.
    pub code: i64,
    pub rows: u64,
    pub duration: Duration,
}

impl RequestLine {
    /// Write the line (target `ardacat::request`; `RUST_LOG=ardacat::request=off` silences it).
    pub fn emit(&self) {
        tracing::info!(
            target: "ardacat::request",
            request_id = %self.request_id,
            frontend = self.frontend,
            user = %self.user,
            peer = %self.peer,
            command = %self.command,
            code = self.code,
            rows = self.rows,
            duration_ms = self.duration.as_secs_f64() * 1e3,
            "request"
        );
    }
}
