//! Value escaping for the `escape` protocol extension, and the safety check for peers without it.
//! Knows nothing about which values are attributes or paths; it maps one string to one wire token.
//!
//! # The scheme
//!
//! Classic AMGA sends values raw, one per line, so a value holding a newline, CR, EOT (0x04), CAN
//! (0x18) or NUL cannot be sent at all, and a NULL cannot be told from an empty string. A client that
//! lists `escape` among its options gets values in this form instead:
//!
//! | value byte / value | on the wire |
//! |--------------------|-------------|
//! | `\` (backslash)    | `\\`        |
//! | newline (0x0A)     | `\n`        |
//! | carriage return    | `\r`        |
//! | EOT (0x04)         | `\x04`      |
//! | CAN (0x18)         | `\x18`      |
//! | NUL (0x00)         | `\0`        |
//! | NULL (no value)    | the whole token is exactly `\N` |
//!
//! Every other character is sent as it is. The encoding is canonical: [`unescape_value`] accepts
//! exactly what [`escape_value`] produces, so any other backslash sequence, a trailing backslash, a
//! `\N` inside a longer token or a raw framing byte is an error rather than a guess.
//!
//! The same scheme applies to command-line arguments from a client that negotiated `escape`: each
//! argument is escaped first and then quoted (see [`crate::tokenize::join_escaped_args`]); the server
//! tokenizes first and unescapes each argument afterwards
//! ([`crate::tokenize::tokenize_escaped`]). The command name goes through the same step, which leaves
//! it unchanged.
//!
//! For a peer without `escape`, NULL is an empty line and [`plain_value`] refuses values for which
//! [`needs_escape`] is true, so the server can send a clear error instead of a corrupted stream.

use std::borrow::Cow;

use thiserror::Error;

use crate::{CAN, EOT};

/// The escaped form of NULL. Only valid as a whole token.
pub const NULL_TOKEN: &str = "\\N";

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum EscapeError {
    /// A backslash followed by something the scheme does not define (offset of the backslash).
    #[error("invalid escape sequence at byte {position}")]
    InvalidEscape { position: usize },
    /// The token ends in a lone backslash.
    #[error("escape sequence cut short at byte {position}")]
    TrailingBackslash { position: usize },
    /// A byte that the scheme requires to be escaped appears raw.
    #[error("unescaped control byte at byte {position}")]
    RawControl { position: usize },
    /// The value cannot be sent to a peer without the `escape` extension.
    #[error("value has a byte at offset {position} that needs the escape extension")]
    NeedsEscape { position: usize },
}

/// Bytes that break line framing or get lost in C-string based clients.
pub(crate) fn is_framing_byte(b: u8) -> bool {
    matches!(b, b'\n' | b'\r' | EOT | CAN | 0)
}

/// True when `s` has no control byte (every framing byte is one) and, with `escape`, no
/// backslash: the common value, which then travels as it is. Eight bytes per step.
pub(crate) fn is_plain(s: &str, escape: bool) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bytes = s.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // A byte below 0x20 exists iff this is non-zero (exact for a bound up to 0x80).
        let control = x.wrapping_sub(0x20 * ONES) & !x & HIGH;
        // A backslash byte exists iff x XOR backslashes has a zero byte.
        let y = x ^ (u64::from(b'\\') * ONES);
        let backslash = y.wrapping_sub(ONES) & !y & HIGH;
        if control != 0 || (escape && backslash != 0) {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| b >= 0x20 && !(escape && b == b'\\'))
}

/// Offset of the first byte that cannot travel raw inside a line.
pub(crate) fn first_framing_byte(s: &str) -> Option<usize> {
    s.bytes().position(is_framing_byte)
}

/// True when `s` contains a newline, CR, EOT, CAN or NUL and so cannot be sent raw on one line.
pub fn needs_escape(s: &str) -> bool {
    first_framing_byte(s).is_some()
}

