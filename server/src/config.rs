//! Server settings: defaults, the TOML config file, environment variables and flags, in that
//! order of precedence (flags win). Every limit the server enforces is here.
//!
//! Validating a config file without starting anything (`--check-config FILE`) is
//! `crate::preflight`'s; this module must not load TLS files or open anything.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::Parser;
use serde::{Deserialize, Serialize};

mod ipnet;
mod keys;
mod primary;

pub use ipnet::IpNet;
pub use keys::keys;
pub use primary::PrimaryFlags;

/// AMGA's `Sessions = no|allow|force`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SessionMode {
    /// Never issue session tokens.
    No,
    /// Keep a session for a client that reconnects with `resume<id>` (issued on request).
    Allow,
    /// Issue a session token with every reply, so clients reconnect per command.
    Force,
}

// `Serialize` gives the defaults as TOML (`packaging/ardacat.toml` is checked against them).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `sqlite:PATH`, `sqlite::memory:` or `postgres://…`.
    pub database: String,
    pub bind: IpAddr,
    pub tcp_port: u16,
    pub http_port: u16,
    pub sessions: SessionMode,
    /// Idle seconds before a connection or a session is dropped (AMGA's `IdleTimeout`).
    pub idle_timeout_secs: u64,
    /// Seconds a client may take for the greeting, options and login block (slowloris guard).
    pub handshake_timeout_secs: u64,
    /// Longest accepted command line, in bytes.
    pub max_line_bytes: usize,
    /// Most arguments one command line may carry.
    pub max_args: usize,
    /// Reply bytes a TCP connection gathers before it writes them to the socket (a reply's end
    /// is always written at once). Larger means fewer system calls per streamed row, and that
    /// much memory per connection that is streaming.
    pub tcp_write_buffer_bytes: usize,
    /// Most simultaneous TCP connections; a client past it is refused at once (an error line
    /// instead of the greeting, then close).
    pub max_connections: usize,
    /// Most `put` lines one `upload` may buffer before `commit`.
    pub max_upload_entries: usize,
    /// Failed logins allowed per peer address per minute.
    pub max_failed_logins_per_minute: u32,
    /// Database connections in the pool (0: backend default).
    pub db_pool_size: usize,
    /// SQLite file only: the server keeps the file to itself while it runs (one exclusive lock,
    /// the WAL index in its own memory). Reads get faster; no other process — the `sqlite3`
    /// shell, a second server — can open the file meanwhile (docs/operations.md).
    pub sqlite_exclusive: bool,
    /// SOAP: largest request body in bytes.
    pub soap_max_body_bytes: usize,
    /// SOAP: deepest element nesting.
    pub soap_max_depth: usize,
    /// SOAP: most elements in one request.
    pub soap_max_elements: usize,
    /// SOAP: rows per `query`/`nextQuery` page when the caller does not say.
    pub soap_default_page_size: usize,
    /// SOAP: largest page; larger requests are clamped.
    pub soap_max_page_size: usize,
    /// SOAP: seconds a query token stays valid after its last use.
    pub soap_token_ttl_secs: i64,
    /// SOAP: accept requests without credentials as user `anonymous`.
    pub allow_anonymous: bool,
    /// SOAP: differential deserialization of requests.
    pub soap_dds: bool,
    /// SOAP: also run the full parser on every DDS answer and fail loudly on a difference.
    pub soap_dds_shadow: bool,
    /// Seconds one database statement may run (a streamed result's delivery included) before
    /// it is cancelled with code 19; 0: no limit.
    pub query_timeout_secs: u64,
    /// PEM certificate chain of the server. With `tls_key`, the TCP port accepts `ssl` and the
    /// HTTP port serves HTTPS only.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) for `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// PEM CA certificates that client certificates are checked against. Client certificates
    /// stay optional; a verified one allows login by certificate.
    pub tls_client_ca: Option<PathBuf>,
    /// grid-mapfile (`"<DN>" user` per line) consulted after `user_subject_add` mappings.
    pub grid_mapfile: Option<PathBuf>,

    // ---- operations (probes, metrics listener, logs): issue #19 ----
    /// `/readyz` on a replica: most milliseconds replay may lag behind the primary.
    pub ready_max_lag_ms: u64,
    /// `/readyz`: most milliseconds the database may take to answer the probe.
    pub ready_timeout_ms: u64,
    /// A separate plain-HTTP listener for `/metrics`, `/healthz` and `/readyz` (then `/metrics`
    /// is not served on the HTTP port).
    pub metrics_bind: Option<SocketAddr>,
    /// Log lines as human text or as one JSON object per line.
    pub log_format: LogFormat,

    // ---- fairness under floods: issue #18 ----
    /// Most simultaneous HTTP connections; past it a client gets `503` with `Retry-After`.
    pub max_http_connections: usize,
    /// Most simultaneous connections from one address, on each port (0: no per-address cap).
    pub max_connections_per_peer: usize,
    /// Addresses or networks (`10.0.0.0/8`) exempt from `max_connections_per_peer`, such as a
    /// load balancer's.
    pub trusted_peers: Vec<IpNet>,
    /// HTTP: milliseconds a client may take to send a request's header (from its first byte, or
    /// from connecting for the first request).
    pub http_header_timeout_ms: u64,
    /// HTTP: milliseconds a request body may take, plus one second per `http_body_min_rate`
    /// bytes received (a body slower than that rate is cut off).
    pub http_body_timeout_ms: u64,
    /// HTTP: the minimum body rate, in bytes per second, that extends `http_body_timeout_ms`
    /// (0: the whole body within `http_body_timeout_ms`).
    pub http_body_min_rate: u64,
    /// HTTP: milliseconds a kept-alive connection may sit idle between requests, and the longest
    /// a client may leave a response unread.
    pub http_idle_timeout_ms: u64,
    /// Milliseconds a request waits for a free database connection before it fails with code 19
    /// (SOAP fault code 19).
    pub db_acquire_timeout_ms: u64,
    /// PostgreSQL: point reads (`get` of one entry) of one shape run at most this many
    /// statements at once; those arriving meanwhile are answered together by the next one.
    /// 0: each runs its own statement (docs/operations.md).
    pub db_point_reads_in_flight: usize,

    // ---- site replicas forwarding writes: issue #14 item 4 (`crate::tcp::forward`) ----
    /// On a PostgreSQL standby: the primary's ardacat (`host:port` of its TCP port) that writes
    /// are forwarded to. Unset: writes are refused with code 20.
    pub primary: Option<String>,
    /// The service account (`user_may_sudo`) forwarding logs in as; its password comes only
    /// from the environment (`ARDACAT_PRIMARY_PASSWORD`). Needed with `primary`.
    pub primary_login: Option<String>,
    /// Connect to the primary with TLS (`ssl`), checking its certificate against `primary_tls_ca`.
    pub primary_ssl: bool,
    /// PEM file or directory of the CAs the primary's certificate must chain to.
    pub primary_tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) presented to the primary, with `primary_tls_key`.
    pub primary_tls_cert: Option<PathBuf>,
    pub primary_tls_key: Option<PathBuf>,
    /// Read-your-writes: the longest a read after a forwarded write waits for the standby to
    /// replay it, in milliseconds; then the read is forwarded to the primary.
    pub replica_wait_ms: u64,
    /// The longest one forwarded command (connect and login included) may take, in seconds.
    pub primary_timeout_secs: u64,
}

