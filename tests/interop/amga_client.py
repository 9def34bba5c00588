"""Independent AMGA (ARDA Metadata Server) TCP-protocol client for interoperability tests.

This module is written from the protocol description in the project's AMGA reference
(amga.md, sections 2 and 8.1). It deliberately puts the same bytes on the wire, in the same
order and with the same waiting behaviour, as the original 2007 Python ``mdclient``. The point is
to catch the case where the project's Rust client and Rust server agree on a mistake that the
original client would trip over. It uses the standard library only (Python 3.11).

What goes over the wire, and when it reads
------------------------------------------

Fresh connection:

1. TCP connect, with ``TCP_NODELAY`` set before connecting.
2. Read in 1024-byte blocks until at least three ``\\n`` have arrived (banner, ``Protocol N``,
   options). Line 1 must start with ``ARDA Metadata Server``. The protocol version is the single
   character after the first ``\\nProtocol `` and must be a digit.
3. Send ``plain\\n\\n``, then read the ``OK\\n`` line.
4. Send ``0 <login>\\n`` plus ``5 <password>\\n`` (only if a password is set), then ``\\n``.
   **Send nothing more and read nothing.** The next line read is the status line of the
   first command.

Resumed connection (the previous reply ended ``\\x04session<id>\\x04``): steps 1-2, then send
``resume<id>\\n\\n``. There is **no** ``OK`` to read and **no** login block.

Each command: send ``<command line>\\n``. Read the status line ``<code>[ <text>]``.

* If ``code != 0``: read and discard up to the end marker, then raise
  ``CommandError(code, text)``.
* If ``code == 0``: the data lines run up to the end marker. For protocol 2 or later the end
  marker is ``\\x04<payload>\\x04``, with a payload that is empty or ``session<digits>``. Protocol
  0 and 1 use a single ``\\x04``.

A session token makes the client close the socket at once. The next command reconnects and
resumes.

Upload mode: ``upload <coll> <attrs>`` and every ``put <entry> <values>`` line are sent without
reading anything, as the original does. Only the final ``commit`` (or ``abort``) reads a status
line.

Quoting follows the original. Command words, paths, attribute names, types and ``put`` values go
on the wire as they are. *Values* in ``addentry``/``setattr`` and the expressions and conditions
in ``find``/``selectattr``/``updateattr`` are always wrapped in single quotes, with any embedded
``'`` sent as ``\\'``. ``setattr`` sends non-string (for example int) values unquoted, as the
original does.

Strict mode (the default)
-------------------------

The original client silently throws away bytes it did not expect. It discards anything after an
end marker, and it never reads replies to ``put``. Those same bytes would later throw a real
client out of step. With ``strict=True`` this client checks the following and raises
``ProtocolError`` when one fails. None of the checks changes what is sent, or when.

* The greeting is exactly 3 lines and nothing follows it.
* The reply to ``plain`` is exactly ``OK\\n``.
* Data lines are ``\\n``-terminated and contain no EOT.
* The end-marker payload is empty or ``session<digits>``.
* No bytes follow the end marker.
* Nothing is waiting on the socket when a command is about to be sent.
* The server stays silent after ``upload``/``put`` lines (checked with a short timeout just
  before ``commit``).
"""

from __future__ import annotations

import os
import select
import socket
import sys
from typing import Callable, Iterable, Sequence

EOT = b"\x04"
CAN = b"\x18"
BANNER_PREFIX = "ARDA Metadata Server"
RECV_SIZE = 1024  # the original reads in 1024-byte blocks

__all__ = [
    "AmgaClient",
    "AmgaError",
    "CommandError",
    "ProtocolError",
    "quote",
    "BANNER_PREFIX",
]


class AmgaError(Exception):
    """Base class for everything this module raises."""


class ProtocolError(AmgaError):
    """The server broke the wire protocol as the original client expects it."""


