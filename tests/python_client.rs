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
    let summary = python::pytest_passed(&out);
    assert!(
        summary.is_some(),
        "pytest on {backend} failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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
    let base = repo().join("client/python");
    // The tests are Python code of the project too: typed like the package.
    let paths = [base.join("src/ardacat"), base.join("examples/jobs.py"), base.join("tests")];
    python::assert_mypy_strict(&python(), &base.join("src"), &paths);
}
