//! Security rules end to end against the real `ardacat-server` binary, on SQLite and
//! PostgreSQL: TLS on the TCP port (`ssl` → `OK` → handshake → login inside TLS, `resumeSSL`),
//! HTTPS on the HTTP port, login by client certificate (catalogue mapping and grid-mapfile),
//! wrong passwords on both frontends, permissions inside queries (joins, update-by-query),
//! entry-level permissions (modes, owners and ACLs of single entries, enforced inside the
//! statements), and ACL, group and user changes seen by connections that were already logged
//! in. Certificates are made per test with rcgen; the TLS client is tokio-rustls, no client
//! library between (except for the tests of the client library and of the `ardacat` CLI).

#[macro_use]
mod common;
#[path = "common/cli.rs"]
mod cli;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use common::*;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

on_both_backends!(
    tls_tcp_and_certificates,
    https_soap,
    rust_client_over_tls,
    cli_over_tls,
    permissions_inside_queries,
    entry_permissions,
    entry_permission_changes,
    entry_acl_cleanup,
    live_changes,
    wrong_password,
    https_web_ui
);

const ALICE_DN: &str = "/C=CH/O=Org/CN=Alice";
const BOB_DN: &str = "/C=CH/O=Org/OU=Grid/CN=Bob Builder";
const MALLORY_DN: &str = "/C=CH/O=Org/CN=Mallory";

// ------------------------------------------------------------------------------------------
// Certificates

/// A test PKI on disk: a CA, the server's certificate, client certificates it signed, and one
/// client certificate from a CA the server does not trust.
struct Pki {
    dir: tempfile::TempDir,
    ca_pem: String,
    alice: (String, String),
    bob: (String, String),
    mallory: (String, String),
    stranger: (String, String),
}

fn dn(parts: &[(DnType, &str)]) -> DistinguishedName {
    let mut d = DistinguishedName::new();
    for (t, v) in parts {
        d.push(t.clone(), *v);
    }
    d
}

fn make_ca(cn: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().expect("CA key");
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    p.distinguished_name = dn(&[(DnType::OrganizationName, "Org"), (DnType::CommonName, cn)]);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let cert = p.self_signed(&key).expect("CA certificate");
    (cert.pem(), Issuer::new(p, key))
}

fn make_leaf(issuer: &Issuer<'_, KeyPair>, sans: &[&str], name: DistinguishedName, client: bool) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let mut p = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).expect("params");
    p.distinguished_name = name;
    p.extended_key_usages =
        vec![if client { ExtendedKeyUsagePurpose::ClientAuth } else { ExtendedKeyUsagePurpose::ServerAuth }];
    let cert = p.signed_by(&key, issuer).expect("sign");
    (cert.pem(), key.serialize_pem())
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("tempdir");
        let (ca_pem, ca) = make_ca("Test CA");
        let (other_pem, other) = make_ca("Other CA");
        let _ = other_pem;
        let server = make_leaf(&ca, &["localhost", "127.0.0.1"], dn(&[(DnType::CommonName, "localhost")]), false);
        let person = |cn: &str, ou: Option<&str>, issuer: &Issuer<'_, KeyPair>| {
            let mut parts = vec![(DnType::CountryName, "CH"), (DnType::OrganizationName, "Org")];
            if let Some(ou) = ou {
                parts.push((DnType::OrganizationalUnitName, ou));
            }
            parts.push((DnType::CommonName, cn));
            make_leaf(issuer, &[], dn(&parts), true)
        };
        let pki = Pki {
            ca_pem: ca_pem.clone(),
            alice: person("Alice", None, &ca),
            bob: person("Bob Builder", Some("Grid"), &ca),
            mallory: person("Mallory", None, &ca),
            stranger: person("Alice", None, &other),
            dir,
        };
        std::fs::write(pki.path("ca.pem"), &ca_pem).expect("write");
        std::fs::write(pki.path("alice.pem"), &pki.alice.0).expect("write");
        std::fs::write(pki.path("alice.key"), &pki.alice.1).expect("write");
        std::fs::write(pki.path("server.pem"), &server.0).expect("write");
        std::fs::write(pki.path("server.key"), &server.1).expect("write");
        std::fs::write(pki.path("grid-mapfile"), format!("# test\n\"{BOB_DN}\" bob,other\n")).expect("write");
        pki
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Server flags for TLS with client certificates and the grid-mapfile.
    fn flags(&self) -> Vec<String> {
        let p = |n: &str| self.path(n).display().to_string();
        vec![
            "--tls-cert".into(),
            p("server.pem"),
            "--tls-key".into(),
            p("server.key"),
            "--tls-client-ca".into(),
            p("ca.pem"),
            "--grid-mapfile".into(),
            p("grid-mapfile"),
        ]
    }

    /// A rustls client trusting the test CA, optionally presenting a certificate.
    fn client(&self, cert: Option<&(String, String)>, tls12_only: bool) -> TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(self.ca_pem.as_bytes()).expect("ca")).expect("add ca");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions: &[&rustls::SupportedProtocolVersion] =
            if tls12_only { &[&rustls::version::TLS12] } else { &[&rustls::version::TLS13, &rustls::version::TLS12] };
        let b = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .expect("versions")
            .with_root_certificates(roots);
        let mut cfg = match cert {
            Some((c, k)) => {
                let chain = vec![CertificateDer::from_pem_slice(c.as_bytes()).expect("cert")];
                let key = PrivateKeyDer::from_pem_slice(k.as_bytes()).expect("key");
                b.with_client_auth_cert(chain, key).expect("client cert")
            }
            None => b.with_no_client_auth(),
        };
        // Offered on both ports; the TCP port selects none, the HTTP port http/1.1.
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        TlsConnector::from(Arc::new(cfg))
    }
}

async fn start(b: Backend, pki: &Pki) -> TestServer {
    let flags = pki.flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    TestServer::start_flags(b, &flags).await
}

// ------------------------------------------------------------------------------------------
// An AMGA connection over any stream (TLS here; `RawConn` covers plain TCP)

