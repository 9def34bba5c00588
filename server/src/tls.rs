//! TLS settings for both listeners: loads the server certificate, key and optional client CA
//! into rustls (ring provider, TLS 1.2 and 1.3), reads a verified client certificate's subject
//! as an OpenSSL one-line DN (`/C=CH/O=Org/CN=Alice`), and reads the grid-mapfile. It reads
//! what a certificate and the grid-mapfile say; mapping a subject to a user is `crate::auth`'s,
//! deciding what that user may do is the catalogue's, and the TCP and HTTP frontends drive the
//! handshakes.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection};
use tokio_rustls::TlsAcceptor;
use x509_parser::prelude::{FromDer, X509Certificate, X509Name};

use crate::config::Config;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("tls_cert and tls_key must be set together")]
    Incomplete,
    #[error("{0} needs tls_cert and tls_key")]
    NeedsCert(&'static str),
    #[error("cannot read {0}: {1}")]
    Read(PathBuf, String),
    #[error("{0}: no certificate in the file")]
    NoCertificate(PathBuf),
    #[error("invalid TLS setup: {0}")]
    Rustls(String),
    #[error("grid-mapfile {0} line {1}: {2}")]
    GridMap(PathBuf, usize, String),
}

/// Loaded TLS settings: one acceptor per listener kind, and the subject → user map of the
/// grid-mapfile.
pub struct TlsSetup {
    /// For the AMGA TCP port (`ssl`, `resumeSSL<id>`): no ALPN.
    pub tcp: TlsAcceptor,
    /// For the HTTP port: ALPN `http/1.1`.
    pub http: TlsAcceptor,
    /// Client certificates are requested (and verified against `tls_client_ca`).
    pub client_auth: bool,
    gridmap: HashMap<String, String>,
}

impl std::fmt::Debug for TlsSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSetup")
            .field("client_auth", &self.client_auth)
            .field("gridmap_entries", &self.gridmap.len())
            .finish()
    }
}

/// The TLS settings in force, replaced as a whole when a reload (SIGHUP, `crate::reload`) has
/// read a complete new set: handshakes that start afterwards use the new one, connections
/// already established keep the session they negotiated.
pub struct TlsSlot(RwLock<Arc<TlsSetup>>);

impl TlsSlot {
    pub fn new(setup: Arc<TlsSetup>) -> Self {
        TlsSlot(RwLock::new(setup))
    }

    /// The settings in force now.
    pub fn get(&self) -> Arc<TlsSetup> {
        // A poisoned lock only means a panic while swapping one Arc for another.
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Put `setup` in force.
    pub fn replace(&self, setup: Arc<TlsSetup>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = setup;
    }
}

/// The TLS settings of `cfg`, or `None` when no certificate is configured (plain TCP and HTTP).
pub fn load(cfg: &Config) -> Result<Option<Arc<TlsSetup>>, TlsError> {
    let (cert, key) = match (&cfg.tls_cert, &cfg.tls_key) {
        (Some(c), Some(k)) => (c, k),
        (None, None) => {
            if cfg.tls_client_ca.is_some() {
                return Err(TlsError::NeedsCert("tls_client_ca"));
            }
            if cfg.grid_mapfile.is_some() {
                return Err(TlsError::NeedsCert("grid_mapfile"));
            }
            return Ok(None);
        }
        _ => return Err(TlsError::Incomplete),
    };
    let chain = read_certs(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Read(key.clone(), e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let rustls_err = |e: rustls::Error| TlsError::Rustls(e.to_string());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(rustls_err)?;
    let builder = match &cfg.tls_client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for c in read_certs(ca)? {
                roots.add(c).map_err(rustls_err)?;
            }
            // Optional: a client without a certificate still logs in with a password.
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| TlsError::Rustls(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let tcp = builder.with_single_cert(chain, key).map_err(rustls_err)?;
    let mut http = tcp.clone();
    http.alpn_protocols = vec![b"http/1.1".to_vec()];
    let gridmap = match &cfg.grid_mapfile {
        Some(p) => read_gridmap(p)?,
        None => HashMap::new(),
    };
    Ok(Some(Arc::new(TlsSetup {
        tcp: TlsAcceptor::from(Arc::new(tcp)),
        http: TlsAcceptor::from(Arc::new(http)),
        client_auth: cfg.tls_client_ca.is_some(),
        gridmap,
    })))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| TlsError::Read(path.to_path_buf(), e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Read(path.to_path_buf(), e.to_string()))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(path.to_path_buf()));
    }
    Ok(certs)
}

impl TlsSetup {
    /// Lines of the grid-mapfile in force.
    pub fn gridmap_len(&self) -> usize {
        self.gridmap.len()
    }

    /// The user a grid-mapfile line gives this subject, if any.
    pub fn gridmap_user(&self, subject: &str) -> Option<&str> {
        self.gridmap.get(subject).map(String::as_str)
    }
}

/// The subject DN of the client certificate a finished handshake verified, if one was sent.
pub fn peer_subject(conn: &ServerConnection) -> Option<String> {
    let der = conn.peer_certificates()?.first()?;
    let (_, cert) = X509Certificate::from_der(der.as_ref()).ok()?;
    Some(oneline(cert.subject()))
}

/// OpenSSL's one-line form of a distinguished name (`X509_NAME_oneline`): each attribute as
/// `/<short name>=<value>` in certificate order, attributes of one multi-valued RDN joined by
/// `+`, unknown attribute types as dotted OIDs, and bytes outside printable ASCII as `\xHH`.
pub fn oneline(name: &X509Name<'_>) -> String {
    let mut out = String::new();
    for rdn in name.iter_rdn() {
        for (i, atv) in rdn.iter().enumerate() {
            out.push(if i == 0 { '/' } else { '+' });
            let oid = atv.attr_type().to_id_string();
            out.push_str(short_name(&oid).unwrap_or(&oid));
            out.push('=');
            for &b in atv.as_slice() {
                if (0x20..0x7f).contains(&b) {
                    out.push(char::from(b));
                } else {
                    let _ = write!(out, "\\x{b:02X}");
                }
            }
        }
    }
    out
}

fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.4" => "SN",
        "2.5.4.5" => "serialNumber",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "street",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.12" => "title",
        "2.5.4.17" => "postalCode",
        "2.5.4.42" => "GN",
        "2.5.4.43" => "initials",
        "2.5.4.44" => "generationQualifier",
        "2.5.4.46" => "dnQualifier",
        "2.5.4.65" => "pseudonym",
        "1.2.840.113549.1.9.1" => "emailAddress",
        "0.9.2342.19200300.100.1.1" => "UID",
        "0.9.2342.19200300.100.1.25" => "DC",
        _ => return None,
    })
}