class CommandError(AmgaError):
    """A command returned a non-zero status (or the connection could not be made: code -1).

    Attributes: ``code`` (int), ``msg`` (text after the code on the status line), ``command``
    (the command line sent), ``extra`` (any lines the server sent between the status line and
    the end marker; normally none), ``cancelled`` (True if the error arrived as an inline CAN
    inside a successful reply).
    """

    def __init__(self, code: int, msg: str, command: str = "", extra: Sequence[str] = (),
                 cancelled: bool = False):
        self.code = code
        self.msg = msg
        self.command = command
        self.extra = list(extra)
        self.cancelled = cancelled
        text = f"{code} {msg}" if msg else str(code)
        if command:
            text += f". Command was: {command}"
        super().__init__(text)


def quote(value: object, always: bool = True) -> str:
    """Quote one argument value the way the original client does.

    The value is wrapped in single quotes and every ``'`` inside it becomes ``\\'``. Backslashes
    are left alone, as in the original. The original quotes string values unconditionally. With
    ``always=False`` only values that contain whitespace or quotes (or are empty) are wrapped.
    """
    s = str(value)
    if always or s == "" or any(c in s for c in " \t'\""):
        return "'" + s.replace("'", "\\'") + "'"
    return s


def _decode(b: bytes) -> str:
    return b.decode("utf-8", errors="surrogateescape")


def _encode(s: str) -> bytes:
    return s.encode("utf-8", errors="surrogateescape")


