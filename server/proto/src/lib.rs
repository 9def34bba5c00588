//! Wire syntax of the AMGA-compatible TCP streaming protocol, shared by the server's text frontend
//! and the Rust client. It knows bytes, lines, quotes and markers — never what a command means, what
//! a catalogue is, or how to authenticate; that keeps it free of tokio I/O, databases and TLS.
//!
//! # Layers, bottom up
//!
//! 1. [`codec`] — tokio-util `Decoder`/`Encoder`s. [`ServerCodec`] turns client bytes into lines
//!    and out-of-band cancels and writes reply pieces (status, data, `EOT [session<id>] EOT`,
//!    inline `CAN`) — a row either as one [`ReplyPiece`] or as a [`WriteRow`] whose fields go
//!    into the write buffer one by one; [`ClientCodec`] is its mirror image. Both bound line length and never panic on
//!    input. Per-line faults (NUL, bad UTF-8) come back as frames so the connection can carry on;
//!    only framing failures are `Err` ([`ProtoError`]).
//! 2. [`handshake`] — the three greeting lines, the client's option block (`plain`, `ssl`,
//!    `resume<id>`, `resumeSSL<id>`, our `escape`) and the login context block, as builders for the
//!    client and line-at-a-time parsers for the server.
//! 3. [`status`] — the `<code>[ <text>]` line that opens every reply.
//! 4. [`mod@tokenize`] — splitting a command line into arguments with AMGA's single-quote rules, and
//!    quoting them back.
//! 5. [`escape`] — the `escape` extension: a canonical backslash encoding under which any string
//!    and NULL survive a line, plus the check that stops unsendable values reaching old clients.
//!
//! A server connection runs: encode [`Greeting`] → read lines into [`OptionsParser`] → `OK` if
//! [`ClientOptions::expects_ok`] → TLS if asked → lines into [`LoginParser`] if
//! [`ClientOptions::expects_login`] → then per line: [`tokenize_args`] (or [`tokenize_escaped`];
//! both borrow the line where they can, [`fn@tokenize`] copies every argument) and answer with
//! `Status`/`Error`, `Data`… (or rows), `End`.

pub mod codec;
pub mod error;
pub mod escape;
pub mod handshake;
pub mod status;
pub mod tokenize;

/// End of transmission: closes every reply.
pub const EOT: u8 = 0x04;
/// Cancel: an abort request from the client, or an inline abort notice from the server.
pub const CAN: u8 = 0x18;

pub use codec::{
    ClientCodec, ClientFrame, ClientPiece, DEFAULT_MAX_LINE, Field, FieldWriter, ReplyFrame, ReplyPiece, ServerCodec,
    WriteRow,
};
pub use error::{LineFault, ProtoError};
pub use escape::{
    EscapeError, NULL_TOKEN, encode_value, escape_value, needs_escape, plain_value, unescape_arg, unescape_value,
};
pub use handshake::{
    ClientOptions, Greeting, HandshakeError, LoginContext, LoginParser, OptionsParser, PROTOCOL_VERSION, Transport,
};
pub use status::{Status, StatusError, format_status, parse_status};
pub use tokenize::{TokenizeError, join_args, join_escaped_args, quote_arg, tokenize, tokenize_args, tokenize_escaped};