/// Reads a grid-mapfile: `"<DN>" user[,user…]` per line (the first user counts), `#` comments
/// and blank lines ignored; a DN without spaces may be unquoted; `\"` and `\\` escape inside
/// quotes.
pub fn read_gridmap(path: &Path) -> Result<HashMap<String, String>, TlsError> {
    let text = std::fs::read_to_string(path).map_err(|e| TlsError::Read(path.to_path_buf(), e.to_string()))?;
    parse_gridmap(&text).map_err(|(line, msg)| TlsError::GridMap(path.to_path_buf(), line, msg))
}

fn parse_gridmap(text: &str) -> Result<HashMap<String, String>, (usize, String)> {
    let mut map = HashMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (dn, rest) = if let Some(quoted) = line.strip_prefix('"') {
            let mut dn = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some((_, e)) => dn.push(e),
                        None => break,
                    },
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => dn.push(c),
                }
            }
            let end = end.ok_or((n + 1, "unterminated quoted DN".to_string()))?;
            (dn, &quoted[end..])
        } else {
            let (dn, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            (dn.to_string(), rest)
        };
        let user = rest.trim().split(',').next().unwrap_or("").trim();
        if dn.is_empty() || user.is_empty() {
            return Err((n + 1, "expected \"<DN>\" <user>".to_string()));
        }
        map.entry(dn).or_insert_with(|| user.to_string());
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gridmap_lines() {
        let m = parse_gridmap(
            "# comment\n\n\"/C=CH/O=Org/CN=Alice Smith\" alice\n/C=CH/CN=bob bob,other\n\"/CN=q\\\"x\" q\n",
        )
        .unwrap();
        assert_eq!(m.get("/C=CH/O=Org/CN=Alice Smith").map(String::as_str), Some("alice"));
        assert_eq!(m.get("/C=CH/CN=bob").map(String::as_str), Some("bob"));
        assert_eq!(m.get("/CN=q\"x").map(String::as_str), Some("q"));
        assert_eq!(parse_gridmap("\"/CN=x\n").unwrap_err().0, 1);
        assert_eq!(parse_gridmap("ok u\n\"/CN=x\"\n").unwrap_err().0, 2);
    }

    #[test]
    fn no_tls_without_certificate() {
        let cfg = Config::default();
        assert!(load(&cfg).unwrap().is_none());
        let cfg = Config { tls_cert: Some("x.pem".into()), ..Config::default() };
        assert!(matches!(load(&cfg), Err(TlsError::Incomplete)));
        let cfg = Config { grid_mapfile: Some("g".into()), ..Config::default() };
        assert!(matches!(load(&cfg), Err(TlsError::NeedsCert(_))));
    }
}