struct Amga<S> {
    s: S,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Amga<S> {
    async fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).await.expect("write");
        self.s.flush().await.expect("flush");
    }

    async fn fill(&mut self) -> bool {
        let mut chunk = vec![0u8; 65536];
        match tokio::time::timeout(Duration::from_secs(30), self.s.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => false,
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(_) => panic!("timed out; have {:?}", String::from_utf8_lossy(&self.buf)),
        }
    }

    async fn reply(&mut self) -> Vec<u8> {
        loop {
            if let Some(end) = reply_end(&self.buf) {
                let rest = self.buf.split_off(end);
                return std::mem::replace(&mut self.buf, rest);
            }
            assert!(self.fill().await, "closed mid-reply: {:?}", String::from_utf8_lossy(&self.buf));
        }
    }

    /// (status code, data lines) of one command.
    async fn lines(&mut self, line: &str) -> (i32, Vec<String>) {
        self.send(format!("{line}\n").as_bytes()).await;
        let r = String::from_utf8(self.reply().await).expect("utf8");
        let body = r.split('\x04').next().unwrap_or_default();
        let mut it = body.split('\n');
        let code = it.next().unwrap_or_default().split(' ').next().unwrap_or_default().parse().unwrap_or(-1);
        let mut v: Vec<String> = it.map(String::from).collect();
        v.pop();
        (code, v)
    }

    async fn ok(&mut self, line: &str) -> Vec<String> {
        let (code, v) = self.lines(line).await;
        assert_eq!(code, 0, "{line}: {v:?}");
        v
    }

    /// EOF within a few seconds (anything still buffered is discarded).
    async fn closed(&mut self) -> bool {
        let mut chunk = vec![0u8; 1024];
        loop {
            match tokio::time::timeout(Duration::from_secs(10), self.s.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// Greeting, the option block (`ssl\n\n` or `resumeSSL<id>\n\n` …), `OK`, then the TLS
/// handshake on the same socket. Returns the greeting's option line too.
async fn tls_connect(
    addr: SocketAddr,
    tls: &TlsConnector,
    options: &str,
) -> std::io::Result<(Amga<TlsStream<TcpStream>>, String)> {
    let mut plain = RawConn::connect(addr).await;
    let greeting = String::from_utf8(plain.read_lines(3).await).expect("greeting");
    plain.send(options.as_bytes()).await;
    assert_eq!(plain.read_lines(1).await, b"OK\n", "OK precedes the TLS handshake");
    let stream = tls.connect(ServerName::try_from("localhost").expect("name"), plain.stream).await?;
    let opts = greeting.lines().nth(2).unwrap_or_default().to_string();
    Ok((Amga { s: stream, buf: Vec::new() }, opts))
}

/// TLS, then the login block (`0 <login>` / `5 <password>`), as the original client does.
async fn tls_login(
    addr: SocketAddr,
    tls: &TlsConnector,
    block: &str,
    options: &str,
) -> std::io::Result<Amga<TlsStream<TcpStream>>> {
    let (mut c, _) = tls_connect(addr, tls, options).await?;
    c.send(block.as_bytes()).await;
    Ok(c)
}

// ------------------------------------------------------------------------------------------

async fn tls_tcp_and_certificates(b: Backend) {
    let pki = Pki::new();
    let srv = start(b, &pki).await;
    let mut root = srv.raw().await;
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, "user_create bob bpw").await;
    ok(&mut root, &format!("user_subject_add alice '{ALICE_DN}'")).await;
    assert_eq!(ok(&mut root, "user_listcred alice").await, vec![ALICE_DN.to_string()]);
    let anon = pki.client(None, false);

    // ssl is offered; password login inside TLS.
    let (mut c, opts) = tls_connect(srv.tcp, &anon, "ssl\n\n").await.expect("TLS");
    assert!(opts.split(' ').any(|o| o == "ssl"), "{opts}");
    assert!(matches!(
        c.s.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3 | rustls::ProtocolVersion::TLSv1_2)
    ));
    c.send(format!("0 root\n5 {ROOT_PASSWORD}\n\n").as_bytes()).await;
    assert_eq!(c.ok("whoami").await, vec!["root"]);
    assert_eq!(c.ok("pwd").await, vec!["/"]);
    // TLS 1.2 is accepted as well.
    let tls12 = pki.client(None, true);
    let mut c12 = tls_login(srv.tcp, &tls12, "0 alice\n5 apw\n\n", "ssl\n\n").await.expect("TLS 1.2");
    assert_eq!(c12.s.get_ref().1.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_2));
    assert_eq!(c12.ok("whoami").await, vec!["alice"]);
    // Plain connections still work on the same port.
    let mut p = srv.raw_as("alice", "apw").await;
    assert_eq!(ok(&mut p, "whoami").await, vec!["alice"]);

    // Wrong password inside TLS: the first command answers 4, then the server hangs up.
    let mut bad = tls_login(srv.tcp, &anon, "0 alice\n5 nope\n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(bad.lines("whoami").await.0, 4);
    assert!(bad.closed().await);

    // Certificate login: mapped with user_subject_add; empty login line, or no login line at all.
    let alice_tls = pki.client(Some(&pki.alice), false);
    let mut a = tls_login(srv.tcp, &alice_tls, "0 \n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(a.ok("whoami").await, vec!["alice"]);
    let mut a = tls_login(srv.tcp, &alice_tls, "\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(a.ok("whoami").await, vec!["alice"]);
    // Login named and no password: the certificate must be that user's.
    let mut a = tls_login(srv.tcp, &alice_tls, "0 alice\n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(a.ok("whoami").await, vec!["alice"]);
    let mut a = tls_login(srv.tcp, &alice_tls, "0 bob\n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(a.lines("whoami").await.0, 4);
    assert!(a.closed().await);
    // A password still wins over the certificate.
    let mut a = tls_login(srv.tcp, &alice_tls, "0 bob\n5 bpw\n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(a.ok("whoami").await, vec!["bob"]);
    // grid-mapfile mapping (a DN with a space, quoted in the file).
    let bob_tls = pki.client(Some(&pki.bob), false);
    let mut bb = tls_login(srv.tcp, &bob_tls, "0 \n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(bb.ok("whoami").await, vec!["bob"]);
    // A valid certificate that maps to nobody: 4 and close.
    let mallory_tls = pki.client(Some(&pki.mallory), false);
    let mut m = tls_login(srv.tcp, &mallory_tls, "0 \n\n", "ssl\n\n").await.expect("TLS");
    let (code, _) = m.lines("whoami").await;
    assert_eq!(code, 4);
    assert!(m.closed().await);
    // Once root maps its subject (OpenSSL one-line form), the same certificate logs in.
    ok(&mut root, &format!("user_subject_add bob '{MALLORY_DN}'")).await;
    let mut m = tls_login(srv.tcp, &mallory_tls, "0 \n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(m.ok("whoami").await, vec!["bob"]);
    assert_eq!(m.s.get_ref().1.alpn_protocol(), None, "no ALPN on the AMGA port");
    // No certificate and no login: 4 and close.
    let mut n = tls_login(srv.tcp, &anon, "0 \n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(n.lines("whoami").await.0, 4);
    assert!(n.closed().await);
    // A certificate from a CA the server does not trust: the handshake fails (or the server
    // closes right after it, under TLS 1.3's late client-certificate check).
    let stranger_tls = pki.client(Some(&pki.stranger), false);
    match tls_login(srv.tcp, &stranger_tls, "0 \n\n", "ssl\n\n").await {
        Err(_) => {}
        Ok(mut s) => {
            s.s.write_all(b"whoami\n").await.ok();
            let mut buf = vec![0u8; 256];
            let r = tokio::time::timeout(Duration::from_secs(10), s.s.read(&mut buf)).await.expect("answer");
            assert!(matches!(r, Ok(0) | Err(_)), "untrusted client certificate accepted: {r:?}");
        }
    }
    // A plain client that talks TLS at once (no OK awaited) does not upset anyone.
    let mut rude = RawConn::connect(srv.tcp).await;
    rude.read_lines(3).await;
    rude.send(b"ssl\n\n\x16\x03\x01\x00\x05hello").await;
    assert!(rude.closed().await);

    // resumeSSL<id>: OK, TLS again, no login block; the session (user, cwd) comes back.
    let mut s = tls_login(srv.tcp, &anon, "0 alice\n5 apw\n\n", "ssl\nsession\n\n").await.expect("TLS");
    ok_tls(&mut s, "cd /").await;
    s.send(b"pwd\n").await;
    let r = s.reply().await;
    let id = session_of(&r).expect("a session token over TLS");
    drop(s);
    let (mut r2, _) = tls_connect(srv.tcp, &anon, &format!("resumeSSL{id}\n\n")).await.expect("TLS resume");
    assert_eq!(r2.ok("whoami").await, vec!["alice"]);
    // An unknown session: the first command is refused.
    let (mut r3, _) = tls_connect(srv.tcp, &anon, "resumeSSL12345\n\n").await.expect("TLS resume");
    assert_eq!(r3.lines("whoami").await.0, 4);

    // A client stuck half-way through its TLS handshake does not hold anyone else up.
    let mut stuck = RawConn::connect(srv.tcp).await;
    stuck.read_lines(3).await;
    stuck.send(b"ssl\n\n").await;
    assert_eq!(stuck.read_lines(1).await, b"OK\n");
    let mut other = tls_login(srv.tcp, &anon, "0 alice\n5 apw\n\n", "ssl\n\n").await.expect("TLS");
    assert_eq!(other.ok("whoami").await, vec!["alice"]);
    assert_eq!(ok(&mut root, "whoami").await, vec!["root"]);
    drop(stuck);
}

async fn ok_tls<S: AsyncRead + AsyncWrite + Unpin>(c: &mut Amga<S>, line: &str) {
    c.ok(line).await;
}

/// The Rust client library (`ClientConfig::tls`): password and certificate logins, session resume.
async fn rust_client_over_tls(b: Backend) {
    use ardacat_client::{Client, ClientConfig, TlsClientConfig};
    let pki = Pki::new();
    let srv = start(b, &pki).await;
    let mut root = srv.raw().await;
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, &format!("user_subject_add alice '{ALICE_DN}'")).await;
    let tls = TlsClientConfig { ca: pki.path("ca.pem"), cert: None, key: None };
    let config = ClientConfig {
        host: "localhost".into(),
        port: srv.tcp.port(),
        login: "root".into(),
        password: Some(ROOT_PASSWORD.into()),
        session: true,
        tls: Some(tls.clone()),
        ..ClientConfig::default()
    };
    let mut c = Client::connect(config.clone()).await.expect("TLS connect");
    assert_eq!(c.whoami().await.expect("whoami"), "root");
    c.cd("/").await.expect("cd");
    assert_eq!(c.pwd().await.expect("pwd"), "/");
    // resumeSSL<id> with the session the server announced.
    assert!(c.session_id().is_some(), "a session id over TLS");
    c.reconnect_resume().await.expect("resume over TLS");
    assert_eq!(c.whoami().await.expect("whoami after resume"), "root");
    // Certificate login: empty login, alice's certificate.
    let cert = TlsClientConfig { cert: Some(pki.path("alice.pem")), key: Some(pki.path("alice.key")), ..tls };
    let by_cert = ClientConfig { login: String::new(), password: None, tls: Some(cert), ..config.clone() };
    let mut a = Client::connect(by_cert).await.expect("TLS connect with a certificate");
    assert_eq!(a.whoami().await.expect("whoami"), "alice");
    // A server name the certificate does not carry is refused by the client.
    let wrong = ClientConfig { host: "127.0.0.2".into(), ..config };
    assert!(Client::connect(wrong).await.is_err(), "certificate name mismatch accepted");
}

// ------------------------------------------------------------------------------------------
// The `ardacat` command-line client over TLS

/// Runs `ardacat <args>` one-shot in `dir` (also its HOME, so no mdclient.config of the machine
/// is read); returns (exit code, stdout, stderr).
async fn cli(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(cli::ardacat_cli().await)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("ARDACAT_PASSWORD")
        .stdin(std::process::Stdio::null())
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out).await.expect("ardacat in time").expect("run ardacat");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf8");
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

/// `ardacat` one-shot over TLS: password login and certificate login, by flags and by an
/// mdclient.config (`UseSSL = require`, `TrustedCertDir`, `CertFile`/`KeyFile`,
/// `AuthenticateWithCertificate`); a CA that did not sign the server's certificate is refused;
/// `UseSSL = try` falls back to plain TCP only where the server offers no TLS.
async fn cli_over_tls(b: Backend) {
    let pki = Pki::new();
    let srv = start(b, &pki).await;
    let mut root = srv.raw().await;
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, &format!("user_subject_add alice '{ALICE_DN}'")).await;
    let work = tempfile::tempdir().expect("tempdir");
    let dir = work.path();
    let port = srv.tcp.port().to_string();
    let path = |n: &str| pki.path(n).display().to_string();
    let (ca, cert, key) = (path("ca.pem"), path("alice.pem"), path("alice.key"));
    let base = ["--host", "localhost", "--port", port.as_str()];

    // Password login inside TLS.
    let args = [&base[..], &["--ssl", "--tls-ca", &ca, "--login", "root", "--password", ROOT_PASSWORD, "-c", "whoami"]];
    assert_eq!(cli(dir, &args.concat()).await, (0, "root\n".into(), String::new()));
    // A wrong password is the first command's error 4.
    let args = [&base[..], &["--tls-ca", &ca, "--login", "alice", "--password", "nope", "-c", "whoami"]];
    let (code, _, err) = cli(dir, &args.concat()).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("Error 4"), "{err}");
    // Certificate login: no login given, the certificate maps to alice.
    let args = [&base[..], &["--tls-ca", &ca, "--tls-cert", &cert, "--tls-key", &key, "-c", "whoami", "-c", "pwd"]];
    assert_eq!(cli(dir, &args.concat()).await, (0, "alice\n/\n".into(), String::new()));

    // The same from an mdclient.config in the working directory; the CA comes from a directory
    // that also holds a file that is no certificate. AuthenticateWithCertificate keeps the
    // file's password unsent, so the (wrong) password does not matter.
    let cas = dir.join("certificates");
    std::fs::create_dir(&cas).expect("mkdir");
    std::fs::write(cas.join("Test-CA.pem"), &pki.ca_pem).expect("write");
    std::fs::write(cas.join("Test-CA.signing_policy"), "access_id_CA X509 '/O=Org/CN=Test CA'\n").expect("write");
    let config = format!(
        "Host = localhost\nPort = {port}\nUseSSL = require\nTrustedCertDir = {}\nCertFile = {cert}\nKeyFile = {key}\n\
         AuthenticateWithCertificate = 1\nPassword = wrong\nPermissionMask = rwx\n",
        cas.display()
    );
    std::fs::write(dir.join("mdclient.config"), config).expect("write");
    assert_eq!(cli(dir, &["-c", "whoami"]).await, (0, "alice\n".into(), String::new()));
    // Flags still win over the file: password login as root inside TLS.
    let (code, out, err) = cli(dir, &["--login", "root", "--password", ROOT_PASSWORD, "-c", "whoami"]).await;
    assert_eq!((code, out.as_str()), (0, "root\n"), "{err}");

    // A CA that did not sign the server's certificate: the handshake fails, exit status 2.
    let (other_ca, _) = make_ca("Other CA");
    std::fs::write(dir.join("other.pem"), other_ca).expect("write");
    let args = [&base[..], &["--tls-ca", "other.pem", "--login", "root", "--password", ROOT_PASSWORD, "-c", "whoami"]];
    let (code, out, err) = cli(dir, &args.concat()).await;
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("TLS handshake"), "{err}");
    // TLS without any CA at all is refused before connecting (unless the grid default exists).
    if !std::path::Path::new("/etc/grid-security/certificates").is_dir() {
        std::fs::remove_file(dir.join("mdclient.config")).expect("rm");
        let args = [&base[..], &["--ssl", "--login", "root", "--password", ROOT_PASSWORD, "-c", "whoami"]];
        let (code, _, err) = cli(dir, &args.concat()).await;
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("--tls-ca"), "{err}");
    }

    // UseSSL = try: TLS where offered (no warning), plain where not (with a warning).
    let try_config = |port: u16| {
        format!(
            "Host = localhost\nPort = {port}\nUseSSL = try\nCAFile = {ca}\nLogin = root\nPassword = {ROOT_PASSWORD}\n"
        )
    };
    std::fs::write(dir.join("mdclient.config"), try_config(srv.tcp.port())).expect("write");
    assert_eq!(cli(dir, &["-c", "whoami"]).await, (0, "root\n".into(), String::new()));
    let plain = TestServer::start(b).await;
    std::fs::write(dir.join("mdclient.config"), try_config(plain.tcp.port())).expect("write");
    let (code, out, err) = cli(dir, &["-c", "whoami"]).await;
    assert_eq!((code, out.as_str()), (0, "root\n"), "{err}");
    assert!(err.contains("without encryption"), "{err}");
    // ... whereas --ssl (or UseSSL = require) refuses a server without TLS.
    let (code, _, err) = cli(dir, &["--ssl", "-c", "whoami"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not offer TLS"), "{err}");
}

// ------------------------------------------------------------------------------------------
// HTTPS

const ENV11: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const NS: &str = "urn:ardacat:metadata:1";

fn envelope(op: &str, inner: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<soap:Envelope xmlns:soap=\"{ENV11}\"><soap:Body><m:{op} xmlns:m=\"{NS}\">{inner}</m:{op}></soap:Body></soap:Envelope>"
    )
}

fn basic(user: &str, pw: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}")))
}

/// One HTTP/1.1 request (`Connection: close`) over any stream; returns (status, body).
async fn http_on<S: AsyncRead + AsyncWrite + Unpin>(
    s: S,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let (status, _, body) = http_exchange_on(s, method, path, headers, body).await;
    (status, body)
}

/// [`http_on`] that also returns the response head: (status, head, de-chunked body).
async fn http_exchange_on<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(req.as_bytes()).await.expect("write");
    s.write_all(body).await.expect("write");
    s.flush().await.expect("flush");
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut raw)).await.expect("response in time");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let mut out = String::new();
        let mut r = rest;
        while let Some((size, tail)) = r.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 || tail.len() < n {
                break;
            }
            out.push_str(&tail[..n]);
            r = tail[n..].strip_prefix("\r\n").unwrap_or(&tail[n..]);
        }
        out
    } else {
        rest.to_string()
    };
    (status, head.to_string(), body)
}

