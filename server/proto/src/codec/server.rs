//! Server side of the wire: client bytes → [`ClientFrame`]s, [`ReplyPiece`]s → bytes.
//! It frames; it does not decide what a line means, when a reply is complete or whether a fault
//! should end the connection.

use std::borrow::Cow;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::{DEFAULT_MAX_LINE, LineScanner, Stops, line_text, put_u64};
use crate::error::{LineFault, ProtoError};
use crate::escape::{NULL_TOKEN, escape_value, first_framing_byte, is_framing_byte, is_plain};
use crate::handshake::Greeting;
use crate::status::write_status;
use crate::{CAN, EOT};

/// One unit of client input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientFrame {
    /// A complete line without its `\n` (and without one trailing `\r`).
    Line(String),
    /// The client sent CAN: abort the running request. Any partial line before it is dropped.
    Cancel,
    /// A complete line that cannot be accepted; it has been consumed, the stream is still in step.
    Invalid(LineFault),
}

/// One piece of server output. A reply is a status piece, data pieces, and always an `End`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyPiece<'a> {
    /// The three greeting lines.
    Greeting(Cow<'a, Greeting>),
    /// `OK\n`, the answer to the option block.
    Ok,
    /// A bare status line `<code>\n`; `Status(0)` opens a successful reply.
    Status(i32),
    /// `<code> <message>\n`; framing bytes in the message become spaces.
    Error { code: i32, message: Cow<'a, str> },
    /// One data line. Must already be in the peer's form (see [`crate::escape::encode_value`]);
    /// a line holding a framing byte is refused with [`ProtoError::UnframeableLine`].
    Data(Cow<'a, str>),
    /// One data line per value, each encoded here for the peer: escaped
    /// ([`crate::escape::escape_value`]) when it negotiated `escape`, else sent as is (NULL as an
    /// empty line). A value that cannot be sent plain fails the whole piece with
    /// [`ProtoError::UnframeableLine`] and nothing of it written, so a row is never cut in half.
    /// One piece per row keeps the per-value cost of a streamed result to a copy.
    Values { values: &'a [Option<String>], escape: bool },
    /// [`ReplyPiece::Values`] over borrowed text: the same lines, without a `String` per value.
    Fields { fields: &'a [Field<'a>], escape: bool },
    /// `EOT EOT`, or `EOT session<id> EOT` when the client should reconnect with `resume<id>`.
    End { session: Option<u64> },
    /// `CAN<code> <message>\n`: the request was aborted mid-reply. It does not close the reply;
    /// an `End` must follow.
    Cancelled { code: i32, message: Cow<'a, str> },
}

impl<'a> ReplyPiece<'a> {
    pub fn data(line: impl Into<Cow<'a, str>>) -> Self {
        Self::Data(line.into())
    }

    pub fn error(code: i32, message: impl Into<Cow<'a, str>>) -> Self {
        Self::Error { code, message: message.into() }
    }

    pub fn cancelled(code: i32, message: impl Into<Cow<'a, str>>) -> Self {
        Self::Cancelled { code, message: message.into() }
    }

    pub fn greeting(greeting: &'a Greeting) -> Self {
        Self::Greeting(Cow::Borrowed(greeting))
    }
}

/// One value of a [`ReplyPiece::Fields`] row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field<'a> {
    Null,
    /// Any text: escaped or checked as [`ReplyPiece::Values`] does.
    Text(&'a str),
    /// Text the caller formatted itself (numbers, dates): never a control byte or a backslash,
    /// so it is copied without looking.
    Plain(&'a str),
}

/// Codec for the server's end of a connection.
#[derive(Debug, Clone)]
pub struct ServerCodec {
    scanner: LineScanner,
}

impl ServerCodec {
    /// `max_line` bounds one line in bytes, excluding the `\n`. A longer line is a fatal
    /// [`ProtoError::LineTooLong`], raised as soon as the limit is passed.
    pub fn new(max_line: usize) -> Self {
        Self { scanner: LineScanner::new(max_line) }
    }

    pub fn max_line(&self) -> usize {
        self.scanner.max_line
    }
}

impl Default for ServerCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE)
    }
}

impl Decoder for ServerCodec {
    type Item = ClientFrame;
    type Error = ProtoError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ClientFrame>, ProtoError> {
        let Some(at) = self.scanner.find(src, 0, Stops::Two(b'\n', CAN))? else {
            return Ok(None);
        };
        if src[at] == CAN {
            // Out-of-band abort: whatever part of a line preceded it is abandoned with the request.
            src.advance(at + 1);
            return Ok(Some(ClientFrame::Cancel));
        }
        let line = src.split_to(at + 1);
        let mut content = &line[..at];
        if let [rest @ .., b'\r'] = content {
            content = rest;
        }
        if let Some(offset) = content.iter().position(|&b| b == 0) {
            return Ok(Some(ClientFrame::Invalid(LineFault::NulByte { offset })));
        }
        Ok(Some(match line_text(content) {
            Ok(text) => ClientFrame::Line(text),
            Err(fault) => ClientFrame::Invalid(fault),
        }))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<ClientFrame>, ProtoError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => {
                src.clear();
                self.scanner.consumed();
                Err(ProtoError::UnexpectedEof)
            }
        }
    }
}

