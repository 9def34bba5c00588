//! Tokeniser for the query language: turns a condition string into tokens carrying byte
//! offsets. It owns the lexical rules (references, numbers, strings, keywords) and must not
//! know about grammar, precedence or what any reference means.

use std::fmt;

use super::parser::ParseError;

/// Reserved words. They are matched case-insensitively and can never be bare references,
/// which is what keeps `a and b` from being read as three attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    And,
    Or,
    Not,
    Like,
    Ilike,
    In,
    Between,
    Is,
    Null,
    Order,
    By,
    Asc,
    Desc,
    Limit,
    Distinct,
    True,
    False,
}

impl Keyword {
    const ALL: [Keyword; 17] = [
        Keyword::And,
        Keyword::Or,
        Keyword::Not,
        Keyword::Like,
        Keyword::Ilike,
        Keyword::In,
        Keyword::Between,
        Keyword::Is,
        Keyword::Null,
        Keyword::Order,
        Keyword::By,
        Keyword::Asc,
        Keyword::Desc,
        Keyword::Limit,
        Keyword::Distinct,
        Keyword::True,
        Keyword::False,
    ];

    /// The canonical (lower-case) spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Keyword::And => "and",
            Keyword::Or => "or",
            Keyword::Not => "not",
            Keyword::Like => "like",
            Keyword::Ilike => "ilike",
            Keyword::In => "in",
            Keyword::Between => "between",
            Keyword::Is => "is",
            Keyword::Null => "null",
            Keyword::Order => "order",
            Keyword::By => "by",
            Keyword::Asc => "asc",
            Keyword::Desc => "desc",
            Keyword::Limit => "limit",
            Keyword::Distinct => "distinct",
            Keyword::True => "true",
            Keyword::False => "false",
        }
    }

    /// Case-insensitive lookup of a word.
    pub fn from_word(word: &str) -> Option<Keyword> {
        Keyword::ALL.into_iter().find(|k| k.as_str().eq_ignore_ascii_case(word))
    }
}

/// Whether `word` would be taken as a keyword rather than a bare reference.
pub fn is_keyword(word: &str) -> bool {
    Keyword::from_word(word).is_some()
}

#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    /// An unsigned integer. Kept as `u64` so `limit` can use the full range; the parser
    /// narrows it to `i64` for literals.
    Int(u64),
    /// Always finite and non-negative: a leading `-` is the unary operator.
    Float(f64),
    /// A double-quoted string, already unescaped.
    Str(String),
    /// A bare word that is not a keyword: an attribute or a function name.
    Ident(String),
    /// `path:attr`, with the path exactly as written (absolute or relative).
    PathRef {
        collection: String,
        attr: String,
    },
    Keyword(Keyword),
    LParen,
    RParen,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Eof,
}

impl fmt::Display for TokenKind {
    /// How a token is named in "expected … but found …" messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenKind::Int(n) => write!(f, "number {n}"),
            TokenKind::Float(x) => write!(f, "number {x:?}"),
            TokenKind::Str(s) => write!(f, "string {s:?}"),
            TokenKind::Ident(s) => write!(f, "identifier '{s}'"),
            TokenKind::PathRef { collection, attr } => write!(f, "reference '{collection}:{attr}'"),
            TokenKind::Keyword(k) => write!(f, "keyword '{}'", k.as_str()),
            TokenKind::LParen => f.write_str("'('"),
            TokenKind::RParen => f.write_str("')'"),
            TokenKind::Comma => f.write_str("','"),
            TokenKind::Plus => f.write_str("'+'"),
            TokenKind::Minus => f.write_str("'-'"),
            TokenKind::Star => f.write_str("'*'"),
            TokenKind::Slash => f.write_str("'/'"),
            TokenKind::Eq => f.write_str("'='"),
            TokenKind::Ne => f.write_str("'!='"),
            TokenKind::Lt => f.write_str("'<'"),
            TokenKind::Le => f.write_str("'<='"),
            TokenKind::Gt => f.write_str("'>'"),
            TokenKind::Ge => f.write_str("'>='"),
            TokenKind::Eof => f.write_str("end of input"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    /// Byte offset of the token's first character in the input.
    pub position: usize,
}

/// Split `input` into tokens. The result always ends with exactly one `Eof` token whose
/// position is the input's length, so the parser never has to bounds-check.
pub fn tokenize(input: &str) -> Result<Vec<Token>, ParseError> {
    let mut lexer = Lexer { src: input, pos: 0 };
    let mut tokens = Vec::new();
    loop {
        let token = lexer.next_token()?;
        let done = token.kind == TokenKind::Eof;
        tokens.push(token);
        if done {
            return Ok(tokens);
        }
    }
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whitespace we skip. Newlines and tabs are accepted because clients wrap long conditions;
/// every other control character is rejected so that NULs and terminal escapes cannot
/// hide inside a query.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_at(&self, skip: usize) -> Option<char> {
        self.rest().chars().nth(skip)
    }

