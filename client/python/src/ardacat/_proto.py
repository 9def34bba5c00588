"""The AMGA streaming protocol as a state machine without I/O (the h11 / psycopg 3 pattern).

It owns the bytes: the handshake (greeting, options, ``OK``, TLS upgrade point, login block,
``resume``), command lines with their quoting and the ``escape`` extension, reply framing (status
line, data lines, inline CAN, ``EOT [session<id>] EOT``) and the CAN byte that cancels a reply.
It must not open sockets, wait, or know what a command means: the blocking and the asyncio fronts
move the bytes (``receive_data`` / ``data_to_send``) and read the events (``next_event``).

Wire rules are those of docs/protocol.md; the quoting and escape rules mirror
``server/proto/src/tokenize.rs`` and ``escape.rs`` so that the server gives every argument back
unchanged.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Deque, List, NamedTuple, Optional, Sequence, Union

from .errors import ConnectError, ProtocolError

EOT = 0x04
CAN = 0x18
BANNER_PREFIX = "ARDA Metadata Server "
#: Longest reply line accepted (bytes); a server line longer than this is a protocol error, so a
#: broken stream cannot make the client buffer without bound.
DEFAULT_MAX_LINE = 16 * 1024 * 1024

# ----------------------------------------------------------------------------------- quoting


def needs_escape(value: str) -> bool:
    """True when ``value`` holds a byte that cannot travel raw inside one line."""
    return any(c in value for c in "\n\r\x04\x18\x00")


def quote_arg(arg: str) -> str:
    """Quote one argument so that the server's tokenizer gives it back unchanged; bare if it can."""
    if arg and not any(c in arg for c in " \t'\r"):
        return arg
    return "'" + arg.replace("\\", "\\\\").replace("'", "\\'") + "'"


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\x04": "\\x04", "\x18": "\\x18", "\x00": "\\0"}
_ESCAPE_RE = re.compile("[\\\\\n\r\x04\x18\x00]")
_UNESCAPES = {"\\\\": "\\", "\\n": "\n", "\\r": "\r", "\\x04": "\x04", "\\x18": "\x18", "\\0": "\x00"}
_UNESCAPE_RE = re.compile(r"\\(?:x04|x18|[\\nr0])")
NULL_TOKEN = "\\N"


def escape_value(value: Optional[str]) -> str:
    """The ``escape`` extension's form of a value (``\\N`` for NULL)."""
    if value is None:
        return NULL_TOKEN
    return _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], value)


def unescape_value(text: str) -> Optional[str]:
    """Reverse :func:`escape_value`; ``None`` is NULL. Anything not canonical is an error."""
    if "\\" not in text:
        return text
    if text == NULL_TOKEN:
        return None
    # Every backslash must start a known sequence (the scheme is canonical).
    if "\\" in _UNESCAPE_RE.sub("", text):
        raise ProtocolError(f"bad escaped value {text[:60]!r}")
    return _UNESCAPE_RE.sub(lambda m: _UNESCAPES[m.group(0)], text)


_PLAIN = re.compile("[^ \t'\r\n\x04\x18\x00\\\\]+\\Z")


def join_args(args: Sequence[Optional[str]], escape: bool) -> str:
    """A command line (without its ``\\n``) from raw arguments.

    With ``escape`` each argument is escaped, then quoted; NULL is ``\\N``. Without it a value
    holding a newline or control byte is refused (it would break the line framing) and NULL is
    sent as the empty string, as classic clients do.
    """
    plain = _PLAIN.match
    if escape:
        return " ".join(a if a and plain(a) else quote_arg(escape_value(a)) for a in args)
    out = []
    for a in args:
        s = "" if a is None else a
        if needs_escape(s):
            raise ValueError(
                f"{s[:40]!r} holds a newline or control byte; connect with escape=True to send it"
            )
        out.append(quote_arg(s))
    return " ".join(out)