async fn https(
    addr: SocketAddr,
    tls: &TlsConnector,
    headers: &[(&str, &str)],
    op: &str,
    inner: &str,
) -> std::io::Result<(u16, String)> {
    let tcp = TcpStream::connect(addr).await?;
    let s = tls.connect(ServerName::try_from("localhost").expect("name"), tcp).await?;
    assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut h = vec![("Content-Type", "text/xml; charset=utf-8")];
    h.extend_from_slice(headers);
    Ok(http_on(s, "POST", "/soap", &h, envelope(op, inner).as_bytes()).await)
}

async fn https_soap(b: Backend) {
    let pki = Pki::new();
    let srv = start(b, &pki).await;
    let mut root = srv.raw().await;
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, &format!("user_subject_add alice '{ALICE_DN}'")).await;
    let anon = pki.client(None, false);

    // Basic auth over HTTPS.
    let auth = basic("root", ROOT_PASSWORD);
    let (status, body) = https(srv.http, &anon, &[("Authorization", &auth)], "getVersion", "").await.expect("https");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("ardacat"), "{body}");
    // The WSDL names the https address.
    let tcp = TcpStream::connect(srv.http).await.expect("connect");
    let s = anon.connect(ServerName::try_from("localhost").expect("name"), tcp).await.expect("tls");
    let (status, wsdl) = http_on(s, "GET", "/soap?wsdl", &[], b"").await;
    assert_eq!(status, 200);
    assert!(wsdl.contains("location=\"https://localhost/soap\""), "{wsdl}");
    // Wrong password: 401.
    let bad = basic("alice", "nope");
    let (status, _) = https(srv.http, &anon, &[("Authorization", &bad)], "ping", "").await.expect("https");
    assert_eq!(status, 401);
    // No credentials, no certificate: 401.
    let (status, _) = https(srv.http, &anon, &[], "ping", "").await.expect("https");
    assert_eq!(status, 401);
    // A client certificate that maps to alice, no Authorization header: alice.
    let alice_tls = pki.client(Some(&pki.alice), false);
    let (status, body) = https(srv.http, &alice_tls, &[], "listSchemas", "").await.expect("https");
    assert_eq!(status, 200, "{body}");
    // An unmapped certificate: 401.
    let mallory_tls = pki.client(Some(&pki.mallory), false);
    let (status, _) = https(srv.http, &mallory_tls, &[], "ping", "").await.expect("https");
    assert_eq!(status, 401);
    // Plain HTTP on the HTTPS port gets no HTTP answer.
    let plain = TcpStream::connect(srv.http).await.expect("connect");
    let (status, _) = http_on(plain, "GET", "/soap?wsdl", &[], b"").await;
    assert_eq!(status, 0, "plain HTTP must not be served when TLS is configured");
    // A client that never finishes its handshake holds nobody up.
    let _stuck = TcpStream::connect(srv.http).await.expect("connect");
    let (status, _) = https(srv.http, &anon, &[("Authorization", &auth)], "ping", "").await.expect("https");
    assert_eq!(status, 200);
}

