//! Connection settings: where to connect, the credentials, the protocol options asked for
//! (`escape`, `session`), limits, and TLS (the CA roots, an optional client certificate, and the
//! rustls connector built from them). It only describes and loads settings; it must not open
//! connections or speak the protocol (that is `handshake`).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ardacat_proto::DEFAULT_MAX_LINE;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{ClientError, Result};

/// Default TCP port of the streaming protocol.
pub const DEFAULT_PORT: u16 = 8822;

/// Where and how to connect.
#[derive(Clone)]
pub struct ClientConfig {
    pub host: String,
    pub port: u16,
    pub login: String,
    pub password: Option<String>,
    /// Ask for the `escape` extension (used only if the server offers it): values may then hold
    /// newlines and control bytes, and NULL is distinct from the empty string.
    pub escape: bool,
    /// Ask for a session id (`session` option): the server then ends replies with
    /// `EOT session<id> EOT` and [`Client::reconnect_resume`](crate::Client::reconnect_resume) can pick the session up again.
    pub session: bool,
    /// Longest reply line accepted, in bytes.
    pub max_line: usize,
    /// Bound on TCP connect plus handshake; `None` waits forever.
    pub connect_timeout: Option<Duration>,
    /// Connect with TLS (`ssl`, or `resumeSSL<id>` when resuming). `None`: plain TCP.
    pub tls: Option<TlsClientConfig>,
    /// With `tls`: connect without TLS instead of failing when the server's greeting does not
    /// offer `ssl` (mdclient's `UseSSL = try`). Whoever can alter the greeting on the network can
    /// force the fallback, so the password then travels in clear; [`Client::is_tls`](crate::Client::is_tls) tells.
    pub tls_optional: bool,
}

/// TLS settings: the CA certificates the server's certificate must chain to, and optionally a
/// client certificate and key (PEM files). With a certificate, an empty `login` logs in as the
/// user the certificate's subject maps to on the server.
#[derive(Debug, Clone, Default)]
pub struct TlsClientConfig {
    /// A PEM file of CA certificates, or a directory of such files (as the grid's
    /// `/etc/grid-security/certificates`: every file holding PEM certificates counts, others are
    /// skipped).
    pub ca: PathBuf,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl TlsClientConfig {
    /// The trusted CA certificates: those of the file, or of every file of the directory.
    fn roots(&self) -> Result<rustls::RootCertStore> {
        let bad = |what: &str, e: &dyn fmt::Display| ClientError::InvalidArgument(format!("TLS {what}: {e}"));
        let mut roots = rustls::RootCertStore::empty();
        if self.ca.is_dir() {
            let dir =
                std::fs::read_dir(&self.ca).map_err(|e| bad(&format!("CA directory {}", self.ca.display()), &e))?;
            let mut files: Vec<PathBuf> =
                dir.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
            files.sort();
            for file in files {
                // CRLs, signing policies and the like live there too: keep what parses.
                let Ok(certs) = CertificateDer::pem_file_iter(&file) else { continue };
                for cert in certs.flatten() {
                    let _ = roots.add(cert);
                }
            }
            if roots.is_empty() {
                return Err(bad("CA directory", &format!("no PEM certificate in {}", self.ca.display())));
            }
            return Ok(roots);
        }
        let file = |e: &dyn fmt::Display| bad(&format!("CA file {}", self.ca.display()), e);
        for cert in CertificateDer::pem_file_iter(&self.ca).map_err(|e| file(&e))? {
            roots.add(cert.map_err(|e| file(&e))?).map_err(|e| bad("CA certificate", &e))?;
        }
        if roots.is_empty() {
            return Err(file(&"no PEM certificate in it"));
        }
        Ok(roots)
    }

    pub(super) fn connector(&self) -> Result<tokio_rustls::TlsConnector> {
        let bad = |what: &str, e: &dyn fmt::Display| ClientError::InvalidArgument(format!("TLS {what}: {e}"));
        let roots = self.roots()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| bad("versions", &e))?
            .with_root_certificates(roots);
        let config = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_file_iter(cert)
                    .map_err(|e| bad("certificate file", &e))?
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| bad("certificate file", &e))?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("key file", &e))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| bad("client certificate", &e))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => return Err(ClientError::InvalidArgument("TLS: give both a certificate and its key".into())),
        };
        Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            host: "localhost".into(),
            port: DEFAULT_PORT,
            login: "anonymous".into(),
            password: None,
            escape: false,
            session: false,
            tls: None,
            tls_optional: false,
            max_line: DEFAULT_MAX_LINE,
            connect_timeout: Some(Duration::from_secs(15)),
        }
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("login", &self.login)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("escape", &self.escape)
            .field("session", &self.session)
            .field("max_line", &self.max_line)
            .field("connect_timeout", &self.connect_timeout)
            .field("tls", &self.tls)
            .field("tls_optional", &self.tls_optional)
            .finish()
    }
}
