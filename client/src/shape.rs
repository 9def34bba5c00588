//! Reply shapes (amga.md §2.7): how many data lines make one row for a given command line, and
//! column headers for display. Pure functions over text; it must not do I/O or talk to a server.

use ardacat_proto::tokenize;

/// The layout of a command's data lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// One value per row (pwd, whoami, find, ls, listentries, sequence_next, unknown commands),
    /// with a column label.
    Single(&'static str),
    /// Two lines per row: `dir` (name, type) and `listattr` (attribute, type).
    Pairs([&'static str; 2]),
    /// `getattr`: the entry name, then one line per requested attribute.
    Getattr(Vec<String>),
    /// `selectattr`: one line per selected expression.
    Select(Vec<String>),
}

impl Shape {
    /// The shape of the reply to `line`. Falls back to [`Shape::Single`] when the line cannot be
    /// tokenized or the argument count does not fit the command.
    pub fn of(line: &str) -> Shape {
        let Ok(args) = tokenize(line) else { return Shape::Single("value") };
        let Some(command) = args.first() else { return Shape::Single("value") };
        match command.to_ascii_lowercase().as_str() {
            "pwd" => Shape::Single("directory"),
            "whoami" => Shape::Single("user"),
            "find" | "ls" | "listentries" => Shape::Single("entry"),
            "help" => Shape::Single("usage"),
            "dir" => Shape::Pairs(["name", "type"]),
            "listattr" => Shape::Pairs(["attribute", "type"]),
            "getattr" if args.len() >= 3 => Shape::Getattr(args[2..].to_vec()),
            "selectattr" if args.len() >= 3 => Shape::Select(args[1..args.len() - 1].to_vec()),
            _ => Shape::Single("value"),
        }
    }

    /// Data lines per row.
    pub fn width(&self) -> usize {
        match self {
            Shape::Single(_) => 1,
            Shape::Pairs(_) => 2,
            Shape::Getattr(attrs) => attrs.len() + 1,
            Shape::Select(exprs) => exprs.len(),
        }
    }

    /// Column headers.
    pub fn headers(&self) -> Vec<String> {
        match self {
            Shape::Single(label) => vec![(*label).to_owned()],
            Shape::Pairs(names) => names.iter().map(|s| (*s).to_owned()).collect(),
            Shape::Getattr(attrs) => std::iter::once("entry".to_owned()).chain(attrs.iter().cloned()).collect(),
            Shape::Select(exprs) => exprs.clone(),
        }
    }

    /// Whether the headers carry information (CSV output prints them only then).
    pub fn has_headers(&self) -> bool {
        !matches!(self, Shape::Single(_))
    }
}

/// The column name for a `selectattr` expression: `/coll:attr` → `attr`, anything else as is.
pub fn column_name(expr: &str) -> &str {
    match expr.rsplit_once(':') {
        Some((_, name)) if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') => name,
        _ => expr,
    }
}

/// Cuts a flat list of lines into rows of `width`. `Err(n)` when `n` lines are left over.
pub fn group_rows<T>(values: Vec<T>, width: usize) -> Result<Vec<Vec<T>>, usize> {
    let width = width.max(1);
    if !values.len().is_multiple_of(width) {
        return Err(values.len() % width);
    }
    let mut rows = Vec::with_capacity(values.len() / width);
    let mut it = values.into_iter();
    loop {
        let row: Vec<T> = it.by_ref().take(width).collect();
        if row.is_empty() {
            break;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Incremental form of [`group_rows`] for streamed replies.
#[derive(Debug)]
pub struct RowGrouper<T> {
    width: usize,
    row: Vec<T>,
}

impl<T> RowGrouper<T> {
    pub fn new(width: usize) -> Self {
        let width = width.max(1);
        Self { width, row: Vec::with_capacity(width) }
    }

    /// Adds one value; returns the row it completes.
    pub fn push(&mut self, value: T) -> Option<Vec<T>> {
        self.row.push(value);
        if self.row.len() == self.width {
            Some(std::mem::replace(&mut self.row, Vec::with_capacity(self.width)))
        } else {
            None
        }
    }

    /// The incomplete last row, if any.
    pub fn finish(&mut self) -> Option<Vec<T>> {
        if self.row.is_empty() { None } else { Some(std::mem::take(&mut self.row)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_the_command() {
        assert_eq!(Shape::of("pwd"), Shape::Single("directory"));
        assert_eq!(Shape::of("sequence_next /d/s").headers(), ["value"]);
        assert_eq!(Shape::of("find /d 'a > 1'").width(), 1);
        assert_eq!(Shape::of("dir /d"), Shape::Pairs(["name", "type"]));
        assert_eq!(Shape::of("LISTATTR /d").width(), 2);
        let g = Shape::of("getattr /d/* a b 'c d'");
        assert_eq!(g, Shape::Getattr(vec!["a".into(), "b".into(), "c d".into()]));
        assert_eq!(g.width(), 4);
        assert_eq!(g.headers(), ["entry", "a", "b", "c d"]);
        let s = Shape::of("selectattr /d:FILE /d:a '/d:a > 3 and /d:b = \"x y\"'");
        assert_eq!(s, Shape::Select(vec!["/d:FILE".into(), "/d:a".into()]));
        assert_eq!(s.width(), 2);
        // Too few arguments or broken quoting: the server will complain; display one column.
        assert_eq!(Shape::of("getattr /d"), Shape::Single("value"));
        assert_eq!(Shape::of("selectattr 'unterminated"), Shape::Single("value"));
        assert_eq!(Shape::of(""), Shape::Single("value"));
    }

    #[test]
    fn grouping_rows() {
        assert_eq!(group_rows(vec![1, 2, 3, 4, 5, 6], 3), Ok(vec![vec![1, 2, 3], vec![4, 5, 6]]));
        assert_eq!(group_rows(Vec::<u8>::new(), 2), Ok(vec![]));
        assert_eq!(group_rows(vec![1, 2, 3], 2), Err(1));
        assert_eq!(group_rows(vec![1, 2], 0), Ok(vec![vec![1], vec![2]]));
        let mut g = RowGrouper::new(2);
        assert_eq!(g.push("a"), None);
        assert_eq!(g.push("b"), Some(vec!["a", "b"]));
        assert_eq!(g.push("c"), None);
        assert_eq!(g.finish(), Some(vec!["c"]));
        assert_eq!(g.finish(), None);
    }

    #[test]
    fn column_names() {
        assert_eq!(column_name("/coll:FILE"), "FILE");
        assert_eq!(column_name("/a/b:events"), "events");
        assert_eq!(column_name("events"), "events");
        assert_eq!(column_name("/d:a + 1"), "/d:a + 1");
    }
}