/// Escapes a value (or NULL) for a peer that negotiated `escape`.
pub fn escape_value(value: Option<&str>) -> String {
    let Some(s) = value else {
        return NULL_TOKEN.to_owned();
    };
    if !s.bytes().any(|b| b == b'\\' || is_framing_byte(b)) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{4}' => out.push_str("\\x04"),
            '\u{18}' => out.push_str("\\x18"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out
}

/// Reverses [`escape_value`]; `Ok(None)` is NULL.
pub fn unescape_value(text: &str) -> Result<Option<String>, EscapeError> {
    unescape_arg(Cow::Borrowed(text)).map(|v| v.map(Cow::into_owned))
}

/// [`unescape_value`] of an argument that may borrow its line: text without a backslash (the
/// common argument) comes back as it went in, without a copy.
pub fn unescape_arg(text: Cow<'_, str>) -> Result<Option<Cow<'_, str>>, EscapeError> {
    if text == NULL_TOKEN {
        return Ok(None);
    }
    if let Some(position) = first_framing_byte(&text) {
        return Err(EscapeError::RawControl { position });
    }
    if !text.contains('\\') {
        return Ok(Some(text));
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((position, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let decoded = match chars.next() {
            None => return Err(EscapeError::TrailingBackslash { position }),
            Some((_, '\\')) => '\\',
            Some((_, 'n')) => '\n',
            Some((_, 'r')) => '\r',
            Some((_, '0')) => '\0',
            Some((_, 'x')) => {
                let hi = chars.next().map(|(_, c)| c);
                let lo = chars.next().map(|(_, c)| c);
                match (hi, lo) {
                    (Some('0'), Some('4')) => '\u{4}',
                    (Some('1'), Some('8')) => '\u{18}',
                    (None, _) | (_, None) => {
                        return Err(EscapeError::TrailingBackslash { position });
                    }
                    _ => return Err(EscapeError::InvalidEscape { position }),
                }
            }
            Some(_) => return Err(EscapeError::InvalidEscape { position }),
        };
        out.push(decoded);
    }
    Ok(Some(Cow::Owned(out)))
}

/// The raw form for a peer without `escape`: NULL becomes the empty line, and values that cannot be
/// framed are refused.
pub fn plain_value(value: Option<&str>) -> Result<&str, EscapeError> {
    let Some(s) = value else { return Ok("") };
    match first_framing_byte(s) {
        Some(position) => Err(EscapeError::NeedsEscape { position }),
        None => Ok(s),
    }
}

/// One data-line value in the form the peer negotiated.
pub fn encode_value(value: Option<&str>, escape: bool) -> Result<Cow<'_, str>, EscapeError> {
    if escape { Ok(Cow::Owned(escape_value(value))) } else { plain_value(value).map(Cow::Borrowed) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escapes_each_special_byte() {
        assert_eq!(escape_value(Some("a\\b\nc\rd\u{4}e\u{18}f\0g")), "a\\\\b\\nc\\rd\\x04e\\x18f\\0g");
        assert_eq!(escape_value(None), "\\N");
        assert_eq!(escape_value(Some("")), "");
        assert_eq!(escape_value(Some("\\N")), "\\\\N");
        assert_eq!(escape_value(Some("héllo \"x\" 'y'")), "héllo \"x\" 'y'");
    }

    #[test]
    fn unescapes_known_sequences() {
        assert_eq!(unescape_value("\\N"), Ok(None));
        assert_eq!(unescape_value(""), Ok(Some(String::new())));
        assert_eq!(unescape_value("\\\\N"), Ok(Some("\\N".into())));
        assert_eq!(unescape_value("x\\x04\\x18\\0\\n\\r\\\\"), Ok(Some("x\u{4}\u{18}\0\n\r\\".into())));
    }

    #[test]
    fn rejects_malformed_tokens() {
        assert_eq!(unescape_value("ab\\"), Err(EscapeError::TrailingBackslash { position: 2 }));
        assert_eq!(unescape_value("\\t"), Err(EscapeError::InvalidEscape { position: 0 }));
        assert_eq!(unescape_value("a\\Nb"), Err(EscapeError::InvalidEscape { position: 1 }));
        assert_eq!(unescape_value("\\x41"), Err(EscapeError::InvalidEscape { position: 0 }));
        assert_eq!(unescape_value("\\x0"), Err(EscapeError::TrailingBackslash { position: 0 }));
        assert_eq!(unescape_value("\\xé4"), Err(EscapeError::InvalidEscape { position: 0 }));
        assert_eq!(unescape_value("a\rb"), Err(EscapeError::RawControl { position: 1 }));
        assert_eq!(unescape_value("\u{18}"), Err(EscapeError::RawControl { position: 0 }));
    }

    #[test]
    fn needs_escape_flags_exactly_the_framing_bytes() {
        for b in 0u8..0x80 {
            let s = (b as char).to_string();
            let expected = matches!(b, 0 | 0x04 | 0x0A | 0x0D | 0x18);
            assert_eq!(needs_escape(&s), expected, "byte {b:#x}");
        }
        assert!(!needs_escape("tab\tand \\ backslash"));
    }

    #[test]
    fn plain_values_for_old_clients() {
        assert_eq!(plain_value(None), Ok(""));
        assert_eq!(plain_value(Some("a b")), Ok("a b"));
        assert_eq!(plain_value(Some("ab\ncd")), Err(EscapeError::NeedsEscape { position: 2 }));
        assert_eq!(encode_value(Some("a\nb"), true).as_deref(), Ok("a\\nb"));
        assert_eq!(encode_value(None, true).as_deref(), Ok("\\N"));
        assert_eq!(encode_value(None, false).as_deref(), Ok(""));
        assert!(encode_value(Some("\0"), false).is_err());
    }

    proptest! {
        #[test]
        fn escape_round_trips(value in proptest::option::of(any::<String>())) {
            let wire = escape_value(value.as_deref());
            prop_assert!(!needs_escape(&wire));
            prop_assert_eq!(unescape_value(&wire), Ok(value));
        }

        #[test]
        fn specials_round_trip(value in "[\\\\\n\r\u{4}\u{18}\0aN]{0,12}") {
            let wire = escape_value(Some(&value));
            prop_assert_eq!(unescape_value(&wire), Ok(Some(value)));
        }

        #[test]
        fn unescape_is_canonical(text in "[\\\\nrx0148Na\u{4}]{0,12}") {
            if let Ok(value) = unescape_value(&text) {
                prop_assert_eq!(escape_value(value.as_deref()), text);
            }
        }

        #[test]
        fn unescape_never_panics(text in any::<String>()) {
            let _ = unescape_value(&text);
        }
    }
}
