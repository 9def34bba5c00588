//! Connection set-up: TCP connect, the server's greeting, the options block (`escape`,
//! `session`, `resume<id>`, `ssl`), the TLS handshake on the same socket, and the login block.
//! It produces an [`Opened`] connection for [`Client`](super::Client); it must not run commands
//! or read replies (that is `exchange` and `reply`).
//!
//! With [`ClientConfig::tls`] the client sends the `ssl` option, reads `OK`, runs the TLS
//! handshake (rustls, ring provider) on the same socket and logs in inside TLS; with a client
//! certificate and an empty login it logs in by certificate. [`ClientConfig::tls_optional`]
//! (mdclient's `UseSSL = try`) falls back to plain TCP when the server does not offer `ssl`.

use std::pin::Pin;
use std::task::{Context, Poll};

use ardacat_proto::{
    ClientCodec, ClientOptions, ClientPiece, Greeting, LoginContext, ReplyFrame, Transport, parse_status,
};
use futures::{SinkExt, StreamExt};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use super::config::ClientConfig;
use crate::error::{ClientError, Result};

pub(super) type Conn = Framed<Io, ClientCodec>;

/// Bytes the connection reads at most per `read` (tokio-util's default is 8 KiB).
const READ_BUFFER: usize = 64 * 1024;

/// The connection's byte stream: plain TCP or TLS over it.
pub(super) enum Io {
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

/// A connection just opened: the framed stream, the server's greeting, and whether `escape` and
/// TLS are in force.
pub(super) struct Opened {
    pub(super) framed: Conn,
    pub(super) greeting: Greeting,
    pub(super) escape: bool,
    pub(super) tls: bool,
}

/// Connects, reads the greeting, sends the options and (unless resuming) the login block.
pub(super) async fn open(config: &ClientConfig, resume: Option<u64>, want_escape: bool) -> Result<Opened> {
    let addr = format!("{}:{}", config.host, config.port);
    let handshake = async {
        let stream = TcpStream::connect((config.host.as_str(), config.port))
            .await
            .map_err(|e| ClientError::Connect(format!("{addr}: {e}")))?;
        stream.set_nodelay(true)?;
        let mut framed = Framed::with_capacity(stream, ClientCodec::new(config.max_line), READ_BUFFER);
        let mut lines = Vec::with_capacity(3);
        while lines.len() < 3 {
            match framed.next().await {
                Some(Ok(ReplyFrame::Line(line))) => lines.push(line),
                Some(Ok(other)) => {
                    return Err(ClientError::Protocol(format!("unexpected {other:?} in the server greeting")));
                }
                Some(Err(e)) => return Err(ClientError::Connect(format!("{addr}: reading the greeting: {e}"))),
                // A server past its connection limits sends one status line instead of the
                // greeting and closes: show it.
                None if !lines.is_empty() => {
                    return Err(ClientError::Connect(format!(
                        "{addr}: the server refused the connection: {}",
                        lines[0]
                    )));
                }
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