// ------------------------------------------------------------------------------------------
// Permissions inside queries

async fn setup_collections(root: &mut RawConn) {
    for d in ["/pub", "/priv", "/ro", "/grp", "/mine"] {
        ok(root, &format!("createdir {d}")).await;
        ok(root, &format!("addattr {d} x int")).await;
        ok(root, &format!("addentry {d}/e1 x 1")).await;
    }
    ok(root, "chmod /priv rwx------").await;
    ok(root, "user_create alice apw").await;
    ok(root, "user_create bob bpw").await;
    ok(root, "grp_create team").await;
    ok(root, "chown /grp root:team").await;
    ok(root, "chmod /grp rwxrwx---").await;
    ok(root, "chown /mine alice").await;
    // Entries have their own owner and mode: alice's collection, alice's entry.
    ok(root, "chown /mine/e1 alice").await;
}

async fn permissions_inside_queries(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut root = srv.raw().await;
    setup_collections(&mut root).await;
    let mut alice = srv.raw_as("alice", "apw").await;

    // Reads: a readable collection alone is fine; joining or filtering on an unreadable one is 4.
    assert_eq!(ok(&mut alice, "selectattr /pub:x ''").await, vec!["1"]);
    fails(&mut alice, "selectattr /pub:x /priv:x ''", 4).await;
    fails(&mut alice, "selectattr /pub:x '/priv:x = 1'", 4).await;
    fails(&mut alice, "selectattr /pub:x '/pub:x = /priv:x'", 4).await;
    fails(&mut alice, "find /pub '/priv:x = 1'", 4).await;
    fails(&mut alice, "getattr /priv/e1 x", 4).await;

    // Writes by query: no w on the target → 4, and nothing changed.
    fails(&mut alice, "updateattr /ro x 5 'x = 1'", 4).await;
    assert_eq!(ok(&mut root, "selectattr /ro:x ''").await, vec!["1"]);
    // Writable target, but the condition reads an unreadable collection → 4, nothing changed.
    fails(&mut alice, "updateattr /mine x 5 '/priv:x = 1'", 4).await;
    fails(&mut alice, "updateattr /mine x /priv:x ''", 4).await;
    assert_eq!(ok(&mut root, "selectattr /mine:x ''").await, vec!["1"]);
    // Writable target and readable condition: done.
    ok(&mut alice, "updateattr /mine x 7 '/pub:x = 1'").await;
    assert_eq!(ok(&mut root, "selectattr /mine:x ''").await, vec!["7"]);
    // Deletes by query follow the same rule.
    fails(&mut alice, "rm /ro/* 'x = 1'", 4).await;
    fails(&mut alice, "rm /mine/* '/priv:x = 1'", 4).await;
    assert_eq!(ok(&mut root, "selectattr /ro:x ''").await, vec!["1"]);
}

