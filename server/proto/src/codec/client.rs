//! Client side of the wire: server bytes → [`ReplyFrame`]s, [`ClientPiece`]s → bytes.
//! It frames; reading a status line, draining after an error and reconnecting on a session id are
//! the client's business.

use std::borrow::Cow;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::{DEFAULT_MAX_LINE, LineScanner, Stops, line_text};
use crate::error::{LineFault, ProtoError};
use crate::escape::first_framing_byte;
use crate::handshake::{ClientOptions, LoginContext, PROTOCOL_VERSION};
use crate::status::parse_status;
use crate::{CAN, EOT};

/// `session` plus the digits of the largest u64.
const MAX_TERMINATOR_PAYLOAD: usize = 7 + 20;

/// One unit of server output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyFrame {
    /// A line without its `\n`: greeting lines, `OK`, status lines and data lines alike.
    Line(String),
    /// End of one reply; with a session id the client is expected to reconnect and resume.
    End { session: Option<u64> },
    /// The server aborted the reply (`CAN<code> <message>`); an `End` follows.
    Cancel { code: i32, message: String },
    /// A line that is not UTF-8; it has been consumed and the stream is still in step.
    Invalid(LineFault),
    /// Under [`ClientCodec::gather_lines`]: `count` data lines that were complete in the read
    /// buffer together, each still ended by its `\n` (so `text` ends with one).
    Lines { text: String, count: usize },
}

