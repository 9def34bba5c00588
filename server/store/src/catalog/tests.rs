//! Pins the rule of this module: every SQL text lives in `crate::sql`, so no string literal of a
//! `catalog/` file holds an SQL statement (the files are read as source; comments do not count).

/// Words that only an SQL statement would put in a string literal.
const SQL_WORDS: [&str; 12] = [
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "ALTER",
    "FROM",
    "WHERE",
    "VALUES",
    "RETURNING",
    "PRAGMA",
];

/// The string literals of Rust source, comments skipped (enough for this crate's style: no raw
/// strings with quotes inside, no `"` in char literals).
fn string_literals(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in src.lines() {
        let mut chars = line.chars().peekable();
        let mut lit: Option<String> = None;
        while let Some(c) = chars.next() {
            match (&mut lit, c) {
                (None, '/') if chars.peek() == Some(&'/') => break,
                (None, '\'') => {
                    // A char literal like '"' or a lifetime: skip to the closing quote if any.
                    let rest: String = chars.clone().take(3).collect();
                    if rest.starts_with("\"'") || rest.starts_with("\\\"'") {
                        while chars.next().is_some_and(|c| c != '\'') {}
                    }
                }
                (None, '"') => lit = Some(String::new()),
                (Some(s), '\\') => {
                    s.push('\\');
                    if let Some(n) = chars.next() {
                        s.push(n);
                    }
                }
                (Some(s), '"') => {
                    out.push(std::mem::take(s));
                    lit = None;
                }
                (Some(s), c) => s.push(c),
                (None, _) => {}
            }
        }
        // A literal continued on the next line (`\` at the end) is judged by its first line.
        if let Some(s) = lit {
            out.push(s);
        }
    }
    out
}

fn sql_word(lit: &str) -> Option<&'static str> {
    let words: Vec<&str> = lit.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').collect();
    SQL_WORDS.into_iter().find(|w| words.contains(w))
}

#[test]
fn string_literals_are_found_and_comments_skipped() {
    let src = "let a = \"SELECT 1\"; // \"DROP x\"\nlet b = '\"'; let c = \"x \\\" y\";";
    assert_eq!(string_literals(src), vec!["SELECT 1".to_string(), "x \\\" y".to_string()]);
    assert_eq!(sql_word("SELECT id FROM t"), Some("SELECT"));
    assert_eq!(sql_word("index {name} selected"), None);
}

#[test]
fn catalog_files_hold_no_sql_text() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/catalog");
    let mut checked = 0;
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).expect("the catalog directory") {
        let path = e.expect("a directory entry").path();
        if path.extension().is_none_or(|x| x != "rs") || path.ends_with("tests.rs") {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("a source file");
        checked += 1;
        for lit in string_literals(&src) {
            if let Some(w) = sql_word(&lit) {
                found.push(format!("{}: {w} in {lit:?}", path.display()));
            }
        }
    }
    assert!(checked >= 10, "only {checked} files under {dir}");
    assert!(found.is_empty(), "SQL text outside sql/ (move it to a named statement there):\n{}", found.join("\n"));
}
