#!/usr/bin/env python3
"""Byte-level AMGA wire checks with raw sockets (amga.md §2.2, §2.4, §2.8, §9).

Run:  python3 tests/interop/raw_checks.py --host 127.0.0.1 --port 8822 [--login root]
      (password: --password or env ARDACAT_ROOT_PASSWORD)

Each check prints ``ok   ...``, ``FAIL ...`` or ``SKIP ...``. A skip is neither a pass nor a
failure. The last line is exactly ``N passed, M failed``, and the exit status is 1 if anything
failed.

What is checked, byte for byte:

* The greeting is exactly 3 lines: ``ARDA Metadata Server...``, ``Protocol <one digit>``, the
  options. Nothing more arrives until the client speaks.
* The reply to ``plain\\n\\n`` is exactly ``OK\\n``.
* Nothing at all is sent after the login block.
* ``pwd`` on a fresh login gives exactly ``0\\n/\\n\\x04\\x04``, or ``\\x04session<digits>\\x04``
  at the end if the server issues sessions. ``whoami`` gives ``0\\n<login>\\n`` plus the end
  marker.
* An unknown command gives one ``3 <msg>\\n`` status line and then the end marker. A missing
  directory gives status ``1``.
* ``upload`` and ``put`` (good or bad) get no reply. ``commit`` gives ``0\\n`` plus the end
  marker, or a non-zero status for a bad upload. Nothing else follows.
* Session resume, if the server ever issued a token: reconnect, read the greeting, send
  ``resume<id>\\n\\n``. No ``OK`` may come back, and the next command must work. If the server
  never issued a token this check is skipped with a printed note.
* A wrong password never lets a command succeed. This is skipped when no password is
  configured.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import socket
import sys
from typing import Callable

BANNER_PREFIX = b"ARDA Metadata Server"
END_RE = re.compile(rb"\x04(session(\d+))?\x04\Z")


class Failed(Exception):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Failed(msg)


class RawConn:
    """A raw socket that does the protocol steps by hand and keeps every byte."""

    def __init__(self, host: str, port: int, timeout: float, silence: float):
        self.timeout = timeout
        self.silence_t = silence
        self.sock = socket.socket(socket.AF_INET if ":" not in host else socket.AF_INET6,
                                  socket.SOCK_STREAM)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self.protocol = 0
        self.pending = b""

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_until(self, done: Callable[[bytes], bool], what: str) -> bytes:
        data = self.pending
        self.pending = b""
        while not done(data):
            try:
                chunk = self.sock.recv(1024)
            except socket.timeout:
                raise Failed(f"timeout waiting for {what}; have {data!r}") from None
            if not chunk:
                raise Failed(f"connection closed while waiting for {what}; have {data!r}")
            data += chunk
        return data

    def silence(self, t: float | None = None) -> bytes | None:
        """None if nothing arrives within t seconds; b'' if the peer closed; else the bytes."""
        r, _, _ = select.select([self.sock], [], [], self.silence_t if t is None else t)
        if not r:
            return None
        try:
            return self.sock.recv(1024)
        except OSError:
            return b""

    def expect_silence(self, what: str, t: float | None = None) -> None:
        got = self.silence(t)
        check(got is None, f"expected silence {what}, got "
                           f"{'connection close' if got == b'' else repr(got)}")

    def greeting(self) -> bytes:
        g = self.recv_until(lambda d: d.count(b"\n") >= 3, "the 3 greeting lines")
        m = re.search(rb"\nProtocol (\d)", g)
        self.protocol = int(m.group(1)) if m else 0
        return g

    def reply_complete(self, d: bytes) -> bool:
        """Status line, lines, then the end marker starting at a line boundary."""
        pos = 0
        while True:
            if pos >= len(d):
                return False
            if d[pos:pos + 1] == b"\x04" and pos > 0:
                if self.protocol < 2:
                    return True
                return d.find(b"\x04", pos + 1) >= 0
            nl = d.find(b"\n", pos)
            if nl < 0:
                return False
            pos = nl + 1

    def command(self, line: bytes) -> bytes:
        self.send(line + b"\n")
        reply = self.recv_until(self.reply_complete, f"the reply to {line!r}")
        # anything after the end marker is a protocol violation: keep it visible
        if self.protocol >= 2:
            first = self._marker_start(reply)
            end = reply.find(b"\x04", first + 1) + 1
        else:
            end = self._marker_start(reply) + 1
        if end < len(reply):
            raise Failed(f"bytes after the end marker of {line!r}: {reply[end:]!r}")
        return reply

    @staticmethod
    def _marker_start(d: bytes) -> int:
        pos = 0
        while True:
            if d[pos:pos + 1] == b"\x04" and pos > 0:
                return pos
            pos = d.find(b"\n", pos) + 1


def session_of(reply: bytes) -> int | None:
    m = END_RE.search(reply)
    return int(m.group(2)) if m and m.group(2) else None


class RawChecks:
    def __init__(self, args: argparse.Namespace):
        self.a = args
        self.passed = self.failed = self.skipped = 0
        self.tokens: list[int] = []
        self.suffix = f"_{os.getpid()}"
        self.dirname = f"/rawchk{self.suffix}"

    def step(self, name: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except (Failed, OSError) as e:
            self.failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        else:
            self.passed += 1
            print(f"ok   {name}", flush=True)

    def skip(self, name: str, why: str) -> None:
        self.skipped += 1
        print(f"SKIP {name}: {why}", flush=True)

    def conn(self) -> RawConn:
        return RawConn(self.a.host, self.a.port, self.a.timeout, self.a.silence)

    def login_block(self, password: str | None = None) -> bytes:
        pw = self.a.password if password is None else password
        block = b"0 " + self.a.login.encode()
        if pw:
            block += b"\n5 " + pw.encode()
        return block + b"\n\n"

    def logged_in(self) -> RawConn:
        c = self.conn()
        c.greeting()
        c.send(b"plain\n\n")
        ok = c.recv_until(lambda d: b"\n" in d, "OK")
        check(ok == b"OK\n", f"reply to plain: {ok!r}")
        c.send(self.login_block())
        return c

    def end(self, c: RawConn) -> bytes:
        return b"\x04\x04" if c.protocol >= 2 else b"\x04"

    def cmd(self, c: RawConn, line: str) -> bytes:
        """Run one command and note any session token. The caller must not reuse c after a
        token; the original client closes the connection at once."""
        r = c.command(line.encode())
        t = session_of(r)
        if t is not None:
            self.tokens.append(t)
        return r

    def body(self, c: RawConn, reply: bytes) -> bytes:
        """The reply without its end marker (the marker must be well formed)."""
        m = END_RE.search(reply) if c.protocol >= 2 else re.search(rb"\x04\Z", reply)
        check(m is not None, f"malformed end marker in {reply!r}")
        return reply[:m.start()]

    # ------------------------------------------------------------------ checks
    def run(self) -> int:
        print(f"info raw checks against {self.a.host}:{self.a.port} as {self.a.login!r}",
              flush=True)
        self.step("greeting: exactly 3 lines, banner, 'Protocol <digit>', then silence",
                  self.check_greeting)
        self.step("plain\\n\\n -> exactly OK\\n, then silence", self.check_ok)
        self.step("login block gets no reply at all", self.check_login_silence)
        self.step("pwd -> exactly 0\\n/\\n\\x04\\x04 (or \\x04session<id>\\x04)", self.check_pwd)
        self.step("whoami -> 0\\n<login>\\n + end marker", self.check_whoami)
        self.step("unknown command -> '3 <msg>\\n' + end marker, nothing else",
                  self.check_unknown)
        self.step("cd to a missing directory -> status 1", self.check_cd_missing)
        self.step("upload/put lines get no reply; commit -> 0 + end marker", self.check_upload)
        self.step("bad put gets no reply; commit -> non-zero status + end marker",
                  self.check_bad_upload)
        if self.a.password:
            self.step("wrong password never lets a command succeed", self.check_bad_password)
        else:
            self.skip("wrong password check", "no password configured")
        if self.tokens:
            self.step("session resume: resume<id>\\n\\n, no OK, no login, command works",
                      self.check_resume)
        else:
            self.skip("session resume", "the server never issued a session token "
                                        "(no \\x04session<id>\\x04 seen)")
        self.cleanup()
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1

    def check_greeting(self) -> None:
        c = self.conn()
        try:
            g = c.greeting()
            c.expect_silence("after the greeting (before the client spoke)")
            lines = g.split(b"\n")
            print(f"info greeting {g!r}", flush=True)
            check(g.count(b"\n") == 3 and g.endswith(b"\n"), f"not exactly 3 lines: {g!r}")
            check(lines[0].startswith(BANNER_PREFIX), f"banner {lines[0]!r}")
            check(re.fullmatch(rb"Protocol \d", lines[1]) is not None,
                  f"line 2 must be 'Protocol <one digit>': {lines[1]!r}")
            check(b"\r" not in g, "CR in greeting")
            check(c.protocol >= 1, f"protocol {c.protocol}")
        finally:
            c.close()

    def check_ok(self) -> None:
        c = self.conn()
        try:
            c.greeting()
            c.send(b"plain\n\n")
            ok = c.recv_until(lambda d: b"\n" in d, "OK")
            check(ok == b"OK\n", f"expected b'OK\\n', got {ok!r}")
            c.expect_silence("after OK (before the login block)")
        finally:
            c.close()

    def check_login_silence(self) -> None:
        c = self.logged_in()
        try:
            c.expect_silence("after the login block", max(self.a.silence, 0.5))
        finally:
            c.close()

    def check_pwd(self) -> None:
        c = self.logged_in()
        try:
            r = self.cmd(c, "pwd")
            if session_of(r) is None:
                check(r == b"0\n/\n" + self.end(c), f"pwd reply {r!r}")
            else:
                check(re.fullmatch(rb"0\n/\n\x04session\d+\x04", r) is not None,
                      f"pwd reply {r!r}")
                print(f"info pwd reply carried a session token: {r!r}", flush=True)
        finally:
            c.close()

    def check_whoami(self) -> None:
        c = self.logged_in()
        try:
            r = self.cmd(c, "whoami")
            check(self.body(c, r) == b"0\n" + self.a.login.encode() + b"\n", f"whoami {r!r}")
        finally:
            c.close()

    def check_unknown(self) -> None:
        c = self.logged_in()
        try:
            r = self.cmd(c, "frobnicate_xyz")
            check(r.startswith(b"3 "), f"reply {r!r} does not start with b'3 '")
            check(re.fullmatch(rb"3 [^\n\x04]*\n", self.body(c, r)) is not None,
                  f"error reply must be one status line then the end marker: {r!r}")
        finally:
            c.close()

    def check_cd_missing(self) -> None:
        c = self.logged_in()
        try:
            r = self.cmd(c, f"cd /no_such_dir{self.suffix}")
            check(re.fullmatch(rb"1( [^\n]*)?\n", self.body(c, r)) is not None,
                  f"cd missing reply {r!r}")
        finally:
            c.close()

    def _setup_dir(self) -> None:
        """createdir + addattr on their own connections (tokens force reconnects anyway)."""
        for line in (f"createdir {self.dirname}", f"addattr {self.dirname} n int"):
            c = self.logged_in()
            try:
                r = self.cmd(c, line)
                body = self.body(c, r)
                check(body == b"0\n" or body.startswith((b"15 ", b"16 ")),
                      f"{line}: {r!r}")
            finally:
                c.close()

    def check_upload(self) -> None:
        self._setup_dir()
        c = self.logged_in()
        try:
            c.send(f"upload {self.dirname} n\n".encode())
            c.expect_silence("after the upload line")
            c.send(b"put x1 1\n")
            c.expect_silence("after a put line")
            c.send(b"put x2 2\n")
            c.expect_silence("after a put line")
            r = self.cmd(c, "commit")
            check(self.body(c, r) == b"0\n", f"commit reply {r!r}")
            if session_of(r) is None:
                c.expect_silence("after the commit reply")
        finally:
            c.close()
        c = self.logged_in()
        try:
            r = self.cmd(c, f"getattr {self.dirname}/x1 n")
            body = self.body(c, r)
            check(body in (b"0\nx1\n1\n", f"0\n{self.dirname}/x1\n1\n".encode()),
                  f"getattr after upload {r!r}")
        finally:
            c.close()

    def check_bad_upload(self) -> None:
        self._setup_dir()
        c = self.logged_in()
        try:
            c.send(f"upload {self.dirname} n\n".encode())
            c.expect_silence("after the upload line")
            c.send(b"put y1 1\n")
            c.send(b"put y2 notanint\n")
            c.expect_silence("after a bad put line (the error belongs to commit)")
            c.send(b"put y3 3\n")
            c.expect_silence("after a put line")
            r = self.cmd(c, "commit")
            body = self.body(c, r)
            check(re.fullmatch(rb"[1-9]\d*( [^\n]*)?\n", body) is not None,
                  f"commit of a bad upload must give one non-zero status line: {r!r}")
            print(f"info bad upload commit reply {r!r}", flush=True)
            if session_of(r) is None:
                c.expect_silence("after the commit reply")
        finally:
            c.close()
        c = self.logged_in()
        try:
            r = self.cmd(c, f"getattr {self.dirname}/y* n")
            body = self.body(c, r)
            check(body == b"0\n" or body.startswith(b"1"),
                  f"entries of the failed upload exist: {r!r}")
        finally:
            c.close()

    def check_bad_password(self) -> None:
        c = self.conn()
        try:
            c.greeting()
            c.send(b"plain\n\n")
            c.recv_until(lambda d: b"\n" in d, "OK")
            c.send(self.login_block(password=self.a.password + "-wrong"))
            early = c.silence(max(self.a.silence, 0.5))
            if early == b"":
                return  # closed: acceptable
            try:
                c.send(b"pwd\n")
                r = c.recv_until(lambda d: b"\n" in d, "a status line")
            except (Failed, OSError):
                return  # closed: acceptable
            r = (early or b"") + r
            check(not r.startswith(b"0"), f"command succeeded after a wrong password: {r!r}")
            print(f"info wrong password reply {r!r}", flush=True)
        finally:
            c.close()

    def check_resume(self) -> None:
        # get a fresh token: cd somewhere, so the resumed session can show its state
        c = self.logged_in()
        try:
            r = self.cmd(c, f"cd {self.dirname}")
        finally:
            c.close()
        token = session_of(r) or self.tokens[-1]
        c = self.conn()
        try:
            c.greeting()
            c.send(f"resume{token}\n\n".encode())
            c.expect_silence("after resume<id> (plain resume sends no OK)",
                             max(self.a.silence, 0.5))
            r = self.cmd(c, "pwd")
            body = self.body(c, r)
            check(body.startswith(b"0\n"), f"pwd after resume: {r!r}")
            print(f"info pwd after resume: {r!r} (cd {self.dirname} was sent before it)",
                  flush=True)
        finally:
            c.close()

    def cleanup(self) -> None:
        for line in (f"rm {self.dirname}/*", f"removeattr {self.dirname} n",
                     f"rmdir {self.dirname}"):
            try:
                c = self.logged_in()
                try:
                    self.cmd(c, line)
                finally:
                    c.close()
            except (Failed, OSError):
                pass


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8822)
    p.add_argument("--login", default="root")
    p.add_argument("--password", default=os.environ.get("ARDACAT_ROOT_PASSWORD", ""))
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument("--silence", type=float, default=0.3,
                   help="seconds to wait when checking that the server sends nothing")
    return RawChecks(p.parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
