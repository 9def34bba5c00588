//! Server settings: defaults, the TOML config file, environment variables and flags, in that
//! order of precedence (flags win). Every limit the server enforces is here.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::Parser;
use serde::{Deserialize, Serialize};

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
    /// Most simultaneous TCP connections; further ones wait in the kernel backlog.
    pub max_connections: usize,
    /// Most `put` lines one `upload` may buffer before `commit`.
    pub max_upload_entries: usize,
    /// Failed logins allowed per peer address per minute.
    pub max_failed_logins_per_minute: u32,
    /// Database connections in the pool (0: backend default).
    pub db_pool_size: usize,
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
            max_connections: 1024,
            max_upload_entries: 1_000_000,
            max_failed_logins_per_minute: 10,
            db_pool_size: 0,
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
        }
    }
}

/// Command-line flags; each also reads an environment variable.
#[derive(Debug, Parser)]
#[command(name = "ardacat-server", version, about = "ardacat metadata catalogue server (AMGA-compatible)")]
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
    /// /readyz on a replica: most milliseconds of replay lag.
    #[arg(long, env = "ARDACAT_READY_MAX_LAG_MS")]
    pub ready_max_lag_ms: Option<u64>,
    /// Serve /metrics, /healthz and /readyz on this address (plain HTTP) instead of the HTTP port.
    #[arg(long, env = "ARDACAT_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,
    /// Log format: text or json.
    #[arg(long, env = "ARDACAT_LOG_FORMAT")]
    pub log_format: Option<LogFormat>,
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
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_flags() {
        let dir = std::env::temp_dir().join(format!("ardacat-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("c.toml");
        std::fs::write(&f, "tcp_port = 9000\nsessions = \"force\"\nmax_line_bytes = 4096\n").unwrap();
        let flags = Flags::parse_from(["x", "--config", f.to_str().unwrap(), "--tcp-port", "9001"]);
        let c = Config::load(flags).unwrap();
        assert_eq!(c.tcp_port, 9001);
        assert_eq!(c.sessions, SessionMode::Force);
        assert_eq!(c.max_line_bytes, 4096);
        std::fs::write(&f, "no_such_setting = 1\n").unwrap();
        let flags = Flags::parse_from(["x", "--config", f.to_str().unwrap()]);
        assert!(Config::load(flags).is_err());
    }
}
