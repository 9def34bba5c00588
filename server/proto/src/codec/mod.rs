//! tokio-util codecs for both ends of the connection: bytes in, frames out, and reply/request pieces
//! back to bytes. They never interpret a command or a reply's meaning and never buffer more than one
//! line's limit; what to do with a frame (and when to close) is the frontend's or client's call.
//!
//! - [`ServerCodec`]: decodes client lines and the out-of-band CAN byte, encodes [`ReplyPiece`]s.
//! - [`ClientCodec`]: decodes reply lines, end-of-reply markers and inline CAN lines, encodes
//!   [`ClientPiece`]s.

mod client;
mod server;

pub use client::{ClientCodec, ClientPiece, ReplyFrame};
pub use server::{ClientFrame, Field, FieldWriter, ReplyPiece, ServerCodec, WriteRow};

use bytes::{BufMut, BytesMut};

use crate::error::{LineFault, ProtoError};

/// A default line limit generous enough for bulk `put` lines yet small enough to bound memory per
/// connection.
pub const DEFAULT_MAX_LINE: usize = 1024 * 1024;

/// The bytes that end a line for [`LineScanner::find`] (searched with `memchr`).
#[derive(Debug, Clone, Copy)]
enum Stops {
    Two(u8, u8),
    Three(u8, u8, u8),
}

/// Finds the end of the current line while enforcing the length limit.
///
/// Remembers how far it already looked so a slowly arriving long line is scanned once, not once
/// per read.
#[derive(Debug, Clone)]
struct LineScanner {
    max_line: usize,
    scanned: usize,
    failed: bool,
}

impl LineScanner {
    fn new(max_line: usize) -> Self {
        Self { max_line, scanned: 0, failed: false }
    }

    /// Offset of the first of the bytes `stops` (two or three) at or after `from`, looking no
    /// further than `max_line` bytes past `from`. `Ok(None)` means "need more bytes".
    fn find(&mut self, src: &mut BytesMut, from: usize, stops: Stops) -> Result<Option<usize>, ProtoError> {
        if self.failed {
            return Err(self.too_long());
        }
        let last_allowed = from.saturating_add(self.max_line);
        let window_end = src.len().min(last_allowed.saturating_add(1));
        let start = self.scanned.max(from).min(window_end);
        let window = &src[start..window_end];
        let found = match stops {
            Stops::Two(a, b) => memchr::memchr2(a, b, window),
            Stops::Three(a, b, c) => memchr::memchr3(a, b, c, window),
        };
        match found {
            Some(rel) => {
                // Every caller consumes through the found byte, so the next scan starts afresh.
                self.scanned = 0;
                Ok(Some(start + rel))
            }
            None if src.len() > last_allowed => {
                // Sticky: the rest of an oversized line must never be read as a new command.
                // Dropping the buffer returns its memory at once.
                self.failed = true;
                self.scanned = 0;
                *src = BytesMut::new();
                Err(self.too_long())
            }
            None => {
                self.scanned = window_end;
                Ok(None)
            }
        }
    }

    /// Forget the scan position after the buffer was emptied behind our back.
    fn consumed(&mut self) {
        self.scanned = 0;
    }

    fn too_long(&self) -> ProtoError {
        ProtoError::LineTooLong { limit: self.max_line }
    }
}

fn line_text(bytes: &[u8]) -> Result<String, LineFault> {
    std::str::from_utf8(bytes).map(str::to_owned).map_err(|e| LineFault::InvalidUtf8 { valid_up_to: e.valid_up_to() })
}

/// Writes a decimal number without going through an allocating formatter.
pub(crate) fn put_u64(dst: &mut impl BufMut, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    dst.put_slice(&digits[at..]);
}

pub(crate) fn put_i32(dst: &mut impl BufMut, n: i32) {
    if n < 0 {
        dst.put_u8(b'-');
    }
    put_u64(dst, u64::from(n.unsigned_abs()));
}

