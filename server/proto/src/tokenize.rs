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
    let bare_end = |from: usize| {
        bytes[from..].iter().position(|&b| matches!(b, b' ' | b'\t' | b'\'')).map_or(bytes.len(), |n| from + n)
    };
    // One argument per space at most (bounded: a line may be a megabyte of spaces).
    let mut args = Vec::with_capacity(bytes.iter().filter(|&&b| b == b' ').count().min(255) + 1);
    let mut at = 0;
    loop {
        while at < bytes.len() && matches!(bytes[at], b' ' | b'\t') {
            at += 1;
        }
        if at == bytes.len() {
            return Ok(args);
        }
        let start = at;
        at = bare_end(at);
        if bytes.get(at) != Some(&b'\'') {
            args.push(Cow::Borrowed(&line[start..at]));
            continue;
        }
        // Quoted sections, each maybe followed by more bare text, until a separator or the end.
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
                        let run = bytes[at..]
                            .iter()
                            .position(|&b| matches!(b, b'\'' | b'\\'))
                            .map_or(bytes.len(), |n| at + n);
                        arg.push_str(&line[at..run]);
                        at = run;
                    }
                }
            }
            let bare = at;
            at = bare_end(at);
            arg.push_str(&line[bare..at]);
        }
        args.push(Cow::Owned(arg));
    }
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
