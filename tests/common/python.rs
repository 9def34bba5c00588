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

/// `mypy --strict` over `paths` (with `mypypath` for imports), as a test's assertion.
pub fn assert_mypy_strict(py: &std::path::Path, mypypath: &std::path::Path, paths: &[PathBuf]) {
    let out = Command::new(py)
        .args(["-m", "mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null"])
        .args(paths)
        .env("MYPYPATH", mypypath)
        .output()
        .expect("run mypy");
    assert!(
        out.status.success(),
        "mypy --strict failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// pytest's summary line of a run's output, if the run passed: a zero exit (pytest exits 5 when
/// it ran no test) and a summary with passes and no failure.
pub fn pytest_passed(out: &std::process::Output) -> Option<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary =
        stdout.lines().rev().find(|l| l.contains(" passed") || l.contains(" failed") || l.contains("no tests"))?;
    (out.status.success() && summary.contains(" passed") && !summary.contains("failed")).then(|| summary.to_owned())
}
