//! The Python that the tests of Python code run: `$ARDACAT_PYTHON`, else the venv that
//! tests/run-all.sh makes (`target/interop-venv`). A Python without the modules a test needs
//! fails the test; nothing is skipped.

use std::path::PathBuf;
use std::process::Command;

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Python to run, checked to import every module of `modules`.
pub fn python_with(modules: &[&str]) -> PathBuf {
    let py = std::env::var_os("ARDACAT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/interop-venv/bin/python"));
    let ok =
        Command::new(&py).args(["-c", &format!("import {}", modules.join(", "))]).status().is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} must have {} (tests/run-all.sh installs them into target/interop-venv, or set ARDACAT_PYTHON)",
        py.display(),
        modules.join(", ")
    );
    py
}
