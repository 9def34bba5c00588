//! The AMGA client configuration file (`~/.mdclient.config`, `./mdclient.config`): `Key = Value`
//! lines with `#` comments. Parses and merges; it must not open connections or read flags.

use std::path::{Path, PathBuf};

/// `UseSSL = no | try | require`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UseSsl {
    No,
    Try,
    Require,
}

/// The settings this client understands; other keys are kept for diagnostics only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MdConfig {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub login: Option<String>,
    pub password: Option<String>,
    pub use_ssl: Option<UseSsl>,
    /// `CAFile`: a PEM file of CA certificates the server's certificate must chain to (an
    /// ardacat key; `TrustedCertDir` is mdclient's).
    pub ca_file: Option<PathBuf>,
    /// `TrustedCertDir`: a directory of CA certificates (mdclient's default is
    /// `/etc/grid-security/certificates`).
    pub trusted_cert_dir: Option<PathBuf>,
    /// `CertFile`, `KeyFile`: the client certificate and its key (PEM), presented over TLS.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// `AuthenticateWithCertificate = 1`: log in by the certificate, not by password.
    pub auth_with_cert: Option<bool>,
    /// Keys that are valid AMGA settings but have no effect here (`PermissionMask`, `Home` …).
    pub ignored: Vec<String>,
    /// Lines that could not be understood, as `file:line: reason`.
    pub warnings: Vec<String>,
}

impl MdConfig {
    /// Parses one file's text; `origin` names it in warnings.
    pub fn parse(text: &str, origin: &str) -> MdConfig {
        let mut cfg = MdConfig::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let warn = |cfg: &mut MdConfig, why: &str| cfg.warnings.push(format!("{origin}:{}: {why}", i + 1));
            let Some((key, value)) = line.split_once('=') else {
                warn(&mut cfg, "expected `Key = Value`");
                continue;
            };
            let key = key.trim();
            let value = value.trim();
            match key.to_ascii_lowercase().as_str() {
                "host" => cfg.host = Some(value.to_owned()),
                "port" => match value.parse::<u16>() {
                    Ok(port) if port > 0 => cfg.port = Some(port),
                    _ => warn(&mut cfg, &format!("Port {value:?} is not a TCP port number")),
                },
                "login" => cfg.login = Some(value.to_owned()),
                "password" => cfg.password = Some(value.to_owned()),
                "usessl" => match value.to_ascii_lowercase().as_str() {
                    "no" | "0" | "false" => cfg.use_ssl = Some(UseSsl::No),
                    "try" => cfg.use_ssl = Some(UseSsl::Try),
                    "require" | "yes" | "1" | "true" => cfg.use_ssl = Some(UseSsl::Require),
                    _ => warn(&mut cfg, &format!("UseSSL {value:?} is not one of no, try, require")),
                },
                "cafile" => cfg.ca_file = Some(expand_home(value)),
                "trustedcertdir" => cfg.trusted_cert_dir = Some(expand_home(value)),
                "certfile" => cfg.cert_file = Some(expand_home(value)),
                "keyfile" => cfg.key_file = Some(expand_home(value)),
                "authenticatewithcertificate" => match parse_bool(value) {
                    Some(b) => cfg.auth_with_cert = Some(b),
                    None => warn(&mut cfg, &format!("AuthenticateWithCertificate {value:?} is not 0 or 1")),
                },
                "usegridproxy" | "ignorecertificatenamemismatch" => {
                    if parse_bool(value) == Some(true) {
                        warn(&mut cfg, &format!("{key} is not supported by this client; ignored"));
                    }
                    cfg.ignored.push(key.to_owned());
                }
                _ => cfg.ignored.push(key.to_owned()),
            }
        }
        cfg
    }

    /// `later` wins for every key it sets.
    pub fn merge(mut self, later: MdConfig) -> MdConfig {
        self.host = later.host.or(self.host);
        self.port = later.port.or(self.port);
        self.login = later.login.or(self.login);
        self.password = later.password.or(self.password);
        self.use_ssl = later.use_ssl.or(self.use_ssl);
        self.ca_file = later.ca_file.or(self.ca_file);
        self.trusted_cert_dir = later.trusted_cert_dir.or(self.trusted_cert_dir);
        self.cert_file = later.cert_file.or(self.cert_file);
        self.key_file = later.key_file.or(self.key_file);
        self.auth_with_cert = later.auth_with_cert.or(self.auth_with_cert);
        self.ignored.extend(later.ignored);
        self.warnings.extend(later.warnings);
        self
    }

    /// Reads a file if it exists (a missing file is an empty config).
    pub fn load(path: &Path) -> std::io::Result<Option<MdConfig>> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(MdConfig::parse(&text, &path.display().to_string()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The standard search: `~/.mdclient.config`, then `./mdclient.config` (which wins).
    pub fn default_paths() -> Vec<PathBuf> {
        let mut paths = Vec::new();
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            paths.push(PathBuf::from(home).join(".mdclient.config"));
        }
        paths.push(PathBuf::from("mdclient.config"));
        paths
    }

    /// Loads and merges `paths` in order; returns the files that were found.
    pub fn load_all(paths: &[PathBuf]) -> std::io::Result<(MdConfig, Vec<PathBuf>)> {
        let mut cfg = MdConfig::default();
        let mut found = Vec::new();
        for path in paths {
            if let Some(file) = MdConfig::load(path)? {
                cfg = cfg.merge(file);
                found.push(path.clone());
            }
        }
        Ok((cfg, found))
    }
}

