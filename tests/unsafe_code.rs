//! The workspace denies `unsafe` and one module allows it: a stream's rows read through SQLite's
//! C API (server/store/src/exec/sqlite/columns.rs). This keeps it that way: every package of the
//! workspace takes the workspace's lints, and no other source file allows `unsafe_code`.

use std::path::{Path, PathBuf};

const ALLOWED: &str = "server/store/src/exec/sqlite/columns.rs";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            // Build output and Python environments are not sources.
            if !matches!(name, "target" | ".venv" | "node_modules") && !name.starts_with('.') {
                walk(&path, found);
            }
        } else if name.ends_with(".rs") || name == "Cargo.toml" {
            found.push(path);
        }
    }
}

#[test]
fn unsafe_code_is_allowed_in_one_module_only() {
    let root = root();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    assert!(workspace.contains("unsafe_code = \"deny\"") || workspace.contains("unsafe_code = \"forbid\""));
    let mut files = Vec::new();
    for dir in ["server", "client", "tests"] {
        walk(&root.join(dir), &mut files);
    }
    let mut allowing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file");
        let rel = file.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
        if file.file_name().is_some_and(|n| n == "Cargo.toml") {
            if text.contains("[package]") {
                assert!(text.contains("[lints]\nworkspace = true"), "{rel} does not take the workspace's lints");
            }
        } else if text.contains("allow(unsafe_code)") && rel != "tests/unsafe_code.rs" {
            allowing.push(rel);
        }
    }
    assert_eq!(allowing, [ALLOWED], "files that allow unsafe code");
}