    /// Length in bytes of the longest prefix of the remaining input whose chars satisfy `pred`.
    fn run_len(&self, from: usize, pred: impl Fn(char) -> bool) -> usize {
        let tail = self.src.get(from..).unwrap_or("");
        tail.find(|c: char| !pred(c)).unwrap_or(tail.len())
    }

    fn slice(&self, start: usize, end: usize) -> &str {
        self.src.get(start..end).unwrap_or("")
    }

    fn err(&self, position: usize, message: impl Into<String>) -> ParseError {
        ParseError { position, message: message.into() }
    }

    fn next_token(&mut self) -> Result<Token, ParseError> {
        self.pos += self.run_len(self.pos, is_space);
        let start = self.pos;
        let Some(c) = self.peek() else {
            return Ok(Token { kind: TokenKind::Eof, position: start });
        };
        let kind = match c {
            '"' => self.string()?,
            '0'..='9' => self.number()?,
            '.' if self.peek_at(1).is_some_and(|d| d.is_ascii_digit()) => self.number()?,
            '/' => self.slash_or_path()?,
            c if is_ident_start(c) => self.word()?,
            _ => {
                self.pos += c.len_utf8();
                self.punct(c, start)?
            }
        };
        Ok(Token { kind, position: start })
    }

    fn punct(&mut self, c: char, start: usize) -> Result<TokenKind, ParseError> {
        let next = self.peek();
        let mut two = |kind: TokenKind| {
            self.pos += 1;
            kind
        };
        Ok(match (c, next) {
            ('(', _) => TokenKind::LParen,
            (')', _) => TokenKind::RParen,
            (',', _) => TokenKind::Comma,
            ('+', _) => TokenKind::Plus,
            ('-', _) => TokenKind::Minus,
            ('*', _) => TokenKind::Star,
            ('=', _) => TokenKind::Eq,
            ('!', Some('=')) => two(TokenKind::Ne),
            ('<', Some('>')) => two(TokenKind::Ne),
            ('<', Some('=')) => two(TokenKind::Le),
            ('<', _) => TokenKind::Lt,
            ('>', Some('=')) => two(TokenKind::Ge),
            ('>', _) => TokenKind::Gt,
            ('\'', _) => {
                return Err(self.err(start, "unexpected character '\\'' (strings use double quotes)"));
            }
            (c, _) if c.is_control() => {
                return Err(self.err(start, format!("unexpected control character {c:?}")));
            }
            (c, _) => return Err(self.err(start, format!("unexpected character '{c}'"))),
        })
    }