// ------------------------------------------------------------------------------------------
// Entry-level permissions

/// `/d` (writable by everyone, so only entry rights matter) with alice's entries a1..a3
/// (x = 1..3, mode rw-r--r--) and `/j` (root's entries j1..j3, x = 1..3) to join with.
async fn setup_entries(srv: &TestServer) -> (RawConn, RawConn, RawConn) {
    let mut root = srv.raw().await;
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, "user_create bob bpw").await;
    ok(&mut root, "grp_create team").await;
    for d in ["/d", "/j"] {
        ok(&mut root, &format!("createdir {d}")).await;
        ok(&mut root, &format!("addattr {d} x int")).await;
    }
    ok(&mut root, "chmod /d rwxrwxrwx").await;
    for i in 1..=3 {
        ok(&mut root, &format!("addentry /j/j{i} x {i}")).await;
    }
    let mut alice = srv.raw_as("alice", "apw").await;
    for i in 1..=3 {
        ok(&mut alice, &format!("addentry /d/a{i} x {i}")).await;
    }
    let bob = srv.raw_as("bob", "bpw").await;
    (root, alice, bob)
}

/// Reads: a hidden entry is never returned, counted, joined or ordered by, on any read path.
async fn entry_permissions(b: Backend) {
    let srv = TestServer::start(b).await;
    let (mut root, mut alice, mut bob) = setup_entries(&srv).await;
    assert_eq!(ok(&mut alice, "stat /d/a2").await, vec!["/d/a2", "entry", "alice", "alice", "rw-r--r--"]);
    assert_eq!(ok(&mut bob, "getattr /d x").await, vec!["a1", "1", "a2", "2", "a3", "3"]);

    ok(&mut alice, "chmod /d/a2 rw-------").await;
    // bob (already connected) no longer sees a2 anywhere.
    fails(&mut bob, "getattr /d/a2 x", 4).await;
    assert_eq!(ok(&mut bob, "getattr /d x").await, vec!["a1", "1", "a3", "3"]);
    assert_eq!(ok(&mut bob, "getattr /d/a* x").await, vec!["a1", "1", "a3", "3"]);
    assert_eq!(ok(&mut bob, "find /d 'x > 0'").await, vec!["a1", "a3"]);
    assert!(ok(&mut bob, "find /d 'x = 2'").await.is_empty());
    fails(&mut bob, "find /d/a2 ''", 4).await;
    assert_eq!(ok(&mut bob, "selectattr /d:FILE /d:x ''").await, vec!["a1", "1", "a3", "3"]);
    // A join: a2 matches j2, but its rows never come back.
    assert_eq!(ok(&mut bob, "selectattr /d:FILE /j:FILE '/d:x = /j:x'").await, vec!["a1", "j1", "a3", "j3"]);
    assert_eq!(ok(&mut bob, "selectattr /j:FILE '/d:x = /j:x and /d:FILE = \"a2\"'").await, Vec::<String>::new());
    // Not used for ordering or limits either.
    assert_eq!(ok(&mut bob, "selectattr /d:FILE 'order by /d:x desc limit 2'").await, vec!["a3", "a1"]);
    assert_eq!(ok(&mut bob, "selectattr /d:x 'distinct order by /d:x'").await, vec!["1", "3"]);
    assert_eq!(ok(&mut bob, "listentries /d").await, vec!["/d/a1", "/d/a3"]);
    assert_eq!(ok(&mut bob, "dir /d").await, vec!["a1", "entry", "a3", "entry"]);
    fails(&mut bob, "stat /d/a2", 4).await;
    fails(&mut bob, "ls /d/a2", 4).await;
    fails(&mut bob, "getattr /d/nosuch x", 1).await;
    // The owner and root still see it.
    assert_eq!(ok(&mut alice, "getattr /d/a2 x").await, vec!["a2", "2"]);
    assert_eq!(ok(&mut root, "find /d 'x = 2'").await, vec!["a2"]);

    // A user ACL on the entry: visible on bob's live connection at once, no reconnect.
    ok(&mut alice, "acl_add /d/a2 bob r--").await;
    assert_eq!(ok(&mut bob, "getattr /d/a2 x").await, vec!["a2", "2"]);
    assert_eq!(ok(&mut bob, "selectattr /d:FILE /j:FILE '/d:x = /j:x'").await.len(), 6);
    assert_eq!(ok(&mut alice, "acl_show /d/a2").await, vec!["bob r--"]);
    assert_eq!(ok(&mut bob, "acl_show /d/a2").await, vec!["bob r--"]);
    ok(&mut alice, "acl_remove /d/a2 bob").await;
    fails(&mut bob, "getattr /d/a2 x", 4).await;
    fails(&mut bob, "acl_show /d/a2", 4).await;
    // A group ACL: applies as soon as bob joins the group, and stops when he leaves.
    ok(&mut alice, "acl_add /d/a2 team r--").await;
    assert_eq!(ok(&mut alice, "acl_show /d/a2").await, vec!["group:team r--"]);
    fails(&mut bob, "getattr /d/a2 x", 4).await;
    ok(&mut root, "grp_adduser team bob").await;
    assert_eq!(ok(&mut bob, "find /d 'x = 2'").await, vec!["a2"]);
    ok(&mut root, "grp_removeuser team bob").await;
    assert!(ok(&mut bob, "find /d 'x = 2'").await.is_empty());
    // Group bits of the entry's own group.
    ok(&mut root, "grp_adduser team alice").await;
    ok(&mut alice, "chown /d/a2 alice:team").await;
    ok(&mut alice, "chmod /d/a2 rw-r-----").await;
    fails(&mut bob, "getattr /d/a2 x", 4).await;
    ok(&mut root, "grp_adduser team bob").await;
    assert_eq!(ok(&mut bob, "getattr /d/a2 x").await, vec!["a2", "2"]);
}