/// One piece of client output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientPiece<'a> {
    /// The option block, ended by its empty line.
    Options(&'a ClientOptions),
    /// The login context block, ended by its empty line.
    Login(&'a LoginContext),
    /// One command line, already quoted (see [`crate::tokenize::join_args`]).
    Command(Cow<'a, str>),
    /// The CAN byte that aborts the running request.
    Cancel,
}

/// Codec for the client's end of a connection.
#[derive(Debug, Clone)]
pub struct ClientCodec {
    scanner: LineScanner,
    protocol: u32,
    /// Until the end of the current reply, lines are framed (and bounded) but their text is not
    /// copied out: each comes as an empty `ReplyFrame::Line`. For callers that only count lines.
    discard_lines: bool,
    /// Until the end of the current reply, the complete lines found in the buffer together come
    /// as one `ReplyFrame::Lines` (one decoder call, one allocation and one UTF-8 check per
    /// read, not per line: a 60-attribute stream is 61 lines a row).
    gather_lines: bool,
}

impl ClientCodec {
    /// `max_line` bounds one reply line in bytes, excluding the `\n`.
    pub fn new(max_line: usize) -> Self {
        Self {
            scanner: LineScanner::new(max_line),
            protocol: PROTOCOL_VERSION,
            discard_lines: false,
            gather_lines: false,
        }
    }

    /// Discard the text of the remaining lines of the reply being read (they still arrive, as
    /// empty `ReplyFrame::Line`s, so they can be counted). Ends by itself with the reply's end
    /// marker.
    pub fn discard_rest_of_reply(&mut self) {
        self.discard_lines = true;
    }

    /// Whether the data lines that follow (up to the end marker of the current reply, which
    /// turns this off) come gathered as [`ReplyFrame::Lines`] or one [`ReplyFrame::Line`] each.
    /// Only for lines after the status line: a gathered run does not tell a status from data.
    /// Each line keeps its bound; a line ended by `CAN`/`EOT` without a newline, and a line that
    /// is not UTF-8, still come alone (`Line` / `Invalid`), in their place in the stream.
    pub fn gather_lines(&mut self, on: bool) {
        self.gather_lines = on;
    }

    /// Protocol 1 servers end a reply with a single EOT; take the number from the greeting.
    pub fn with_protocol(mut self, protocol: u32) -> Self {
        self.protocol = protocol;
        self
    }

    pub fn max_line(&self) -> usize {
        self.scanner.max_line
    }

    fn decode_end(&mut self, src: &mut BytesMut) -> Result<Option<ReplyFrame>, ProtoError> {
        if self.protocol < 2 {
            src.advance(1);
            self.discard_lines = false;
            self.gather_lines = false;
            return Ok(Some(ReplyFrame::End { session: None }));
        }
        let window_end = src.len().min(MAX_TERMINATOR_PAYLOAD + 2);
        let Some(rel) = src[1..window_end].iter().position(|&b| b == EOT) else {
            // Refuse a bad payload as soon as it shows, rather than waiting for an EOT that a
            // confused peer may never send.
            let partial = &src[1..window_end];
            if src.len() >= MAX_TERMINATOR_PAYLOAD + 2 || !is_session_prefix(partial) {
                return Err(ProtoError::BadTerminator);
            }
            return Ok(None);
        };
        let session = parse_session(&src[1..1 + rel])?;
        src.advance(rel + 2);
        self.discard_lines = false;
        self.gather_lines = false;
        Ok(Some(ReplyFrame::End { session }))
    }

    fn decode_cancel(&mut self, src: &mut BytesMut) -> Result<Option<ReplyFrame>, ProtoError> {
        let Some(at) = self.scanner.find(src, 1, Stops::Two(b'\n', EOT))? else {
            return Ok(None);
        };
        // Without a newline the EOT belongs to the terminator and stays for the next frame.
        let consumed = if src[at] == b'\n' { at + 1 } else { at };
        let text = src.split_to(consumed);
        let status = std::str::from_utf8(&text[1..at])
            .ok()
            .and_then(|line| parse_status(line).ok())
            .ok_or(ProtoError::BadCancelLine)?;
        Ok(Some(ReplyFrame::Cancel { code: status.code, message: status.message.to_owned() }))
    }

    fn decode_line(&mut self, src: &mut BytesMut) -> Result<Option<ReplyFrame>, ProtoError> {
        let Some(at) = self.scanner.find(src, 0, Stops::Three(b'\n', EOT, CAN))? else {
            return Ok(None);
        };
        // A control byte without a preceding newline still ends the line: a server that hit an
        // error mid-row must not leave us waiting for a newline that never comes.
        let consumed = if src[at] == b'\n' { at + 1 } else { at };
        // Copy the text out and advance: splitting a `BytesMut` off per line costs more.
        let frame = if self.discard_lines {
            ReplyFrame::Line(String::new())
        } else {
            match line_text(&src[..at]) {
                Ok(text) => ReplyFrame::Line(text),
                Err(fault) => ReplyFrame::Invalid(fault),
            }
        };
        src.advance(consumed);
        Ok(Some(frame))
    }

    /// `decode_line` for a run: every data line complete in `src`, up to the first control byte.
    fn decode_lines(&mut self, src: &mut BytesMut) -> Result<Option<ReplyFrame>, ProtoError> {
        // The first line goes through the scanner: its bound, its memory of a partial scan
        // across reads, its sticky error.
        let Some(at) = self.scanner.find(src, 0, Stops::Three(b'\n', EOT, CAN))? else {
            return Ok(None);
        };
        if src[at] != b'\n' {
            return self.decode_line(src);
        }
        let mut end = at + 1;
        let mut count = 1;
        // Later lines join the run only if complete and within the bound; any other line is
        // left in the buffer, to be the first line (with the scanner's checks) of the next call.
        loop {
            let window = &src[end..src.len().min(end + self.scanner.max_line + 1)];
            match memchr::memchr3(b'\n', EOT, CAN, window) {
                Some(rel) if window[rel] == b'\n' => {
                    end += rel + 1;
                    count += 1;
                }
                _ => break,
            }
        }
        let text = match std::str::from_utf8(&src[..end]) {
            Ok(text) => text.to_owned(),
            Err(e) => {
                // The lines before the bad one go as a run; the bad one then comes alone.
                match src[..e.valid_up_to()].iter().rposition(|&b| b == b'\n') {
                    Some(last) => {
                        end = last + 1;
                        count = memchr::memchr_iter(b'\n', &src[..end]).count();
                        // Valid: it ends before `valid_up_to`.
                        String::from_utf8_lossy(&src[..end]).into_owned()
                    }
                    None => return self.decode_line(src),
                }
            }
        };
        src.advance(end);
        Ok(Some(ReplyFrame::Lines { text, count }))
    }
}

/// Whether `partial` can still grow into `session<digits>`.
fn is_session_prefix(partial: &[u8]) -> bool {
    const WORD: &[u8] = b"session";
    partial.iter().enumerate().all(|(i, b)| match WORD.get(i) {
        Some(expected) => b == expected,
        None => b.is_ascii_digit(),
    })
}

fn parse_session(payload: &[u8]) -> Result<Option<u64>, ProtoError> {
    if payload.is_empty() {
        return Ok(None);
    }
    let digits = payload
        .strip_prefix(b"session")
        .filter(|d| !d.is_empty() && d.iter().all(u8::is_ascii_digit))
        .ok_or(ProtoError::BadTerminator)?;
    std::str::from_utf8(digits).ok().and_then(|d| d.parse::<u64>().ok()).map(Some).ok_or(ProtoError::BadTerminator)
}

impl Default for ClientCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE)
    }
}