    /// A double-quoted string. `\"` and `\\` are the meaningful escapes; any other `\x`
    /// keeps `x`, so Windows-style paths and regex-ish patterns survive unharmed.
    fn string(&mut self) -> Result<TokenKind, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(TokenKind::Str(out));
                }
                '\\' => match chars.next() {
                    Some((_, escaped)) => out.push(escaped),
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err(self.err(start, "unterminated string"))
    }

    fn number(&mut self) -> Result<TokenKind, ParseError> {
        let start = self.pos;
        let digits = |lx: &Self, at: usize| lx.run_len(at, |c| c.is_ascii_digit());
        let mut end = start + digits(self, start);
        let mut is_float = false;
        if self.src.as_bytes().get(end) == Some(&b'.') {
            let frac = digits(self, end + 1);
            if frac == 0 {
                return Err(self.err(end, "expected a digit after '.'"));
            }
            end += 1 + frac;
            is_float = true;
        }
        if matches!(self.src.as_bytes().get(end), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(self.src.as_bytes().get(end + 1), Some(b'+' | b'-')));
            let exp = digits(self, end + 1 + sign);
            // `1e` without digits is not an exponent; the check below reports it.
            if exp > 0 {
                end += 1 + sign + exp;
                is_float = true;
            }
        }
        // `12abc` or `1.2.3` is a typo, not a number followed by a name.
        if let Some(c) = self.src.get(end..).and_then(|t| t.chars().next())
            && (is_ident_char(c) || c == '.')
        {
            return Err(self.err(end, format!("unexpected character '{c}' in number")));
        }
        self.pos = end;
        let text = self.slice(start, end);
        if is_float {
            match text.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(TokenKind::Float(x)),
                _ => Err(self.err(start, format!("number {text} is out of range"))),
            }
        } else {
            text.parse::<u64>()
                .map(TokenKind::Int)
                .map_err(|_| self.err(start, format!("number {text} is out of range")))
        }
    }

    /// At `/`: either an absolute `path:attr` reference or the division operator.
    fn slash_or_path(&mut self) -> Result<TokenKind, ParseError> {
        let start = self.pos;
        let path_end = start + self.run_len(start, is_path_char);
        if self.src.as_bytes().get(path_end) == Some(&b':') {
            return self.path_ref(start, path_end);
        }
        self.pos += 1;
        Ok(TokenKind::Slash)
    }

    /// At an identifier start: a relative `path:attr` reference, a keyword or a bare word.
    fn word(&mut self) -> Result<TokenKind, ParseError> {
        let start = self.pos;
        let path_end = start + self.run_len(start, is_path_char);
        if self.src.as_bytes().get(path_end) == Some(&b':') {
            return self.path_ref(start, path_end);
        }
        let end = start + self.run_len(start, is_ident_char);
        self.pos = end;
        let word = self.slice(start, end);
        Ok(match Keyword::from_word(word) {
            Some(k) => TokenKind::Keyword(k),
            None => TokenKind::Ident(word.to_owned()),
        })
    }

    /// `path` spans `start..colon`; the attribute name must follow the `:` directly.
    fn path_ref(&mut self, start: usize, colon: usize) -> Result<TokenKind, ParseError> {
        let attr_start = colon + 1;
        let starts_ok = self.src.get(attr_start..).and_then(|t| t.chars().next()).is_some_and(is_ident_start);
        if !starts_ok {
            return Err(self.err(attr_start, "expected an attribute name directly after ':'"));
        }
        let attr_end = attr_start + self.run_len(attr_start, is_ident_char);
        let kind = TokenKind::PathRef {
            collection: self.slice(start, colon).to_owned(),
            attr: self.slice(attr_start, attr_end).to_owned(),
        };
        self.pos = attr_end;
        Ok(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<TokenKind> {
        tokenize(s).expect("lexes").into_iter().map(|t| t.kind).collect()
    }

    fn err_at(s: &str) -> usize {
        tokenize(s).expect_err("must fail").position
    }

    fn ident(s: &str) -> TokenKind {
        TokenKind::Ident(s.to_owned())
    }

    fn pref(c: &str, a: &str) -> TokenKind {
        TokenKind::PathRef { collection: c.to_owned(), attr: a.to_owned() }
    }

    #[test]
    fn positions_are_byte_offsets() {
        let err = tokenize("  é").expect_err("non-ascii outside strings");
        assert_eq!(err.position, 2);
        let toks = tokenize("\"é\" = x").expect("lexes");
        let pos: Vec<usize> = toks.iter().map(|t| t.position).collect();
        assert_eq!(pos, vec![0, 5, 7, 8]);
    }

    #[test]
    fn references() {
        assert_eq!(kinds("/jobdir:events"), vec![pref("/jobdir", "events"), TokenKind::Eof]);
        assert_eq!(kinds("dir/sub:a_1"), vec![pref("dir/sub", "a_1"), TokenKind::Eof]);
        assert_eq!(kinds("/:x"), vec![pref("/", "x"), TokenKind::Eof]);
        assert_eq!(kinds("/d-1.x/y:and"), vec![pref("/d-1.x/y", "and"), TokenKind::Eof]);
        assert_eq!(kinds("FILE"), vec![ident("FILE"), TokenKind::Eof]);
        assert_eq!(kinds("a/b"), vec![ident("a"), TokenKind::Slash, ident("b"), TokenKind::Eof]);
        assert_eq!(kinds("a-1"), vec![ident("a"), TokenKind::Minus, TokenKind::Int(1), TokenKind::Eof]);
        assert_eq!(kinds("/d:a/2"), vec![pref("/d", "a"), TokenKind::Slash, TokenKind::Int(2), TokenKind::Eof]);
        assert_eq!(kinds("1 / /d:x"), vec![TokenKind::Int(1), TokenKind::Slash, pref("/d", "x"), TokenKind::Eof]);
    }

    #[test]
    fn path_needs_attribute_right_after_colon() {
        assert_eq!(err_at("/d: x"), 3);
        assert_eq!(err_at("/d:1"), 3);
        assert_eq!(err_at("/d:"), 3);
        assert_eq!(err_at("x.y"), 1);
    }

    #[test]
    fn keywords_are_case_insensitive() {
        assert_eq!(
            kinds("AND Or nOt"),
            vec![
                TokenKind::Keyword(Keyword::And),
                TokenKind::Keyword(Keyword::Or),
                TokenKind::Keyword(Keyword::Not),
                TokenKind::Eof
            ]
        );
        assert_eq!(kinds("andy"), vec![ident("andy"), TokenKind::Eof]);
    }

    #[test]
    fn numbers() {
        assert_eq!(kinds("42"), vec![TokenKind::Int(42), TokenKind::Eof]);
        assert_eq!(kinds("1.5"), vec![TokenKind::Float(1.5), TokenKind::Eof]);
        assert_eq!(kinds("1e3"), vec![TokenKind::Float(1000.0), TokenKind::Eof]);
        assert_eq!(kinds(".5"), vec![TokenKind::Float(0.5), TokenKind::Eof]);
        assert_eq!(kinds("2.5E-1"), vec![TokenKind::Float(0.25), TokenKind::Eof]);
        assert_eq!(kinds("18446744073709551615"), vec![TokenKind::Int(u64::MAX), TokenKind::Eof]);
        assert_eq!(err_at("x = 18446744073709551616"), 4);
        assert_eq!(err_at("1e999"), 0);
        assert_eq!(err_at("12abc"), 2);
        assert_eq!(err_at("1.2.3"), 3);
        assert_eq!(err_at("1."), 1);
        assert_eq!(err_at("1e"), 1);
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(kinds(r#""a\"b\\c\d""#), vec![TokenKind::Str("a\"b\\cd".to_owned()), TokenKind::Eof]);
        assert_eq!(kinds("\"\0\n\""), vec![TokenKind::Str("\0\n".to_owned()), TokenKind::Eof]);
        assert_eq!(err_at("x = \"abc"), 4);
        assert_eq!(err_at("x = \"abc\\\""), 4);
        assert_eq!(err_at("x = \"abc\\"), 4);
    }

    #[test]
    fn operators() {
        assert_eq!(
            kinds("= != <> < <= > >= + - * / ( ) ,"),
            vec![
                TokenKind::Eq,
                TokenKind::Ne,
                TokenKind::Ne,
                TokenKind::Lt,
                TokenKind::Le,
                TokenKind::Gt,
                TokenKind::Ge,
                TokenKind::Plus,
                TokenKind::Minus,
                TokenKind::Star,
                TokenKind::Slash,
                TokenKind::LParen,
                TokenKind::RParen,
                TokenKind::Comma,
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn rejects_stray_characters() {
        assert_eq!(err_at("a ; b"), 2);
        assert_eq!(err_at("a\0"), 1);
        assert_eq!(err_at("a \x1b[2J"), 2);
        assert_eq!(err_at("'; drop table x; --"), 0);
        assert_eq!(err_at("a ! b"), 2);
        assert_eq!(err_at("a == b $"), 7);
    }

    #[test]
    fn whitespace_forms() {
        assert_eq!(kinds(" \t\r\n"), vec![TokenKind::Eof]);
        assert_eq!(tokenize(" \t").expect("lexes").first().map(|t| t.position), Some(2));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = tokenize(&s);
        }

        #[test]
        fn never_panics_on_query_alphabet(s in "[a-z/:\"\\\\. 0-9eE+\\-<>=!()]{0,40}") {
            if let Ok(toks) = tokenize(&s) {
                proptest::prop_assert_eq!(toks.last().map(|t| t.position), Some(s.len()));
            }
        }
    }
}