/// Writes: update-by-query, setattr/clearattr, rm, and who may change modes, owners and ACLs.
async fn entry_permission_changes(b: Backend) {
    let srv = TestServer::start(b).await;
    let (mut root, mut alice, mut bob) = setup_entries(&srv).await;
    // bob may write a1 (ACL rw-) and a3 (mode rw-rw-rw-), only read a2.
    ok(&mut alice, "acl_add /d/a1 bob rw-").await;
    ok(&mut alice, "chmod /d/a3 rw-rw-rw-").await;
    ok(&mut bob, "updateattr /d x x+10 ''").await;
    assert_eq!(ok(&mut root, "getattr /d x").await, vec!["a1", "11", "a2", "2", "a3", "13"]);
    // A condition that selects only a2 changes nothing.
    ok(&mut bob, "updateattr /d x 100 'x = 2'").await;
    // And a join on a hidden row of another collection does not either.
    ok(&mut root, "chmod /j/j1 rw-------").await;
    ok(&mut bob, "updateattr /d x 50 '/d:x = /j:x + 10'").await;
    assert_eq!(ok(&mut root, "getattr /d x").await, vec!["a1", "11", "a2", "2", "a3", "50"]);
    // setattr/clearattr of a named entry without write: 4, nothing changed.
    fails(&mut bob, "setattr /d/a2 x 99", 4).await;
    fails(&mut bob, "clearattr /d/a2 x", 4).await;
    assert_eq!(ok(&mut root, "getattr /d/a2 x").await, vec!["a2", "2"]);
    // A pattern skips what bob may not write.
    ok(&mut bob, "setattr /d/a* x 7").await;
    assert_eq!(ok(&mut root, "getattr /d x").await, vec!["a1", "7", "a2", "2", "a3", "7"]);
    // Write without read (ACL -w- on a rw------- entry): bob may set a1 but not read it back.
    ok(&mut alice, "acl_add /d/a1 bob -w-").await;
    ok(&mut alice, "chmod /d/a1 rw-------").await;
    ok(&mut bob, "setattr /d/a1 x 8").await;
    fails(&mut bob, "getattr /d/a1 x", 4).await;
    assert_eq!(ok(&mut root, "getattr /d/a1 x").await, vec!["a1", "8"]);
    ok(&mut alice, "chmod /d/a1 rw-r--r--").await;

    // rm needs write on the entry too, unless the caller owns the collection.
    fails(&mut bob, "rm /d/a2", 4).await;
    ok(&mut bob, "rm /d/* 'x = 2'").await;
    assert_eq!(ok(&mut root, "getattr /d/a2 x").await, vec!["a2", "2"]);
    ok(&mut root, "chown /d bob").await;
    ok(&mut bob, "rm /d/a2").await;
    fails(&mut root, "getattr /d/a2 x", 1).await;
    ok(&mut root, "chown /d root").await;

    // Mode, owner and ACL of an entry: its owner (or root) only.
    fails(&mut bob, "chmod /d/a1 rwxrwxrwx", 4).await;
    fails(&mut bob, "chown /d/a1 bob", 4).await;
    fails(&mut bob, "acl_add /d/a1 bob rwx", 4).await;
    fails(&mut bob, "acl_remove /d/a1 bob", 4).await;
    fails(&mut bob, "chmod /d/nosuch rwxrwxrwx", 1).await;
    // Only root gives an entry away; an owner may change its group to one of its own groups.
    fails(&mut alice, "chown /d/a1 bob", 4).await;
    fails(&mut alice, "chown /d/a1 alice:team", 4).await;
    ok(&mut root, "grp_adduser team alice").await;
    ok(&mut alice, "chown /d/a1 alice:team").await;
    ok(&mut root, "chown /d/a1 bob").await;
    assert_eq!(ok(&mut root, "stat /d/a1").await, vec!["/d/a1", "entry", "bob", "team", "rw-r--r--"]);
    ok(&mut bob, "chmod /d/a1 rw-------").await;
    fails(&mut alice, "getattr /d/a1 x", 4).await;
    // A pattern changes only the caller's own entries.
    ok(&mut alice, "chmod /d/a* r--r--r--").await;
    assert_eq!(
        ok(&mut root, "stat /d/a*").await,
        vec!["/d/a1", "entry", "bob", "team", "rw-------", "/d/a3", "entry", "alice", "alice", "r--r--r--"]
    );
    fails(&mut bob, "chmod /d/a3* rwxrwxrwx", 1).await;
    // ACLs are set on single entries, not patterns; unknown principals are refused.
    fails(&mut alice, "acl_add /d/a* bob r--", 3).await;
    fails(&mut alice, "acl_add /d/a3 nobody r--", 1).await;
    fails(&mut alice, "acl_remove /d/a3 bob", 1).await;
    // Entry modes do not loosen the collection rule: no read on /j, no entry of it.
    ok(&mut root, "chmod /j rwx------").await;
    ok(&mut root, "chmod /j/j2 rwxrwxrwx").await;
    fails(&mut bob, "getattr /j/j2 x", 4).await;
    fails(&mut bob, "acl_show /j/j2", 4).await;
}