/// Feeds `chunks` one after another, decoding as far as possible after each, then signals EOF.
/// Stops at the first error, recording it as text so outcomes can be compared.
#[cfg(test)]
pub(crate) fn run_decoder<D>(codec: &mut D, chunks: &[&[u8]]) -> Vec<Result<D::Item, String>>
where
    D: tokio_util::codec::Decoder,
    D::Error: std::fmt::Display,
{
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => out.push(Ok(frame)),
                Ok(None) => break,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(frame)) => out.push(Ok(frame)),
            Ok(None) => return out,
            Err(e) => {
                out.push(Err(e.to_string()));
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Cross-codec tests: what one side encodes, the other side must decode.

    use std::borrow::Cow;

    use bytes::BytesMut;
    use proptest::prelude::*;
    use tokio_util::codec::{Decoder, Encoder};

    use super::*;
    use crate::status::format_status;

    #[test]
    fn decimal_writer() {
        let mut out = Vec::new();
        for n in [0, 7, 10, 99, 1234567890, u64::MAX] {
            out.clear();
            put_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
        for n in [0, -1, i32::MIN, i32::MAX, 16] {
            out.clear();
            put_i32(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }

    #[derive(Debug, Clone)]
    enum Piece {
        Status(i32),
        Error(i32, String),
        Data(String),
        End(Option<u64>),
        Cancelled(i32, String),
    }

    fn piece() -> impl Strategy<Value = Piece> {
        let text = "[^\n\r\u{4}\u{18}\0]{0,20}";
        let hostile = "[a \n\r\u{4}\u{18}\0é]{0,8}";
        prop_oneof![
            any::<i32>().prop_map(Piece::Status),
            (any::<i32>(), hostile).prop_map(|(c, m)| Piece::Error(c, m)),
            text.prop_map(Piece::Data),
            proptest::option::of(any::<u64>()).prop_map(Piece::End),
            (any::<i32>(), hostile).prop_map(|(c, m)| Piece::Cancelled(c, m)),
        ]
    }

    fn to_reply(p: &Piece) -> ReplyPiece<'_> {
        match p {
            Piece::Status(c) => ReplyPiece::Status(*c),
            Piece::Error(c, m) => ReplyPiece::error(*c, m.as_str()),
            Piece::Data(s) => ReplyPiece::data(s.as_str()),
            Piece::End(s) => ReplyPiece::End { session: *s },
            Piece::Cancelled(c, m) => ReplyPiece::cancelled(*c, m.as_str()),
        }
    }

    fn expected(p: &Piece) -> ReplyFrame {
        match p {
            Piece::Status(c) => ReplyFrame::Line(c.to_string()),
            Piece::Error(c, m) => ReplyFrame::Line(format_status(*c, m)),
            Piece::Data(s) => ReplyFrame::Line(s.clone()),
            Piece::End(s) => ReplyFrame::End { session: *s },
            Piece::Cancelled(c, m) => {
                let line = format_status(*c, m);
                let message = line.split_once(' ').map_or("", |(_, m)| m).to_owned();
                ReplyFrame::Cancel { code: *c, message }
            }
        }
    }

    proptest! {
        #[test]
        fn server_replies_decode_on_the_client(
            pieces in proptest::collection::vec(piece(), 0..12),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let mut server = ServerCodec::default();
            let mut wire = BytesMut::new();
            for p in &pieces {
                server.encode(to_reply(p), &mut wire).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let mut cut_at: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
            cut_at.push(0);
            cut_at.push(wire.len());
            cut_at.sort_unstable();
            let chunks: Vec<&[u8]> = cut_at.windows(2).map(|w| &wire[w[0]..w[1]]).collect();
            let frames = run_decoder(&mut ClientCodec::default(), &chunks);
            let want: Vec<Result<ReplyFrame, String>> = pieces.iter().map(|p| Ok(expected(p))).collect();
            prop_assert_eq!(frames, want);
        }

        #[test]
        fn client_commands_decode_on_the_server(
            commands in proptest::collection::vec(proptest::option::of("[^\n\r\u{4}\u{18}\0]{0,30}"), 0..10),
        ) {
            let mut client = ClientCodec::default();
            let mut wire = BytesMut::new();
            for c in &commands {
                let piece = match c {
                    Some(line) => ClientPiece::Command(Cow::Borrowed(line.as_str())),
                    None => ClientPiece::Cancel,
                };
                client.encode(piece, &mut wire).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let mut server = ServerCodec::default();
            let mut frames = Vec::new();
            while let Some(frame) = server.decode_eof(&mut wire).map_err(|e| TestCaseError::fail(e.to_string()))? {
                frames.push(frame);
            }
            let want: Vec<ClientFrame> = commands
                .iter()
                .map(|c| c.clone().map_or(ClientFrame::Cancel, ClientFrame::Line))
                .collect();
            prop_assert_eq!(frames, want);
        }
    }
}
