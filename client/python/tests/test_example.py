"""client/python/examples/jobs.py runs as written against a fresh server (settings from
./mdclient.config, the password from ARDACAT_PASSWORD), twice (the second run reuses the schema)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Databases, Server

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "jobs.py"


def test_jobs_example(databases: Databases, tmp_path: Path) -> None:
    s = Server(databases.fresh())
    try:
        (tmp_path / "mdclient.config").write_text(f"Host = {s.host}\nPort = {s.port}\n")
        env = dict(os.environ, ARDACAT_PASSWORD=s.password)
        # The example runs in another directory: a relative PYTHONPATH (as in docs/python.md's
        # "PYTHONPATH=client/python/src …") must still find the package there.
        if env.get("PYTHONPATH"):
            paths = env["PYTHONPATH"].split(os.pathsep)
            env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths)
        for run in (1, 2):
            out = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            assert "registered 10 jobs" in out.stdout
            lines = out.stdout.splitlines()
            assert len([line for line in lines if line.startswith("job")]) == 10 * run
            assert any(line.startswith("done: ") for line in lines)
            assert sum(line.startswith("top:") for line in lines) == 3
        assert "job1 " in out.stdout and "running" in out.stdout
    finally:
        s.stop()
