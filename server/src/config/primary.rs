//! The flags of a forwarding site replica (`--primary`, `--primary-login`, the `--primary-tls*`
//! options named like the CLI's, `--replica-wait-ms`, `--primary-timeout`) and how they
//! override the file. The password is no setting: only `ARDACAT_PRIMARY_PASSWORD` holds it
//! (read by `crate::tcp::forward` at start). Must not connect anywhere.

use super::*;

#[derive(Debug, Default, clap::Args)]
pub struct PrimaryFlags {
    /// On a PostgreSQL standby: forward writes to this primary ardacat (HOST:PORT of its TCP port).
    #[arg(long, env = "ARDACAT_PRIMARY", value_name = "HOST:PORT")]
    pub primary: Option<String>,
    /// The service account (`user_may_sudo … on` on the primary) forwarding logs in as; its
    /// password is read from ARDACAT_PRIMARY_PASSWORD.
    #[arg(long, env = "ARDACAT_PRIMARY_LOGIN", value_name = "USER")]
    pub primary_login: Option<String>,
    /// Connect to the primary with TLS.
    #[arg(long, alias = "primary-tls", env = "ARDACAT_PRIMARY_SSL")]
    pub primary_ssl: bool,
    /// CA certificates (PEM file or directory) the primary's certificate must chain to.
    #[arg(long, env = "ARDACAT_PRIMARY_TLS_CA", value_name = "FILE|DIR")]
    pub primary_tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) presented to the primary.
    #[arg(long, env = "ARDACAT_PRIMARY_TLS_CERT", value_name = "FILE")]
    pub primary_tls_cert: Option<PathBuf>,
    /// Private key (PEM) of --primary-tls-cert.
    #[arg(long, env = "ARDACAT_PRIMARY_TLS_KEY", value_name = "FILE")]
    pub primary_tls_key: Option<PathBuf>,
    /// Read-your-writes: most milliseconds a read after a forwarded write waits for the standby
    /// (then it is forwarded to the primary).
    #[arg(long, env = "ARDACAT_REPLICA_WAIT_MS", value_name = "MS")]
    pub replica_wait_ms: Option<u64>,
    /// Most seconds one forwarded command may take (connect and login included).
    #[arg(long, env = "ARDACAT_PRIMARY_TIMEOUT", value_name = "S")]
    pub primary_timeout: Option<u64>,
}

impl PrimaryFlags {
    pub(super) fn apply(self, c: &mut Config) {
        if self.primary.is_some() {
            c.primary = self.primary;
        }
        if self.primary_login.is_some() {
            c.primary_login = self.primary_login;
        }
        if self.primary_ssl {
            c.primary_ssl = true;
        }
        if self.primary_tls_ca.is_some() {
            c.primary_tls_ca = self.primary_tls_ca;
        }
        if self.primary_tls_cert.is_some() {
            c.primary_tls_cert = self.primary_tls_cert;
        }
        if self.primary_tls_key.is_some() {
            c.primary_tls_key = self.primary_tls_key;
        }
        if let Some(v) = self.replica_wait_ms {
            c.replica_wait_ms = v;
        }
        if let Some(v) = self.primary_timeout {
            c.primary_timeout_secs = v;
        }
    }
}

impl Config {
    /// What makes the forwarding settings unusable: `(key, problem)`. Start-up refuses them,
    /// `--check-config` lists them.
    pub fn primary_problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let Some(p) = &self.primary else { return out };
        match p.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|n| n > 0) => {}
            _ => out.push(("primary", format!("{p:?} is not HOST:PORT"))),
        }
        if self.primary_login.as_deref().is_none_or(str::is_empty) {
            out.push(("primary_login", "--primary needs --primary-login (the service account)".to_string()));
        }
        if self.primary_tls_cert.is_some() != self.primary_tls_key.is_some() {
            out.push(("primary_tls_cert", "give both --primary-tls-cert and --primary-tls-key".to_string()));
        }
        if (self.primary_tls_cert.is_some() || self.primary_tls_ca.is_some()) && !self.primary_ssl {
            out.push(("primary_ssl", "--primary-tls-* need --primary-ssl".to_string()));
        }
        out
    }
}