# ----------------------------------------------------------------------------------- events


class Greeting(NamedTuple):
    """The server's three greeting lines."""

    version: str
    protocol: int
    options: List[str]


class StartTLS(NamedTuple):
    """The server said ``OK`` to ``ssl``: run the TLS handshake now, then call ``tls_started``."""


class Ready(NamedTuple):
    """The handshake is done; commands may be sent."""


class Status(NamedTuple):
    """The status line of a reply (``code`` 0 is success; an error reply carries no data)."""

    code: int
    message: str


class Lines(NamedTuple):
    """Data lines of the current reply, as sent (still escaped under ``escape``)."""

    lines: List[str]


class Abort(NamedTuple):
    """The server aborted the reply after data (inline ``CAN<code> <message>``); an End follows."""

    code: int
    message: str


class End(NamedTuple):
    """End of one reply; ``session`` is the id in ``EOT session<id> EOT``, if any."""

    session: Optional[int]


Event = Union[Greeting, StartTLS, Ready, Status, Lines, Abort, End]

# states
_GREETING, _OK, _TLS, _READY, _STATUS, _DATA, _CLOSED = range(7)


def parse_status(line: str) -> Status:
    head, _, message = line.partition(" ")
    try:
        return Status(int(head), message)
    except ValueError:
        raise ProtocolError(f"status line is not '<code>[ <message>]': {line[:80]!r}") from None