/// How log lines are written (`--log-format`, `log_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (fields, the request span, the target `audit` for audit lines).
    Json,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database: "sqlite:ardacat.db".into(),
            bind: IpAddr::from([127, 0, 0, 1]),
            tcp_port: 8822,
            http_port: 8823,
            sessions: SessionMode::Allow,
            idle_timeout_secs: 1200,
            handshake_timeout_secs: 30,
            max_line_bytes: 1 << 20,
            max_args: 100_000,
            tcp_write_buffer_bytes: 64 << 10,
            max_connections: 1024,
            max_upload_entries: 1_000_000,
            max_failed_logins_per_minute: 10,
            db_pool_size: 0,
            sqlite_exclusive: false,
            soap_max_body_bytes: 64 << 20,
            soap_max_depth: 64,
            soap_max_elements: 1_000_000,
            soap_default_page_size: 100,
            soap_max_page_size: 10_000,
            soap_token_ttl_secs: 1200,
            allow_anonymous: false,
            soap_dds: true,
            soap_dds_shadow: false,
            query_timeout_secs: 300,
            tls_cert: None,
            tls_key: None,
            tls_client_ca: None,
            grid_mapfile: None,
            ready_max_lag_ms: 10_000,
            ready_timeout_ms: 2_000,
            metrics_bind: None,
            log_format: LogFormat::Text,
            max_http_connections: 1024,
            max_connections_per_peer: 64,
            trusted_peers: Vec::new(),
            http_header_timeout_ms: 10_000,
            http_body_timeout_ms: 20_000,
            http_body_min_rate: 500,
            http_idle_timeout_ms: 60_000,
            db_acquire_timeout_ms: 10_000,
            db_point_reads_in_flight: ardacat_store::exec::DEFAULT_POINT_READS_IN_FLIGHT,
            primary: None,
            primary_login: None,
            primary_ssl: false,
            primary_tls_ca: None,
            primary_tls_cert: None,
            primary_tls_key: None,
            replica_wait_ms: 5_000,
            primary_timeout_secs: 30,
        }
    }
}

