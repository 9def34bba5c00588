//! A `getattr` whose attribute list is the same text as the connection's previous `getattr`'s
//! (a job system reading entry after entry asks for the same sixty names each time) takes that
//! command's parsed list instead of having the line tokenized and the names collected again: the
//! TCP counterpart of SOAP's differential deserialization. About 8 % of a 60-attribute `get`'s
//! instructions (docs/benchmarks.md, round 23).
//!
//! Owns the comparison and the kept list only. It answers only lines whose parse cannot differ
//! from the kept line's but in the pattern — the same bytes after the pattern, a pattern that is
//! one bare argument in either mode — and leaves every other line to the parser, so what a line
//! means is still decided in one place ([`super::Command::parse_escaped`]).

use ardacat_core::service::Names;

use super::{Cmd, Command, REGISTRY, entries};

/// A list whose text is longer than this is not kept (what a connection holds stays small).
const MAX_KEPT_TAIL: usize = 16 * 1024;

/// The connection's last `getattr` list, if its line can be compared with the next.
#[derive(Default)]
pub struct LastGetattr {
    kept: Option<Kept>,
}

struct Kept {
    /// Parsed with the `escape` option on (then `\N` and backslashes mean something).
    escape: bool,
    /// The line after the pattern: the separators, the names, any blanks at the end.
    tail: String,
    attrs: Names,
}

/// `getattr <pattern><tail>` → the pattern and the tail, when the pattern is printable ASCII
/// without a quote or a backslash: then it is one bare argument whichever the mode (never `\N`,
/// nothing to unescape, no quote running on into the tail), and the tail is tokenized alone.
fn split(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("getattr")?;
    let blank = |b: &u8| matches!(b, b' ' | b'\t');
    let start = rest.bytes().position(|b| !blank(&b))?;
    if start == 0 {
        // `getattrs …`: another word.
        return None;
    }
    let len = rest.as_bytes()[start..].iter().position(blank).unwrap_or(rest.len() - start);
    let (pattern, tail) = rest[start..].split_at(len);
    pattern.bytes().all(|b| b.is_ascii_graphic() && b != b'\'' && b != b'\\').then_some((pattern, tail))
}

impl LastGetattr {
    /// `line` as the kept list's `getattr` of another pattern, with its number of arguments (the
    /// command's name counted, as the tokenizer counts them); `None`: parse the line.
    pub fn parse(&self, line: &str, escape: bool) -> Option<(Command, usize)> {
        let kept = self.kept.as_ref()?;
        let (pattern, tail) = split(line)?;
        if kept.escape != escape || kept.tail != tail {
            return None;
        }
        let spec = REGISTRY.get("getattr").copied()?;
        let cmd = entries::Cmd::Getattr { pattern: pattern.to_string(), attrs: kept.attrs.clone() }.into();
        Some((Command { spec, cmd }, 2 + kept.attrs.len()))
    }