/// One line per field, all or nothing: a value a plain peer cannot receive leaves `dst` as it was.
fn put_fields<'a>(
    dst: &mut BytesMut,
    fields: impl Iterator<Item = Field<'a>> + Clone,
    escape: bool,
) -> Result<(), ProtoError> {
    dst.reserve(fields.clone().map(|f| field_text(f).map_or(3, |s| s.len() + 1)).sum());
    put_row(dst, escape, |w| fields.into_iter().try_for_each(|f| w.field(f)))
}

/// Runs `write` over a [`FieldWriter`] on `dst`; if it fails, `dst` is left as it was.
fn put_row(
    dst: &mut BytesMut,
    escape: bool,
    write: impl FnOnce(&mut FieldWriter<'_>) -> Result<(), ProtoError>,
) -> Result<(), ProtoError> {
    let start = dst.len();
    let result = write(&mut FieldWriter { dst, escape });
    if result.is_err() {
        dst.truncate(start);
    }
    result
}

/// Writes the fields of one row, one line each, into the write buffer (see [`WriteRow`]).
pub struct FieldWriter<'b> {
    dst: &'b mut BytesMut,
    escape: bool,
}

impl FieldWriter<'_> {
    /// One field's line, encoded for the peer as [`ReplyPiece::Values`] says. A value a plain
    /// peer cannot receive is an [`ProtoError::UnframeableLine`]; the encoder then drops the row.
    #[inline]
    pub fn field(&mut self, field: Field<'_>) -> Result<(), ProtoError> {
        let dst = &mut *self.dst;
        match field {
            Field::Null if self.escape => dst.put_slice(NULL_TOKEN.as_bytes()),
            Field::Null => {}
            Field::Plain(s) => {
                debug_assert!(is_plain(s, true), "formatted text {s:?} needs escaping");
                dst.put_slice(s.as_bytes());
            }
            Field::Text(s) if is_plain(s, self.escape) => dst.put_slice(s.as_bytes()),
            Field::Text(s) if self.escape => {
                if s.bytes().any(|b| b == b'\\' || is_framing_byte(b)) {
                    dst.put_slice(escape_value(Some(s)).as_bytes());
                } else {
                    dst.put_slice(s.as_bytes());
                }
            }
            Field::Text(s) => {
                if let Some(offset) = first_framing_byte(s) {
                    return Err(ProtoError::UnframeableLine { offset });
                }
                dst.put_slice(s.as_bytes());
            }
        }
        dst.put_u8(b'\n');
        Ok(())
    }
}

/// A data row that `write` puts into the write buffer field by field ([`FieldWriter::field`]):
/// the lines of [`ReplyPiece::Fields`], without first collecting the row's fields in a list.
/// All or nothing, as there: if `write` fails, nothing of the row is written.
pub struct WriteRow<F> {
    pub escape: bool,
    pub write: F,
}

