//! Splitting a command line into arguments the way AMGA clients quote them, and quoting for our
//! own client. Works on one already-framed line; it does not know command names or argument meaning.
//!
//! Rules (the inverse of the Python client's `__quoteValue`, which wraps values in `'…'` and writes
//! an embedded quote as `\'`):
//!
//! - Arguments are separated by runs of spaces or tabs.
//! - A single quote opens a quoted section that runs to the next unescaped single quote; inside it
//!   whitespace is literal, `\'` is a quote and `\\` a backslash. A backslash before anything else is
//!   kept as it is, because the classic clients never escape backslashes themselves.
//! - Quoted sections may start or stop inside an argument: `a'b c'd` is the one argument `ab cd`, and
//!   `''` is an empty argument.
//! - Outside quotes every character but whitespace and `'` is literal, backslashes included.
//! - Double quotes are ordinary characters: query conditions carry their double-quoted literals
//!   inside single-quoted arguments, e.g. `'/d:FILE="t 1"'`.
//!
//! Known limits inherited from the classic clients: a value ending in a backslash, sent by a client
//! that does not escape backslashes, reads as an escaped closing quote (an unterminated-quote
//! error), and such a value holding `\\` loses one backslash.

use thiserror::Error;

use std::borrow::Cow;

use crate::escape::{EscapeError, escape_value, unescape_arg};

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TokenizeError {
    /// The quote opened at this byte offset is never closed.
    #[error("unterminated quote starting at byte {position}")]
    UnterminatedQuote { position: usize },
    /// Argument `index` (0 = the command name) is not a valid escaped token.
    #[error("argument {index}: {source}")]
    Escape {
        index: usize,
        #[source]
        source: EscapeError,
    },
}

/// Splits one command line (without its line end) into arguments.
pub fn tokenize(line: &str) -> Result<Vec<String>, TokenizeError> {
    Ok(tokenize_args(line)?.into_iter().map(Cow::into_owned).collect())
}

/// [`tokenize`] without copying what needs no change: a bare argument borrows the line (a
/// 60-attribute `getattr` is 62 of them, and was 62 allocations); one with quotes is built.
///
/// Scans bytes (every character the rules treat specially is ASCII, so a run between two of
/// them is whole UTF-8) and copies each quoted run at once, not one push per character.
pub fn tokenize_args(line: &str) -> Result<Vec<Cow<'_, str>>, TokenizeError> {
    let bytes = line.as_bytes();
    // Arguments are separated by at least one byte, so there are at most `len / 2 + 1`: room
    // for all without counting them first (bounded: a line may be a megabyte of spaces).
    let mut args = Vec::with_capacity((bytes.len() / 2 + 1).min(256));
    if memchr::memchr(b'\'', bytes).is_none() {
        split_unquoted(line, &mut args);
        return Ok(args);
    }
    let mut at = 0;
    while at < bytes.len() {
        if matches!(bytes[at], b' ' | b'\t') {
            at += 1;
            continue;
        }
        let start = at;
        at = bare_end(bytes, at);
        if at < bytes.len() && bytes[at] == b'\'' {
            let (arg, end) = quoted_arg(line, start, at)?;
            args.push(Cow::Owned(arg));
            at = end;
        } else {
            args.push(Cow::Borrowed(&line[start..at]));
        }
    }
    Ok(args)
}

/// The arguments of a line without quotes (a `getattr` of sixty names): the runs between
/// separators, found eight bytes at a time. A byte-by-byte scan cost a hundred instructions per
/// argument, and `memchr` per separator forty: arguments here are a few bytes long.
fn split_unquoted<'a>(line: &'a str, args: &mut Vec<Cow<'a, str>>) {
    let bytes = line.as_bytes();
    // Where the current argument starts; a separator at `end` closes it (if it has a byte).
    let mut start = 0;
    let mut push_until = |end: usize| {
        if end > start {
            args.push(Cow::Borrowed(&line[start..end]));
        }
        start = end + 1;
    };
    let mut chunks = bytes.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("chunks of eight bytes"));
        let mut separators = bytes_equal(word, b' ') | bytes_equal(word, b'\t');
        while separators != 0 {
            push_until(base + separators.trailing_zeros() as usize / 8);
            separators &= separators - 1;
        }
        base += 8;
    }
    for (i, &b) in chunks.remainder().iter().enumerate() {
        if matches!(b, b' ' | b'\t') {
            push_until(base + i);
        }
    }
    push_until(bytes.len());
}