/// `1`/`0`, `yes`/`no`, `true`/`false` (any case).
fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Some(true),
        "0" | "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// A path, with a leading `~/` taken as the home directory.
fn expand_home(value: &str) -> PathBuf {
    match (value.strip_prefix("~/"), std::env::var_os("HOME").filter(|h| !h.is_empty())) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_amga_keys() {
        let text = "# AMGA client\nHost = md.example.org\nPort=8833\n  Login =  root \nPassword = s3cr=t x\n\
                    UseSSL = require\nPermissionMask = rwx\nHome = /home\n\n";
        let cfg = MdConfig::parse(text, "f");
        assert_eq!(cfg.host.as_deref(), Some("md.example.org"));
        assert_eq!(cfg.port, Some(8833));
        assert_eq!(cfg.login.as_deref(), Some("root"));
        assert_eq!(cfg.password.as_deref(), Some("s3cr=t x"));
        assert_eq!(cfg.use_ssl, Some(UseSsl::Require));
        assert_eq!(cfg.ignored, ["PermissionMask", "Home"]);
        assert!(cfg.warnings.is_empty());
    }

    #[test]
    fn keys_are_case_insensitive_and_bad_lines_warn() {
        let cfg = MdConfig::parse("HOST = a\nport = 99999\nusessl = Try\nnonsense\nuseSSL = maybe\n", "x.conf");
        assert_eq!(cfg.host.as_deref(), Some("a"));
        assert_eq!(cfg.port, None);
        assert_eq!(cfg.use_ssl, Some(UseSsl::Try));
        assert_eq!(cfg.warnings.len(), 3);
        assert!(cfg.warnings[0].starts_with("x.conf:2: Port"));
        assert!(cfg.warnings[1].starts_with("x.conf:4:"));
    }

    #[test]
    fn tls_keys() {
        let text = "UseSSL = require\nTrustedCertDir = /etc/grid-security/certificates\nCAFile=/ca.pem\n\
                    CertFile = /u/cert.pem\nKeyFile = /u/key.pem\nAuthenticateWithCertificate = 1\n\
                    UseGridProxy = 0\nIgnoreCertificateNameMismatch = 1\n";
        let cfg = MdConfig::parse(text, "f");
        assert_eq!(cfg.use_ssl, Some(UseSsl::Require));
        assert_eq!(cfg.trusted_cert_dir, Some(PathBuf::from("/etc/grid-security/certificates")));
        assert_eq!(cfg.ca_file, Some(PathBuf::from("/ca.pem")));
        assert_eq!(cfg.cert_file, Some(PathBuf::from("/u/cert.pem")));
        assert_eq!(cfg.key_file, Some(PathBuf::from("/u/key.pem")));
        assert_eq!(cfg.auth_with_cert, Some(true));
        // Accepted but unsupported: a warning only when switched on.
        assert_eq!(cfg.warnings.len(), 1, "{:?}", cfg.warnings);
        assert!(cfg.warnings[0].contains("IgnoreCertificateNameMismatch"));
        let bad = MdConfig::parse("AuthenticateWithCertificate = maybe\n", "f");
        assert_eq!(bad.auth_with_cert, None);
        assert_eq!(bad.warnings.len(), 1);
        let later = MdConfig::parse("CertFile = /other.pem\n", "g");
        let merged = cfg.merge(later);
        assert_eq!(merged.cert_file, Some(PathBuf::from("/other.pem")));
        assert_eq!(merged.key_file, Some(PathBuf::from("/u/key.pem")));
    }

    #[test]
    fn later_files_win() {
        let home = MdConfig::parse("Host = home\nPort = 1\nLogin = alice\n", "home");
        let local = MdConfig::parse("Host = local\nUseSSL = no\n", "local");
        let cfg = home.merge(local);
        assert_eq!(cfg.host.as_deref(), Some("local"));
        assert_eq!(cfg.port, Some(1));
        assert_eq!(cfg.login.as_deref(), Some("alice"));
        assert_eq!(cfg.use_ssl, Some(UseSsl::No));
    }

    #[test]
    fn missing_files_are_empty() {
        let dir = std::env::temp_dir().join(format!("ardacat-mdconfig-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let present = dir.join("mdclient.config");
        let _ = std::fs::write(&present, "Login = bob\n");
        let paths = vec![dir.join("absent.config"), present.clone()];
        let (cfg, found) = MdConfig::load_all(&paths).unwrap_or_default();
        assert_eq!(cfg.login.as_deref(), Some("bob"));
        assert_eq!(found, [present]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