impl<F> Encoder<WriteRow<F>> for ServerCodec
where
    F: FnOnce(&mut FieldWriter<'_>) -> Result<(), ProtoError>,
{
    type Error = ProtoError;

    fn encode(&mut self, row: WriteRow<F>, dst: &mut BytesMut) -> Result<(), ProtoError> {
        put_row(dst, row.escape, row.write)
    }
}

fn field_text(f: Field<'_>) -> Option<&str> {
    match f {
        Field::Null => None,
        Field::Text(s) | Field::Plain(s) => Some(s),
    }
}

impl<'a> Encoder<ReplyPiece<'a>> for ServerCodec {
    type Error = ProtoError;

    fn encode(&mut self, piece: ReplyPiece<'a>, dst: &mut BytesMut) -> Result<(), ProtoError> {
        match piece {
            ReplyPiece::Greeting(greeting) => dst.put_slice(greeting.encode().as_bytes()),
            ReplyPiece::Ok => dst.put_slice(b"OK\n"),
            ReplyPiece::Status(code) => {
                write_status(dst, code, "");
                dst.put_u8(b'\n');
            }
            ReplyPiece::Error { code, message } => {
                dst.reserve(message.len() + 13);
                write_status(dst, code, &message);
                dst.put_u8(b'\n');
            }
            ReplyPiece::Data(line) => {
                if let Some(offset) = first_framing_byte(&line) {
                    return Err(ProtoError::UnframeableLine { offset });
                }
                dst.reserve(line.len() + 1);
                dst.put_slice(line.as_bytes());
                dst.put_u8(b'\n');
            }
            ReplyPiece::Values { values, escape } => {
                let fields = values.iter().map(|v| v.as_deref().map_or(Field::Null, Field::Text));
                put_fields(dst, fields, escape)?;
            }
            ReplyPiece::Fields { fields, escape } => put_fields(dst, fields.iter().copied(), escape)?,
            ReplyPiece::End { session } => {
                dst.put_u8(EOT);
                if let Some(id) = session {
                    dst.put_slice(b"session");
                    put_u64(dst, id);
                }
                dst.put_u8(EOT);
            }
            ReplyPiece::Cancelled { code, message } => {
                dst.reserve(message.len() + 14);
                dst.put_u8(CAN);
                write_status(dst, code, &message);
                dst.put_u8(b'\n');
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use futures::StreamExt;
    use proptest::prelude::*;
    use tokio::io::{AsyncRead, ReadBuf};
    use tokio_util::codec::FramedRead;

    use super::*;
    use crate::codec::run_decoder;
    use crate::handshake::Greeting;

    type Outcome = Vec<Result<ClientFrame, String>>;

    fn run(codec: &mut ServerCodec, chunks: &[&[u8]]) -> Outcome {
        run_decoder(codec, chunks)
    }

    fn line(s: &str) -> Result<ClientFrame, String> {
        Ok(ClientFrame::Line(s.to_owned()))
    }

    fn encode_all(pieces: Vec<ReplyPiece<'_>>) -> Result<Vec<u8>, ProtoError> {
        let mut codec = ServerCodec::default();
        let mut dst = BytesMut::new();
        for piece in pieces {
            codec.encode(piece, &mut dst)?;
        }
        Ok(dst.to_vec())
    }

    const HOSTILE: &[u8] = b"pwd\r\n\ncd '/a b'\nhalf\x18getattr /x\n\x18\x18nul\0here\r\nbad\xff\xfeutf\nlast\r\n";

    fn hostile_expected() -> Outcome {
        vec![
            line("pwd"),
            line(""),
            line("cd '/a b'"),
            Ok(ClientFrame::Cancel),
            line("getattr /x"),
            Ok(ClientFrame::Cancel),
            Ok(ClientFrame::Cancel),
            Ok(ClientFrame::Invalid(LineFault::NulByte { offset: 3 })),
            Ok(ClientFrame::Invalid(LineFault::InvalidUtf8 { valid_up_to: 3 })),
            line("last"),
        ]
    }

    /// `Values` skips the framing check for a value without control bytes.
    #[test]
    fn framing_bytes_are_control_bytes() {
        assert!((0..=255u8).filter(|&b| crate::escape::is_framing_byte(b)).all(|b| b < 0x20));
    }

    #[test]
    fn decodes_hostile_input_in_one_piece() {
        assert_eq!(run(&mut ServerCodec::default(), &[HOSTILE]), hostile_expected());
    }

    #[test]
    fn decodes_hostile_input_split_at_every_byte() {
        for cut in 0..=HOSTILE.len() {
            let (a, b) = HOSTILE.split_at(cut);
            assert_eq!(run(&mut ServerCodec::default(), &[a, b]), hostile_expected(), "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = HOSTILE.chunks(1).collect();
        assert_eq!(run(&mut ServerCodec::default(), &bytes), hostile_expected());
    }

    #[test]
    fn cancel_is_immediate_and_drops_partial_line() {
        let mut codec = ServerCodec::default();
        let mut buf = BytesMut::from(&b"selectattr /d:a '/d"[..]);
        assert_eq!(codec.decode(&mut buf).ok(), Some(None));
        buf.extend_from_slice(b"\x18");
        assert_eq!(codec.decode(&mut buf).ok(), Some(Some(ClientFrame::Cancel)));
        assert!(buf.is_empty());
        buf.extend_from_slice(b"\x18pwd\n");
        assert_eq!(codec.decode(&mut buf).ok(), Some(Some(ClientFrame::Cancel)));
        assert_eq!(codec.decode(&mut buf).ok(), Some(Some(ClientFrame::Line("pwd".into()))));
    }

    #[test]
    fn only_one_trailing_cr_is_stripped() {
        assert_eq!(
            run(&mut ServerCodec::default(), &[b"a\r\r\n\r\nb\rc\n"]),
            vec![line("a\r"), line(""), line("b\rc")]
        );
    }

    #[test]
    fn eof_mid_line_is_an_error() {
        let out = run(&mut ServerCodec::default(), &[b"pwd\nwho"]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], line("pwd"));
        assert_eq!(out[1], Err(ProtoError::UnexpectedEof.to_string()));
        assert!(run(&mut ServerCodec::default(), &[b""]).is_empty());
    }

    #[test]
    fn line_limit_is_exact() {
        let mut codec = ServerCodec::new(4);
        assert_eq!(run(&mut codec, &[b"abcd\n"]), vec![line("abcd")]);
        let mut codec = ServerCodec::new(4);
        let out = run(&mut codec, &[b"abcde"]);
        assert_eq!(out, vec![Err(ProtoError::LineTooLong { limit: 4 }.to_string())]);
        // Sticky: the tail of the oversized line must not become a command.
        let mut buf = BytesMut::from(&b"rm\n"[..]);
        assert!(matches!(codec.decode(&mut buf), Err(ProtoError::LineTooLong { limit: 4 })));
    }

    #[test]
    fn extreme_limits_do_not_panic() {
        assert_eq!(
            run(&mut ServerCodec::new(0), &[b"\n\x18x"]),
            vec![line(""), Ok(ClientFrame::Cancel), Err(ProtoError::LineTooLong { limit: 0 }.to_string())]
        );
        assert_eq!(run(&mut ServerCodec::new(usize::MAX), &[b"ok\n"]), vec![line("ok")]);
    }

    #[test]
    fn ten_megabyte_line_fails_at_the_limit() {
        const LIMIT: usize = 1024 * 1024;
        const CHUNK: usize = 64 * 1024;
        let chunk = vec![b'a'; CHUNK];
        let mut codec = ServerCodec::new(LIMIT);
        let mut buf = BytesMut::new();
        let mut fed = 0;
        let result = loop {
            if fed >= 10 * LIMIT {
                break None;
            }
            buf.extend_from_slice(&chunk);
            fed += CHUNK;
            match codec.decode(&mut buf) {
                Ok(None) => assert!(buf.len() <= LIMIT),
                other => break Some(other),
            }
        };
        assert!(matches!(result, Some(Err(ProtoError::LineTooLong { limit: LIMIT }))));
        assert_eq!(fed, LIMIT + CHUNK, "error must come with the first byte past the limit");
        assert_eq!(buf.capacity(), 0, "buffered bytes are released on error");
    }

    /// Serves an endless line of `a`s in 64 KiB reads, counting what was taken.
    struct Endless {
        served: usize,
    }

    impl AsyncRead for Endless {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            static BLOCK: [u8; 64 * 1024] = [b'a'; 64 * 1024];
            let n = buf.remaining().min(BLOCK.len()).min(10 * 1024 * 1024 - self.served);
            buf.put_slice(&BLOCK[..n]);
            self.served += n;
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn framed_read_stops_reading_past_the_limit() {
        const LIMIT: usize = 1024 * 1024;
        let mut framed = FramedRead::new(Endless { served: 0 }, ServerCodec::new(LIMIT));
        let first = framed.next().await;
        assert!(matches!(first, Some(Err(ProtoError::LineTooLong { limit: LIMIT }))));
        let served = framed.get_ref().served;
        assert!(served <= LIMIT + 64 * 1024, "read {served} bytes of a 10 MB line");
        assert!(framed.read_buffer().capacity() < 64 * 1024);
        // FramedRead reports end of stream after an error; the connection is to be closed.
        assert!(framed.next().await.is_none());
    }

    #[test]
    fn reconstructed_session_bytes() -> Result<(), Box<dyn std::error::Error>> {
        let greeting = Greeting::new("1.3.0", ["plain", "ssl", "resume", "escape"])?;
        let bytes = encode_all(vec![
            ReplyPiece::greeting(&greeting),
            ReplyPiece::Ok,
            ReplyPiece::Status(0),
            ReplyPiece::data("/"),
            ReplyPiece::End { session: None },
        ])?;
        assert_eq!(bytes, b"ARDA Metadata Server 1.3.0\nProtocol 2\nplain ssl resume escape\nOK\n0\n/\n\x04\x04");
        Ok(())
    }

    #[test]
    fn reply_framing_bytes() -> Result<(), ProtoError> {
        assert_eq!(
            encode_all(vec![ReplyPiece::error(16, "Directory\nexists"), ReplyPiece::End { session: Some(42) },])?,
            b"16 Directory exists\n\x04session42\x04"
        );
        assert_eq!(
            encode_all(vec![
                ReplyPiece::Status(0),
                ReplyPiece::data("row"),
                ReplyPiece::data(""),
                ReplyPiece::cancelled(9, "aborted"),
                ReplyPiece::End { session: None },
            ])?,
            b"0\nrow\n\n\x189 aborted\n\x04\x04"
        );
        assert_eq!(encode_all(vec![ReplyPiece::Status(-1)])?, b"-1\n");
        assert_eq!(encode_all(vec![ReplyPiece::error(3, "")])?, b"3\n");
        Ok(())
    }

    #[test]
    fn unframeable_data_is_refused_without_output() {
        let mut codec = ServerCodec::default();
        let mut dst = BytesMut::from(&b"0\n"[..]);
        for (bad, offset) in [("a\nb", 1), ("\u{4}", 0), ("xy\u{18}", 2), ("\0", 0), ("r\r", 1)] {
            let result = codec.encode(ReplyPiece::data(bad), &mut dst);
            assert!(matches!(result, Err(ProtoError::UnframeableLine { offset: o }) if o == offset), "{bad:?}");
        }
        assert_eq!(&dst[..], b"0\n");
    }

    #[test]
    fn a_row_of_values_is_one_line_each_and_never_half_written() {
        let mut codec = ServerCodec::default();
        let row = vec![Some("a".to_string()), None, Some(String::new()), Some("x\\N".into())];
        let mut dst = BytesMut::new();
        codec.encode(ReplyPiece::Values { values: &row, escape: false }, &mut dst).unwrap();
        assert_eq!(&dst[..], b"a\n\n\nx\\N\n");
        let mut dst = BytesMut::new();
        codec.encode(ReplyPiece::Values { values: &row, escape: true }, &mut dst).unwrap();
        assert_eq!(&dst[..], b"a\n\\N\n\nx\\\\N\n");
        let bad = vec![Some("ok".to_string()), Some("two\nlines".into())];
        let mut dst = BytesMut::from(&b"0\n"[..]);
        let result = codec.encode(ReplyPiece::Values { values: &bad, escape: false }, &mut dst);
        assert!(matches!(result, Err(ProtoError::UnframeableLine { offset: 3 })));
        assert_eq!(&dst[..], b"0\n", "nothing of the refused row is written");
        codec.encode(ReplyPiece::Values { values: &bad, escape: true }, &mut dst).unwrap();
        assert_eq!(&dst[..], b"0\nok\ntwo\\nlines\n");
    }

    proptest! {
        /// `Values` writes exactly what one `Data` piece per `encode_value` would.
        #[test]
        fn values_piece_matches_data_pieces(
            // Up to 20 bytes: values longer than the eight the plain-text scan takes per step.
            row in proptest::collection::vec(proptest::option::of("[a-c\\\\\n\r\t\u{4}\u{18}\u{0}Né]{0,20}"), 0..6),
            escape in any::<bool>(),
        ) {
            let mut codec = ServerCodec::default();
            let mut one = BytesMut::new();
            let r = codec.encode(ReplyPiece::Values { values: &row, escape }, &mut one);
            let mut each = BytesMut::new();
            let mut each_ok = true;
            for v in &row {
                match crate::escape::encode_value(v.as_deref(), escape) {
                    Ok(text) => codec.encode(ReplyPiece::Data(text), &mut each).unwrap(),
                    Err(_) => each_ok = false,
                }
            }
            prop_assert_eq!(r.is_ok(), each_ok);
            if each_ok {
                prop_assert_eq!(&one[..], &each[..]);
            } else {
                prop_assert!(one.is_empty());
            }
            // `Fields` over the same text writes the same bytes (or refuses the same row).
            let fields: Vec<Field<'_>> = row.iter().map(|v| v.as_deref().map_or(Field::Null, Field::Text)).collect();
            let mut borrowed = BytesMut::new();
            let r2 = codec.encode(ReplyPiece::Fields { fields: &fields, escape }, &mut borrowed);
            prop_assert_eq!(r2.is_ok(), each_ok);
            prop_assert_eq!(&borrowed[..], &one[..]);
            // So does a row written field by field, after what the buffer already holds: a
            // refused row leaves that as it was.
            let mut written = BytesMut::from(&b"0\n"[..]);
            let write = |w: &mut FieldWriter<'_>| fields.iter().try_for_each(|f| w.field(*f));
            let r3 = codec.encode(WriteRow { escape, write }, &mut written);
            prop_assert_eq!(r3.is_ok(), each_ok);
            prop_assert_eq!(&written[..2], b"0\n");
            prop_assert_eq!(&written[2..], &one[..]);
        }

        /// The eight-bytes-a-step scan agrees with a byte-by-byte one wherever the odd byte sits.
        #[test]
        fn plain_scan_matches_bytewise(
            s in "[a-z0-9é\\\\ \u{1f}\u{20}\u{7f}\n]{0,40}",
            escape in any::<bool>(),
        ) {
            let naive = !s.bytes().any(|b| b < 0x20 || (escape && b == b'\\'));
            prop_assert_eq!(crate::escape::is_plain(&s, escape), naive);
        }

        #[test]
        fn arbitrary_bytes_are_chunking_invariant(
            bytes in proptest::collection::vec(prop_oneof![
                Just(b'\n'), Just(b'\r'), Just(0x18u8), Just(0u8), Just(0xffu8), Just(b'a'), any::<u8>()
            ], 0..64),
            cut in any::<prop::sample::Index>(),
            limit in 0usize..12,
        ) {
            let whole = run(&mut ServerCodec::new(limit), &[&bytes]);
            let at = cut.index(bytes.len() + 1);
            let (a, b) = bytes.split_at(at);
            prop_assert_eq!(run(&mut ServerCodec::new(limit), &[a, b]), whole.clone());
            let singles: Vec<&[u8]> = bytes.chunks(1).collect();
            prop_assert_eq!(run(&mut ServerCodec::new(limit), &singles), whole);
        }
    }
}