/// The bytes of `word` (eight, little-endian) that equal `byte`, as the top bit of each. Exact:
/// no carry crosses from one byte into the next, so every set bit is a match.
#[inline]
fn bytes_equal(word: u64, byte: u8) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ (u64::from(byte) * 0x0101_0101_0101_0101);
    // A byte of `x` is zero exactly when neither its low seven bits (which carry into its top
    // bit when added to 0x7f) nor its top bit are set.
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Where the bare text starting at `at` ends: at the next separator or quote, or the end.
#[inline]
fn bare_end(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && !matches!(bytes[at], b' ' | b'\t' | b'\'') {
        at += 1;
    }
    at
}

/// The argument that starts at `start` with bare text up to the quote at `at`: quoted
/// sections, each maybe followed by more bare text, until a separator or the end of the line.
/// Returns it and where it ended.
fn quoted_arg(line: &str, start: usize, mut at: usize) -> Result<(String, usize), TokenizeError> {
    let bytes = line.as_bytes();
    // Grown as runs are added: room for the rest of the line would be kept by every argument
    // of a line of many quoted ones.
    let mut arg = String::from(&line[start..at]);
    while bytes.get(at) == Some(&b'\'') {
        let quote = at;
        at += 1;
        loop {
            match bytes.get(at) {
                None => return Err(TokenizeError::UnterminatedQuote { position: quote }),
                Some(b'\'') => {
                    at += 1;
                    break;
                }
                Some(b'\\') => match bytes.get(at + 1) {
                    Some(&next @ (b'\'' | b'\\')) => {
                        arg.push(char::from(next));
                        at += 2;
                    }
                    _ => {
                        arg.push('\\');
                        at += 1;
                    }
                },
                Some(_) => {
                    let run =
                        bytes[at..].iter().position(|&b| matches!(b, b'\'' | b'\\')).map_or(bytes.len(), |n| at + n);
                    arg.push_str(&line[at..run]);
                    at = run;
                }
            }
        }
        let bare = at;
        at = bare_end(bytes, at);
        arg.push_str(&line[bare..at]);
    }
    Ok((arg, at))
}

/// Tokenizes a line from a client that negotiated `escape`, then unescapes each argument;
/// `None` is a NULL argument (`\N`). An argument with nothing to unescape borrows the line.
pub fn tokenize_escaped(line: &str) -> Result<Vec<Option<Cow<'_, str>>>, TokenizeError> {
    tokenize_args(line)?
        .into_iter()
        .enumerate()
        .map(|(index, arg)| unescape_arg(arg).map_err(|source| TokenizeError::Escape { index, source }))
        .collect()
}

/// Quotes one argument so that [`tokenize`] gives it back unchanged; leaves it bare when it can.
pub fn quote_arg(arg: &str) -> String {
    // CR is quoted too: the line decoder strips a trailing CR, which would eat it at the line end.
    let needs_quotes = arg.is_empty() || arg.chars().any(|c| matches!(c, ' ' | '\t' | '\'' | '\r'));
    if !needs_quotes {
        return arg.to_owned();
    }
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('\'');
    for c in arg.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// Builds a command line (without line end) from raw arguments, for a peer without `escape`.
pub fn join_args<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut line = String::new();
    for (i, arg) in args.into_iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        line.push_str(&quote_arg(arg.as_ref()));
    }
    line
}

