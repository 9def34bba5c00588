"""Test harness: the real ``ardacat-server`` binary on loopback ports, on a fresh database.

Environment:
  ARDACAT_SERVER_BIN    the server binary (default: target/debug/ardacat-server of the repository)
  ARDACAT_TEST_BACKEND  ``sqlite`` (default) or ``postgres``: a fresh database per test session
                        (PostgreSQL on 127.0.0.1:5432, user postgres, made and dropped with psql;
                        ARDACAT_TEST_PG_HOST / _PORT / _USER override)
PostgreSQL is never optional when asked for: if it cannot be reached the session fails.
"""

from __future__ import annotations

import itertools
import os
import secrets
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator, List, Optional

import pytest

import ardacat

ROOT_PASSWORD = "py-root-secret"
REPO = Path(__file__).resolve().parents[3]
# A user's own ~/.mdclient.config must not leak into the tests.
os.environ["HOME"] = tempfile.mkdtemp(prefix="ardacat-pytest-home-")
os.environ.pop("ARDACAT_PASSWORD", None)


def backend() -> str:
    b = os.environ.get("ARDACAT_TEST_BACKEND", "sqlite")
    if b not in ("sqlite", "postgres"):
        raise RuntimeError(f"ARDACAT_TEST_BACKEND={b!r}: sqlite or postgres")
    return b


def _psql(sql: str) -> None:
    host = os.environ.get("ARDACAT_TEST_PG_HOST", "127.0.0.1")
    port = os.environ.get("ARDACAT_TEST_PG_PORT", "5432")
    user = os.environ.get("ARDACAT_TEST_PG_USER", "postgres")
    subprocess.run(["psql", "-h", host, "-p", port, "-U", user, "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                    "-q", "-c", sql], check=True, capture_output=True)


class Databases:
    """Fresh databases for one test session; all removed at the end."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="ardacat-pytest-")
        self.pg: List[str] = []
        self.n = itertools.count()

    def fresh(self) -> str:
        if backend() == "postgres":
            name = f"ardacat_py_{secrets.token_hex(8)}"
            _psql(f"CREATE DATABASE {name}")
            self.pg.append(name)
            host = os.environ.get("ARDACAT_TEST_PG_HOST", "127.0.0.1")
            port = os.environ.get("ARDACAT_TEST_PG_PORT", "5432")
            user = os.environ.get("ARDACAT_TEST_PG_USER", "postgres")
            return f"postgres://{user}@{host}:{port}/{name}"
        return f"sqlite:{self.tmp.name}/cat{next(self.n)}.db"

    def cleanup(self) -> None:
        for name in self.pg:
            try:
                _psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            except subprocess.CalledProcessError:
                pass
        self.tmp.cleanup()


class Server:
    """A running server process."""

    def __init__(self, database: str, extra: Optional[List[str]] = None) -> None:
        binary = os.environ.get("ARDACAT_SERVER_BIN", str(REPO / "target" / "debug" / "ardacat-server"))
        env = dict(os.environ, ARDACAT_ROOT_PASSWORD=ROOT_PASSWORD, RUST_LOG="warn")
        env.pop("ARDACAT_CONFIG", None)
        self.database = database
        self.proc = subprocess.Popen(
            [binary, "--database", database, "--tcp-port", "0", "--http-port", "0", *(extra or [])],
            stdout=subprocess.PIPE, env=env, text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "tcp" not in words:
            self.stop()
            raise RuntimeError(f"the server did not start: {line!r}")
        self.host, _, port = words["tcp"].rpartition(":")
        self.port = int(port)
        self.password = ROOT_PASSWORD

    def connect(self, **kw: object) -> ardacat.Connection:
        args: dict[str, Any] = dict(login="root", password=ROOT_PASSWORD)
        args.update(kw)
        return ardacat.connect(self.host, self.port, **args)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="session")
def databases() -> Iterator[Databases]:
    d = Databases()
    yield d
    d.cleanup()


@pytest.fixture(scope="session")
def server(databases: Databases) -> Iterator[Server]:
    s = Server(databases.fresh())
    yield s
    s.stop()


@pytest.fixture
def conn(server: Server) -> Iterator[ardacat.Connection]:
    with server.connect() as c:
        yield c


_names = itertools.count()


@pytest.fixture
def coll(conn: ardacat.Connection, request: pytest.FixtureRequest) -> str:
    """A fresh collection for one test."""
    path = f"/t_{request.node.name.replace('[', '_').replace(']', '')}_{next(_names)}"
    conn.mkdir(path)
    return path