    /// Keeps the list of `cmd`, parsed from `line`, if the next line can be compared with it.
    pub fn remember(&mut self, line: &str, escape: bool, cmd: &Command) {
        let Cmd::Entries(entries::Cmd::Getattr { attrs, .. }) = &cmd.cmd else { return };
        let Some((_, tail)) = split(line).filter(|(_, tail)| tail.len() <= MAX_KEPT_TAIL) else { return };
        match &mut self.kept {
            Some(k) if k.escape == escape && k.tail == tail => {}
            Some(k) => {
                k.escape = escape;
                k.tail.clear();
                k.tail.push_str(tail);
                k.attrs = attrs.clone();
            }
            None => self.kept = Some(Kept { escape, tail: tail.to_string(), attrs: attrs.clone() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ardacat_proto::tokenize_args;

    /// What the parser makes of `line`, with its number of arguments.
    fn parsed(line: &str, escape: bool) -> Result<(Cmd, usize), String> {
        let n = tokenize_args(line).map_err(|e| e.to_string())?.len();
        Command::parse_line(line, escape, usize::MAX).map(|c| (c.cmd, n)).map_err(|e| e.to_string())
    }

    /// The kept list after `first`, asked about `next`.
    fn after(first: &str, next: &str, escape: bool) -> Option<(Cmd, usize)> {
        let mut last = LastGetattr::default();
        let cmd = {
            let (cmd, _) = parsed(first, escape).expect("the first line parses");
            Command { spec: REGISTRY.get("getattr").copied().unwrap(), cmd }
        };
        last.remember(first, escape, &cmd);
        last.parse(next, escape).map(|(c, n)| (c.cmd, n))
    }

    #[test]
    fn a_repeated_list_gives_what_the_parser_gives() {
        let names: Vec<String> = (0..60).map(|i| format!("a{i}")).collect();
        let sixty = names.join(" ");
        let cases = [
            ("getattr /c/e1 a b c", "getattr /c/e2 a b c"),
            ("getattr /c/e1\ta  b\t'c d' e'f' ", "getattr /c/*\ta  b\t'c d' e'f' "),
            ("getattr  /c/e1 x", "getattr  /c/e1 x"),
            ("getattr /c/e1 'it\\'s' \"q\"", "getattr /c/e9 'it\\'s' \"q\""),
        ];
        for escape in [false, true] {
            for (first, next) in cases {
                let hit = after(first, next, escape).unwrap_or_else(|| panic!("no hit: {next:?}"));
                assert_eq!(Ok(hit), parsed(next, escape), "{next:?}, escape {escape}");
            }
            let first = format!("getattr /bench/e1 {sixty}");
            let next = format!("getattr /bench/e2 {sixty}");
            let hit = after(&first, &next, escape).expect("sixty names");
            assert_eq!(Ok(hit), parsed(&next, escape));
        }
    }

    #[test]
    fn lines_that_could_parse_otherwise_go_to_the_parser() {
        let first = "getattr /c/e1 a b";
        for next in [
            "getattr /c/e2 a b c",  // another list
            "getattr /c/e2 a  b",   // other separators
            "getattr /c/e2 a b ",   // a blank more at the end
            "getattr /c/e2 a",      // fewer names
            "getattr '/c/e 2' a b", // a quoted pattern
            "getattr /c/e'2' a b",  // a quote inside it
            "getattr /c/\\e2 a b",  // a backslash
            "getattr \\N a b",      // NULL with `escape`
            "getattr /c/é a b",     // not ASCII: left to the parser
            "GETATTR /c/e2 a b",    // the parser lowers the name
            "getattrs /c/e2 a b",   // another word
            " getattr /c/e2 a b",   // a blank before the name
            "getattr",              // no pattern
        ] {
            for escape in [false, true] {
                assert!(after(first, next, escape).is_none(), "{next:?} escape {escape}");
            }
        }
        // The same line under the other mode is parsed again.
        let mut last = LastGetattr::default();
        let (cmd, _) = parsed(first, false).unwrap();
        last.remember(first, false, &Command { spec: REGISTRY.get("getattr").copied().unwrap(), cmd });
        assert!(last.parse("getattr /c/e2 a b", true).is_none());
        assert!(last.parse("getattr /c/e2 a b", false).is_some());
    }

    #[test]
    fn only_getattr_lists_of_bounded_size_are_kept() {
        let mut last = LastGetattr::default();
        let (cmd, _) = parsed("clearattr /c/e1 a b", false).unwrap();
        let spec = REGISTRY.get("clearattr").copied().unwrap();
        last.remember("clearattr /c/e1 a b", false, &Command { spec, cmd });
        assert!(last.kept.is_none());
        let long = format!("getattr /c/e1 {}", "a ".repeat(MAX_KEPT_TAIL / 2 + 1));
        let (cmd, _) = parsed(&long, false).unwrap();
        last.remember(&long, false, &Command { spec: REGISTRY.get("getattr").copied().unwrap(), cmd });
        assert!(last.kept.is_none());
        // The latest list replaces the one before.
        for (line, next) in [("getattr /c/e1 a", "getattr /c/e2 a"), ("getattr /c/e1 b", "getattr /c/e2 b")] {
            let (cmd, _) = parsed(line, false).unwrap();
            last.remember(line, false, &Command { spec: REGISTRY.get("getattr").copied().unwrap(), cmd });
            assert_eq!(last.parse(next, false).map(|(c, _)| c.cmd), parsed(next, false).ok().map(|(c, _)| c));
        }
        assert!(last.parse("getattr /c/e2 a", false).is_none());
    }
}
