//! The benchmark tools' own Python (bench/goals_table.py, which turns a bench/goals.sh log into
//! the goal ratios of issue #17): its pytest suite and `mypy --strict`. Pure text in, text out:
//! no server runs here. Needs a Python with pytest and mypy: `$ARDACAT_PYTHON`, else
//! `target/interop-venv/bin/python` (tests/run-all.sh makes it). A missing tool fails the test.

use std::path::PathBuf;
use std::process::Command;

#[path = "common/python.rs"]
mod python;
use python::repo;

fn python() -> PathBuf {
    python::python_with(&["pytest", "mypy"])
}

#[test]
fn goals_table_pytest() {
    let out = Command::new(python())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_goals_table.py"])
        .current_dir(repo().join("bench"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest");
    assert!(
        python::pytest_passed(&out).is_some(),
        "pytest failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn goals_table_mypy_strict() {
    let bench = repo().join("bench");
    python::assert_mypy_strict(&python(), &bench, &[bench.join("goals_table.py"), bench.join("test_goals_table.py")]);
}