/// Command-line flags; each also reads an environment variable.
#[derive(Debug, Parser)]
#[command(
    name = "ardacat-server",
    version,
    about = "ardacat metadata catalogue server (AMGA-compatible)",
    after_help = "Subcommand: `ardacat-server copy --from URL --to URL` copies a whole catalogue into an empty \
                  database and exits (see `ardacat-server copy --help`)."
)]
pub struct Flags {
    /// Database URL: sqlite:PATH (default sqlite:ardacat.db), sqlite::memory: or postgres://…
    #[arg(long, env = "ARDACAT_DATABASE")]
    pub database: Option<String>,
    /// Address to listen on.
    #[arg(long, env = "ARDACAT_BIND")]
    pub bind: Option<IpAddr>,
    /// TCP streaming protocol port (AMGA's 8822; 0 picks a free port).
    #[arg(long, env = "ARDACAT_TCP_PORT")]
    pub tcp_port: Option<u16>,
    /// HTTP (SOAP, WSDL, metrics) port (0 picks a free port).
    #[arg(long, env = "ARDACAT_HTTP_PORT")]
    pub http_port: Option<u16>,
    /// TOML file with any of the settings (see docs/architecture.md).
    #[arg(long, env = "ARDACAT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Session tokens: no, allow or force.
    #[arg(long, env = "ARDACAT_SESSIONS")]
    pub sessions: Option<SessionMode>,
    /// Idle timeout in seconds.
    #[arg(long, env = "ARDACAT_IDLE_TIMEOUT")]
    pub idle_timeout: Option<u64>,
    /// Longest command line in bytes.
    #[arg(long, env = "ARDACAT_MAX_LINE")]
    pub max_line: Option<usize>,
    /// Maximum simultaneous TCP connections.
    #[arg(long, env = "ARDACAT_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Differential deserialization of SOAP requests: on or off.
    #[arg(long, env = "ARDACAT_SOAP_DDS")]
    pub soap_dds: Option<OnOff>,
    /// Check every DDS answer against the full parser (tests, staging).
    #[arg(long, env = "ARDACAT_SOAP_DDS_SHADOW")]
    pub soap_dds_shadow: Option<bool>,
    /// Allow anonymous SOAP requests.
    #[arg(long, env = "ARDACAT_ALLOW_ANONYMOUS")]
    pub allow_anonymous: Option<bool>,
    /// SQLite file only: keep the file to this server alone while it runs (faster reads; no
    /// other process may open it meanwhile).
    #[arg(long, env = "ARDACAT_SQLITE_EXCLUSIVE")]
    pub sqlite_exclusive: Option<bool>,
    /// Seconds one database statement may run before it is cancelled (0: no limit).
    #[arg(long, env = "ARDACAT_QUERY_TIMEOUT")]
    pub query_timeout: Option<u64>,
    /// PEM certificate chain: enables `ssl` on the TCP port and HTTPS on the HTTP port.
    #[arg(long, env = "ARDACAT_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "ARDACAT_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA certificates for optional client certificates (login by certificate).
    #[arg(long, env = "ARDACAT_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
    /// grid-mapfile mapping certificate subjects to users.
    #[arg(long, env = "ARDACAT_GRID_MAPFILE")]
    pub grid_mapfile: Option<PathBuf>,
    /// Check this config file (keys, types, values, TLS files) and exit: 0 if it is usable,
    /// 1 with one line per problem otherwise. Nothing is opened or bound.
    #[arg(long, value_name = "FILE")]
    pub check_config: Option<PathBuf>,
    /// /readyz on a replica: most milliseconds of replay lag.
    #[arg(long, env = "ARDACAT_READY_MAX_LAG_MS")]
    pub ready_max_lag_ms: Option<u64>,
    /// Serve /metrics, /healthz and /readyz on this address (plain HTTP) instead of the HTTP port.
    #[arg(long, env = "ARDACAT_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,
    /// Log format: text or json.
    #[arg(long, env = "ARDACAT_LOG_FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Maximum simultaneous HTTP connections (past it: 503 with Retry-After).
    #[arg(long, env = "ARDACAT_MAX_HTTP_CONNECTIONS")]
    pub max_http_connections: Option<usize>,
    /// Maximum simultaneous connections from one address, per port (0: no cap).
    #[arg(long, env = "ARDACAT_MAX_CONNECTIONS_PER_PEER")]
    pub max_connections_per_peer: Option<usize>,
    /// Comma-separated addresses or networks exempt from the per-address cap.
    #[arg(long, env = "ARDACAT_TRUSTED_PEERS", value_delimiter = ',')]
    pub trusted_peers: Option<Vec<IpNet>>,
    /// HTTP: milliseconds to receive a request header.
    #[arg(long, env = "ARDACAT_HTTP_HEADER_TIMEOUT_MS")]
    pub http_header_timeout_ms: Option<u64>,
    /// HTTP: milliseconds for a request body (plus 1 s per --http-body-min-rate bytes).
    #[arg(long, env = "ARDACAT_HTTP_BODY_TIMEOUT_MS")]
    pub http_body_timeout_ms: Option<u64>,
    /// HTTP: minimum request body rate in bytes per second.
    #[arg(long, env = "ARDACAT_HTTP_BODY_MIN_RATE")]
    pub http_body_min_rate: Option<u64>,
    /// HTTP: milliseconds a kept-alive connection may idle (or leave a response unread).
    #[arg(long, env = "ARDACAT_HTTP_IDLE_TIMEOUT_MS")]
    pub http_idle_timeout_ms: Option<u64>,
    /// Milliseconds a request waits for a free database connection (then code 19).
    #[arg(long, env = "ARDACAT_DB_ACQUIRE_TIMEOUT_MS")]
    pub db_acquire_timeout_ms: Option<u64>,
    /// PostgreSQL: point reads of one shape running at once before the rest are batched (0: never).
    #[arg(long, env = "ARDACAT_DB_POINT_READS_IN_FLIGHT")]
    pub db_point_reads_in_flight: Option<usize>,
    #[command(flatten)]
    pub primary: PrimaryFlags,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("invalid config file {0}: {1}")]
    Parse(PathBuf, toml::de::Error),
}

