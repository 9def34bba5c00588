//! Pins the layout rules of the server's source (read as files, not compiled): no import circle
//! between the modules of `server/src` (a module's child files count as the module), and no file
//! of `server/` outside tests and benches over 800 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !matches!(name, "tests" | "benches" | "target") {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its `#[cfg(test)] mod tests { … }` (tests may reach anywhere; a
/// `tests.rs` file is skipped altogether) and without `//` comments.
fn code_of(src: &str) -> String {
    let src = src.split("#[cfg(test)]\nmod tests {").next().unwrap_or(src);
    src.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// `crate::<name>` and `crate::{<name>, …}` references of a piece of code.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or("");
            out.extend(group.split(',').map(|p| ident(p.trim())));
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|n| n.starts_with(|c: char| c.is_ascii_lowercase()));
    out
}

/// Modules of `server/src` and the other modules each refers to.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let first = rel.components().next().and_then(|c| c.as_os_str().to_str()).unwrap_or_default();
        let module = first.trim_end_matches(".rs").to_string();
        if matches!(module.as_str(), "lib" | "main" | "layout_tests") || f.ends_with("tests.rs") {
            continue;
        }
        let refs = crate_refs(&code_of(&std::fs::read_to_string(&f).expect("a source file")));
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(refs.into_iter().filter(|r| *r != module));
    }
    graph
}

/// A cycle of the graph, if it has one (depth-first search).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut cycle = path[at..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten().filter(|m| graph.contains_key(*m)) {
            if let Some(c) = visit(m, graph, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn references_and_cycles_are_found() {
    let code = code_of("use crate::state::Shared; // crate::http\nuse crate::{auth, config::Config};\n");
    assert_eq!(crate_refs(&code), ["auth", "config", "state"].map(String::from).into_iter().collect());
    let g = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])).map(|c| c.len()), Some(4));
}

#[test]
fn no_import_circle_between_server_modules() {
    let graph = module_graph(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")));
    for m in ["config", "state", "auth", "tcp", "soap", "http", "ui"] {
        assert!(graph.contains_key(m), "module {m} not found: {:?}", graph.keys());
    }
    assert_eq!(find_cycle(&graph), None, "modules that import each other: {graph:?}");
}

#[test]
fn no_server_file_over_800_lines() {
    let mut files = Vec::new();
    rust_files(Path::new(env!("CARGO_MANIFEST_DIR")), &mut files);
    assert!(files.len() > 100, "only {} files", files.len());
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).expect("a source file").lines().count()))
        .filter(|(_, n)| *n > MAX_LINES)
        .map(|(f, n)| format!("{}: {n} lines", f.display()))
        .collect();
    assert!(long.is_empty(), "split these by concern:\n{}", long.join("\n"));
}
