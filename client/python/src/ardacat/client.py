"""The blocking front: a socket that moves bytes between the server and the protocol core
(:mod:`ardacat._proto`), the :class:`Connection` with its helpers, and streamed, typed results.
It must not parse the wire itself; what a helper sends and how its reply reads is in
:mod:`ardacat._commands`.
"""

from __future__ import annotations

import contextlib
import socket
import ssl as _ssl
import warnings
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
)

from . import _commands as C
from ._config import DEFAULT_PORT, PathLike, Settings, resolve
from ._plan import PSEUDO, expr_ref, getattr_schema_path, select_shape
from ._proto import Abort, ClientProtocol, End, Event, Lines, Ready, StartTLS, Status, unescape_value
from ._types import Converter, RowBuilder, converter, format_value
from .errors import CommandError, ConnectError, Error, ProtocolError

T = TypeVar("T")
RECV_SIZE = 256 * 1024
#: Bytes of ``put`` lines gathered before one send during an upload.
UPLOAD_CHUNK = 256 * 1024
CONNECT_TIMEOUT = 15.0


def tls_context(s: Settings) -> _ssl.SSLContext:
    """TLS 1.2+ with the server's name and certificate always checked."""
    ctx = _ssl.SSLContext(_ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = _ssl.TLSVersion.TLSv1_2
    if s.ca is None:
        ctx.load_default_certs()
    else:
        import os

        if os.path.isdir(s.ca):
            ctx.load_verify_locations(capath=s.ca)
            # c_rehash-style names are not guaranteed in a grid CA directory: load every PEM file.
            for name in sorted(os.listdir(s.ca)):
                p = os.path.join(s.ca, name)
                if os.path.isfile(p):
                    with contextlib.suppress(_ssl.SSLError, ValueError, UnicodeDecodeError, OSError):
                        ctx.load_verify_locations(cafile=p)
        else:
            ctx.load_verify_locations(cafile=s.ca)
    if s.cert is not None:
        ctx.load_cert_chain(s.cert, s.key)
    return ctx


def new_protocol(s: Settings, resume: Optional[int]) -> ClientProtocol:
    return ClientProtocol(
        s.login,
        s.password,
        tls=s.tls or s.tls_optional,
        tls_optional=s.tls_optional,
        escape=s.escape,
        session=s.session,
        resume=resume,
    )


def type_convs(names: Sequence[str], schema: Mapping[str, str]) -> List[Optional[Converter]]:
    return [None if n.upper() in PSEUDO else converter(schema.get(n, "text")) for n in names]


class Connection:
    """One logged-in connection. Commands run one at a time; a streamed result must be read or
    closed before the next command (the next command cancels an abandoned one first)."""

    def __init__(self, settings: Settings, *, verify_login: bool = True, resume: Optional[int] = None) -> None:
        self.settings = settings
        self._verify = verify_login
        self._sock: Optional[socket.socket] = None
        self._proto: Optional[ClientProtocol] = None
        self._seq = 0
        self._schema: Dict[str, Dict[str, str]] = {}
        self.user: Optional[str] = None
        self._open(resume)

    # -- connection ----------------------------------------------------------------------------
    def _open(self, resume: Optional[int]) -> None:
        s = self.settings
        try:
            sock = socket.create_connection((s.host, s.port), timeout=CONNECT_TIMEOUT)
        except OSError as e:
            raise ConnectError(f"{s.host}:{s.port}: {e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        proto = new_protocol(s, resume)
        self._sock, self._proto = sock, proto
        try:
            while True:
                ev = self._event()
                if isinstance(ev, StartTLS):
                    ctx = tls_context(s)
                    try:
                        self._sock = ctx.wrap_socket(sock, server_hostname=s.host)
                    except (_ssl.SSLError, OSError) as e:
                        raise ConnectError(f"{s.host}:{s.port}: TLS handshake: {e}") from None
                    proto.tls_started()
                    self._flush()
                elif isinstance(ev, Ready):
                    break
            if s.tls_optional and not proto.tls:
                warnings.warn(f"{s.host}:{s.port} does not offer TLS; connected in clear", stacklevel=4)
            self._sock.settimeout(None)
            if self._verify:
                try:
                    self.user = self.whoami()
                except CommandError as e:
                    raise ConnectError(f"{s.host}:{s.port}: login refused: {e.code} {e.message}", code=e.code) from None
        except BaseException:
            self._close_socket()
            raise

    def _close_socket(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock = None
        if self._proto is not None:
            self._proto.mark_closed()

    def close(self) -> None:
        """Close the connection (a session, if any, stays resumable until it expires)."""
        self._close_socket()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._proto is None or self._proto.closed

    @property
    def escape(self) -> bool:
        """Whether the ``escape`` extension is in force (NULL distinct from ``""``)."""
        return self._proto is not None and self._proto.escape

    @property
    def tls(self) -> bool:
        return isinstance(self._sock, _ssl.SSLSocket)

    @property
    def session_id(self) -> Optional[int]:
        """The session id the server announced (``session=True``), else ``None``."""
        return self._proto.session_id if self._proto else None

    def resume(self) -> None:
        """Open a new TCP connection continuing the session: same user, current directory and
        settings, no login. Raises :class:`ConnectError` if the server no longer knows it."""
        sid = self.session_id
        if sid is None:
            raise Error("no session to resume: connect with session=True")
        self._close_socket()
        self._open(sid)

    def reconnect(self) -> None:
        """Open a new connection with a fresh login."""
        self._close_socket()
        self._open(None)

    # -- bytes ---------------------------------------------------------------------------------
    def _flush(self) -> None:
        assert self._proto is not None
        data = self._proto.data_to_send()
        if data:
            if self._sock is None:
                raise Error("the connection is closed")
            try:
                self._sock.sendall(data)
            except OSError as e:
                self._close_socket()
                raise ProtocolError(f"connection lost while sending: {e}") from None

    def _event(self) -> Event:
        proto = self._proto
        assert proto is not None
        while True:
            self._flush()
            ev = proto.next_event()
            if ev is not None:
                return ev
            if self._sock is None:
                raise Error("the connection is closed")
            try:
                data = self._sock.recv(RECV_SIZE)
            except socket.timeout:
                self._close_socket()
                raise ConnectError("timed out waiting for the server") from None
            except OSError as e:
                self._close_socket()
                raise ProtocolError(f"connection lost: {e}") from None
            try:
                if data:
                    proto.receive_data(data)
                else:
                    self._sock.close()
                    self._sock = None
                    proto.receive_eof()
                    raise ProtocolError("the server closed the connection")
            except Error:
                self._close_socket()
                raise

    def _prepare(self) -> None:
        """Make the connection ready for a command: cancel and drain an abandoned reply."""
        proto = self._proto
        if proto is None or proto.closed:
            raise Error("the connection is closed")
        if proto.in_reply:
            proto.send_cancel()
            while not isinstance(self._event(), End):
                pass
        # Events of a reply whose end was parsed but never read are stale now.
        while proto.next_event() is not None:
            pass

    # -- commands ------------------------------------------------------------------------------
    def _start(self, line: str) -> "_Reply":
        self._prepare()
        assert self._proto is not None
        self._seq += 1
        self._proto.send_command(line)
        return _Reply(self, line)

    def _run(self, cmd: "C.Cmd[T]") -> T:
        self._prepare()
        assert self._proto is not None
        return cmd.parse(self._values(self._proto.command_line(cmd.args)))

    def _values(self, line: str) -> List[Optional[str]]:
        reply = self._start(line)
        out: List[str] = []
        while True:
            batch = reply.next_batch()
            if batch is None:
                break
            out.extend(batch)
        if self.escape:
            return [unescape_value(v) for v in out]
        return list(out)

    def execute(self, command: str) -> List[str]:
        """Run one command line as typed (already quoted) and return its data lines as sent
        (escaped under ``escape``). A failure raises :class:`CommandError`."""
        reply = self._start(command)
        out: List[str] = []
        while True:
            batch = reply.next_batch()
            if batch is None:
                return out
            out.extend(batch)

    def command(self, *args: Any) -> List[Optional[str]]:
        """Run a command from separate arguments (quoted and escaped here); returns the decoded
        data lines (``None`` for NULL under ``escape``)."""
        assert self._proto is not None
        self._prepare()
        return self._values(self._proto.command_line([format_value(a) for a in args]))

    # -- typed streams ---------------------------------------------------------------------
    def _types_of(self, path: Optional[str], names: Sequence[str]) -> Dict[str, str]:
        key = path if path is not None else "\0cwd"
        cached = self._schema.get(key)
        if cached is None or any(n not in cached and n.upper() not in PSEUDO for n in names):
            target = path if path is not None else self.pwd()
            try:
                cached = self.listattr(target)
            except CommandError:
                cached = {}
            self._schema[key] = cached
        return cached

    def getattr(self, pattern: str, attrs: Sequence[str]) -> "Rows[Tuple[str, Tuple[Any, ...]]]":
        """``getattr``: ``(entry_name, (v1, …, vN))`` per entry, typed from the schema, streamed."""
        if isinstance(attrs, str):
            attrs = [attrs]
        schema = self._types_of(getattr_schema_path(pattern), attrs)
        convs: List[Optional[Converter]] = [None, *type_convs(attrs, schema)]
        assert self._proto is not None
        self._prepare()
        line = self._proto.command_line(["getattr", pattern] + list(attrs))
        reply = self._start(line)
        return Rows(reply, RowBuilder(convs, self.escape, named=True), ["FILE"] + list(attrs))

    def selectattr(self, exprs: Sequence[str], condition: str = "") -> "Rows[Tuple[Any, ...]]":
        """``selectattr``: one tuple per row; plain ``/dir:attr`` references are typed from the
        schema, other expressions come back as ``str``."""
        if isinstance(exprs, str):
            exprs = [exprs]
        convs: List[Optional[Converter]] = []
        for e in exprs:
            ref = expr_ref(e)
            if ref is None:
                convs.append(None)
            else:
                convs.append(converter(self._types_of(ref[0], [ref[1]]).get(ref[1], "text")))
        assert self._proto is not None
        self._prepare()
        line = self._proto.command_line(["selectattr"] + list(exprs) + [condition])
        return Rows(self._start(line), RowBuilder(convs, self.escape), list(exprs))

    def sql(self, statement: str) -> "Rows[Tuple[Any, ...]]":
        """A native SQL statement (``SELECT``, ``INSERT``, ``UPDATE``, ``DELETE``) sent as it is;
        a ``SELECT`` streams one tuple per row (``.columns`` holds the header lines), a write
        returns an empty result once it has run."""
        shape = select_shape(statement)
        # Types come from the tables of the FROM clause, looked up before the statement runs.
        schemas: Dict[str, Dict[str, str]] = {}
        for path in (shape.tables.values() if shape else []):
            schemas[path] = self._types_of(path, [])
        reply = self._start(statement)
        if shape is None:
            rows: Rows[Tuple[Any, ...]] = Rows(reply, RowBuilder([None], self.escape), [])
            rows._drain_now()
            return rows
        headers: List[str] = []
        pending: List[str] = []
        while len(headers) < shape.ncols:
            batch = reply.next_batch()
            if batch is None:
                raise ProtocolError(f"SELECT reply ended inside its {shape.ncols} header lines")
            take = shape.ncols - len(headers)
            headers += batch[:take]
            pending = batch[take:]
        if self.escape:
            headers = [unescape_value(h) or "" for h in headers]
        convs = shape.converters(headers, schemas)
        rows = Rows(reply, RowBuilder(convs, self.escape), headers)
        rows._pushback(pending)
        return rows

    # -- upload and transactions ------------------------------------------------------------
    def upload(self, collection: str, attrs: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """Bulk load: ``upload``, one ``put`` per row ``(entry_name, v1, …, vN)`` (the server
        answers none of them), then ``commit``, whose status is the upload's. Returns the count.
        A row of the wrong width aborts the upload and raises ``ValueError``."""
        if isinstance(attrs, str):
            attrs = [attrs]
        self._prepare()
        proto = self._proto
        assert proto is not None
        width = len(attrs)
        proto.send_nowait(proto.command_line(["upload", collection] + list(attrs)))
        n = 0
        buf: List[str] = []
        size = 0
        esc = proto.escape
        try:
            for row in rows:
                if len(row) != width + 1:
                    raise ValueError(f"upload row {n + 1} has {len(row) - 1} values for {width} attributes")
                line = C.put_line(row, esc)
                buf.append(line)
                size += len(line)
                n += 1
                if size >= UPLOAD_CHUNK:
                    self._send_lines(buf)
                    buf, size = [], 0
        except BaseException:
            self._send_lines(buf)
            with contextlib.suppress(Error):
                self._values("abort")
            raise
        self._send_lines(buf)
        self._values("commit")
        return n

    def _send_lines(self, lines: List[str]) -> None:
        if not lines or self._sock is None:
            return
        data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
        self._flush()
        try:
            self._sock.sendall(data)
        except OSError as e:
            self._close_socket()
            raise ProtocolError(f"connection lost during upload: {e}") from None

    @contextlib.contextmanager
    def transaction(self) -> Iterator["Connection"]:
        """``with conn.transaction():`` — ``commit`` on success, ``abort`` on an exception."""
        self.begin()
        try:
            yield self
        except BaseException:
            if not self.closed:
                with contextlib.suppress(Error):
                    self.abort()
            raise
        self.commit()

    def begin(self) -> None:
        self._run(C.simple("transaction"))

    def commit(self) -> None:
        self._run(C.simple("commit"))

    def abort(self) -> None:
        self._run(C.simple("abort"))

    # -- helpers (one per command; see docs/protocol.md for the replies) --------------------
    def pwd(self) -> str:
        return self._run(C.pwd())

    def whoami(self) -> str:
        return self._run(C.whoami())

    def cd(self, path: str) -> None:
        self._run(C.cd(path))

    def mkdir(self, path: str, plain: bool = False) -> None:
        self._run(C.mkdir(path, plain))

    def rmdir(self, path: str) -> None:
        self._run(C.rmdir(path))

    def ls(self, path: Optional[str] = None) -> List[str]:
        return self._run(C.ls(path))

    def listentries(self, path: Optional[str] = None) -> List[str]:
        return self._run(C.listentries(path))

    def dir(self, path: Optional[str] = None) -> List[Tuple[str, str]]:
        return self._run(C.dir_(path))

    def stat(self, path: str) -> List[Tuple[str, ...]]:
        return self._run(C.stat(path))

    def addattr(self, directory: str, name: str, type_name: str, indexed: bool = False) -> None:
        self._schema.clear()
        self._run(C.addattr(directory, name, type_name, indexed))

    def removeattr(self, directory: str, name: str) -> None:
        self._schema.clear()
        self._run(C.removeattr(directory, name))

    def listattr(self, path: str) -> Dict[str, str]:
        return self._run(C.listattr(path))

    def index_create(self, directory: str, name: str, attrs: Sequence[str]) -> None:
        self._run(C.index_create(directory, name, attrs))

    def index_remove(self, directory: str, name: str) -> None:
        self._run(C.index_remove(directory, name))

    def index_list(self, directory: str) -> Dict[str, List[str]]:
        return self._run(C.index_list(directory))

    def add_entry(self, path: str, attrs: Optional[Mapping[str, Any]] = None, **kw: Any) -> None:
        self._run(C.add_entry(path, attrs, kw))

    def add_entries(self, paths: Sequence[str]) -> None:
        self._run(C.add_entries(paths))

    def set_attrs(self, pattern: str, attrs: Optional[Mapping[str, Any]] = None, **kw: Any) -> None:
        self._run(C.set_attrs(pattern, attrs, kw, self.escape))

    def clear_attrs(self, pattern: str, attrs: Sequence[str]) -> None:
        self._run(C.clear_attrs(pattern, attrs))

    def rm(self, pattern: str, condition: Optional[str] = None) -> None:
        self._run(C.rm(pattern, condition))

    def find(self, pattern: str, condition: str = "") -> List[str]:
        return self._run(C.find(pattern, condition))

    def update_attrs(self, pattern: str, updates: Mapping[str, str], condition: str) -> None:
        self._run(C.update_attrs(pattern, updates, condition))

    def sequence_create(self, name: str, directory: str, increment: int = 1, start: int = 1) -> None:
        self._run(C.sequence_create(name, directory, increment, start))

    def sequence_next(self, sequence: str) -> int:
        return self._run(C.sequence_next(sequence))

    def sequence_remove(self, sequence: str) -> None:
        self._run(C.sequence_remove(sequence))

    def chmod(self, path: str, mode: str) -> None:
        self._run(C.simple("chmod", path, mode))

    def chown(self, path: str, owner: str) -> None:
        self._run(C.simple("chown", path, owner))

    def acl_add(self, path: str, who: str, rights: str) -> None:
        self._run(C.simple("acl_add", path, who, rights))

    def acl_remove(self, path: str, who: str) -> None:
        self._run(C.simple("acl_remove", path, who))

    def acl_show(self, path: str) -> List[Tuple[str, str]]:
        return self._run(C.acl_show(path))

    def user_create(self, name: str, password: str) -> None:
        self._run(C.simple("user_create", name, password))

    def user_remove(self, name: str) -> None:
        self._run(C.simple("user_remove", name))

    def user_passwd(self, name: str, password: str) -> None:
        self._run(C.simple("user_passwd", name, password))

    def user_subject_add(self, name: str, subject: str) -> None:
        self._run(C.simple("user_subject_add", name, subject))

    def user_listcred(self, name: str) -> List[str]:
        return self._run(C.lines("user_listcred", name))

    def grp_create(self, group: str) -> None:
        self._run(C.simple("grp_create", group))

    def grp_remove(self, group: str) -> None:
        self._run(C.simple("grp_remove", group))

    def grp_adduser(self, group: str, user: str) -> None:
        self._run(C.simple("grp_adduser", group, user))

    def grp_removeuser(self, group: str, user: str) -> None:
        self._run(C.simple("grp_removeuser", group, user))

    def grp_member(self, user: Optional[str] = None) -> List[str]:
        return self._run(C.grp_member(user))

    def sudo(self, user: str) -> None:
        self._run(C.simple("sudo", user))

    def stats(self) -> Dict[str, str]:
        return self._run(C.stats())

    def help(self, command: Optional[str] = None) -> List[str]:
        return self._run(C.lines("help", *([command] if command else [])))


class _Reply:
    """One command's reply on a blocking connection: status first, then batches of data lines."""

    def __init__(self, conn: Connection, line: str) -> None:
        self.conn = conn
        self.line = line
        self.seq = conn._seq
        self.done = False
        self.abort: Optional[Abort] = None
        ev = conn._event()
        if isinstance(ev, Status) and ev.code == 0:
            return
        if isinstance(ev, End):
            self.done = True
            raise ProtocolError(f"reply without a status line to {line[:60]!r}")
        code, msg = (ev.code, ev.message) if isinstance(ev, (Status, Abort)) else (-1, "")
        while not isinstance(conn._event(), End):
            pass
        self.done = True
        raise CommandError(code, msg, line)

    def _check(self) -> None:
        if self.conn._seq != self.seq:
            raise Error("this result was abandoned: another command ran on the connection")

    def next_batch(self) -> Optional[List[str]]:
        """The next data lines, or ``None`` at the end (an inline abort raises)."""
        if self.done:
            return None
        self._check()
        while True:
            ev = self.conn._event()
            if isinstance(ev, Lines):
                return ev.lines
            if isinstance(ev, Abort):
                self.abort = ev
            elif isinstance(ev, End):
                self.done = True
                if self.abort is not None:
                    raise CommandError(self.abort.code, self.abort.message, self.line)
                return None

    def close(self) -> None:
        """Cancel (CAN) and drain, if the reply is still running."""
        if self.done or self.conn._seq != self.seq or self.conn.closed:
            self.done = True
            return
        self.done = True
        proto = self.conn._proto
        assert proto is not None
        proto.send_cancel()
        while not isinstance(self.conn._event(), End):
            pass

    def __del__(self) -> None:
        # Breaking out of a loop drops the result: tell the server to stop at once.
        if not self.done:
            with contextlib.suppress(Exception):
                self.close()


class Rows(Iterator[T]):
    """A streamed result. Iterate it; ``close()`` (or leaving a ``with`` block, or dropping it)
    cancels the rest on the server. ``columns`` names the values."""

    def __init__(self, reply: _Reply, builder: RowBuilder, columns: List[str]) -> None:
        self._reply = reply
        self._builder = builder
        self._it: Iterator[Any] = iter(())
        self.columns = columns

    def _pushback(self, lines: List[str]) -> None:
        if lines:
            self._it = self._builder.feed(lines)

    def _drain_now(self) -> None:
        while self._reply.next_batch() is not None:
            pass

    def __iter__(self) -> "Rows[T]":
        return self

    def __next__(self) -> T:
        while True:
            for row in self._it:
                return row  # type: ignore[no-any-return]
            batch = self._reply.next_batch()
            if batch is None:
                self._builder.finish()
                raise StopIteration
            self._it = self._builder.feed(batch)

    def fetchall(self) -> List[T]:
        return list(self)

    def close(self) -> None:
        self._reply.close()

    def __enter__(self) -> "Rows[T]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    host: str = "localhost",
    port: int = DEFAULT_PORT,
    login: Optional[str] = None,
    password: Optional[str] = None,
    ssl: bool = False,
    ca: Optional[PathLike] = None,
    cert: Optional[PathLike] = None,
    key: Optional[PathLike] = None,
    session: bool = False,
    escape: bool = True,
    config: Optional[PathLike] = None,
) -> Connection:
    """Connect and log in (a refused login raises :class:`ConnectError`).

    Arguments left at their defaults take the values of ``~/.mdclient.config`` and
    ``./mdclient.config`` (or of the file ``config`` only); the password also comes from
    ``ARDACAT_PASSWORD``. ``ca``, ``cert`` or ``key`` imply ``ssl``. With a certificate and no
    login, the server logs in the user the certificate maps to.
    """
    return Connection(resolve(host, port, login, password, ssl, ca, cert, key, session, escape, config))