impl Config {
    /// Defaults, then the config file, then flags and environment.
    pub fn load(flags: Flags) -> Result<Config, ConfigError> {
        let mut c = match &flags.config {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| ConfigError::Read(p.clone(), e))?;
                toml::from_str(&text).map_err(|e| ConfigError::Parse(p.clone(), e))?
            }
            None => Config::default(),
        };
        if let Some(v) = flags.database {
            c.database = v;
        }
        if let Some(v) = flags.bind {
            c.bind = v;
        }
        if let Some(v) = flags.tcp_port {
            c.tcp_port = v;
        }
        if let Some(v) = flags.http_port {
            c.http_port = v;
        }
        if let Some(v) = flags.sessions {
            c.sessions = v;
        }
        if let Some(v) = flags.idle_timeout {
            c.idle_timeout_secs = v;
        }
        if let Some(v) = flags.max_line {
            c.max_line_bytes = v;
        }
        if let Some(v) = flags.max_connections {
            c.max_connections = v;
        }
        if let Some(v) = flags.soap_dds {
            c.soap_dds = matches!(v, OnOff::On);
        }
        if let Some(v) = flags.soap_dds_shadow {
            c.soap_dds_shadow = v;
        }
        if let Some(v) = flags.sqlite_exclusive {
            c.sqlite_exclusive = v;
        }
        if let Some(v) = flags.allow_anonymous {
            c.allow_anonymous = v;
        }
        if let Some(v) = flags.query_timeout {
            c.query_timeout_secs = v;
        }
        if flags.tls_cert.is_some() {
            c.tls_cert = flags.tls_cert;
        }
        if flags.tls_key.is_some() {
            c.tls_key = flags.tls_key;
        }
        if flags.tls_client_ca.is_some() {
            c.tls_client_ca = flags.tls_client_ca;
        }
        if flags.grid_mapfile.is_some() {
            c.grid_mapfile = flags.grid_mapfile;
        }
        if let Some(v) = flags.ready_max_lag_ms {
            c.ready_max_lag_ms = v;
        }
        if flags.metrics_bind.is_some() {
            c.metrics_bind = flags.metrics_bind;
        }
        if let Some(v) = flags.log_format {
            c.log_format = v;
        }
        if let Some(v) = flags.max_http_connections {
            c.max_http_connections = v;
        }
        if let Some(v) = flags.max_connections_per_peer {
            c.max_connections_per_peer = v;
        }
        if let Some(v) = flags.trusted_peers {
            c.trusted_peers = v;
        }
        if let Some(v) = flags.http_header_timeout_ms {
            c.http_header_timeout_ms = v;
        }
        if let Some(v) = flags.http_body_timeout_ms {
            c.http_body_timeout_ms = v;
        }
        if let Some(v) = flags.http_body_min_rate {
            c.http_body_min_rate = v;
        }
        if let Some(v) = flags.http_idle_timeout_ms {
            c.http_idle_timeout_ms = v;
        }
        if let Some(v) = flags.db_point_reads_in_flight {
            c.db_point_reads_in_flight = v;
        }
        if let Some(v) = flags.db_acquire_timeout_ms {
            c.db_acquire_timeout_ms = v;
        }
        flags.primary.apply(&mut c);
        Ok(c)
    }
}

#[cfg(test)]
mod tests;