/// Builds a command line for a peer that negotiated `escape`: escape each argument, then quote it.
pub fn join_escaped_args(args: &[Option<&str>]) -> String {
    join_args(args.iter().map(|arg| escape_value(*arg)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The character-by-character tokenizer this module had before the byte scanner: the
    /// scanner must split every line exactly as it did.
    fn reference_tokenize(line: &str) -> Result<Vec<String>, TokenizeError> {
        let mut args = Vec::new();
        let mut current = String::new();
        // An argument exists once any character or quote of it was seen, so `''` yields "".
        let mut in_arg = false;
        let mut quote_start: Option<usize> = None;
        let mut chars = line.char_indices().peekable();

        while let Some((at, c)) = chars.next() {
            if quote_start.is_some() {
                match c {
                    '\'' => quote_start = None,
                    '\\' => match chars.peek() {
                        Some(&(_, next @ ('\'' | '\\'))) => {
                            current.push(next);
                            chars.next();
                        }
                        _ => current.push('\\'),
                    },
                    c => current.push(c),
                }
            } else if c == ' ' || c == '\t' {
                if in_arg {
                    args.push(std::mem::take(&mut current));
                    in_arg = false;
                }
            } else {
                in_arg = true;
                if c == '\'' {
                    quote_start = Some(at);
                } else {
                    current.push(c);
                }
            }
        }
        if let Some(position) = quote_start {
            return Err(TokenizeError::UnterminatedQuote { position });
        }
        if in_arg {
            args.push(current);
        }
        Ok(args)
    }

    fn toks(line: &str) -> Vec<String> {
        match tokenize(line) {
            Ok(args) => args,
            Err(e) => panic!("tokenize({line:?}) failed: {e}"),
        }
    }

    #[test]
    fn splits_on_runs_of_whitespace() {
        assert_eq!(toks("  pwd  "), ["pwd"]);
        assert_eq!(toks("cd\t/a  b"), ["cd", "/a", "b"]);
        assert!(toks("").is_empty());
        assert!(toks(" \t ").is_empty());
    }

    #[test]
    fn conditions_keep_double_quotes() {
        assert_eq!(toks(r#"selectattr /d:a '/d:FILE="t 1"'"#), ["selectattr", "/d:a", r#"/d:FILE="t 1""#]);
        assert_eq!(toks(r#"setattr /e a '"v"'"#), ["setattr", "/e", "a", r#""v""#]);
        assert_eq!(toks(r#"a"b c""#), ["a\"b", "c\""]);
    }

    #[test]
    fn quotes_inside_tokens_and_escapes() {
        assert_eq!(toks("a'b c'"), ["ab c"]);
        assert_eq!(toks("a'b c'd e"), ["ab cd", "e"]);
        assert_eq!(toks("x '' y"), ["x", "", "y"]);
        assert_eq!(toks(r"'it\'s'"), ["it's"]);
        assert_eq!(toks(r"'a\\b'"), [r"a\b"]);
        // Classic clients do not escape backslashes: an unknown sequence stays as it is.
        assert_eq!(toks(r"'c:\dir\x'"), [r"c:\dir\x"]);
        assert_eq!(toks(r"a\b"), [r"a\b"]);
        assert_eq!(toks("'é ü'"), ["é ü"]);
    }

    #[test]
    fn unterminated_quote_reports_its_start() {
        assert_eq!(tokenize("addentry /x a 'open"), Err(TokenizeError::UnterminatedQuote { position: 14 }));
        assert_eq!(tokenize(r"'ends in backslash\'"), Err(TokenizeError::UnterminatedQuote { position: 0 }));
        assert_eq!(tokenize("é'"), Err(TokenizeError::UnterminatedQuote { position: 2 }));
    }

    #[test]
    fn quote_arg_only_when_needed() {
        assert_eq!(quote_arg("plain"), "plain");
        assert_eq!(quote_arg(r"a\b"), r"a\b");
        assert_eq!(quote_arg(""), "''");
        assert_eq!(quote_arg("a b"), "'a b'");
        assert_eq!(quote_arg(r"it's\"), r"'it\'s\\'");
        assert_eq!(quote_arg("cr\r"), "'cr\r'");
        assert_eq!(join_args(["selectattr", "/d:a", r#"/d:FILE="t 1""#]), r#"selectattr /d:a '/d:FILE="t 1"'"#);
    }

    #[test]
    fn escaped_arguments() {
        let line = join_escaped_args(&[Some("setattr"), Some("/e"), Some("a"), Some("x\ny z"), None]);
        assert_eq!(line, r"setattr /e a 'x\\ny z' \N");
        assert_eq!(
            tokenize_escaped(&line),
            Ok(vec![Some("setattr".into()), Some("/e".into()), Some("a".into()), Some("x\ny z".into()), None])
        );
        assert_eq!(
            tokenize_escaped(r"cmd 'a\\q'"),
            Err(TokenizeError::Escape { index: 1, source: EscapeError::InvalidEscape { position: 1 } })
        );
    }

    /// What is not changed by unquoting or unescaping is the line's own text, not a copy.
    #[test]
    fn arguments_without_quotes_borrow_the_line() {
        let line = "getattr /d/e1 a0 'a b' x'y' FILE \\N c\\x";
        let args = tokenize_args(line).unwrap();
        let borrowed: Vec<bool> = args.iter().map(|a| matches!(a, Cow::Borrowed(_))).collect();
        assert_eq!(borrowed, [true, true, true, false, false, true, true, true]);
        assert_eq!(args, ["getattr", "/d/e1", "a0", "a b", "xy", "FILE", "\\N", "c\\x"]);
        let escaped = tokenize_escaped("setattr /e a 'x\\\\ny' \\N b").unwrap();
        assert!(matches!(escaped[2], Some(Cow::Borrowed("a"))));
        assert!(matches!(&escaped[3], Some(Cow::Owned(s)) if s == "x\ny"));
        assert_eq!(escaped[4], None);
        assert!(matches!(escaped[5], Some(Cow::Borrowed("b"))));
    }

    #[test]
    fn unquoted_lines_borrow_every_argument() {
        // A job system's read: sixty names, separators of every kind and length across the
        // eight-byte words the splitter reads, and a last argument that ends the line.
        let names: Vec<String> = (0..60).map(|i| format!("a{i}")).collect();
        let seps = [" ", "\t", "  ", " \t "];
        let mut line = String::from("\tgetattr /bench/e123");
        for (i, n) in names.iter().enumerate() {
            line.push_str(seps[i % seps.len()]);
            line.push_str(n);
        }
        let args = tokenize_args(&line).unwrap();
        assert!(args.iter().all(|a| matches!(a, Cow::Borrowed(_))));
        assert_eq!(args[..2], ["getattr", "/bench/e123"]);
        assert_eq!(args[2..], names[..]);
        assert_eq!(tokenize_args(&format!("{line}  ")).unwrap(), args);
        assert!(tokenize_args("").unwrap().is_empty());
        assert!(tokenize_args(" \t        \t").unwrap().is_empty());
        assert_eq!(tokenize_args("ping").unwrap(), ["ping"]);
    }

    #[test]
    fn quoted_arguments_keep_no_room_for_the_rest_of_the_line() {
        let line = "'x' ".repeat(10_000);
        let args = toks(&line);
        assert_eq!(args.len(), 10_000);
        assert!(args.iter().all(|a| a == "x" && a.capacity() < 64), "an argument kept room for the line");
    }

    proptest! {
        #[test]
        fn quote_then_tokenize_round_trips(args in proptest::collection::vec("[^\n\0]*", 0..6)) {
            prop_assert_eq!(tokenize(&join_args(&args)), Ok(args));
        }

        #[test]
        fn quote_round_trips_on_hostile_alphabet(args in proptest::collection::vec("[ \t'\\\\\"a\r]{0,6}", 0..6)) {
            prop_assert_eq!(tokenize(&join_args(&args)), Ok(args));
        }

        #[test]
        fn escaped_round_trips(args in proptest::collection::vec(proptest::option::of(any::<String>()), 0..5)) {
            let borrowed: Vec<Option<&str>> = args.iter().map(|a| a.as_deref()).collect();
            let line = join_escaped_args(&borrowed);
            prop_assert!(!crate::escape::needs_escape(&line));
            let owned = tokenize_escaped(&line).map(|v| v.into_iter().map(|a| a.map(Cow::into_owned)).collect::<Vec<_>>());
            prop_assert_eq!(owned, Ok(args));
        }

        #[test]
        fn scanner_splits_as_the_reference(line in "[ \t'\\\\\"aé\r]{0,24}") {
            prop_assert_eq!(tokenize(&line), reference_tokenize(&line));
        }

        #[test]
        fn unquoted_lines_split_as_the_reference(line in "[ \t\\\\\"aé\r\u{a0}\u{89}]{0,40}") {
            // No quote: the word-at-a-time splitter, over several words and every length of the
            // last; U+00A0 and U+0089 hold bytes that differ from a space and a tab in the top
            // bit alone.
            prop_assert_eq!(tokenize(&line), reference_tokenize(&line));
        }

        #[test]
        fn scanner_splits_any_line_as_the_reference(line in any::<String>()) {
            prop_assert_eq!(tokenize(&line), reference_tokenize(&line));
        }

        #[test]
        fn tokenize_never_panics(line in any::<String>()) {
            let _ = tokenize(&line);
            let _ = tokenize_escaped(&line);
        }
    }
}
