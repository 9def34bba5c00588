//! The dump format, version 1 (docs/dump-format.md): one record per line, fields separated by
//! TAB, each field escaped (`\\`, `\t`, `\n`, `\r`, `\xHH` for the other control characters; a
//! field that is exactly `\N` is NULL), so a record holds no control character but its TABs; a
//! header line naming the format, its version and the dumped path, and a trailer with the
//! number of records, the number of entries and the SHA-256 of every byte before it. This
//! module owns the bytes of the format (writing, reading, checking); it must not know the
//! catalogue or a database.

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The first field of the header line.
pub const MAGIC: &str = "ARDACAT-DUMP";
/// The version this build writes and the only one it reads.
pub const VERSION: u32 = 1;
/// The first field of the trailer line.
pub const TRAILER: &str = "END";

/// A refused dump: damaged, truncated, of another version, or not a dump.
pub fn damaged(why: impl std::fmt::Display) -> Error {
    Error::InvalidValue(format!("damaged dump: {why}"))
}

/// Appends one escaped field (`None`: NULL) to `out`.
pub fn push_field(out: &mut String, v: Option<&str>) {
    let Some(v) = v else {
        out.push_str("\\N");
        return;
    };
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
}

/// One record line (without its newline) from its fields.
pub fn record<'a>(fields: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::new();
    for (i, f) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        push_field(&mut out, f);
    }
    out
}

/// Splits one record line into its fields, unescaped (`None`: NULL).
pub fn fields(line: &str) -> Result<Vec<Option<String>>> {
    line.split('\t').map(unescape).collect()
}

fn unescape(f: &str) -> Result<Option<String>> {
    if f == "\\N" {
        return Ok(None);
    }
    if !f.contains(|c: char| c == '\\' || c < ' ' || c == '\u{7f}') {
        return Ok(Some(f.to_string()));
    }
    let mut out = String::with_capacity(f.len());
    let mut it = f.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => match it.next() {
                Some('\\') => out.push('\\'),
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('x') => {
                    let hex: String = it.by_ref().take(2).collect();
                    let b = u8::from_str_radix(&hex, 16)
                        .ok()
                        .filter(|b| hex.len() == 2 && (*b < 0x20 || *b == 0x7f))
                        .filter(|b| *b < 0x20 || *b == 0x7f)
                        .ok_or_else(|| damaged(format!("bad escape \\x{hex}")))?;
                    out.push(b as char);
                }
                Some(o) => return Err(damaged(format!("unknown escape \\{o}"))),
                None => return Err(damaged("a field ends in a lone backslash")),
            },
            c if c < ' ' || c == '\u{7f}' => return Err(damaged("a raw control character inside a record")),
            c => out.push(c),
        }
    }
    Ok(Some(out))
}

/// The header line of a dump of `root`.
pub fn header(root: &str) -> String {
    record([Some(MAGIC), Some(&VERSION.to_string()), Some(root)])
}

/// The dumped path a header line names, after checking magic and version.
pub fn parse_header(line: &str) -> Result<String> {
    let f = fields(line)?;
    match f.as_slice() {
        [Some(m), Some(v), Some(root)] if m == MAGIC => {
            if v.parse::<u32>().ok() != Some(VERSION) {
                return Err(damaged(format!("format version {v}; this server reads version {VERSION}")));
            }
            Ok(root.clone())
        }
        _ => Err(damaged("the first line is not an ardacat dump header")),
    }
}

/// Counts and checksum of the lines before the trailer, kept as they are written or read.
#[derive(Clone, Default)]
pub struct Tally {
    hash: Sha256,
    /// Record lines after the header.
    pub records: u64,
    /// `E` records among them.
    pub entries: u64,
    header: bool,
}

impl Tally {
    /// Takes one line (header or record, without its newline) into the checksum and counts.
    pub fn add(&mut self, line: &str) {
        self.hash.update(line.as_bytes());
        self.hash.update(b"\n");
        if !self.header {
            self.header = true;
        } else {
            self.records += 1;
            if line.starts_with("E\t") {
                self.entries += 1;
            }
        }
    }

    fn digest(&self) -> String {
        self.hash.clone().finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The trailer line for what was added.
    pub fn trailer(&self) -> String {
        record([Some(TRAILER), Some(&self.records.to_string()), Some(&self.entries.to_string()), Some(&self.digest())])
    }

    /// Checks a trailer line against what was added.
    pub fn check_trailer(&self, line: &str) -> Result<()> {
        let f = fields(line)?;
        let [Some(t), Some(records), Some(entries), Some(sum)] = f.as_slice() else {
            return Err(damaged("malformed trailer"));
        };
        if t != TRAILER {
            return Err(damaged("malformed trailer"));
        }
        if records.parse::<u64>().ok() != Some(self.records) || entries.parse::<u64>().ok() != Some(self.entries) {
            return Err(damaged(format!(
                "the trailer counts {records} records and {entries} entries, the file has {} and {}",
                self.records, self.entries
            )));
        }
        if *sum != self.digest() {
            return Err(damaged("checksum mismatch"));
        }
        Ok(())
    }
}

/// Whether a line is a trailer (its first field is `END`).
pub fn is_trailer(line: &str) -> bool {
    line == TRAILER || line.starts_with("END\t")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_every_special_character() {
        let values = [Some("a\tb\nc\\d\re\u{18}\u{7f}\u{1}"), Some(""), None, Some("\\N"), Some("ü€𝄞"), Some("\\")];
        let line = record(values);
        assert!(!line.chars().any(|c| c != '\t' && (c < ' ' || c == '\u{7f}')));
        assert!(line.contains("\\x18"));
        assert_eq!(line.split('\t').count(), values.len());
        let back = fields(&line).unwrap();
        assert_eq!(back, values.iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>());
    }

    #[test]
    fn bad_escapes_and_versions_are_refused() {
        assert!(fields("a\\x").is_err());
        assert!(fields("a\\").is_err());
        assert!(fields("a\\x41").is_err());
        assert!(fields("a\\x1").is_err());
        assert!(fields("a\u{1}").is_err());
        assert_eq!(parse_header(&header("/x")).unwrap(), "/x");
        assert!(parse_header("ARDACAT-DUMP\t2\t/").unwrap_err().to_string().contains("version 2"));
        assert!(parse_header("hello").is_err());
    }

    #[test]
    fn the_trailer_checks_counts_and_checksum() {
        let mut t = Tally::default();
        for l in [header("/"), "C\t/\troot\troot\t755".into(), "E\t/\tx\troot\troot\t644".into()] {
            t.add(&l);
        }
        let good = t.trailer();
        t.check_trailer(&good).unwrap();
        let mut other = Tally::default();
        other.add(&header("/"));
        other.add("C\t/\troot\troot\t754");
        other.add("E\t/\tx\troot\troot\t644");
        assert!(other.check_trailer(&good).unwrap_err().to_string().contains("checksum"));
        assert!(t.check_trailer("END\t1\t1\tabc").is_err());
    }
}
