//! The status line that opens every reply: `<int>[ <text>]`, `0` meaning success. Parsing for the
//! client, formatting for the server. Which code means what is the catalogue's business, not ours.

use bytes::BufMut;
use thiserror::Error;

use crate::codec::put_i32;
use crate::escape::is_framing_byte;

/// A parsed status line. On success the text is whatever followed the `0` (D-PROT shows a column
/// count there in one example); clients should not rely on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status<'a> {
    pub code: i32,
    pub message: &'a str,
}

impl Status<'_> {
    pub fn is_success(&self) -> bool {
        self.code == 0
    }
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StatusError {
    #[error("empty status line")]
    Empty,
    /// The text before the first space is not a 32-bit integer.
    #[error("status line does not start with a numeric code: {token:?}")]
    BadCode { token: String },
}

/// Splits a status line into code and message, as the classic clients do: the integer before the
/// first space, the rest verbatim.
pub fn parse_status(line: &str) -> Result<Status<'_>, StatusError> {
    if line.is_empty() {
        return Err(StatusError::Empty);
    }
    let (token, message) = line.split_once(' ').unwrap_or((line, ""));
    let digits = token.strip_prefix('-').unwrap_or(token);
    let bad = || StatusError::BadCode { token: token.chars().take(32).collect() };
    // `i32::from_str` would also take a leading '+', which no AMGA peer sends.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let code = token.parse::<i32>().map_err(|_| bad())?;
    Ok(Status { code, message })
}

/// Writes `<code>[ <message>]` without line end. Framing bytes in the message become spaces:
/// error texts are for humans, and a stray newline there would desynchronise every client.
pub(crate) fn write_status(out: &mut impl BufMut, code: i32, message: &str) {
    put_i32(out, code);
    if !message.is_empty() {
        out.put_u8(b' ');
        for b in message.bytes() {
            out.put_u8(if is_framing_byte(b) { b' ' } else { b });
        }
    }
}

/// The status line for `code` and `message`, without line end.
pub fn format_status(code: i32, message: &str) -> String {
    let mut out = Vec::with_capacity(message.len() + 12);
    write_status(&mut out, code, message);
    // Only ASCII bytes were substituted, so the text is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_success_and_errors() {
        assert_eq!(parse_status("0"), Ok(Status { code: 0, message: "" }));
        assert!(parse_status("0 3").is_ok_and(|s| s.is_success() && s.message == "3"));
        assert_eq!(parse_status("16 Directory exists"), Ok(Status { code: 16, message: "Directory exists" }));
        assert_eq!(parse_status("-1 Cannot connect"), Ok(Status { code: -1, message: "Cannot connect" }));
        assert_eq!(parse_status("11  two  spaces ").map(|s| s.message), Ok(" two  spaces "));
    }

    #[test]
    fn rejects_non_numeric_codes() {
        assert_eq!(parse_status(""), Err(StatusError::Empty));
        for line in ["/", " 0", "+1", "-", "1x oops", "99999999999 big", "0\t"] {
            assert!(matches!(parse_status(line), Err(StatusError::BadCode { .. })), "{line:?}");
        }
    }

    #[test]
    fn formatting_flattens_framing_bytes() {
        assert_eq!(format_status(0, ""), "0");
        assert_eq!(format_status(1, "No such\nfile\r\u{4}\u{18}\0"), "1 No such file    ");
        assert_eq!(format_status(-7, "x"), "-7 x");
    }

    proptest! {
        #[test]
        fn format_then_parse(code in any::<i32>(), message in "[^\n\r\u{4}\u{18}\0]*") {
            let line = format_status(code, &message);
            prop_assert_eq!(parse_status(&line), Ok(Status { code, message: &message }));
        }

        #[test]
        fn parse_never_panics(line in any::<String>()) {
            let _ = parse_status(&line);
        }
    }
}
