//! Error types of the framing layer: what can go wrong while turning bytes into frames and back.
//! Owns no recovery policy — whether to reply with an error status or to close the connection is the
//! frontend's decision; these types only say which of the two is still possible.

use thiserror::Error;

use crate::handshake::HandshakeError;

/// A fault confined to one complete line.
///
/// The codecs hand these out as frames rather than as `Err`, because the offending line has been
/// consumed in full and the stream is still in step: the server can answer with an error status and
/// carry on. (`FramedRead` ends the stream after any `Err`, which would turn a stray byte into a
/// dropped connection.)
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum LineFault {
    /// The line holds a NUL byte; C-based peers would truncate it, so it is never passed on.
    #[error("line contains a NUL byte at offset {offset}")]
    NulByte { offset: usize },
    /// The line is not UTF-8; the catalogue stores text only.
    #[error("line is not valid UTF-8 (valid up to byte {valid_up_to})")]
    InvalidUtf8 { valid_up_to: usize },
}

/// Fatal framing errors: after any of these the byte stream can no longer be trusted.
#[derive(Debug, Error)]
pub enum ProtoError {
    /// No line end within the limit. The codec has already dropped what it buffered and keeps
    /// failing, because treating the tail of an oversized line as a new command would be unsafe.
    #[error("line longer than {limit} bytes")]
    LineTooLong { limit: usize },
    /// The peer closed the connection in the middle of a line or an end-of-reply marker.
    #[error("connection closed in the middle of a line")]
    UnexpectedEof,
    /// An outgoing line holds a byte that would break framing (newline, CR, EOT, CAN or NUL).
    /// Refusing beats corrupting the stream; the value has to go through the `escape` extension.
    #[error("refusing to send a line with a framing byte at offset {offset}")]
    UnframeableLine { offset: usize },
    /// The bytes between two EOTs are neither empty nor `session<digits>`.
    #[error("malformed end-of-reply marker")]
    BadTerminator,
    /// A CAN line from the server does not carry `<code>[ <message>]`.
    #[error("malformed inline cancel line")]
    BadCancelLine,
    /// Options or login context that cannot be put on the wire.
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}