class AmgaClient:
    """One logical AMGA client: one login, possibly several TCP connections (sessions).

    ``AmgaClient(host, port, login, password)``. Connects lazily on the first command (like the
    original), or explicitly with ``connect()``.

    Parameters beyond the original's: ``timeout`` (socket timeout in seconds for every blocking
    read), ``strict`` (see module docstring), ``silence_timeout`` (how long the strict silence
    checks wait), ``trace`` (True to print every byte block to stderr, or a callable taking one
    string).
    """

    def __init__(self, host: str, port: int, login: str = "anonymous", password: str = "",
                 *, keepalive: bool = True, timeout: float = 30.0, strict: bool = True,
                 silence_timeout: float = 0.3,
                 trace: bool | Callable[[str], None] | None = None):
        self.host = host
        self.port = int(port)
        self.login = login
        self.password = password or ""
        self.keepalive = keepalive
        self.timeout = timeout
        self.strict = strict
        self.silence_timeout = silence_timeout
        if trace is True:
            self._trace: Callable[[str], None] | None = lambda s: print(s, file=sys.stderr)
        else:
            self._trace = trace or None

        self.sock: socket.socket | None = None
        self.buf = b""
        self.greeting = ""          # raw greeting text of the latest connection
        self.greeting_lines: list[str] = []
        self.protocol = 0           # protocol digit of the latest connection
        self.session_id: int | None = None  # token to resume with on the next connect
        self.last_command = ""
        # statistics, for reports
        self.connects = 0
        self.resumes = 0
        self.sessions_issued = 0
        self._upload_nattrs: int | None = None

    # ------------------------------------------------------------------ connection
    def _log(self, direction: str, data: bytes) -> None:
        if self._trace:
            self._trace(f"{direction} {data!r}")

    def connect(self) -> None:
        """Open a TCP connection and do the handshake (fresh login or session resume)."""
        self.close()
        sock = None
        err: Exception | None = None
        try:
            addrs = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except OSError as e:
            raise CommandError(-1, f"Cannot connect: {e}") from None
        for family, stype, proto, _cn, addr in addrs:
            try:
                sock = socket.socket(family, stype, proto)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(self.timeout)
                sock.connect(addr)
                break
            except OSError as e:  # try the next address
                err = e
                if sock is not None:
                    sock.close()
                sock = None
        if sock is None:
            raise CommandError(-1, f"Cannot connect: {err}")
        self.sock = sock
        self.buf = b""
        self.connects += 1

        # 2. greeting: read until at least three newlines
        greeting = b""
        while greeting.count(b"\n") < 3:
            data = self._recv()
            if not data:
                self.close()
                raise CommandError(-1, "Cannot connect (connection closed during greeting: "
                                       f"{greeting!r})")
            greeting += data
        text = _decode(greeting)
        self.greeting = text
        lines = text.split("\n")
        self.greeting_lines = lines[:3]
        if self.strict and (greeting.count(b"\n") != 3 or not greeting.endswith(b"\n")):
            raise ProtocolError(f"greeting must be exactly 3 lines, got {greeting!r}")
        if not lines[0].startswith(BANNER_PREFIX):
            raise ProtocolError(f"greeting line 1 does not start with {BANNER_PREFIX!r}: "
                                f"{lines[0]!r}")
        pos = text.find("\nProtocol ")
        if pos < 0:
            if self.strict:
                raise ProtocolError(f"no '\\nProtocol ' in greeting {text!r}")
            self.protocol = 0
        else:
            digit = text[pos + 10:pos + 11]
            if not digit.isdigit():
                raise ProtocolError(f"protocol version is not a single digit: {text!r}")
            if self.strict and text[pos + 11:pos + 12] != "\n":
                raise ProtocolError(f"protocol version must be exactly one digit: {text!r}")
            self.protocol = int(digit)

        if self.session_id is not None:
            # 4. resume: no OK to read, no login block
            self._send(_encode(f"resume{self.session_id}\n\n"))
            self.resumes += 1
            return

        # 3. plain + OK
        self._send(b"plain\n\n")
        ok = b""
        while b"\n" not in ok:
            data = self._recv()
            if not data:
                self.close()
                raise CommandError(-1, f"Cannot connect (closed before OK, got {ok!r})")
            ok += data
        if self.strict and ok != b"OK\n":
            raise ProtocolError(f"expected exactly b'OK\\n' after 'plain', got {ok!r}")
        if not ok.startswith(b"OK"):
            raise ProtocolError(f"expected OK after 'plain', got {ok!r}")

        # 5. login block, then silence (nothing is read)
        block = "0 " + self.login
        if self.password:
            block += "\n5 " + self.password
        block += "\n\n"
        self._send(_encode(block))

    def close(self) -> None:
        """Close the TCP connection (a pending session token is kept for the next command)."""
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None
        self.buf = b""

    def __enter__(self) -> "AmgaClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ raw I/O
    def _send(self, data: bytes) -> None:
        assert self.sock is not None
        self._log("C>", data)
        self.sock.sendall(data)

    def _recv(self) -> bytes:
        assert self.sock is not None
        try:
            data = self.sock.recv(RECV_SIZE)
        except socket.timeout as e:
            raise ProtocolError(f"timed out after {self.timeout}s waiting for the server "
                                f"(buffer {self.buf!r}, command {self.last_command!r})") from e
        self._log("S<", data)
        return data

    def _fill(self, what: str) -> None:
        data = self._recv()
        if not data:
            self.close()
            raise ProtocolError(f"connection closed by server while reading {what} "
                                f"(command {self.last_command!r})")
        self.buf += data

    def _read_line(self, what: str) -> str:
        while True:
            idx = self.buf.find(b"\n")
            if idx >= 0:
                raw = self.buf[:idx]
                if self.strict and EOT in raw:
                    raise ProtocolError(f"EOT inside a line while reading {what}: {raw!r} "
                                        f"(command {self.last_command!r})")
                self.buf = self.buf[idx + 1:]
                return _decode(raw)
            if self.buf.startswith(EOT) or (self.strict and EOT in self.buf):
                raise ProtocolError(f"end marker where {what} was expected: {self.buf!r} "
                                    f"(command {self.last_command!r})")
            self._fill(what)

    def _at_end_marker(self) -> bool:
        while not self.buf:
            self._fill("a data line or the end marker")
        return self.buf.startswith(EOT)

    def _consume_end_marker(self) -> None:
        """Buffer starts with EOT: consume the end marker and handle a session token."""
        if self.protocol >= 2:
            while self.buf.find(EOT, 1) < 0:
                self._fill("the end marker")
            j = self.buf.find(EOT, 1)
            payload, rest = self.buf[1:j], self.buf[j + 1:]
        else:
            payload, rest = b"", self.buf[1:]
        self.buf = b""
        if self.strict and rest:
            raise ProtocolError(f"unsolicited bytes after the end marker: {rest!r} "
                                f"(command {self.last_command!r})")
        if payload.startswith(b"session") and payload[7:].isdigit():
            self.session_id = int(payload[7:])
            self.sessions_issued += 1
            self.close()  # the original closes at once and resumes on the next command
        else:
            if self.strict and payload:
                raise ProtocolError(f"end-marker payload must be empty or session<digits>, "
                                    f"got {payload!r}")
            self.session_id = None

    def _expect_silence(self, what: str, timeout: float | None = None) -> None:
        """Strict check: nothing arrives within ``timeout`` seconds."""
        if self.sock is None:
            return
        t = self.silence_timeout if timeout is None else timeout
        r, _, _ = select.select([self.sock], [], [], t)
        if not r:
            return
        data = self.sock.recv(RECV_SIZE)
        self._log("S<", data)
        if data:
            raise ProtocolError(f"server sent unsolicited bytes {what}: {data!r}")
        self.close()
        raise ProtocolError(f"server closed the connection {what}")

    def _ensure_connected(self) -> None:
        if not self.keepalive:
            self.close()
        if self.sock is None:
            self.connect()
        elif self.strict:
            # anything already waiting would be read as this command's reply by the original
            r, _, _ = select.select([self.sock], [], [], 0)
            if r:
                data = self.sock.recv(RECV_SIZE, socket.MSG_PEEK)
                if data:
                    raise ProtocolError(f"unsolicited bytes waiting before command "
                                        f"{self.last_command!r}: {data!r}")
                self.close()
                raise ProtocolError("server closed the idle connection (no session token "
                                    "was issued)")

    # ------------------------------------------------------------------ commands
    def send_nowait(self, command: str) -> None:
        """Send one command line and read nothing (``upload``/``put`` behaviour)."""
        if "\n" in command:
            raise ValueError("command lines cannot contain a newline")
        self._ensure_connected()
        self.last_command = command
        self.buf = b""
        self._send(_encode(command) + b"\n")

    def execute(self, command: str) -> list[str]:
        """Send one command line and return its data lines; raise CommandError on failure."""
        self.send_nowait(command)
        return self._read_reply(command)

    def _read_reply(self, command: str) -> list[str]:
        status = self._read_line("the status line")
        head, _, msg = status.partition(" ")
        try:
            code = int(head)
        except ValueError:
            raise ProtocolError(f"status line is not '<int>[ msg]': {status!r} "
                                f"(command {command!r})") from None
        if code != 0:
            extra = []
            while not self._at_end_marker():
                extra.append(self._read_line("error reply lines"))
            self._consume_end_marker()
            raise CommandError(code, msg, command, extra)
        lines: list[str] = []
        while not self._at_end_marker():
            line = self._read_line("a data line")
            if line.startswith("\x18"):
                # server cancel inline: CAN <code> <comment>, then the end marker
                h, _, m = line[1:].strip().partition(" ")
                while not self._at_end_marker():
                    self._read_line("cancel trailer")
                self._consume_end_marker()
                try:
                    c = int(h)
                except ValueError:
                    c = -2
                raise CommandError(c, m, command, lines, cancelled=True)
            lines.append(line)
        self._consume_end_marker()
        return lines

    def _one_line(self, command: str) -> str:
        lines = self.execute(command)
        if len(lines) != 1:
            raise ProtocolError(f"{command!r} must return exactly 1 line, got {lines!r}")
        return lines[0]

    @staticmethod
    def _group(lines: list[str], n: int, command: str) -> list[list[str]]:
        if n <= 0 or len(lines) % n:
            raise ProtocolError(f"{command!r}: {len(lines)} lines is not a multiple of {n}: "
                                f"{lines!r}")
        return [lines[i:i + n] for i in range(0, len(lines), n)]

    # navigation
    def pwd(self) -> str:
        return self._one_line("pwd")

    def whoami(self) -> str:
        return self._one_line("whoami")

    def cd(self, directory: str) -> list[str]:
        return self.execute("cd " + directory)

    # directories
    def createdir(self, path: str, plain: bool = False) -> list[str]:
        return self.execute("createdir " + path + (" plain" if plain else ""))

    def rmdir(self, path: str) -> list[str]:
        return self.execute("rmdir " + path)

    def dir(self, path: str) -> list[tuple[str, str]]:
        """``dir``: per item 2 lines, name then type (``collection``/``entry``)."""
        cmd = "dir " + path
        return [(a, b) for a, b in self._group(self.execute(cmd), 2, cmd)]

    # attributes
    def addattr(self, path: str, name: str, typ: str) -> list[str]:
        return self.execute(f"addattr {path} {name} {typ}")

    def removeattr(self, path: str, name: str) -> list[str]:
        return self.execute(f"removeattr {path} {name}")

    def listattr(self, path: str) -> list[tuple[str, str]]:
        """``listattr``: per attribute 2 lines, name then type."""
        cmd = "listattr " + path
        return [(a, b) for a, b in self._group(self.execute(cmd), 2, cmd)]

    # entries
    def addentry(self, path: str, values: Iterable[tuple[str, object]] | dict = ()) -> list[str]:
        items = values.items() if isinstance(values, dict) else values
        cmd = "addentry " + path
        for k, v in items:
            cmd += " " + k + " " + quote(str(v))
        return self.execute(cmd)

    def addentries(self, paths: Iterable[str]) -> list[str]:
        return self.execute("addentries" + "".join(" " + p for p in paths))

    def setattr(self, pattern: str, values: Iterable[tuple[str, object]] | dict) -> list[str]:
        items = values.items() if isinstance(values, dict) else values
        cmd = "setattr " + pattern
        for k, v in items:
            cmd += " " + k + " " + (quote(v) if isinstance(v, str) else str(v))
        return self.execute(cmd)

    def clearattr(self, path: str, name: str) -> list[str]:
        return self.execute(f"clearattr {path} {name}")

    def getattr(self, pattern: str, attrs: Sequence[str]) -> list[tuple[str, list[str]]]:
        """``getattr``: per entry 1 name line then one line per attribute (NULL = empty)."""
        cmd = "getattr " + pattern + "".join(" " + a for a in attrs)
        return [(g[0], g[1:]) for g in self._group(self.execute(cmd), 1 + len(attrs), cmd)]

    def rm(self, pattern: str) -> list[str]:
        return self.execute("rm " + pattern)

    # queries
    def find(self, pattern: str, condition: str) -> list[str]:
        return self.execute("find " + pattern + " " + quote(condition))

    def selectattr(self, exprs: Sequence[str], condition: str) -> list[list[str]]:
        cmd = "selectattr" + "".join(" " + e for e in exprs) + " " + quote(condition)
        return self._group(self.execute(cmd), len(exprs), cmd)

    def updateattr(self, pattern: str, updates: Iterable[tuple[str, str]],
                   condition: str) -> list[str]:
        cmd = "updateattr " + pattern
        for attr, expr in updates:
            cmd += " " + attr + " " + quote(expr)
        cmd += " " + quote(condition)
        return self.execute(cmd)

    def update(self, pattern: str, updates: Iterable[tuple[str, str]],
               condition: str) -> list[str]:
        """The original client's ``update()``: the ``updateattr`` shape under AMGA's ``update``."""
        cmd = "update " + pattern
        for attr, expr in updates:
            cmd += " " + attr + " " + quote(expr)
        cmd += " " + quote(condition)
        return self.execute(cmd)

    # bulk and transactions
    def upload(self, collection: str, attrs: Sequence[str],
               rows: Iterable[tuple[str, Sequence[object]]], finish: str = "commit") -> list[str]:
        """``upload`` + one ``put`` per row (nothing read), then ``commit`` (or ``abort``).

        ``rows`` holds ``(entry, values)`` pairs. Values are sent unquoted, as the original
        ``put`` sends them. A row of the wrong width raises ``CommandError(3)`` on the client
        side before it is sent, as in the original. ``finish=None`` leaves the upload open.
        """
        self.send_nowait("upload " + collection + "".join(" " + a for a in attrs))
        self._upload_nattrs = len(attrs)
        for entry, values in rows:
            self.put(entry, values)
        if finish is None:
            return []
        return self.finish_upload(finish)

    def put(self, entry: str, values: Sequence[object]) -> None:
        if self._upload_nattrs is not None and len(values) != self._upload_nattrs:
            raise CommandError(3, "Illegal command", "put " + entry)
        self.send_nowait("put " + entry + "".join(" " + str(v) for v in values))

    def finish_upload(self, finish: str = "commit") -> list[str]:
        if self.strict:
            self._expect_silence("in reply to upload/put lines (they must get no reply)")
        self._upload_nattrs = None
        return self.execute(finish)

    def transaction(self) -> list[str]:
        return self.execute("transaction")

    def commit(self) -> list[str]:
        return self.execute("commit")

    def abort(self) -> list[str]:
        return self.execute("abort")

    # sequences
    def sequence_create(self, name: str, directory: str, increment: int | None = 1,
                        start: int | None = 1) -> list[str]:
        """The original always sends increment and start; pass None to omit them."""
        cmd = f"sequence_create {name} {directory}"
        if increment is not None:
            cmd += f" {increment}"
            if start is not None:
                cmd += f" {start}"
        return self.execute(cmd)

    def sequence_next(self, name: str) -> str:
        return self._one_line("sequence_next " + name)

    def sequence_remove(self, name: str) -> list[str]:
        return self.execute("sequence_remove " + name)

    # sites and replicas (AMGA 2.x)
    def site_add(self, site: str, server: str = "") -> list[str]:
        return self.execute("site_add " + site + (" " + server if server else ""))

    def site_remove(self, site: str) -> list[str]:
        return self.execute("site_remove " + site)

    def site_list(self) -> dict[str, int]:
        """Lines ``id name [server]`` -> {name: id}, as the original ``siteList()``."""
        sites: dict[str, int] = {}
        for line in self.execute("site_list"):
            words = line.split(" ")
            if len(words) < 2 or not words[0].isdigit():
                raise ProtocolError(f"site_list: line is not 'id name [server]': {line!r}")
            sites[words[1]] = int(words[0])
        return sites

    def replica_register(self, guid_sites: Sequence[tuple[str, str]], create: bool = True
                         ) -> list[str]:
        cmd = "replica_register" + (" -c" if create else "")
        for guid, site in guid_sites:
            cmd += " " + guid + " " + site
        return self.execute(cmd)

    def replica_unregister(self, guid: str, site: str, delete: bool = False) -> list[str]:
        return self.execute("replica_unregister " + ("-d " if delete else "") + guid + " " + site)

    def replica_list(self, files: Sequence[str], is_lfn: bool = False) -> dict[str, list[int]]:
        """Lines ``file siteid ...`` -> {file: [site ids]}, as the original ``replicaList()``."""
        out: dict[str, list[int]] = {}
        for line in self.execute("replica_list " + ("-l " if is_lfn else "") + " ".join(files)):
            words = line.split(" ")
            if not all(w.isdigit() for w in words[1:]):
                raise ProtocolError(f"replica_list: line is not 'file siteid ...': {line!r}")
            out[words[0]] = [int(w) for w in words[1:]]
        return out


def _main(argv: list[str]) -> int:
    """Tiny interactive shell: ``python3 amga_client.py [host [port [login]]]``; reads commands
    from stdin, prints data lines or ``ERROR <code> <msg>``. Password from
    ``ARDACAT_ROOT_PASSWORD``."""
    host = argv[1] if len(argv) > 1 else "127.0.0.1"
    port = int(argv[2]) if len(argv) > 2 else 8822
    login = argv[3] if len(argv) > 3 else "root"
    c = AmgaClient(host, port, login, os.environ.get("ARDACAT_ROOT_PASSWORD", ""),
                   trace=bool(os.environ.get("AMGA_TRACE")))
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        try:
            for out in c.execute(line):
                print(">> " + out)
        except CommandError as e:
            print(f"ERROR {e.code} {e.msg}")
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
