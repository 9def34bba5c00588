#!/usr/bin/env python3
"""Self-test of the interop tools against fake_server.py. No real server is needed.

Run:  python3 tests/interop/selftest.py        (add -v to see the scenario output)

This checks that scenario.py and raw_checks.py pass against a server that follows the
assumptions they encode, with and without session tokens, and with protocol 1. It also checks
that the strict client rejects the typical protocol mistakes: a reply after the login block,
``OK`` after a plain resume, replies to ``put`` lines, and bytes after the end marker.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import raw_checks  # noqa: E402
import scenario  # noqa: E402
from amga_client import AmgaClient, CommandError, ProtocolError  # noqa: E402
from fake_server import FakeServer  # noqa: E402

VERBOSE = "-v" in sys.argv
results: list[tuple[str, bool, str]] = []


def record(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail and not ok else ""),
          flush=True)


def run_quiet(fn, *args) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = fn(*args)
    out = buf.getvalue()
    if VERBOSE:
        sys.stdout.write(out)
    return rc, out


def script_passes(name: str, fn, srv: FakeServer, extra: list[str] = ()) -> None:
    argv = ["--host", "127.0.0.1", "--port", str(srv.port), "--password", "secret", *extra]
    rc, out = run_quiet(fn, argv)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    fails = [line for line in out.splitlines() if line.startswith("FAIL")]
    record(name, rc == 0 and last.endswith(" 0 failed"), f"{last!r} {fails[:3]!r}")


def expect_protocol_error(name: str, srv_kwargs: dict, action) -> None:
    srv = FakeServer(**srv_kwargs).start()
    try:
        c = AmgaClient("127.0.0.1", srv.port, "root", "secret", timeout=5)
        try:
            action(c)
        except ProtocolError as e:
            record(name, True)
            if VERBOSE:
                print(f"     -> {e}")
        except Exception as e:  # noqa: BLE001
            record(name, False, f"raised {type(e).__name__}: {e}")
        else:
            record(name, False, "no ProtocolError raised")
        finally:
            c.close()
    finally:
        srv.stop()


class CannedClient(AmgaClient):
    """A client whose every command answers the given data lines (no socket)."""

    def __init__(self, lines: list[str]):
        super().__init__("127.0.0.1", 0)
        self.canned = lines

    def execute(self, command: str) -> list[str]:
        self.last_command = command
        return list(self.canned)


def sql_reader_checks() -> None:
    def parsed(lines: list[str], ncols: int):
        return CannedClient(lines).sqlQuery("SELECT …", ncols)

    got = parsed(["FILE", "ev", "j2", "100", "j1", ""], 2)
    record("sqlQuery: N header lines, then rows of N lines (NULL = empty line)",
           got == (["FILE", "ev"], [["j2", "100"], ["j1", ""]]), repr(got))
    got = parsed(["FILE", "ev"], 2)
    record("sqlQuery: header lines only -> no rows", got == (["FILE", "ev"], []), repr(got))
    for lines, label in ((["FILE"], "fewer lines than the header"),
                         (["FILE", "ev", "j2"], "a partial row")):
        try:
            got = parsed(lines, 2)
            record(f"sqlQuery: {label} -> ProtocolError", False, f"parsed as {got!r}")
        except ProtocolError:
            record(f"sqlQuery: {label} -> ProtocolError", True)
    try:
        CannedClient(["x"]).sqlExecute("DELETE FROM /d")
        record("sqlExecute: data lines after a write -> ProtocolError", False, "accepted")
    except ProtocolError:
        record("sqlExecute: data lines after a write -> ProtocolError", True)


def main() -> int:
    # 1. happy paths
    for kw, label in (({}, "no sessions"), ({"sessions": True}, "sessions"),
                      ({"protocol": 1}, "protocol 1")):
        srv = FakeServer(**kw).start()
        try:
            script_passes(f"scenario.py passes against the fake server ({label})",
                          scenario.main, srv)
            script_passes(f"raw_checks.py passes against the fake server ({label})",
                          raw_checks.main, srv)
        finally:
            srv.stop()

    # 2. session mechanics of the client
    srv = FakeServer(sessions=True).start()
    try:
        c = AmgaClient("127.0.0.1", srv.port, "root", "secret", timeout=5)
        c.cd("/")
        c.createdir("/selftest_s")
        c.cd("/selftest_s")
        pwd = c.pwd()
        record("client resumes sessions and keeps server-side state",
               pwd == "/selftest_s" and c.resumes >= 2 and c.sessions_issued >= 3,
               f"pwd {pwd!r}, resumes {c.resumes}, issued {c.sessions_issued}")
        c.cd("/")
        c.rmdir("/selftest_s")
        c.close()
    finally:
        srv.stop()

    # 3. wrong password surfaces as the first command's error
    srv = FakeServer().start()
    try:
        c = AmgaClient("127.0.0.1", srv.port, "root", "wrong", timeout=5)
        try:
            c.pwd()
            record("wrong password -> first command fails", False, "pwd succeeded")
        except CommandError as e:
            record("wrong password -> first command fails", e.code == 4, str(e))
        c.close()
        c = AmgaClient("127.0.0.1", srv.port, "root", "secret", timeout=5)
        try:
            c.upload("/", ["a", "b"], [("x", ["1"])])
            record("put with the wrong number of values -> client-side error 3", False,
                   "no error")
        except CommandError as e:
            record("put with the wrong number of values -> client-side error 3", e.code == 3,
                   str(e))
        c.close()
    finally:
        srv.stop()

    # 4. strict client notices server mistakes
    expect_protocol_error("strict client: reply after the login block is detected",
                          {"bad": "reply_after_login"}, lambda c: c.pwd())
    expect_protocol_error("strict client: OK after plain resume is detected",
                          {"bad": "ok_after_resume", "sessions": True},
                          lambda c: (c.pwd(), c.pwd()))

    def upload(c):
        c.createdir("/selftest_u")
        c.addattr("/selftest_u", "n", "int")
        c.upload("/selftest_u", ["n"], [("x", ["1"])])
    expect_protocol_error("strict client: replies to upload/put are detected",
                          {"bad": "reply_to_put"}, upload)
    expect_protocol_error("strict client: bytes after the end marker are detected",
                          {"bad": "trailing_bytes"}, lambda c: c.pwd())

    # 5. raw_checks notices the same mistakes
    for bad in ("reply_after_login", "reply_to_put", "trailing_bytes"):
        srv = FakeServer(bad=bad).start()
        try:
            rc, out = run_quiet(raw_checks.main, ["--host", "127.0.0.1", "--port",
                                                  str(srv.port), "--password", "secret",
                                                  "--timeout", "3"])
            record(f"raw_checks.py fails against a server with bad={bad}", rc == 1,
                   out.strip().splitlines()[-1])
        finally:
            srv.stop()
    srv = FakeServer(bad="ok_after_resume", sessions=True).start()
    try:
        rc, out = run_quiet(raw_checks.main, ["--host", "127.0.0.1", "--port", str(srv.port),
                                              "--password", "secret", "--timeout", "3"])
        record("raw_checks.py fails against a server with bad=ok_after_resume", rc == 1,
               out.strip().splitlines()[-1])
    finally:
        srv.stop()

    # 6. the native SQL reader parses replies as Belle II's client does (no server: the fake
    # models the 1.x server, which had no native SQL)
    sql_reader_checks()

    failed = sum(1 for _, ok, _ in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
