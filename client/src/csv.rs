//! A small RFC 4180 CSV reader and writer for import/export: quoted fields with embedded commas,
//! quotes (`""`) and newlines, CRLF or LF line ends, a UTF-8 byte-order mark. It knows nothing
//! about catalogue columns and must not touch the network.

use std::borrow::Cow;
use std::io::{self, BufRead, Write};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CsvError {
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    #[error("line {line}: {message}")]
    Syntax { line: u64, message: String },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a field.
    Start,
    /// Inside an unquoted field.
    Plain,
    /// Inside a quoted field.
    Quoted,
    /// Just after a quote inside a quoted field: either `""` or the closing quote.
    QuoteSeen,
}

/// Reads CSV records one at a time from a buffered reader.
pub struct CsvReader<R> {
    inner: R,
    line: u64,
    buf: String,
}

impl<R: BufRead> CsvReader<R> {
    pub fn new(inner: R) -> Self {
        Self { inner, line: 0, buf: String::new() }
    }

    /// Physical lines consumed so far (the line where the last record ended).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The next record, or `None` at the end of input. Empty lines between records are skipped.
    pub fn read_record(&mut self) -> Result<Option<Vec<String>>, CsvError> {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut state = State::Start;
        let mut started = false;
        let mut quote_line = 0;
        loop {
            self.buf.clear();
            if self.inner.read_line(&mut self.buf)? == 0 {
                if state == State::Quoted {
                    return Err(CsvError::Syntax {
                        line: quote_line,
                        message: "quoted field is not closed before the end of the file".into(),
                    });
                }
                if !started {
                    return Ok(None);
                }
                fields.push(field);
                return Ok(Some(fields));
            }
            self.line += 1;
            let mut text = self.buf.as_str();
            if self.line == 1 {
                text = text.strip_prefix('\u{feff}').unwrap_or(text);
            }
            // The line end ends the record unless a quoted field is open.
            let body = text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t));
            let (content, line_end) = match body {
                Some(b) => (b, &text[b.len()..]),
                None => (text, ""),
            };
            for c in content.chars() {
                started = true;
                match (state, c) {
                    (State::Start, '"') => {
                        state = State::Quoted;
                        quote_line = self.line;
                    }
                    (State::Start | State::Plain | State::QuoteSeen, ',') => {
                        fields.push(std::mem::take(&mut field));
                        state = State::Start;
                    }
                    (State::Start | State::Plain, c) => {
                        field.push(c);
                        state = State::Plain;
                    }
                    (State::Quoted, '"') => state = State::QuoteSeen,
                    (State::Quoted, c) => field.push(c),
                    (State::QuoteSeen, '"') => {
                        field.push('"');
                        state = State::Quoted;
                    }
                    (State::QuoteSeen, c) => {
                        return Err(CsvError::Syntax {
                            line: self.line,
                            message: format!("unexpected {c:?} after a closing quote"),
                        });
                    }
                }
            }
            if state == State::Quoted {
                field.push_str(line_end);
                started = true;
                continue;
            }
            if !started {
                continue; // an empty line between records
            }
            fields.push(field);
            return Ok(Some(fields));
        }
    }
}

impl<R: BufRead> Iterator for CsvReader<R> {
    type Item = Result<Vec<String>, CsvError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.read_record().transpose()
    }
}

/// One field, quoted when it holds a comma, quote, CR/LF or leading/trailing blanks.
pub fn quote_field(field: &str) -> Cow<'_, str> {
    let needs =
        field.contains([',', '"', '\n', '\r']) || field.starts_with([' ', '\t']) || field.ends_with([' ', '\t']);
    if !needs {
        return Cow::Borrowed(field);
    }
    Cow::Owned(format!("\"{}\"", field.replace('"', "\"\"")))
}

/// Writes one record with a `\n` line end; NULL is written as an empty field.
pub fn write_record<W: Write + ?Sized, S: AsRef<str>>(out: &mut W, fields: &[Option<S>]) -> io::Result<()> {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        if let Some(f) = field {
            out.write_all(quote_field(f.as_ref()).as_bytes())?;
        }
    }
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Vec<String>>, CsvError> {
        CsvReader::new(text.as_bytes()).collect()
    }

    fn rows(text: &str) -> Vec<Vec<String>> {
        match parse(text) {
            Ok(r) => r,
            Err(e) => panic!("{text:?}: {e}"),
        }
    }

    #[test]
    fn simple_records_and_line_ends() {
        assert_eq!(rows("FILE,a,b\ne1,1,x\r\ne2,2,y"), [["FILE", "a", "b"], ["e1", "1", "x"], ["e2", "2", "y"]]);
        assert_eq!(rows(""), Vec::<Vec<String>>::new());
        assert_eq!(rows("\n\na\n\n"), [["a"]]);
        assert_eq!(rows("a,,\n"), [["a", "", ""]]);
        assert_eq!(rows(",\n"), [["", ""]]);
        assert_eq!(rows("\u{feff}FILE,a\n"), [["FILE", "a"]]);
    }

    #[test]
    fn quoted_fields() {
        assert_eq!(rows("\"a,b\",\"say \"\"hi\"\"\",c\n"), [["a,b", "say \"hi\"", "c"]]);
        assert_eq!(rows("\"line1\nline2\r\nline3\",x\ny,z\n"), [vec!["line1\nline2\r\nline3", "x"], vec!["y", "z"]]);
        assert_eq!(rows("\"\",\"\"\n"), [["", ""]]);
        assert_eq!(rows("\"\n\"\n"), [["\n"]]);
        // A quote inside an unquoted field is kept literally.
        assert_eq!(rows("ab\"c,d\n"), [["ab\"c", "d"]]);
        assert_eq!(rows("é,\"ü\"\n"), [["é", "ü"]]);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let err = parse("a\n\"open,b\nc\n").err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("line 2: quoted field is not closed before the end of the file"));
        let err = parse("x\n\"a\"b,c\n").err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("line 2: unexpected 'b' after a closing quote"));
    }

    #[test]
    fn writer_round_trips() {
        let record: Vec<Option<&str>> =
            vec![Some("plain"), Some("a,b"), Some("q\"q"), Some("two\nlines"), None, Some(" pad"), Some("")];
        let mut out = Vec::new();
        write_record(&mut out, &record).unwrap_or_else(|e| panic!("{e}"));
        let text = String::from_utf8(out).unwrap_or_default();
        assert_eq!(text, "plain,\"a,b\",\"q\"\"q\",\"two\nlines\",,\" pad\",\n");
        assert_eq!(rows(&text), [["plain", "a,b", "q\"q", "two\nlines", "", " pad", ""]]);
    }
}