async fn entry_acl_rows(srv: &TestServer) -> i64 {
    let db = ardacat_store::Db::open(&srv.db.url, ardacat_store::DbOptions::default()).await.expect("open db");
    let mut c = db.acquire().await.expect("connection");
    let rows = c
        .query("SELECT count(*) FROM entry_acls", &[], &[ardacat_core::types::ValueType::Int])
        .await
        .expect("count entry_acls");
    match rows.first().and_then(|r| r.first()) {
        Some(ardacat_core::types::Value::Int(n)) => *n,
        other => panic!("count: {other:?}"),
    }
}

/// Removing an entry, a collection, a user or a group removes the ACL rows that name it, so a
/// later entry (SQLite reuses row ids) never inherits them.
async fn entry_acl_cleanup(b: Backend) {
    let srv = TestServer::start(b).await;
    let (mut root, mut alice, mut bob) = setup_entries(&srv).await;
    ok(&mut alice, "chmod /d/a3 rw-------").await;
    ok(&mut alice, "acl_add /d/a3 bob r--").await;
    ok(&mut alice, "acl_add /d/a3 team rw-").await;
    ok(&mut alice, "acl_add /d/a2 bob r--").await;
    assert_eq!(entry_acl_rows(&srv).await, 3);
    assert_eq!(ok(&mut bob, "getattr /d/a3 x").await, vec!["a3", "3"]);
    // rm of the entry with the highest id: its ACL rows go in the same transaction.
    ok(&mut alice, "rm /d/a3").await;
    assert_eq!(entry_acl_rows(&srv).await, 1);
    // A new entry (on SQLite it gets a3's old id) has no ACL of its own.
    ok(&mut alice, "addentry /d/a4 x 4").await;
    ok(&mut alice, "chmod /d/a4 rw-------").await;
    fails(&mut bob, "getattr /d/a4 x", 4).await;
    assert!(ok(&mut alice, "acl_show /d/a4").await.is_empty());
    // Delete by condition.
    ok(&mut alice, "acl_add /d/a4 team r--").await;
    ok(&mut alice, "rm /d/* 'x >= 4'").await;
    assert_eq!(entry_acl_rows(&srv).await, 1);
    // Removing a user removes its entry ACL rows; a group likewise.
    ok(&mut alice, "acl_add /d/a1 team r--").await;
    assert_eq!(entry_acl_rows(&srv).await, 2);
    ok(&mut root, "user_remove bob").await;
    assert_eq!(entry_acl_rows(&srv).await, 1);
    ok(&mut root, "grp_remove team").await;
    assert_eq!(entry_acl_rows(&srv).await, 0);
    // Removing the entries and the collection.
    ok(&mut root, "user_create carol cpw").await;
    ok(&mut alice, "acl_add /d/a1 carol r--").await;
    ok(&mut root, "rm /d").await;
    assert_eq!(entry_acl_rows(&srv).await, 0);
    ok(&mut alice, "addentry /d/b1 x 1").await;
    ok(&mut alice, "acl_add /d/b1 carol r--").await;
    ok(&mut root, "rm /d/b1").await;
    ok(&mut root, "rmdir /d").await;
    assert_eq!(entry_acl_rows(&srv).await, 0);
}

