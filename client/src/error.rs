//! The client's error type. Owns the classification of failures (server status, cancel, protocol,
//! I/O, connect) and their numeric code for the CLI; it must not decide retry or reconnect policy.

use ardacat_proto::ProtoError;
use thiserror::Error;

/// Everything that can go wrong talking to an ardacat/AMGA server.
#[derive(Debug, Error)]
pub enum ClientError {
    /// The server answered with a non-zero status line, or aborted a reply midway with an inline
    /// CAN line that the client did not ask for.
    #[error("Error {code}: {message}")]
    Server { code: i32, message: String },
    /// The reply was aborted after this client sent a cancel request.
    #[error("Cancelled {code}: {message}")]
    Cancelled { code: i32, message: String },
    /// The server's bytes do not follow the protocol (greeting, framing, escaping).
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The TCP connection or the handshake could not be established.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The server closed the connection (or an earlier failure left it unusable).
    #[error("connection closed by the server")]
    Closed,
    /// An argument cannot be sent (e.g. a newline in a value without the `escape` option).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl ClientError {
    /// The numeric code the CLI prints: the server's code, or -1 for client-side failures
    /// (AMGA's own clients use -1 for "cannot connect").
    pub fn code(&self) -> i32 {
        match self {
            ClientError::Server { code, .. } | ClientError::Cancelled { code, .. } => *code,
            _ => -1,
        }
    }

    /// The message without the code, for `Error <code>: <message>`.
    pub fn message(&self) -> String {
        match self {
            ClientError::Server { message, .. } | ClientError::Cancelled { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// Whether the connection can no longer be used (a reconnect is needed).
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, ClientError::Io(_) | ClientError::Closed | ClientError::Connect(_))
    }
}

impl From<ProtoError> for ClientError {
    fn from(e: ProtoError) -> Self {
        match e {
            ProtoError::Io(io) => ClientError::Io(io),
            ProtoError::UnframeableLine { offset } => ClientError::InvalidArgument(format!(
                "the command has a newline or control byte at offset {offset}; use the escape option"
            )),
            ProtoError::UnexpectedEof => ClientError::Closed,
            other => ClientError::Protocol(other.to_string()),
        }
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;
