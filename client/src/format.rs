//! Output formats of the CLI (`amga`, `table`, `csv`, `json`) for one command's reply, fed line by
//! line as it streams. Uses the reply [`Shape`] to form rows; it must not read from the network or
//! decide which command runs.

use std::io::{self, Write};
use std::str::FromStr;

use crate::csv::write_record;
use crate::shape::{RowGrouper, Shape};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Data lines exactly as the server sent them, one per line (like `mdclient`).
    #[default]
    Amga,
    /// Aligned columns with a header, after the whole reply has arrived.
    Table,
    /// RFC 4180 CSV; a header row for multi-column shapes.
    Csv,
    /// One JSON array per row (JSON lines); NULL is `null`.
    Json,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "amga" | "raw" => Ok(Format::Amga),
            "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            other => Err(format!("unknown format {other:?} (amga, table, csv, json)")),
        }
    }
}

/// Writes one reply in a format.
pub struct Printer<'w> {
    format: Format,
    shape: Shape,
    out: &'w mut dyn Write,
    grouper: RowGrouper<Option<String>>,
    table: Vec<Vec<Option<String>>>,
    header_done: bool,
}

impl<'w> Printer<'w> {
    pub fn new(format: Format, shape: Shape, out: &'w mut dyn Write) -> Self {
        let grouper = RowGrouper::new(shape.width());
        Self { format, shape, out, grouper, table: Vec::new(), header_done: false }
    }

    /// One data line: `raw` as received, `value` decoded (None = NULL).
    pub fn line(&mut self, raw: &str, value: Option<String>) -> io::Result<()> {
        if self.format == Format::Amga {
            self.out.write_all(raw.as_bytes())?;
            return self.out.write_all(b"\n");
        }
        match self.grouper.push(value) {
            Some(row) => self.row(row),
            None => Ok(()),
        }
    }

    /// Data lines exactly as received, each ended by its `\n`, for the `amga` format (the
    /// others need each line decoded: [`Printer::line`]).
    pub fn raw_lines(&mut self, text: &str) -> io::Result<()> {
        debug_assert!(self.format == Format::Amga && (text.is_empty() || text.ends_with('\n')));
        self.out.write_all(text.as_bytes())
    }

    fn row(&mut self, row: Vec<Option<String>>) -> io::Result<()> {
        match self.format {
            Format::Amga => Ok(()),
            Format::Table => {
                self.table.push(row);
                Ok(())
            }
            Format::Csv => {
                if !self.header_done && self.shape.has_headers() {
                    let headers: Vec<Option<String>> = self.shape.headers().into_iter().map(Some).collect();
                    write_record(self.out, &headers)?;
                }
                self.header_done = true;
                write_record(self.out, &row)
            }
            Format::Json => {
                let values: Vec<serde_json::Value> =
                    row.into_iter().map(|v| v.map_or(serde_json::Value::Null, serde_json::Value::String)).collect();
                serde_json::to_writer(&mut *self.out, &values)?;
                self.out.write_all(b"\n")
            }
        }
    }

    /// Ends the reply: flushes a partial last row and, for `table`, renders everything.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(partial) = self.grouper.finish() {
            self.row(partial)?;
        }
        if self.format == Format::Table && !self.table.is_empty() {
            let text = render_table(&self.shape.headers(), &self.table);
            self.out.write_all(text.as_bytes())?;
        }
        self.out.flush()
    }
}

/// One cell as shown in a table: NULL as `NULL`, control characters made visible.
fn cell(value: &Option<String>) -> String {
    match value {
        None => "NULL".into(),
        Some(v) => {
            v.chars().flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect()
        }
    }
}

/// Aligned columns: header, a rule, then the rows. Short rows are padded with empty cells.
pub fn render_table(headers: &[String], rows: &[Vec<Option<String>>]) -> String {
    let columns = rows.iter().map(Vec::len).chain([headers.len()]).max().unwrap_or(0);
    let cells: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(cell).collect()).collect();
    let mut widths = vec![0usize; columns];
    for row in cells.iter().chain([&headers.to_vec()]) {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |row: &[String], sep: &str| {
        let mut text = String::new();
        for (i, width) in widths.iter().enumerate() {
            let v = row.get(i).map_or("", String::as_str);
            if i > 0 {
                text.push_str(sep);
            }
            text.push_str(v);
            text.extend(std::iter::repeat_n(' ', width - v.chars().count()));
        }
        let mut text = text.trim_end().to_owned();
        text.push('\n');
        text
    };
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let mut out = line(headers, " | ");
    out.push_str(&line(&rule, "-+-"));
    for row in &cells {
        out.push_str(&line(row, " | "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(format: Format, line: &str, lines: &[&str]) -> String {
        let mut out = Vec::new();
        {
            let mut p = Printer::new(format, Shape::of(line), &mut out);
            for l in lines {
                p.line(l, Some((*l).to_owned())).unwrap_or_else(|e| panic!("{e}"));
            }
            p.finish().unwrap_or_else(|e| panic!("{e}"));
        }
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn table_aligns_columns() {
        let rows = vec![
            vec![Some("/d/e1".to_owned()), Some("1".to_owned()), None],
            vec![Some("/d/entry22".to_owned()), Some("12345".to_owned()), Some("x".to_owned())],
        ];
        let headers: Vec<String> = ["entry", "a", "b"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(
            render_table(&headers, &rows),
            "entry      | a     | b\n\
             -----------+-------+-----\n\
             /d/e1      | 1     | NULL\n\
             /d/entry22 | 12345 | x\n"
        );
    }

    #[test]
    fn table_shows_control_characters_and_pads_short_rows() {
        let rows = vec![vec![Some("a\nb".to_owned())], vec![Some("é".to_owned()), Some("z".to_owned())]];
        let headers = vec!["name".to_owned(), "type".to_owned()];
        assert_eq!(render_table(&headers, &rows), "name | type\n-----+-----\na\\nb |\né    | z\n");
    }

    #[test]
    fn formats_use_the_reply_shape() {
        let lines = ["/d/e1", "1", "x,y", "/d/e2", "2", "z"];
        let cmd = "getattr /d a b";
        assert_eq!(print(Format::Amga, cmd, &lines), "/d/e1\n1\nx,y\n/d/e2\n2\nz\n");
        assert_eq!(print(Format::Csv, cmd, &lines), "entry,a,b\n/d/e1,1,\"x,y\"\n/d/e2,2,z\n");
        assert_eq!(print(Format::Json, cmd, &lines), "[\"/d/e1\",\"1\",\"x,y\"]\n[\"/d/e2\",\"2\",\"z\"]\n");
        assert_eq!(
            print(Format::Table, "dir /d", &["a", "collection", "b", "entry"]),
            "name | type\n-----+-----------\na    | collection\nb    | entry\n"
        );
        assert_eq!(print(Format::Csv, "pwd", &["/home"]), "/home\n");
        assert_eq!(print(Format::Table, "pwd", &[]), "");
    }

    #[test]
    fn format_names() {
        assert_eq!("TABLE".parse::<Format>(), Ok(Format::Table));
        assert_eq!("amga".parse::<Format>(), Ok(Format::Amga));
        assert!("xml".parse::<Format>().is_err());
    }
}
