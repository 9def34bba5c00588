//! Finds collection paths in a native SQL statement before `sqlparser` reads it, and maps
//! `sqlparser`'s line/column locations back to byte offsets of the user's text. It knows SQL's
//! lexical shapes (strings, quoted names, comments) only as far as needed to skip them; it must
//! not interpret the statement.
//!
//! A `/` starts a path where an operand is expected (after `(`, `,`, an operator, a keyword such
//! as `FROM` or `WHERE`, or at the start); after an operand (a name, number, string or `)`) it
//! divides. A path runs to whitespace or one of `: ' " , ( ) ;`; `/dir:attr` (an attribute
//! name after the colon, or `*`) is one column. Each is replaced by an identifier of the same
//! number of characters, so the parser's line/column locations stay those of the user's text.

/// What stood where a placeholder identifier now stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathKind {
    /// `/dir` (also `/dir.attr`, `/dir.*`: the translator decides by where it stands).
    Path(String),
    /// `/dir:attr` or `/dir:*`.
    Column { dir: String, attr: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathToken {
    /// 1-based line and character column, as `sqlparser` counts them.
    pub line: u64,
    pub column: u64,
    /// Byte offset in the user's text.
    pub offset: usize,
    pub placeholder: String,
    pub original: String,
    pub kind: PathKind,
}

pub(crate) struct Scanned {
    /// The statement with every path replaced by its placeholder.
    pub text: String,
    pub paths: Vec<PathToken>,
    /// Character index of the start of each line of the user's text.
    line_starts: Vec<usize>,
    /// Byte offset of each character of the user's text, and its length last: locations map to
    /// offsets in constant time (errors and every column reference ask).
    char_bytes: Vec<usize>,
}

/// Keywords after which an operand (hence a path) follows.
const OPERAND_KEYWORDS: &[&str] = &[
    "SELECT", "DISTINCT", "ALL", "FROM", "WHERE", "AND", "OR", "NOT", "BY", "INTO", "UPDATE", "SET", "HAVING", "LIKE",
    "ILIKE", "BETWEEN", "IN", "JOIN", "ON", "ESCAPE", "DELETE",
];

/// Whether a command line is a native SQL statement: it starts with `SELECT`, `INSERT` or
/// `DELETE` (any case), or it is `UPDATE <table> [[AS] alias] SET <column> = …`. AMGA's
/// `update <pattern> <attr> <expr>… <condition>` keeps its meaning even for an attribute named
/// `set`: there the word after `set` is an expression, never `<name> =`.
pub fn is_statement(line: &str) -> bool {
    let mut words = line.split_whitespace();
    match words.next() {
        Some(w) if ["select", "insert", "delete"].iter().any(|k| w.eq_ignore_ascii_case(k)) => true,
        Some(w) if w.eq_ignore_ascii_case("update") => sql_update_shape(line),
        _ => false,
    }
}

/// `UPDATE <table> [[AS] alias] SET <column> =`: `SET` is the third, fourth or fifth word and
/// is followed by a column reference (`a`, `/d:a`, `x.a`, `"a"`) and `=`.
fn sql_update_shape(line: &str) -> bool {
    let mut rest = line.trim_start();
    for position in 0..5 {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        rest = after.trim_start();
        if position >= 2 && word.eq_ignore_ascii_case("set") {
            let column_end = rest.find(|c: char| c.is_whitespace() || c == '=').unwrap_or(rest.len());
            let column = &rest[..column_end];
            let starts_like_a_name =
                column.starts_with(|c: char| c.is_ascii_alphabetic() || matches!(c, '_' | '/' | '"'));
            return starts_like_a_name && rest[column_end..].trim_start().starts_with('=');
        }
    }
    false
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start, punctuation, an operator or an operand keyword: a `/` here starts a path.
    ExpectOperand,
    /// A name, number, string, `)` or path: a `/` here divides.
    Operand,
}

fn path_end(c: char) -> bool {
    c.is_whitespace() || c.is_control() || matches!(c, ':' | '\'' | '"' | ',' | '(' | ')' | ';')
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_part(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

pub(crate) fn scan(src: &str) -> Scanned {
    let chars: Vec<(usize, char)> = src.char_indices().collect();
    let mut out = String::with_capacity(src.len());
    let mut paths = Vec::new();
    let mut line_starts = vec![0];
    let (mut line, mut column) = (1u64, 1u64);
    let mut prev = Prev::ExpectOperand;
    let mut i = 0;
    // Copies chars[from..to] unchanged, keeping line/column counts.
    let copy = |out: &mut String, from: usize, to: usize, line: &mut u64, column: &mut u64, starts: &mut Vec<usize>| {
        for (k, &(_, c)) in chars[from..to].iter().enumerate() {
            out.push(c);
            if c == '\n' {
                *line += 1;
                *column = 1;
                starts.push(from + k + 1);
            } else {
                *column += 1;
            }
        }
    };
    while i < chars.len() {
        let c = chars[i].1;
        let next = chars.get(i + 1).map(|x| x.1);
        let start = i;
        if c == '\'' || c == '"' {
            // A string or quoted name; a doubled quote inside is one quote.
            i += 1;
            while i < chars.len() {
                if chars[i].1 == c {
                    if chars.get(i + 1).map(|x| x.1) == Some(c) {
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                i += 1;
            }
            copy(&mut out, start, i, &mut line, &mut column, &mut line_starts);
            prev = Prev::Operand;
        } else if c == '-' && next == Some('-') {
            while i < chars.len() && chars[i].1 != '\n' {
                i += 1;
            }
            copy(&mut out, start, i, &mut line, &mut column, &mut line_starts);
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i].1 == '*' && chars.get(i + 1).map(|x| x.1) == Some('/')) {
                i += 1;
            }
            i = (i + 2).min(chars.len());
            copy(&mut out, start, i, &mut line, &mut column, &mut line_starts);
        } else if c == '/' && prev == Prev::ExpectOperand && next.is_some_and(|n| !path_end(n)) {
            i += 1;
            while i < chars.len() && !path_end(chars[i].1) {
                i += 1;
            }
            let dir_end = i;
            let mut kind = None;
            if chars.get(i).map(|x| x.1) == Some(':') {
                match chars.get(i + 1).map(|x| x.1) {
                    Some('*') => {
                        i += 2;
                        kind = Some(PathKind::Column { dir: collect(&chars, start, dir_end), attr: "*".into() });
                    }
                    Some(a) if is_ident_start(a) => {
                        i += 1;
                        while i < chars.len() && is_ident_part(chars[i].1) {
                            i += 1;
                        }
                        kind = Some(PathKind::Column {
                            dir: collect(&chars, start, dir_end),
                            attr: collect(&chars, dir_end + 1, i),
                        });
                    }
                    _ => {}
                }
            }
            let kind = kind.unwrap_or_else(|| PathKind::Path(collect(&chars, start, dir_end)));
            let n = i - start;
            let placeholder: String = std::iter::once('_').chain(std::iter::repeat_n('Q', n - 1)).collect();
            out.push_str(&placeholder);
            paths.push(PathToken {
                line,
                column,
                offset: chars[start].0,
                placeholder,
                original: collect(&chars, start, i),
                kind,
            });
            column += n as u64;
            prev = Prev::Operand;
        } else if is_ident_start(c) {
            while i < chars.len() && is_ident_part(chars[i].1) {
                i += 1;
            }
            let word = collect(&chars, start, i);
            prev = if OPERAND_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(&word)) {
                Prev::ExpectOperand
            } else {
                Prev::Operand
            };
            copy(&mut out, start, i, &mut line, &mut column, &mut line_starts);
        } else if c.is_ascii_digit() || c == '.' {
            while i < chars.len() && (is_ident_part(chars[i].1) || chars[i].1 == '.') {
                i += 1;
            }
            copy(&mut out, start, i, &mut line, &mut column, &mut line_starts);
            prev = Prev::Operand;
        } else {
            i += 1;
            copy(&mut out, start, i, &mut line, &mut column, &mut line_starts);
            if !c.is_whitespace() {
                prev = if c == ')' { Prev::Operand } else { Prev::ExpectOperand };
            }
        }
    }
    let char_bytes = chars.iter().map(|x| x.0).chain(std::iter::once(src.len())).collect();
    Scanned { text: out, paths, line_starts, char_bytes }
}

fn collect(chars: &[(usize, char)], from: usize, to: usize) -> String {
    chars[from..to].iter().map(|x| x.1).collect()
}

impl Scanned {
    /// Byte offset in the user's text of a 1-based line/column location (clamped to the text).
    pub fn offset(&self, _src: &str, line: u64, column: u64) -> usize {
        let total = self.char_bytes.len() - 1;
        let Some(&start) = self.line_starts.get((line.max(1) - 1) as usize) else {
            return self.char_bytes[total];
        };
        // A column past the line's end (sqlparser's end of input) is the line's end.
        let line_end = self.line_starts.get(line as usize).map_or(total, |next| next - 1);
        let at = (start + (column.max(1) - 1) as usize).min(line_end);
        self.char_bytes[at]
    }

    /// The column where `count` prefix operators (`-`, `+`, `NOT`) written before the
    /// location start, on the same line (a unary node of sqlparser's tree carries no location).
    pub fn before_prefixes(&self, src: &str, line: u64, column: u64, count: usize) -> u64 {
        let Some(&start) = self.line_starts.get((line.max(1) - 1) as usize) else {
            return column;
        };
        let last = self.char_bytes.len() - 1;
        let ch =
            |i: usize| src.get(self.char_bytes[i]..self.char_bytes[(i + 1).min(last)]).and_then(|c| c.chars().next());
        let mut at = (start + (column.max(1) - 1) as usize).min(last);
        for _ in 0..count {
            let mut j = at;
            while j > start && ch(j - 1).is_some_and(char::is_whitespace) {
                j -= 1;
            }
            if j > start && matches!(ch(j - 1), Some('-' | '+')) {
                at = j - 1;
            } else if j >= start + 3 && (j - 3..j).filter_map(ch).collect::<String>().eq_ignore_ascii_case("not") {
                at = j - 3;
            } else {
                break;
            }
        }
        (at - start + 1) as u64
    }

    /// The path that a placeholder identifier at this location stands for.
    pub fn path_at(&self, line: u64, column: u64) -> Option<&PathToken> {
        self.paths.iter().find(|p| p.line == line && p.column == column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_columns_and_division() {
        let s = scan("SELECT /jobs:events/2, a/b, (x)/3 FROM /jobs WHERE /cfg:k = /jobs:k");
        let kinds: Vec<_> = s.paths.iter().map(|p| p.original.as_str()).collect();
        assert_eq!(kinds, ["/jobs:events", "/jobs", "/cfg:k", "/jobs:k"]);
        assert_eq!(s.text, "SELECT _QQQQQQQQQQQ/2, a/b, (x)/3 FROM _QQQQ WHERE _QQQQQ = _QQQQQQ");
        assert_eq!(s.paths[0].kind, PathKind::Column { dir: "/jobs".into(), attr: "events".into() });
        assert_eq!(s.paths[1].kind, PathKind::Path("/jobs".into()));
        assert_eq!((s.paths[1].line, s.paths[1].column), (1, 40));
    }

    #[test]
    fn strings_comments_and_odd_names_are_kept() {
        let s = scan("select '/not:a path', \"/q\" from /a-b.c/d_é -- /x\n where /a-b.c/d_é:n>1 /* /y */");
        let found: Vec<_> = s.paths.iter().map(|p| p.original.as_str()).collect();
        assert_eq!(found, ["/a-b.c/d_é", "/a-b.c/d_é:n"]);
        assert_eq!(s.paths[1].line, 2);
        assert_eq!(
            s.text.chars().count(),
            "select '/not:a path', \"/q\" from /a-b.c/d_é -- /x\n where /a-b.c/d_é:n>1 /* /y */".chars().count()
        );
        // Byte offsets of the user's text, also after a multi-byte character.
        let src = "select '/not:a path', \"/q\" from /a-b.c/d_é -- /x\n where /a-b.c/d_é:n>1 /* /y */";
        assert_eq!(s.offset(src, 2, 8), src.find("/a-b.c/d_é:n").unwrap());
        assert_eq!(s.offset(src, 2, 20), src.find(">1").unwrap());
    }

    #[test]
    fn statements_are_told_apart_from_commands() {
        assert!(is_statement("SELECT FILE FROM /jobs"));
        assert!(is_statement("  select * from /jobs"));
        assert!(is_statement("Insert INTO /d VALUES ('x')"));
        assert!(is_statement("delete from /d"));
        assert!(is_statement("UPDATE /d SET a = 1"));
        assert!(is_statement("update /d AS x set a = 1"));
        assert!(!is_statement("update /d/* status 'done' 'events>5'"));
        assert!(is_statement("UPDATE /d SET a=a+1 WHERE FILE = 'x'"));
        assert!(is_statement("update /d x set x.a = 1"));
        assert!(is_statement("update /d set /d:a = 1"));
        assert!(is_statement("UPDATE /d SET \"a\" = 1"));
        // AMGA's `update` with an attribute named `set`, and with `set` as the expression.
        assert!(!is_statement("update /d/* set 'set + 1' ''"));
        assert!(!is_statement("update /d a 'a+1' ''"));
        assert!(!is_statement("update /d/* a set ''"));
        assert!(!is_statement("update /d set"));
        assert!(!is_statement("selectattr /d:a ''"));
        assert!(!is_statement(""));
    }
}
