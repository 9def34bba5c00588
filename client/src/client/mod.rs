//! The async protocol client: one connection to the catalogue, commands one at a time with the
//! reply read lazily as a [`RowStream`]. Framing and quoting come from `ardacat-proto`; this module
//! must not re-implement them, and it knows nothing about output formats or the command-line
//! interface. Split like the server's connection code:
//!
//! - `config`: [`ClientConfig`], [`TlsClientConfig`];
//! - `handshake`: connect, greeting, options, TLS, login;
//! - `exchange`: the command/reply loop; `reply`: reading one reply ([`RowStream`]);
//! - `commands`: typed helpers for the core commands; `upload`: bulk load;
//! - `session`: session ids, resume and reconnect.
//!
//! This file holds the [`Client`] itself: its state, accessors, and how arguments become a command
//! line and data lines become values.

mod commands;
mod config;
mod dump;
mod exchange;
mod handshake;
mod reply;
mod session;
mod upload;

use std::fmt;

use ardacat_proto::{Greeting, join_args, join_escaped_args, needs_escape, unescape_value};
use tokio::io::AsyncWriteExt;

pub use config::{ClientConfig, DEFAULT_PORT, TlsClientConfig};
pub use dump::Restored;
pub use reply::{LineRun, RowStream};

use crate::error::{ClientError, Result};
use handshake::{Conn, Opened, open};

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
}