async fn live_changes(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut root = srv.raw().await;
    setup_collections(&mut root).await;
    // Both logged in before any grant.
    let mut alice = srv.raw_as("alice", "apw").await;
    let mut bob = srv.raw_as("bob", "bpw").await;
    assert_eq!(ok(&mut bob, "whoami").await, vec!["bob"]);

    // An ACL grant applies to the live connection at once, and so does its removal.
    fails(&mut alice, "selectattr /pub:x /priv:x ''", 4).await;
    ok(&mut root, "acl_add /priv alice r-x").await;
    assert_eq!(ok(&mut alice, "selectattr /pub:x /priv:x ''").await, vec!["1", "1"]);
    fails(&mut alice, "addentry /priv/mine x 2", 4).await;
    ok(&mut root, "acl_remove /priv alice").await;
    fails(&mut alice, "selectattr /priv:x ''", 4).await;

    // Group membership: added → readable at once; removed → denied at once.
    fails(&mut alice, "selectattr /grp:x ''", 4).await;
    ok(&mut root, "grp_adduser team alice").await;
    assert_eq!(ok(&mut alice, "selectattr /grp:x ''").await, vec!["1"]);
    ok(&mut alice, "addentry /grp/byalice x 3").await;
    ok(&mut root, "grp_removeuser team alice").await;
    fails(&mut alice, "selectattr /grp:x ''", 4).await;
    // Group ACL entries too.
    ok(&mut root, "acl_add /priv team r--").await;
    fails(&mut alice, "selectattr /priv:x ''", 4).await;
    ok(&mut root, "grp_adduser team alice").await;
    assert_eq!(ok(&mut alice, "selectattr /priv:x ''").await, vec!["1"]);
    ok(&mut root, "grp_removeuser team alice").await;

    // Inside root's transaction the change is not visible until commit, then at once.
    ok(&mut root, "transaction").await;
    ok(&mut root, "grp_adduser team alice").await;
    fails(&mut alice, "selectattr /grp:x ''", 4).await;
    ok(&mut root, "commit").await;
    assert_eq!(ok(&mut alice, "selectattr /grp:x '' ").await.len(), 2);

    // A user removed while connected is refused from the next command on.
    ok(&mut root, "user_remove bob").await;
    fails(&mut bob, "whoami", 4).await;
    fails(&mut bob, "selectattr /pub:x ''", 4).await;
    // Others are unaffected.
    assert_eq!(ok(&mut alice, "whoami").await, vec!["alice"]);

    // A password change does not cut a live session, but the old password stops working.
    ok(&mut root, "user_passwd alice newpw").await;
    assert_eq!(ok(&mut alice, "whoami").await, vec!["alice"]);
    let mut old = srv.raw_as("alice", "apw").await;
    fails(&mut old, "whoami", 4).await;
    let mut new = srv.raw_as("alice", "newpw").await;
    assert_eq!(ok(&mut new, "whoami").await, vec!["alice"]);
}

// ------------------------------------------------------------------------------------------

async fn http_plain(addr: SocketAddr, headers: &[(&str, &str)], op: &str) -> (u16, String) {
    let s = TcpStream::connect(addr).await.expect("connect");
    let mut h = vec![("Content-Type", "text/xml; charset=utf-8")];
    h.extend_from_slice(headers);
    http_on(s, "POST", "/soap", &h, envelope(op, "").as_bytes()).await
}

async fn wrong_password(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut root = srv.raw().await;
    ok(&mut root, "user_create alice apw").await;
    // TCP: the first command answers 4, then the connection closes; nothing else is run.
    let mut c = srv.raw_as("alice", "wrong").await;
    c.send(b"createdir /hacked\n").await;
    let r = String::from_utf8(c.reply().await).expect("utf8");
    assert!(r.starts_with("4 "), "{r:?}");
    assert!(c.closed().await);
    fails(&mut root, "stat /hacked", 1).await;
    let mut c = srv.raw_as("nosuchuser", "x").await;
    fails(&mut c, "pwd", 4).await;
    assert!(c.closed().await);
    // SOAP: 401 with a Basic challenge; the right password works.
    let (status, _) = http_plain(srv.http, &[("Authorization", &basic("alice", "wrong"))], "ping").await;
    assert_eq!(status, 401);
    let (status, body) = http_plain(srv.http, &[("Authorization", &basic("alice", "apw"))], "ping").await;
    assert_eq!(status, 200, "{body}");
    // Another client is not disturbed by the failures.
    assert_eq!(ok(&mut root, "whoami").await, vec!["root"]);
}

// ------------------------------------------------------------------------------------------
// The web interface over HTTPS: login by client certificate, Secure cookies

/// One HTTPS request; returns (status, head, body).
async fn https_request(
    addr: SocketAddr,
    tls: &TlsConnector,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let s = tls.connect(ServerName::try_from("localhost").expect("name"), tcp).await.expect("tls");
    http_exchange_on(s, method, path, headers, body.as_bytes()).await
}

/// The `name=value` of a `Set-Cookie` header for cookie `name`, and the whole header line.
fn set_cookie<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:") && l[11..].trim().starts_with(&format!("{name}=")))
}

async fn https_web_ui(b: Backend) {
    let pki = Pki::new();
    let srv = start(b, &pki).await;
    let mut root = srv.raw().await;
    ok(&mut root, "user_create alice apw").await;
    ok(&mut root, &format!("user_subject_add alice '{ALICE_DN}'")).await;
    let with_cert = pki.client(Some(&pki.alice), false);

    // The login page offers the verified certificate; its CSRF cookie is Secure.
    let (status, head, body) = https_request(srv.http, &with_cert, "GET", "/ui/login", &[], "").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Log in with this certificate") && body.contains(ALICE_DN), "{body}");
    let line = set_cookie(&head, "ardacat_login_csrf").expect("login csrf cookie");
    assert!(line.contains("Secure") && line.contains("HttpOnly"), "{line}");
    let token = line[11..].trim().split(';').next().unwrap().split_once('=').unwrap().1.to_string();

    // Login by certificate: a Secure, HttpOnly, SameSite=Strict session cookie.
    let cookie = format!("ardacat_login_csrf={token}");
    let form = format!("csrf={token}&certificate=1&next=%2Fui%2Fbrowse%2F");
    let headers = [("Cookie", cookie.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let (status, head, body) = https_request(srv.http, &with_cert, "POST", "/ui/login", &headers, &form).await;
    assert_eq!(status, 303, "{head}{body}");
    let line = set_cookie(&head, "ardacat_session").expect("session cookie");
    for flag in ["Secure", "HttpOnly", "SameSite=Strict", "Max-Age="] {
        assert!(line.contains(flag), "{flag} missing: {line}");
    }
    let session = line[11..].trim().split(';').next().unwrap().to_string();
    let (status, _, body) =
        https_request(srv.http, &with_cert, "GET", "/ui/browse/", &[("Cookie", &session)], "").await;
    assert_eq!(status, 200);
    assert!(body.contains("<span class=\"who\">alice</span>"), "{body}");

    // Without a certificate the certificate login is refused (and counted as a failure).
    let anon = pki.client(None, false);
    let (status, _, body) = https_request(srv.http, &anon, "POST", "/ui/login", &headers, &form).await;
    assert_eq!(status, 401, "{body}");
}
