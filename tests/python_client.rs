//! The Python client package (client/python) against the real server binary: `pip install` of
//! the package into a scratch directory (with its `py.typed`), its pytest suite on SQLite and on
//! PostgreSQL (each run makes and drops its own databases), and `mypy --strict` over the package,
//! its example and its tests. Needs a Python with pytest, cryptography, mypy, setuptools and wheel:
//! `$ARDACAT_PYTHON`, else `target/interop-venv/bin/python` (tests/run-all.sh makes it). A
//! missing tool fails the test; nothing is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/python.rs"]
mod python;
use python::repo;

fn python() -> PathBuf {
    python::python_with(&["pytest", "cryptography", "mypy", "setuptools", "wheel"])
}

/// `pip install ./client/python` into a scratch directory; returns it (for PYTHONPATH).
fn install(py: &Path, dir: &Path) -> PathBuf {
    let target = dir.join("site");
    let out = Command::new(py)
        .args(["-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-cache-dir", "--target"])
        .arg(&target)
        .arg(repo().join("client/python"))
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .output()
        .expect("run pip");
    assert!(out.status.success(), "pip install ./client/python failed:\n{}", String::from_utf8_lossy(&out.stderr));
    for file in ["ardacat/__init__.py", "ardacat/py.typed", "ardacat/aio.py", "ardacat/amga/mdclient.py"] {
        assert!(target.join(file).is_file(), "the installed package lacks {file}");
    }
    target
}

fn pytest(backend: &str) {
    let py = python();
    let scratch = tempfile::tempdir().expect("temp dir");
    let site = install(&py, scratch.path());
    let out = Command::new(&py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"])
        .arg(repo().join("client/python/tests"))
        .current_dir(scratch.path())
        .env("PYTHONPATH", &site)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("ARDACAT_SERVER_BIN", env!("CARGO_BIN_EXE_ardacat-server"))
        .env("ARDACAT_TEST_BACKEND", backend)
        .output()
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary =
        stdout.lines().rev().find(|l| l.contains(" passed") || l.contains(" failed") || l.contains("no tests"));
    // pytest exits 5 when it ran no test: any non-zero exit fails, and so does a run with no pass.
    let passed = out.status.success() && summary.is_some_and(|s| s.contains(" passed") && !s.contains("failed"));
    assert!(passed, "pytest on {backend} failed ({}):\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}", out.status);
    eprintln!("python client on {backend}: {}", summary.unwrap_or_default());
}

#[test]
fn pytest_sqlite() {
    pytest("sqlite")
}

#[test]
fn pytest_postgres() {
    pytest("postgres")
}

#[test]
fn mypy_strict() {
    let py = python();
    let base = repo().join("client/python");
    let out = Command::new(&py)
        .args(["-m", "mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null"])
        .arg(base.join("src/ardacat"))
        .arg(base.join("examples/jobs.py"))
        // The tests are Python code of the project too: typed like the package.
        .arg(base.join("tests"))
        .env("MYPYPATH", base.join("src"))
        .output()
        .expect("run mypy");
    assert!(
        out.status.success(),
        "mypy --strict failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