class ClientProtocol:
    """One client connection's protocol state.

    ``login`` ``None`` sends an empty login (log in by certificate). ``resume`` continues a
    session instead of logging in. ``escape`` and ``session`` are asked for only if the server
    offers them; after the greeting, :attr:`escape` tells whether it is in force.
    """

    def __init__(
        self,
        login: Optional[str],
        password: Optional[str],
        *,
        tls: bool = False,
        tls_optional: bool = False,
        escape: bool = True,
        session: bool = False,
        resume: Optional[int] = None,
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        for what, value in (("login", login), ("password", password)):
            if value is not None and needs_escape(value):
                raise ValueError(f"the {what} cannot hold a newline or control byte")
        self.login = login
        self.password = password
        self.tls = tls
        self.tls_optional = tls_optional
        self.want_escape = escape
        self.want_session = session
        self.resume = resume
        self.max_line = max_line
        self.escape = False
        self.greeting: Optional[Greeting] = None
        self.session_id: Optional[int] = resume
        #: The session id of the last reply's end marker (``None`` if it had none).
        self.last_session: Optional[int] = None
        self._state = _GREETING
        self._in = bytearray()
        self._out = bytearray()
        self._events: Deque[Event] = deque()
        self._greeting_lines: List[str] = []
        self._cancel_sent = False
        #: Data lines received after a CAN was sent (read and thrown away); tells how much the
        #: server still sent before it stopped.
        self.discarded_lines = 0
        self._discard = False

    # -- bytes in / out ------------------------------------------------------------------
    def data_to_send(self) -> bytes:
        out = bytes(self._out)
        self._out.clear()
        return out

    def receive_data(self, data: bytes) -> None:
        if self._state == _CLOSED:
            raise ProtocolError("the connection is closed")
        self._in += data
        self._parse()

    def receive_eof(self) -> None:
        state = self._state
        self._state = _CLOSED
        if state == _GREETING and self._greeting_lines:
            # A server past its connection limits sends one status line instead of the
            # greeting, then closes: show it.
            raise ConnectError(f"the server refused the connection: {self._greeting_lines[0][:200]}")
        if state in (_GREETING, _OK, _TLS):
            raise ConnectError("the server closed the connection during the handshake")
        if state in (_STATUS, _DATA):
            raise ProtocolError("the server closed the connection in the middle of a reply")

    def pending_events(self) -> int:
        return len(self._events)

    def next_event(self) -> Optional[Event]:
        return self._events.popleft() if self._events else None

    @property
    def ready(self) -> bool:
        return self._state == _READY

    @property
    def in_reply(self) -> bool:
        return self._state in (_STATUS, _DATA)

    @property
    def closed(self) -> bool:
        return self._state == _CLOSED

    def mark_closed(self) -> None:
        self._state = _CLOSED

    # -- client actions --------------------------------------------------------------------
    def tls_started(self) -> None:
        """The front finished the TLS handshake: the login block goes inside TLS."""
        if self._state != _TLS:
            raise ProtocolError("tls_started() outside the TLS upgrade point")
        self._after_transport()

    def command_line(self, args: Sequence[Optional[str]]) -> str:
        return join_args(args, self.escape)

    def send_command(self, line: str) -> None:
        """Send one command line; its reply events follow."""
        self._check_line(line)
        self._out += line.encode("utf-8", "surrogateescape") + b"\n"
        self._state = _STATUS
        self._cancel_sent = False
        self._discard = False

    def send_nowait(self, line: str) -> None:
        """Send a line the server does not answer (``upload`` and ``put``)."""
        self._check_line(line)
        self._out += line.encode("utf-8", "surrogateescape") + b"\n"

    def send_cancel(self) -> None:
        """Ask the server to stop the running reply (one CAN byte); data still in flight is
        discarded up to the end marker. Harmless if the reply has already ended there."""
        if self.in_reply and not self._cancel_sent:
            self._out.append(CAN)
            self._cancel_sent = True
            self._discard = True

    @property
    def cancel_sent(self) -> bool:
        return self._cancel_sent

    def _check_line(self, line: str) -> None:
        if self._state != _READY:
            raise ProtocolError("a command was sent while the connection was not ready")
        if needs_escape(line):
            raise ValueError("a command line cannot hold a newline or control byte")

    # -- parsing -------------------------------------------------------------------------------
    def _take_line(self) -> Optional[str]:
        i = self._in.find(b"\n")
        if i < 0:
            if len(self._in) > self.max_line:
                raise ProtocolError(f"a line from the server is longer than {self.max_line} bytes")
            return None
        raw = bytes(self._in[:i])
        del self._in[: i + 1]
        return raw.decode("utf-8", "surrogateescape")

    def _parse(self) -> None:
        while True:
            st = self._state
            if st == _GREETING:
                line = self._take_line()
                if line is None:
                    return
                self._greeting_lines.append(line)
                if len(self._greeting_lines) == 3:
                    self._on_greeting()
            elif st == _OK:
                line = self._take_line()
                if line is None:
                    return
                if line != "OK":
                    try:
                        status = parse_status(line)
                    except ProtocolError:
                        raise ConnectError(f"expected OK after the options, got {line[:80]!r}") from None
                    raise ConnectError(f"the server refused the connection: {status.code} {status.message}",
                                       code=status.code)
                if self.tls:
                    self._state = _TLS
                    if self._in:
                        raise ProtocolError("the server sent data before the TLS handshake")
                    self._events.append(StartTLS())
                    return
                self._after_transport()
            elif st == _STATUS:
                if self._in[:1] == b"\x04":
                    if not self._end_marker():
                        return
                    continue
                line = self._take_line()
                if line is None:
                    return
                if line.startswith("\x18"):
                    s = parse_status(line[1:].strip())
                    self._events.append(Abort(s.code, s.message))
                    self._state = _DATA
                    self._discard = True
                    continue
                status = parse_status(line)
                self._events.append(status)
                self._state = _DATA
                if status.code != 0:
                    self._discard = True
            elif st == _DATA:
                if not self._data():
                    return
            else:
                return

    def _data(self) -> bool:
        """Consume data lines up to the end marker; False when more bytes are needed."""
        buf = self._in
        eot = buf.find(b"\x04")
        stop = eot if eot >= 0 else buf.rfind(b"\n") + 1
        if stop > 0:
            chunk = bytes(buf[:stop])
            del buf[:stop]
            if eot >= 0 and not chunk.endswith(b"\n"):
                raise ProtocolError("end marker in the middle of a line")
            text = chunk[:-1].decode("utf-8", "surrogateescape")
            lines = text.split("\n")
            if "\x18" in text:
                lines = self._split_abort(lines)
            if lines:
                if self._discard:
                    self.discarded_lines += len(lines)
                else:
                    self._events.append(Lines(lines))
        if eot >= 0 or (stop == 0 and buf[:1] == b"\x04"):
            return self._end_marker()
        if len(buf) > self.max_line:
            raise ProtocolError(f"a line from the server is longer than {self.max_line} bytes")
        return False

    def _split_abort(self, lines: List[str]) -> List[str]:
        for i, line in enumerate(lines):
            if line.startswith("\x18"):
                s = parse_status(line[1:].strip())
                before = lines[:i]
                if before and not self._discard:
                    self._events.append(Lines(before))
                elif before:
                    self.discarded_lines += len(before)
                self._events.append(Abort(s.code, s.message))
                self._discard = True
                self.discarded_lines += len(lines) - i - 1
                return []
            if "\x18" in line:
                raise ProtocolError("CAN byte inside a data line")
        return lines

    def _end_marker(self) -> bool:
        buf = self._in
        protocol = self.greeting.protocol if self.greeting else 2
        if protocol < 2:
            del buf[:1]
            payload = b""
        else:
            j = buf.find(b"\x04", 1)
            if j < 0:
                if len(buf) > 64:
                    raise ProtocolError("end marker payload too long")
                return False
            payload = bytes(buf[1:j])
            del buf[: j + 1]
        session: Optional[int] = None
        if payload:
            if not (payload.startswith(b"session") and payload[7:].isdigit()):
                raise ProtocolError(f"unknown end marker payload {payload[:40]!r}")
            session = int(payload[7:])
            self.session_id = session
        self.last_session = session
        self._state = _READY
        self._discard = False
        self._events.append(End(session))
        return True

    def _on_greeting(self) -> None:
        banner, proto_line, options = self._greeting_lines
        if not banner.startswith(BANNER_PREFIX):
            raise ConnectError(f"not an AMGA metadata server (greeting {banner[:80]!r})")
        number = proto_line[len("Protocol "):] if proto_line.startswith("Protocol ") else ""
        if not number.isdigit():
            raise ConnectError(f"bad protocol line in the greeting: {proto_line[:80]!r}")
        words = options.split()
        self.greeting = Greeting(banner[len(BANNER_PREFIX):], int(number), words)
        if self.tls and "ssl" not in words and self.tls_optional:
            # UseSSL = try: whoever can alter the greeting can force this; the front warns.
            self.tls = False
        elif self.tls and "ssl" not in words:
            raise ConnectError("the server does not offer TLS (no 'ssl' in its greeting)")
        self.escape = self.want_escape and "escape" in words
        opts: List[str] = []
        if self.resume is not None:
            opts.append(f"resumeSSL{self.resume}" if self.tls else f"resume{self.resume}")
        else:
            opts.append("ssl" if self.tls else "plain")
        if self.escape:
            opts.append("escape")
        if self.resume is None and self.want_session and "session" in words:
            opts.append("session")
        self._out += ("\n".join(opts) + "\n\n").encode()
        if self.resume is not None and not self.tls:
            # A plain resume gets no OK and sends no login block.
            self._state = _READY
            self._events.append(self.greeting)
            self._events.append(Ready())
            return
        self._events.append(self.greeting)
        self._state = _OK

    def _after_transport(self) -> None:
        if self.resume is None:
            block = f"0 {self.login or ''}\n"
            if self.password:
                block += f"5 {self.password}\n"
            self._out += (block + "\n").encode("utf-8", "surrogateescape")
        self._state = _READY
        self._events.append(Ready())
