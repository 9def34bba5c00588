//! The async protocol client: connection set-up (greeting, options, login, resume), one command at
//! a time with its reply read lazily as a [`RowStream`], cancel, upload and typed helpers for the
//! core commands. Framing and quoting come from `ardacat-proto`; this module must not re-implement
//! them, and it knows nothing about output formats or the command-line interface.
//!
//! With [`ClientConfig::tls`] the client sends the `ssl` option, reads `OK`, runs the TLS
//! handshake (rustls, ring provider) on the same socket and logs in inside TLS; with a client
//! certificate and an empty login it logs in by certificate. [`ClientConfig::tls_optional`]
//! (mdclient's `UseSSL = try`) falls back to plain TCP when the server does not offer `ssl`.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use ardacat_proto::{
    ClientCodec, ClientOptions, ClientPiece, DEFAULT_MAX_LINE, Greeting, LoginContext, ReplyFrame, Transport,
    join_args, join_escaped_args, needs_escape, parse_status, unescape_value,
};
use futures::{SinkExt, Stream, StreamExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use crate::error::{ClientError, Result};
use crate::shape::group_rows;

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
    /// `EOT session<id> EOT` and [`Client::reconnect_resume`] can pick the session up again.
    pub session: bool,
    /// Longest reply line accepted, in bytes.
    pub max_line: usize,
    /// Bound on TCP connect plus handshake; `None` waits forever.
    pub connect_timeout: Option<Duration>,
    /// Connect with TLS (`ssl`, or `resumeSSL<id>` when resuming). `None`: plain TCP.
    pub tls: Option<TlsClientConfig>,
    /// With `tls`: connect without TLS instead of failing when the server's greeting does not
    /// offer `ssl` (mdclient's `UseSSL = try`). Whoever can alter the greeting on the network can
    /// force the fallback, so the password then travels in clear; [`Client::is_tls`] tells.
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

    fn connector(&self) -> Result<tokio_rustls::TlsConnector> {
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

type Conn = Framed<Io, ClientCodec>;

/// The connection's byte stream: plain TCP or TLS over it.
enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Io {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Moves a framed connection onto another stream, keeping the codec and anything buffered.
fn rewrap<T, U>(framed: Framed<T, ClientCodec>, io: impl FnOnce(T) -> U) -> Framed<U, ClientCodec> {
    let parts = framed.into_parts();
    let mut next = FramedParts::new::<ClientPiece<'_>>(io(parts.io), parts.codec);
    next.read_buf = parts.read_buf;
    next.write_buf = parts.write_buf;
    Framed::from_parts(next)
}

/// One connection to the catalogue. Commands run one at a time; a reply must be read (or its
/// stream dropped, which cancels and drains it before the next command) before the next command.
pub struct Client {
    framed: Conn,
    // Boxed: the settings are read rarely, and a `Client` stays small enough to move around cheaply.
    config: Box<ClientConfig>,
    greeting: Greeting,
    escape: bool,
    /// The connection runs over TLS.
    tls: bool,
    session: Option<u64>,
    /// A reply has been started whose end marker is still unread (its stream was dropped).
    in_reply: bool,
    /// The byte stream is out of step or closed; only a reconnect helps.
    broken: bool,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.config)
            .field("greeting", &self.greeting)
            .field("escape", &self.escape)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// A connection just opened: the framed stream, the server's greeting, and whether `escape` and
/// TLS are in force.
struct Opened {
    framed: Conn,
    greeting: Greeting,
    escape: bool,
    tls: bool,
}

/// Connects, reads the greeting, sends the options and (unless resuming) the login block.
async fn open(config: &ClientConfig, resume: Option<u64>, want_escape: bool) -> Result<Opened> {
    let addr = format!("{}:{}", config.host, config.port);
    let handshake = async {
        let stream = TcpStream::connect((config.host.as_str(), config.port))
            .await
            .map_err(|e| ClientError::Connect(format!("{addr}: {e}")))?;
        stream.set_nodelay(true)?;
        let mut framed = Framed::new(stream, ClientCodec::new(config.max_line));
        let mut lines = Vec::with_capacity(3);
        while lines.len() < 3 {
            match framed.next().await {
                Some(Ok(ReplyFrame::Line(line))) => lines.push(line),
                Some(Ok(other)) => {
                    return Err(ClientError::Protocol(format!("unexpected {other:?} in the server greeting")));
                }
                Some(Err(e)) => return Err(ClientError::Connect(format!("{addr}: reading the greeting: {e}"))),
                None => {
                    return Err(ClientError::Connect(format!("{addr}: connection closed before the greeting")));
                }
            }
        }
        let greeting = Greeting::parse(&lines[0], &lines[1], &lines[2])
            .map_err(|e| ClientError::Protocol(format!("bad server greeting: {e}")))?;
        *framed.codec_mut() = ClientCodec::new(config.max_line).with_protocol(greeting.protocol());
        let escape = want_escape && greeting.has_option("escape");
        let tls = match &config.tls {
            Some(_) if !greeting.has_option("ssl") && config.tls_optional => None,
            Some(_) if !greeting.has_option("ssl") => {
                return Err(ClientError::Connect(format!("{addr}: the server does not offer TLS (ssl)")));
            }
            other => other.as_ref(),
        };
        let transport = if tls.is_some() { Transport::Ssl } else { Transport::Plain };
        let mut options = ClientOptions::new(transport).with_escape(escape);
        if let Some(id) = resume {
            options = options.with_resume(id);
        } else if config.session && greeting.has_option("session") {
            options.other.push("session".into());
        }
        framed.send(ClientPiece::Options(&options)).await?;
        if options.expects_ok() {
            match framed.next().await {
                Some(Ok(ReplyFrame::Line(line))) if line == "OK" => {}
                Some(Ok(ReplyFrame::Line(line))) => {
                    return Err(match parse_status(&line) {
                        Ok(status) if status.code != 0 => {
                            ClientError::Server { code: status.code, message: status.message.to_owned() }
                        }
                        _ => ClientError::Protocol(format!("expected OK after the options, got {line:?}")),
                    });
                }
                Some(Ok(other)) => {
                    return Err(ClientError::Protocol(format!("expected OK after the options, got {other:?}")));
                }
                Some(Err(e)) => return Err(e.into()),
                None => return Err(ClientError::Connect(format!("{addr}: connection closed after the options"))),
            }
        }
        let mut framed = match tls {
            None => rewrap(framed, Io::Plain),
            Some(tls) => {
                // The handshake starts right after OK, on the same socket.
                let connector = tls.connector()?;
                let name = ServerName::try_from(config.host.clone())
                    .map_err(|e| ClientError::InvalidArgument(format!("TLS server name {}: {e}", config.host)))?;
                let parts = framed.into_parts();
                if !parts.read_buf.is_empty() {
                    return Err(ClientError::Protocol("the server sent data before the TLS handshake".into()));
                }
                let stream = connector
                    .connect(name, parts.io)
                    .await
                    .map_err(|e| ClientError::Connect(format!("{addr}: TLS handshake: {e}")))?;
                let mut next = FramedParts::new::<ClientPiece<'_>>(Io::Tls(Box::new(stream)), parts.codec);
                next.write_buf = parts.write_buf;
                Framed::from_parts(next)
            }
        };
        if options.expects_login() {
            let mut login = LoginContext::new(config.login.clone());
            login.password = config.password.clone();
            framed.send(ClientPiece::Login(&login)).await?;
        }
        Ok(Opened { framed, greeting, escape, tls: tls.is_some() })
    };
    match config.connect_timeout {
        Some(limit) => tokio::time::timeout(limit, handshake)
            .await
            .map_err(|_| ClientError::Connect(format!("{addr}: timed out after {limit:?}")))?,
        None => handshake.await,
    }
}

impl Client {
    /// Opens a connection and logs in. The server reports a failed login only as the error of the
    /// first command, so a bad password shows up there.
    pub async fn connect(config: ClientConfig) -> Result<Client> {
        let Opened { framed, greeting, escape, tls } = open(&config, None, config.escape).await?;
        Ok(Client {
            framed,
            config: Box::new(config),
            greeting,
            escape,
            tls,
            session: None,
            in_reply: false,
            broken: false,
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    pub fn greeting(&self) -> &Greeting {
        &self.greeting
    }

    /// Whether the `escape` extension is in force on this connection.
    pub fn escape(&self) -> bool {
        self.escape
    }

    /// Whether this connection runs over TLS (with [`ClientConfig::tls_optional`] it may not).
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The last session id the server announced in an end marker.
    pub fn session_id(&self) -> Option<u64> {
        self.session
    }

    /// Whether the connection is known to be unusable (closed, or out of step).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Opens a new connection resuming the stored session: `resume<id>` and no login block.
    /// A session the server no longer knows is reported as the error of the next command.
    pub async fn reconnect_resume(&mut self) -> Result<()> {
        let id = self
            .session
            .ok_or_else(|| ClientError::InvalidArgument("the server has not announced a session id".into()))?;
        let opened = open(&self.config, Some(id), self.escape).await?;
        self.replace(opened);
        Ok(())
    }

    /// Opens a new connection with a fresh login (the session, if any, is forgotten).
    pub async fn reconnect(&mut self) -> Result<()> {
        let opened = open(&self.config, None, self.config.escape).await?;
        self.escape = opened.escape;
        self.replace(opened);
        self.session = None;
        Ok(())
    }

    fn replace(&mut self, opened: Opened) {
        self.framed = opened.framed;
        self.greeting = opened.greeting;
        self.tls = opened.tls;
        self.in_reply = false;
        self.broken = false;
    }

    /// Closes the connection politely (half-close, then drop).
    pub async fn close(self) -> Result<()> {
        let mut stream = self.framed.into_inner();
        stream.shutdown().await?;
        Ok(())
    }

    /// Builds a command line from raw arguments, quoting (and escaping, if negotiated) each.
    pub fn command_line<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        let args: Vec<Option<&str>> = args.iter().map(|a| Some(a.as_ref())).collect();
        self.command_line_opt(&args)
    }

    /// Like [`Client::command_line`], with NULL arguments (`\N` under `escape`, `''` without).
    pub fn command_line_opt(&self, args: &[Option<&str>]) -> Result<String> {
        if self.escape {
            return Ok(join_escaped_args(args));
        }
        if let Some(bad) = args.iter().flatten().find(|a| needs_escape(a)) {
            return Err(ClientError::InvalidArgument(format!(
                "{:?} holds a newline or control byte; connect with the escape option to send it",
                bad.chars().take(40).collect::<String>()
            )));
        }
        Ok(join_args(args.iter().map(|a| a.unwrap_or(""))))
    }

    /// Decodes one data line into a value: unescaped under `escape` (`None` is NULL), else as is.
    pub fn decode(&self, line: String) -> Result<Option<String>> {
        if self.escape {
            unescape_value(&line).map_err(|e| ClientError::Protocol(format!("bad escaped value: {e}")))
        } else {
            Ok(Some(line))
        }
    }

    fn mark_lost(&mut self, e: ClientError) -> ClientError {
        if !matches!(e, ClientError::InvalidArgument(_)) {
            self.broken = true;
        }
        e
    }

    /// Makes the connection ready for a new command: finishes an abandoned reply first.
    async fn prepare(&mut self) -> Result<()> {
        if self.broken {
            return Err(ClientError::Closed);
        }
        if self.in_reply {
            // The stream of the previous command was dropped early: ask the server to stop, then
            // read up to its end marker. A CAN that arrives after the reply ended is ignored.
            if let Err(e) = self.framed.send(ClientPiece::Cancel).await {
                return Err(self.mark_lost(e.into()));
            }
            loop {
                match self.framed.next().await {
                    Some(Ok(ReplyFrame::End { session })) => {
                        self.note_session(session);
                        break;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(self.mark_lost(e.into())),
                    None => return Err(self.mark_lost(ClientError::Closed)),
                }
            }
            self.in_reply = false;
        }
        Ok(())
    }

    fn note_session(&mut self, session: Option<u64>) {
        if session.is_some() {
            self.session = session;
        }
    }

    /// Sends one command line and returns its reply stream without waiting for the status line,
    /// so that even a command that has not produced its status yet can be cancelled.
    pub async fn start(&mut self, line: &str) -> Result<RowStream<'_>> {
        self.prepare().await?;
        if let Err(e) = self.framed.send(ClientPiece::Command(Cow::Borrowed(line))).await {
            return Err(self.mark_lost(e.into()));
        }
        self.in_reply = true;
        Ok(RowStream::new(self))
    }

    /// Sends one command line and waits for its status; a non-zero status is returned as
    /// [`ClientError::Server`]. The data lines are then read from the stream as the caller pulls.
    pub async fn stream(&mut self, line: &str) -> Result<RowStream<'_>> {
        let mut rows = self.start(line).await?;
        rows.wait_status().await?;
        Ok(rows)
    }

    /// Runs one command line and collects its data lines as sent (still escaped under `escape`).
    pub async fn execute(&mut self, line: &str) -> Result<Vec<String>> {
        let mut rows = self.start(line).await?;
        let mut out = Vec::new();
        while let Some(line) = rows.next_line().await? {
            out.push(line);
        }
        Ok(out)
    }

    /// Runs a command built from arguments and collects its data lines.
    pub async fn execute_args<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Vec<String>> {
        let line = self.command_line(args)?;
        self.execute(&line).await
    }

    async fn values<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Vec<Option<String>>> {
        let lines = self.execute_args(args).await?;
        lines.into_iter().map(|l| self.decode(l)).collect()
    }

    async fn single<S: AsRef<str>>(&mut self, args: &[S]) -> Result<String> {
        let name = args.first().map(|a| a.as_ref().to_owned()).unwrap_or_default();
        match self.values(args).await?.into_iter().next() {
            Some(value) => Ok(value.unwrap_or_default()),
            None => Err(ClientError::Protocol(format!("{name}: expected one data line, got none"))),
        }
    }

    async fn names<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Vec<String>> {
        Ok(self.values(args).await?.into_iter().map(Option::unwrap_or_default).collect())
    }

    async fn pairs<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Vec<(String, String)>> {
        let values = self.names(args).await?;
        if values.len() % 2 != 0 {
            return Err(ClientError::Protocol(format!("expected pairs of lines, got {} lines", values.len())));
        }
        let mut it = values.into_iter();
        let mut out = Vec::new();
        while let (Some(a), Some(b)) = (it.next(), it.next()) {
            out.push((a, b));
        }
        Ok(out)
    }

    pub async fn pwd(&mut self) -> Result<String> {
        self.single(&["pwd"]).await
    }

    pub async fn whoami(&mut self) -> Result<String> {
        self.single(&["whoami"]).await
    }

    pub async fn cd(&mut self, dir: &str) -> Result<()> {
        self.execute_args(&["cd", dir]).await.map(drop)
    }

    pub async fn createdir(&mut self, path: &str) -> Result<()> {
        self.execute_args(&["createdir", path]).await.map(drop)
    }

    pub async fn rmdir(&mut self, path: &str) -> Result<()> {
        self.execute_args(&["rmdir", path]).await.map(drop)
    }

    /// `dir`: (name, `collection` | `entry`) pairs.
    pub async fn dir(&mut self, path: &str) -> Result<Vec<(String, String)>> {
        self.pairs(&["dir", path]).await
    }

    pub async fn ls(&mut self, path: &str) -> Result<Vec<String>> {
        self.names(&["ls", path]).await
    }

    pub async fn addattr(&mut self, dir: &str, name: &str, type_name: &str) -> Result<()> {
        self.execute_args(&["addattr", dir, name, type_name]).await.map(drop)
    }

    pub async fn removeattr(&mut self, dir: &str, name: &str) -> Result<()> {
        self.execute_args(&["removeattr", dir, name]).await.map(drop)
    }

    /// `listattr`: (attribute, type) pairs.
    pub async fn listattr(&mut self, path: &str) -> Result<Vec<(String, String)>> {
        self.pairs(&["listattr", path]).await
    }

    /// `addentry <path> (<attr> <value>)*`.
    pub async fn addentry<A: AsRef<str>, V: AsRef<str>>(&mut self, path: &str, pairs: &[(A, V)]) -> Result<()> {
        let mut args = vec!["addentry", path];
        for (a, v) in pairs {
            args.push(a.as_ref());
            args.push(v.as_ref());
        }
        self.execute_args(&args).await.map(drop)
    }

    pub async fn addentries<S: AsRef<str>>(&mut self, paths: &[S]) -> Result<()> {
        let mut args = vec!["addentries"];
        args.extend(paths.iter().map(AsRef::as_ref));
        self.execute_args(&args).await.map(drop)
    }

    /// `setattr <pattern> (<attr> <value>)*`.
    pub async fn setattr<A: AsRef<str>, V: AsRef<str>>(&mut self, pattern: &str, pairs: &[(A, V)]) -> Result<()> {
        let mut args = vec!["setattr", pattern];
        for (a, v) in pairs {
            args.push(a.as_ref());
            args.push(v.as_ref());
        }
        self.execute_args(&args).await.map(drop)
    }

    /// `getattr <pattern> a1..aN`: one (entry name, N values) pair per matching entry.
    pub async fn getattr<S: AsRef<str>>(
        &mut self,
        pattern: &str,
        attrs: &[S],
    ) -> Result<Vec<(String, Vec<Option<String>>)>> {
        let mut args = vec!["getattr", pattern];
        args.extend(attrs.iter().map(AsRef::as_ref));
        let values = self.values(&args).await?;
        let rows = group_rows(values, attrs.len() + 1)
            .map_err(|n| ClientError::Protocol(format!("getattr: {n} lines left over after the last entry")))?;
        Ok(rows
            .into_iter()
            .map(|mut row| {
                let name = row.remove(0).unwrap_or_default();
                (name, row)
            })
            .collect())
    }

    /// `selectattr e1..eN '<cond>'`: rows of N values.
    pub async fn selectattr<S: AsRef<str>>(
        &mut self,
        exprs: &[S],
        condition: &str,
    ) -> Result<Vec<Vec<Option<String>>>> {
        let mut args = vec!["selectattr"];
        args.extend(exprs.iter().map(AsRef::as_ref));
        args.push(condition);
        let values = self.values(&args).await?;
        group_rows(values, exprs.len())
            .map_err(|n| ClientError::Protocol(format!("selectattr: {n} lines left over after the last row")))
    }

    /// `find <pattern> '<cond>'`: matching entry names.
    pub async fn find(&mut self, pattern: &str, condition: &str) -> Result<Vec<String>> {
        self.names(&["find", pattern, condition]).await
    }

    pub async fn rm(&mut self, pattern: &str) -> Result<()> {
        self.execute_args(&["rm", pattern]).await.map(drop)
    }

    pub async fn sequence_next(&mut self, sequence: &str) -> Result<String> {
        self.single(&["sequence_next", sequence]).await
    }

    pub async fn transaction(&mut self) -> Result<()> {
        self.execute("transaction").await.map(drop)
    }

    pub async fn commit(&mut self) -> Result<()> {
        self.execute("commit").await.map(drop)
    }

    pub async fn abort(&mut self) -> Result<()> {
        self.execute("abort").await.map(drop)
    }

    /// Bulk load: `upload <dir> a1..aN`, one `put <name> v1..vN` per row — none of which the
    /// server answers — then `commit`, whose status is the upload's. Returns the rows sent.
    /// A row of the wrong width or with an unsendable value aborts the upload.
    pub async fn upload<A, I>(&mut self, dir: &str, attrs: &[A], rows: I) -> Result<u64>
    where
        A: AsRef<str>,
        I: IntoIterator<Item = (String, Vec<Option<String>>)>,
    {
        self.prepare().await?;
        let mut head = vec![Some("upload"), Some(dir)];
        head.extend(attrs.iter().map(|a| Some(a.as_ref())));
        let line = self.command_line_opt(&head)?;
        self.feed(line).await?;
        let mut sent = 0u64;
        for (name, values) in rows {
            let line = if values.len() == attrs.len() {
                let mut args = vec![Some("put"), Some(name.as_str())];
                args.extend(values.iter().map(|v| v.as_deref()));
                self.command_line_opt(&args)
            } else {
                Err(ClientError::InvalidArgument(format!(
                    "row {name:?} has {} values for {} attributes",
                    values.len(),
                    attrs.len()
                )))
            };
            match line {
                Ok(line) => self.feed(line).await?,
                Err(e) => {
                    // Best effort: the upload is void anyway; the caller wants the first error.
                    let _ = self.execute("abort").await;
                    return Err(e);
                }
            }
            sent += 1;
        }
        self.execute("commit").await?;
        Ok(sent)
    }

    /// Queues one line without flushing (the codec flushes when its buffer fills).
    async fn feed(&mut self, line: String) -> Result<()> {
        match self.framed.feed(ClientPiece::Command(Cow::Owned(line))).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.mark_lost(e.into())),
        }
    }
}

/// What one step of reading a reply produced.
enum Event {
    StatusOk,
    Line(String),
    End,
}

/// The reply of one command, read from the socket only as the caller asks for lines (TCP gives
/// the back-pressure). Also a `futures::Stream` of data lines. Dropping it early is allowed: the
/// next command on the client cancels and drains the rest first.
pub struct RowStream<'a> {
    client: &'a mut Client,
    status_read: bool,
    finished: bool,
    cancel_sent: bool,
    /// The error to report once the end marker has been read.
    failure: Option<ClientError>,
    lines: u64,
}

impl<'a> RowStream<'a> {
    fn new(client: &'a mut Client) -> Self {
        Self { client, status_read: false, finished: false, cancel_sent: false, failure: None, lines: 0 }
    }

    /// Data lines returned so far.
    pub fn lines_read(&self) -> u64 {
        self.lines
    }

    /// Whether the end marker has been read.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Whether values are escaped on this connection (see [`Client::decode`]).
    pub fn escape(&self) -> bool {
        self.client.escape
    }

    /// Decodes a line this stream returned, keeping the raw text for the caller.
    pub fn decode(&self, line: &str) -> Result<Option<String>> {
        self.client.decode(line.to_owned())
    }

    fn abort_error(&self, code: i32, message: String) -> ClientError {
        if self.cancel_sent { ClientError::Cancelled { code, message } } else { ClientError::Server { code, message } }
    }

    fn lost(&mut self, e: ClientError) -> ClientError {
        self.finished = true;
        self.client.in_reply = false;
        self.client.broken = true;
        e
    }

    /// Reads frames until something the caller cares about: the success status, a data line, or
    /// the end of the reply (turned into the recorded error, if any).
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Result<Event>> {
        loop {
            if self.finished {
                return Poll::Ready(match self.failure.take() {
                    Some(e) => Err(e),
                    None => Ok(Event::End),
                });
            }
            let frame = match ready!(self.client.framed.poll_next_unpin(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(e)) => return Poll::Ready(Err(self.lost(e.into()))),
                None => return Poll::Ready(Err(self.lost(ClientError::Closed))),
            };
            match frame {
                ReplyFrame::End { session } => {
                    self.finished = true;
                    self.client.in_reply = false;
                    self.client.note_session(session);
                    if !self.status_read && self.failure.is_none() {
                        self.failure = Some(ClientError::Protocol("reply ended without a status line".into()));
                    }
                }
                ReplyFrame::Cancel { code, message } => {
                    if self.failure.is_none() {
                        self.failure = Some(self.abort_error(code, message));
                    }
                }
                ReplyFrame::Invalid(fault) => {
                    if self.failure.is_none() {
                        self.failure = Some(ClientError::Protocol(format!("unreadable reply line: {fault}")));
                    }
                }
                ReplyFrame::Line(line) if !self.status_read => {
                    self.status_read = true;
                    match parse_status(&line) {
                        Ok(status) if status.code == 0 => return Poll::Ready(Ok(Event::StatusOk)),
                        Ok(status) => {
                            let e = self.abort_error(status.code, status.message.to_owned());
                            self.failure.get_or_insert(e);
                        }
                        Err(e) => {
                            self.failure.get_or_insert(ClientError::Protocol(format!("bad status line: {e}")));
                        }
                    }
                }
                ReplyFrame::Line(line) => {
                    if self.failure.is_none() && !self.cancel_sent {
                        self.lines += 1;
                        return Poll::Ready(Ok(Event::Line(line)));
                    }
                }
            }
        }
    }

    /// Polls for the next data line; `Ok(None)` at the end of a successful reply.
    pub fn poll_line(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<String>>> {
        loop {
            match ready!(self.poll_event(cx)) {
                Ok(Event::StatusOk) => {}
                Ok(Event::Line(line)) => return Poll::Ready(Ok(Some(line))),
                Ok(Event::End) => return Poll::Ready(Ok(None)),
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Waits for the status line; an error status is returned (after draining the reply).
    pub async fn wait_status(&mut self) -> Result<()> {
        if !self.status_read || self.finished {
            // The first event of a reply is its success status, or the end of a failed reply.
            std::future::poll_fn(|cx| self.poll_event(cx)).await?;
        }
        Ok(())
    }

    /// The next data line as sent (escaped under `escape`); `Ok(None)` once the reply is complete.
    pub async fn next_line(&mut self) -> Result<Option<String>> {
        std::future::poll_fn(|cx| self.poll_line(cx)).await
    }

    /// The next data line decoded into a value (`Some(None)` is NULL under `escape`).
    pub async fn next_value(&mut self) -> Result<Option<Option<String>>> {
        match self.next_line().await? {
            Some(line) => self.client.decode(line).map(Some),
            None => Ok(None),
        }
    }

    /// The next `width` values as one row; an incomplete last row is a protocol error.
    pub async fn next_row(&mut self, width: usize) -> Result<Option<Vec<Option<String>>>> {
        let width = width.max(1);
        let mut row = Vec::with_capacity(width);
        while row.len() < width {
            match self.next_value().await? {
                Some(value) => row.push(value),
                None if row.is_empty() => return Ok(None),
                None => {
                    return Err(ClientError::Protocol(format!(
                        "reply ended inside a row ({} of {width} values)",
                        row.len()
                    )));
                }
            }
        }
        Ok(Some(row))
    }

    /// Reads the rest of the reply, discarding the lines; returns how many there were.
    pub async fn drain(&mut self) -> Result<u64> {
        // The status line is read as text; the data lines after it are only counted, not copied
        // out (the codec's discard mode ends with the reply's end marker).
        self.wait_status().await?;
        self.client.framed.codec_mut().discard_rest_of_reply();
        let mut n = 0;
        while self.next_line().await?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    /// Asks the server to abort this reply (CAN byte), then reads up to its end marker.
    /// Returns [`ClientError::Cancelled`] with the server's abort code, or `Ok(())` if the reply
    /// had already been completed in full before the cancel arrived.
    pub async fn cancel(mut self) -> Result<()> {
        if !self.finished {
            self.cancel_sent = true;
            if let Err(e) = self.client.framed.send(ClientPiece::Cancel).await {
                return Err(self.lost(e.into()));
            }
            // A failure recorded before the cancel (e.g. an inline CAN) now counts as the abort.
            if let Some(ClientError::Server { code, message }) = self.failure.take() {
                self.failure = Some(ClientError::Cancelled { code, message });
            }
        }
        loop {
            match std::future::poll_fn(|cx| self.poll_event(cx)).await? {
                Event::End => return Ok(()),
                Event::StatusOk | Event::Line(_) => {}
            }
        }
    }
}

impl Stream for RowStream<'_> {
    type Item = Result<String>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished && this.failure.is_none() {
            return Poll::Ready(None);
        }
        this.poll_line(cx).map(Result::transpose)
    }
}
