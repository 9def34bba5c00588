//! Checking settings without starting anything: `check_file` behind `--check-config FILE`
//! (syntax, unknown keys, each bad value under its key) and `Config::problems` (what would stop
//! the start: the database URL's kind, equal ports, unusable TLS files or grid-mapfile). It sits
//! above `config` and `tls` (it loads the TLS files as the start would), so neither imports the
//! other both ways. Must only read files, never open the database or a socket.

use std::path::Path;

use crate::config::{Config, keys};

/// One reason a config file is unusable, under the key at fault when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub key: Option<String>,
    pub message: String,
}

impl Problem {
    fn key(key: &str, message: impl Into<String>) -> Self {
        Problem { key: Some(key.to_string()), message: message.into() }
    }
    fn file(message: impl Into<String>) -> Self {
        Problem { key: None, message: message.into() }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.key {
            Some(k) => write!(f, "{k}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Validate a config file as the server would use it, reporting every problem rather than the
/// first: TOML syntax, unknown keys, wrong types or values (each under its key), and what would
/// stop the start ([`Config::problems`]). Flags and environment variables play no part: this
/// checks the file.
pub fn check_file(path: &Path) -> Result<Config, Vec<Problem>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![Problem::file(format!("cannot read {}: {e}", path.display()))])?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| vec![Problem::file(e.to_string())])?;
    let known = keys();
    let mut problems = Vec::new();
    for (key, value) in &table {
        if !known.contains(&key.as_str()) {
            problems.push(Problem::key(key, "unknown key"));
            continue;
        }
        // One key at a time, so that each bad value is reported under its own name.
        let one = toml::Value::Table(toml::Table::from_iter([(key.clone(), value.clone())]));
        if let Err(e) = one.try_into::<Config>() {
            problems.push(Problem::key(key, e.message()));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let config: Config = toml::Value::Table(table).try_into().map_err(|e| vec![Problem::file(e.to_string())])?;
    let problems = config.problems();
    if problems.is_empty() { Ok(config) } else { Err(problems) }
}

impl Config {
    /// Settings that would stop the server at start, each under its key: a database URL of an
    /// unknown kind, the two ports equal, unusable TLS files or grid-mapfile (read and parsed as
    /// at start). Reads files only; it does not connect to the database or bind.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        // The URL forms `Db::open` accepts (the URL itself is not echoed: it may hold a password).
        let db = self.database.as_str();
        match db.strip_prefix("sqlite:") {
            Some(rest) if rest.strip_prefix("//").unwrap_or(rest).is_empty() => {
                problems.push(Problem::key("database", "no database path after `sqlite:`"));
            }
            Some(_) => {}
            None if db.starts_with("postgres://") || db.starts_with("postgresql://") => {}
            None => problems.push(Problem::key(
                "database",
                "unsupported database URL (expected sqlite:PATH, sqlite::memory: or postgres://…)",
            )),
        }
        let sqlite_file = db.strip_prefix("sqlite:").is_some_and(|rest| rest != ":memory:");
        if self.sqlite_exclusive && !sqlite_file {
            problems
                .push(Problem::key("sqlite_exclusive", "applies to a SQLite file only (database is not sqlite:PATH)"));
        }
        if self.tcp_port != 0 && self.tcp_port == self.http_port {
            problems.push(Problem::key("http_port", format!("the same port as tcp_port ({})", self.tcp_port)));
        }
        if let Err(e) = crate::tls::load(self) {
            problems.push(self.tls_problem(e));
        }
        problems.extend(self.primary_problems().into_iter().map(|(k, m)| Problem::key(k, m)));
        problems
    }

    /// Name the key a TLS error comes from.
    fn tls_problem(&self, e: crate::tls::TlsError) -> Problem {
        use crate::tls::TlsError;
        let by_path = |p: &Path| {
            [("tls_cert", &self.tls_cert), ("tls_key", &self.tls_key), ("tls_client_ca", &self.tls_client_ca)]
                .into_iter()
                .chain([("grid_mapfile", &self.grid_mapfile)])
                .find(|(_, v)| v.as_deref() == Some(p))
                .map_or("tls_cert", |(k, _)| k)
        };
        let key = match &e {
            TlsError::Incomplete if self.tls_cert.is_some() => "tls_key",
            TlsError::Incomplete => "tls_cert",
            TlsError::NeedsCert(k) => k,
            TlsError::Read(p, _) | TlsError::NoCertificate(p) => by_path(p),
            TlsError::GridMap(..) => "grid_mapfile",
            // rustls refused the client CAs, or the certificate with its key: without the CAs it
            // loads, the CAs are at fault.
            TlsError::Rustls(_) => {
                let without_ca = Config { tls_client_ca: None, grid_mapfile: None, ..self.clone() };
                if self.tls_client_ca.is_some() && crate::tls::load(&without_ca).is_ok() {
                    "tls_client_ca"
                } else {
                    "tls_cert"
                }
            }
        };
        Problem::key(key, e.to_string())
    }
}