impl Decoder for ClientCodec {
    type Item = ReplyFrame;
    type Error = ProtoError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ReplyFrame>, ProtoError> {
        if self.scanner.failed {
            return Err(self.scanner.too_long());
        }
        match src.first() {
            None => Ok(None),
            Some(&EOT) => self.decode_end(src),
            Some(&CAN) => self.decode_cancel(src),
            Some(_) if self.gather_lines && !self.discard_lines => self.decode_lines(src),
            Some(_) => self.decode_line(src),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<ReplyFrame>, ProtoError> {
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

impl<'a> Encoder<ClientPiece<'a>> for ClientCodec {
    type Error = ProtoError;

    fn encode(&mut self, piece: ClientPiece<'a>, dst: &mut BytesMut) -> Result<(), ProtoError> {
        match piece {
            ClientPiece::Options(options) => dst.put_slice(options.encode()?.as_bytes()),
            ClientPiece::Login(context) => dst.put_slice(context.encode()?.as_bytes()),
            ClientPiece::Command(line) => {
                if let Some(offset) = first_framing_byte(&line) {
                    return Err(ProtoError::UnframeableLine { offset });
                }
                dst.reserve(line.len() + 1);
                dst.put_slice(line.as_bytes());
                dst.put_u8(b'\n');
            }
            ClientPiece::Cancel => dst.put_u8(CAN),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::codec::run_decoder;
    use crate::handshake::{HandshakeError, Transport};

    type Outcome = Vec<Result<ReplyFrame, String>>;

    fn run(codec: &mut ClientCodec, chunks: &[&[u8]]) -> Outcome {
        run_decoder(codec, chunks)
    }

    fn line(s: &str) -> Result<ReplyFrame, String> {
        Ok(ReplyFrame::Line(s.to_owned()))
    }

    fn end(session: Option<u64>) -> Result<ReplyFrame, String> {
        Ok(ReplyFrame::End { session })
    }

    const SESSION: &[u8] = b"ARDA Metadata Server 1.3.0\nProtocol 2\nplain ssl\nOK\n\
        0\n/\n\x04\x04\
        1 No such file\x04session77\x04\
        0\nrow 1\n\nrow\x04\x04\
        0\nr1\n\x189 aborted by user\n\x04\x04\
        0\nbad\xc3\n\x187 no newline\x04\x04";

    fn session_expected() -> Outcome {
        vec![
            line("ARDA Metadata Server 1.3.0"),
            line("Protocol 2"),
            line("plain ssl"),
            line("OK"),
            line("0"),
            line("/"),
            end(None),
            line("1 No such file"),
            end(Some(77)),
            line("0"),
            line("row 1"),
            line(""),
            line("row"),
            end(None),
            line("0"),
            line("r1"),
            Ok(ReplyFrame::Cancel { code: 9, message: "aborted by user".into() }),
            end(None),
            line("0"),
            Ok(ReplyFrame::Invalid(LineFault::InvalidUtf8 { valid_up_to: 3 })),
            Ok(ReplyFrame::Cancel { code: 7, message: "no newline".into() }),
            end(None),
        ]
    }

    #[test]
    fn decodes_a_session_in_one_piece() {
        assert_eq!(run(&mut ClientCodec::default(), &[SESSION]), session_expected());
    }

    #[test]
    fn decodes_a_session_split_at_every_byte() {
        for cut in 0..=SESSION.len() {
            let (a, b) = SESSION.split_at(cut);
            assert_eq!(run(&mut ClientCodec::default(), &[a, b]), session_expected(), "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = SESSION.chunks(1).collect();
        assert_eq!(run(&mut ClientCodec::default(), &bytes), session_expected());
    }

    #[test]
    fn discarded_lines_are_framed_and_bounded_until_the_end_marker() {
        let mut codec = ClientCodec::new(8);
        let mut buf = BytesMut::from(&b"0\nrow one\n\xc3\n\x182 stop\n\x04\x04next\n"[..]);
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(ReplyFrame::Line("0".into())));
        codec.discard_rest_of_reply();
        // Text (even text that is not UTF-8) comes as empty lines; CAN and the end are decoded.
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(ReplyFrame::Line(String::new())));
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(ReplyFrame::Line(String::new())));
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(ReplyFrame::Cancel { code: 2, message: "stop".into() }));
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(ReplyFrame::End { session: None }));
        // The next reply's lines arrive whole again.
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(ReplyFrame::Line("next".into())));
        // The line bound holds while discarding.
        let mut codec = ClientCodec::new(8);
        codec.discard_rest_of_reply();
        let mut long = BytesMut::from(&b"a line longer than eight bytes\n"[..]);
        assert!(codec.decode(&mut long).is_err());
    }

    /// A gathered run as the separate lines it holds, checking its count.
    fn ungathered(out: Outcome) -> Outcome {
        let mut flat = Vec::new();
        for frame in out {
            match frame {
                Ok(ReplyFrame::Lines { text, count }) => {
                    assert!(text.ends_with('\n'), "a run ends with its last line's newline: {text:?}");
                    let lines: Vec<&str> = text.split_terminator('\n').collect();
                    assert_eq!(lines.len(), count, "count of {text:?}");
                    flat.extend(lines.into_iter().map(line));
                }
                other => flat.push(other),
            }
        }
        flat
    }

    fn gathering(max_line: usize) -> ClientCodec {
        let mut codec = ClientCodec::new(max_line);
        codec.gather_lines(true);
        codec
    }

    /// Data lines of a reply (its status line already read), an abort without a newline, the
    /// end, and the next reply: not UTF-8, CR, NUL, empty lines and a line at the bound.
    const DATA: &[u8] = b"row 1\n\nr\r\n\xc3\nafter\0bad\n0123456789\nl\x182 x\n\x04\x04next\nline\n";

    #[test]
    fn gathered_lines_are_the_same_lines_split_anywhere() {
        let plain = run(&mut ClientCodec::new(10), &[DATA]);
        assert_eq!(plain.last(), Some(&line("line")));
        let whole = run(&mut gathering(10), &[DATA]);
        assert!(
            whole.iter().any(|f| matches!(f, Ok(ReplyFrame::Lines { count, .. }) if *count > 1)),
            "lines complete together come as one run: {whole:?}"
        );
        // The end marker ends gathering: the next reply's lines (its status first) come alone.
        assert_eq!(&whole[whole.len() - 2..], &[line("next"), line("line")]);
        assert_eq!(ungathered(whole), plain);
        for cut in 0..=DATA.len() {
            let (a, b) = DATA.split_at(cut);
            assert_eq!(ungathered(run(&mut gathering(10), &[a, b])), plain, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = DATA.chunks(1).collect();
        assert_eq!(ungathered(run(&mut gathering(10), &bytes)), plain);
    }

    #[test]
    fn gathered_lines_keep_the_line_bound() {
        // A line over the bound after complete ones: those come first, then the error.
        assert_eq!(
            run(&mut gathering(3), &[b"abc\nde\nabcd\n"]),
            vec![
                Ok(ReplyFrame::Lines { text: "abc\nde\n".into(), count: 2 }),
                Err(ProtoError::LineTooLong { limit: 3 }.to_string())
            ]
        );
        // Discarding wins over gathering (a drain only counts lines).
        let mut codec = gathering(8);
        codec.discard_rest_of_reply();
        assert_eq!(run(&mut codec, &[b"a\nb\n\x04\x04"]), vec![line(""), line(""), end(None)]);
    }

    proptest! {
        #[test]
        fn gathering_never_changes_the_lines(
            lines in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![8 => Just(b'a'), 2 => Just(b'\r'), 2 => Just(0u8), 2 => Just(0xc3), 2 => Just(0xa9), 1 => Just(CAN), 1 => Just(EOT)], 0..12),
                0..12,
            ),
            cuts in proptest::collection::vec(0usize..200, 0..4),
        ) {
            let mut bytes = Vec::new();
            for l in &lines {
                bytes.extend_from_slice(l);
                bytes.push(b'\n');
            }
            bytes.extend_from_slice(b"\x04\x04");
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for c in cuts {
                chunks.push(&bytes[from..c]);
                from = c;
            }
            chunks.push(&bytes[from..]);
            let plain = run(&mut ClientCodec::new(8), &chunks);
            prop_assert_eq!(ungathered(run(&mut gathering(8), &chunks)), plain);
        }
    }

    #[test]
    fn malformed_terminators_are_fatal() {
        let bad = ProtoError::BadTerminator.to_string();
        for input in [
            &b"\x04garbage\x04"[..],
            b"\x04session\x04",
            b"\x04session12x\x04",
            b"\x04session99999999999999999999999\x04",
            b"\x04\n0\n",
        ] {
            let out = run(&mut ClientCodec::default(), &[input]);
            assert_eq!(out.last(), Some(&Err(bad.clone())), "{input:?}");
        }
        // A missing second EOT is detected once the payload bound is passed, not at EOF.
        let mut codec = ClientCodec::default();
        let mut buf = BytesMut::from(&b"\x04session1234567890123456789012345"[..]);
        assert!(matches!(codec.decode(&mut buf), Err(ProtoError::BadTerminator)));
    }

    #[test]
    fn malformed_cancel_line_is_fatal() {
        let out = run(&mut ClientCodec::default(), &[b"\x18oops\n\x04\x04"]);
        assert_eq!(out, vec![Err(ProtoError::BadCancelLine.to_string())]);
    }

    #[test]
    fn protocol_one_uses_a_single_eot() {
        let mut codec = ClientCodec::default().with_protocol(1);
        assert_eq!(
            run(&mut codec, &[b"0\n/\n\x040\n\x04"]),
            vec![line("0"), line("/"), end(None), line("0"), end(None)]
        );
    }

    #[test]
    fn reply_lines_keep_cr_and_nul() {
        assert_eq!(run(&mut ClientCodec::default(), &[b"a\r\nb\0c\n"]), vec![line("a\r"), line("b\0c")]);
    }

    #[test]
    fn line_limit_and_eof() {
        let mut codec = ClientCodec::new(3);
        assert_eq!(
            run(&mut codec, &[b"abc\nabcd"]),
            vec![line("abc"), Err(ProtoError::LineTooLong { limit: 3 }.to_string())]
        );
        let mut codec = ClientCodec::new(3);
        assert_eq!(run(&mut codec, &[b"\x18123456\n"]), vec![Err(ProtoError::LineTooLong { limit: 3 }.to_string())]);
        assert_eq!(
            run(&mut ClientCodec::default(), &[b"0\n/\n\x04"]),
            vec![line("0"), line("/"), Err(ProtoError::UnexpectedEof.to_string())]
        );
        assert_eq!(
            run(&mut ClientCodec::default(), &[b"0\npartial"]),
            vec![line("0"), Err(ProtoError::UnexpectedEof.to_string())]
        );
    }

    #[test]
    fn client_piece_bytes() -> Result<(), ProtoError> {
        let mut codec = ClientCodec::default();
        let mut dst = BytesMut::new();
        let options = ClientOptions::new(Transport::Plain);
        let login = LoginContext::new("alice").with_password("secret");
        codec.encode(ClientPiece::Options(&options), &mut dst)?;
        codec.encode(ClientPiece::Login(&login), &mut dst)?;
        codec.encode(ClientPiece::Command(Cow::Borrowed("pwd")), &mut dst)?;
        codec.encode(ClientPiece::Cancel, &mut dst)?;
        assert_eq!(&dst[..], b"plain\n\n0 alice\n5 secret\n\npwd\n\x18");
        Ok(())
    }

    #[test]
    fn client_refuses_unframeable_pieces() {
        let mut codec = ClientCodec::default();
        let mut dst = BytesMut::new();
        let result = codec.encode(ClientPiece::Command(Cow::Borrowed("cd /a\nrm x")), &mut dst);
        assert!(matches!(result, Err(ProtoError::UnframeableLine { offset: 5 })));
        let login = LoginContext::new("a\rb");
        let result = codec.encode(ClientPiece::Login(&login), &mut dst);
        assert!(matches!(result, Err(ProtoError::Handshake(HandshakeError::UnframeableValue { key: 0 }))));
        assert!(dst.is_empty());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_are_chunking_invariant(
            bytes in proptest::collection::vec(prop_oneof![
                Just(b'\n'), Just(0x04u8), Just(0x18u8), Just(b'0'), Just(b' '),
                Just(0xc3u8), Just(b's'), any::<u8>()
            ], 0..64),
            cut in any::<prop::sample::Index>(),
            limit in 0usize..12,
        ) {
            let whole = run(&mut ClientCodec::new(limit), &[&bytes]);
            let at = cut.index(bytes.len() + 1);
            let (a, b) = bytes.split_at(at);
            prop_assert_eq!(run(&mut ClientCodec::new(limit), &[a, b]), whole.clone());
            let singles: Vec<&[u8]> = bytes.chunks(1).collect();
            prop_assert_eq!(run(&mut ClientCodec::new(limit), &singles), whole);
        }
    }
}
