"""The asyncio front: the same :class:`Connection` API as the blocking one, ``await``-ed, over an
``asyncio.Protocol`` that feeds the protocol core (:mod:`ardacat._proto`). It must not parse the
wire itself; commands and reply shapes come from :mod:`ardacat._commands`.

Commands on one connection run one at a time (a lock serialises ``await conn.pwd()`` from many
tasks). A streamed result is not protected by that lock: read it in the task that started it, or
give each streaming task its own connection. Breaking out of ``async for`` sends CAN at once
(when the result is dropped); the rest of the reply is discarded by the next command, or by
``await rows.aclose()`` / ``async with``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as _ssl
import warnings
from typing import (
    Any,
    AsyncIterator,
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
from .client import CONNECT_TIMEOUT, UPLOAD_CHUNK, new_protocol, tls_context, type_convs
from .errors import CommandError, ConnectError, Error, ProtocolError

T = TypeVar("T")
#: Parsed events waiting for the reader before the socket stops being read (back-pressure).
MAX_PENDING_EVENTS = 16

__all__ = ["connect", "Connection", "Rows"]


class _Wire(asyncio.Protocol):
    """Socket callbacks: bytes into the core, wake-ups for the reader, flow control."""

    def __init__(self, proto: ClientProtocol) -> None:
        self.proto = proto
        self.transport: Optional[asyncio.Transport] = None
        self.waiter: Optional["asyncio.Future[None]"] = None
        self.error: Optional[BaseException] = None
        self.eof = False
        self.paused = False
        self.write_paused: Optional["asyncio.Future[None]"] = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def data_received(self, data: bytes) -> None:
        try:
            self.proto.receive_data(data)
        except BaseException as e:  # reported to the reader
            self.error = e
        if self.proto.pending_events() > MAX_PENDING_EVENTS and self.transport is not None:
            self.transport.pause_reading()
            self.paused = True
        self._wake()

    def eof_received(self) -> Optional[bool]:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.eof = True
        if exc is not None and self.error is None:
            self.error = exc
        self._wake()
        if self.write_paused is not None and not self.write_paused.done():
            self.write_paused.set_result(None)

    def pause_writing(self) -> None:
        if self.write_paused is None or self.write_paused.done():
            self.write_paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.write_paused is not None and not self.write_paused.done():
            self.write_paused.set_result(None)


class Connection:
    """An asyncio connection; see :class:`ardacat.Connection` for every method's meaning."""

    def __init__(self, settings: Settings, *, verify_login: bool = True) -> None:
        self.settings = settings
        self._verify = verify_login
        self._wire: Optional[_Wire] = None
        self._proto: Optional[ClientProtocol] = None
        self._seq = 0
        self._lock = asyncio.Lock()
        # The streamed reply that holds the lock until it ends or is closed.
        self._holder: Optional[_Reply] = None
        self._schema: Dict[str, Dict[str, str]] = {}
        self.user: Optional[str] = None

    async def _open(self, resume: Optional[int]) -> None:
        s = self.settings
        loop = asyncio.get_running_loop()
        proto = new_protocol(s, resume)
        try:
            _, wire = await asyncio.wait_for(
                loop.create_connection(lambda: _Wire(proto), s.host, s.port), CONNECT_TIMEOUT
            )
        except (OSError, asyncio.TimeoutError) as e:
            raise ConnectError(f"{s.host}:{s.port}: {e}") from None
        self._wire, self._proto = wire, proto
        try:
            while True:
                ev = await asyncio.wait_for(self._event(), CONNECT_TIMEOUT)
                if isinstance(ev, StartTLS):
                    assert wire.transport is not None
                    try:
                        tr = await loop.start_tls(wire.transport, wire, tls_context(s), server_hostname=s.host)
                    except (_ssl.SSLError, OSError) as e:
                        raise ConnectError(f"{s.host}:{s.port}: TLS handshake: {e}") from None
                    assert isinstance(tr, asyncio.Transport)
                    wire.transport = tr
                    proto.tls_started()
                elif isinstance(ev, Ready):
                    break
            if s.tls_optional and not proto.tls:
                warnings.warn(f"{s.host}:{s.port} does not offer TLS; connected in clear", stacklevel=4)
            if self._verify:
                try:
                    # Not through the lock: resume() and reconnect() hold it already.
                    self.user = C.whoami().parse(await self._values("whoami"))
                except CommandError as e:
                    raise ConnectError(f"{s.host}:{s.port}: login refused: {e.code} {e.message}", code=e.code) from None
        except asyncio.TimeoutError:
            self._close_transport()
            raise ConnectError(f"{s.host}:{s.port}: timed out during the handshake") from None
        except BaseException:
            self._close_transport()
            raise

    def _close_transport(self) -> None:
        if self._wire is not None and self._wire.transport is not None:
            self._wire.transport.close()
        if self._proto is not None:
            self._proto.mark_closed()

    async def close(self) -> None:
        self._close_transport()

    async def __aenter__(self) -> "Connection":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._proto is None or self._proto.closed

    @property
    def escape(self) -> bool:
        return self._proto is not None and self._proto.escape

    @property
    def tls(self) -> bool:
        w = self._wire
        return w is not None and w.transport is not None and w.transport.get_extra_info("ssl_object") is not None

    @property
    def session_id(self) -> Optional[int]:
        return self._proto.session_id if self._proto else None

    async def resume(self) -> None:
        sid = self.session_id
        if sid is None:
            raise Error("no session to resume: connect with session=True")
        async with self._locked():
            self._close_transport()
            await self._open(sid)

    async def reconnect(self) -> None:
        async with self._locked():
            self._close_transport()
            await self._open(None)

    # -- bytes ---------------------------------------------------------------------------------
    def _flush(self) -> None:
        proto, wire = self._proto, self._wire
        assert proto is not None and wire is not None
        data = proto.data_to_send()
        if data:
            if wire.transport is None or wire.transport.is_closing():
                raise Error("the connection is closed")
            wire.transport.write(data)

    async def _event(self) -> Event:
        proto, wire = self._proto, self._wire
        assert proto is not None and wire is not None
        while True:
            self._flush()
            ev = proto.next_event()
            if ev is not None:
                if wire.paused and proto.pending_events() <= MAX_PENDING_EVENTS // 2 and wire.transport is not None:
                    wire.paused = False
                    wire.transport.resume_reading()
                return ev
            if wire.error is not None:
                self._close_transport()
                e = wire.error
                if isinstance(e, Error):
                    raise e
                raise ProtocolError(f"connection lost: {e}")
            if wire.eof:
                self._close_transport()
                try:
                    proto.receive_eof()
                except ProtocolError:
                    proto.mark_closed()
                    raise
                raise ProtocolError("the server closed the connection")
            wire.waiter = asyncio.get_running_loop().create_future()
            await wire.waiter
            wire.waiter = None

    async def _acquire(self) -> None:
        """Take the connection for one command. A stream still open in this same task (one
        broken out of) is cancelled and its hold handed over; other tasks wait their turn."""
        holder = self._holder
        if holder is not None and holder.task is asyncio.current_task():
            self._holder = None
            holder.cancel_now()
            return
        await self._lock.acquire()

    def _release(self) -> None:
        self._lock.release()

    def _release_from(self, reply: "_Reply") -> None:
        if self._holder is reply:
            self._holder = None
            self._lock.release()

    @contextlib.asynccontextmanager
    async def _locked(self) -> AsyncIterator[None]:
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    async def _prepare(self) -> None:
        proto = self._proto
        if proto is None or proto.closed:
            raise Error("the connection is closed")
        if proto.in_reply:
            proto.send_cancel()
            while not isinstance(await self._event(), End):
                pass
        # Events of a reply whose end was parsed but never read are stale now.
        while proto.next_event() is not None:
            pass

    async def _start(self, line: str) -> "_Reply":
        await self._prepare()
        assert self._proto is not None
        self._seq += 1
        self._proto.send_command(line)
        reply = _Reply(self, line)
        await reply.wait_status()
        return reply

    async def _collect(self, line: str) -> List[str]:
        reply = await self._start(line)
        out: List[str] = []
        while True:
            batch = await reply.next_batch()
            if batch is None:
                return out
            out.extend(batch)

    async def _values(self, line: str) -> List[Optional[str]]:
        out = await self._collect(line)
        if self.escape:
            return [unescape_value(v) for v in out]
        return list(out)

    async def _run(self, cmd: "C.Cmd[T]") -> T:
        async with self._locked():
            await self._prepare()
            assert self._proto is not None
            return cmd.parse(await self._values(self._proto.command_line(cmd.args)))

    async def execute(self, command: str) -> List[str]:
        async with self._locked():
            return await self._collect(command)

    async def command(self, *args: Any) -> List[Optional[str]]:
        async with self._locked():
            await self._prepare()
            assert self._proto is not None
            return await self._values(self._proto.command_line([format_value(a) for a in args]))

    # -- typed streams ---------------------------------------------------------------------
    async def _types_of(self, path: Optional[str], names: Sequence[str]) -> Dict[str, str]:
        key = path if path is not None else "\0cwd"
        cached = self._schema.get(key)
        if cached is None or any(n not in cached and n.upper() not in PSEUDO for n in names):
            target = path if path is not None else await self.pwd()
            try:
                cached = await self.listattr(target)
            except CommandError:
                cached = {}
            self._schema[key] = cached
        return cached

    async def _stream(self, args: Sequence[Optional[str]], convs: List[Optional[Converter]], named: bool,
                      columns: List[str]) -> "Rows[Any]":
        await self._acquire()
        try:
            await self._prepare()
            assert self._proto is not None
            reply = await self._start(self._proto.command_line(args))
        except BaseException:
            self._release()
            raise
        self._hold(reply)
        return Rows(reply, RowBuilder(convs, self.escape, named=named), columns)

    def _hold(self, reply: "_Reply") -> None:
        reply.task = asyncio.current_task()
        self._holder = reply

    async def getattr(self, pattern: str, attrs: Sequence[str]) -> "Rows[Tuple[str, Tuple[Any, ...]]]":
        if isinstance(attrs, str):
            attrs = [attrs]
        schema = await self._types_of(getattr_schema_path(pattern), attrs)
        convs: List[Optional[Converter]] = [None, *type_convs(attrs, schema)]
        return await self._stream(["getattr", pattern] + list(attrs), convs, True, ["FILE"] + list(attrs))

    async def selectattr(self, exprs: Sequence[str], condition: str = "") -> "Rows[Tuple[Any, ...]]":
        if isinstance(exprs, str):
            exprs = [exprs]
        convs: List[Optional[Converter]] = []
        for e in exprs:
            ref = expr_ref(e)
            convs.append(None if ref is None else converter((await self._types_of(ref[0], [ref[1]])).get(ref[1], "text")))
        return await self._stream(["selectattr"] + list(exprs) + [condition], convs, False, list(exprs))

    async def sql(self, statement: str) -> "Rows[Tuple[Any, ...]]":
        shape = select_shape(statement)
        # Types come from the tables of the FROM clause, looked up before the statement runs.
        schemas: Dict[str, Dict[str, str]] = {}
        for path in (shape.tables.values() if shape else []):
            schemas[path] = await self._types_of(path, [])
        await self._acquire()
        try:
            reply = await self._start(statement)
        except BaseException:
            self._release()
            raise
        self._hold(reply)
        if shape is None:
            while await reply.next_batch() is not None:
                pass
            return Rows(reply, RowBuilder([None], self.escape), [])
        headers: List[str] = []
        pending: List[str] = []
        while len(headers) < shape.ncols:
            batch = await reply.next_batch()
            if batch is None:
                raise ProtocolError(f"SELECT reply ended inside its {shape.ncols} header lines")
            take = shape.ncols - len(headers)
            headers += batch[:take]
            pending = batch[take:]
        if self.escape:
            headers = [unescape_value(h) or "" for h in headers]
        convs = shape.converters(headers, schemas)
        rows: Rows[Tuple[Any, ...]] = Rows(reply, RowBuilder(convs, self.escape), headers)
        rows._pushback(pending)
        return rows

    # -- upload and transactions ------------------------------------------------------------
    async def upload(self, collection: str, attrs: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        if isinstance(attrs, str):
            attrs = [attrs]
        async with self._locked():
            await self._prepare()
            proto, wire = self._proto, self._wire
            assert proto is not None and wire is not None
            width = len(attrs)
            proto.send_nowait(proto.command_line(["upload", collection] + list(attrs)))
            self._flush()
            n, size, buf = 0, 0, []
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
                        await self._send_lines(buf)
                        buf, size = [], 0
            except BaseException:
                await self._send_lines(buf)
                with contextlib.suppress(Error):
                    await self._values("abort")
                raise
            await self._send_lines(buf)
            await self._values("commit")
            return n

    async def _send_lines(self, lines: List[str]) -> None:
        wire = self._wire
        if not lines or wire is None or wire.transport is None:
            return
        wire.transport.write(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
        if wire.write_paused is not None and not wire.write_paused.done():
            await wire.write_paused
        if wire.error is not None or wire.eof:
            raise ProtocolError("connection lost during upload")

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator["Connection"]:
        await self.begin()
        try:
            yield self
        except BaseException:
            if not self.closed:
                with contextlib.suppress(Error):
                    await self.abort()
            raise
        await self.commit()

    async def begin(self) -> None:
        await self._run(C.simple("transaction"))

    async def commit(self) -> None:
        await self._run(C.simple("commit"))

    async def abort(self) -> None:
        await self._run(C.simple("abort"))

    # -- helpers ---------------------------------------------------------------------------
    async def pwd(self) -> str:
        return await self._run(C.pwd())

    async def whoami(self) -> str:
        return await self._run(C.whoami())

    async def cd(self, path: str) -> None:
        await self._run(C.cd(path))

    async def mkdir(self, path: str, plain: bool = False) -> None:
        await self._run(C.mkdir(path, plain))

    async def rmdir(self, path: str) -> None:
        await self._run(C.rmdir(path))

    async def ls(self, path: Optional[str] = None) -> List[str]:
        return await self._run(C.ls(path))

    async def listentries(self, path: Optional[str] = None) -> List[str]:
        return await self._run(C.listentries(path))

    async def dir(self, path: Optional[str] = None) -> List[Tuple[str, str]]:
        return await self._run(C.dir_(path))

    async def stat(self, path: str) -> List[Tuple[str, ...]]:
        return await self._run(C.stat(path))

    async def addattr(self, directory: str, name: str, type_name: str, indexed: bool = False) -> None:
        self._schema.clear()
        await self._run(C.addattr(directory, name, type_name, indexed))

    async def removeattr(self, directory: str, name: str) -> None:
        self._schema.clear()
        await self._run(C.removeattr(directory, name))

    async def listattr(self, path: str) -> Dict[str, str]:
        return await self._run(C.listattr(path))

    async def index_create(self, directory: str, name: str, attrs: Sequence[str]) -> None:
        await self._run(C.index_create(directory, name, attrs))

    async def index_remove(self, directory: str, name: str) -> None:
        await self._run(C.index_remove(directory, name))

    async def index_list(self, directory: str) -> Dict[str, List[str]]:
        return await self._run(C.index_list(directory))

    async def add_entry(self, path: str, attrs: Optional[Mapping[str, Any]] = None, **kw: Any) -> None:
        await self._run(C.add_entry(path, attrs, kw))

    async def add_entries(self, paths: Sequence[str]) -> None:
        await self._run(C.add_entries(paths))

    async def set_attrs(self, pattern: str, attrs: Optional[Mapping[str, Any]] = None, **kw: Any) -> None:
        await self._run(C.set_attrs(pattern, attrs, kw, self.escape))

    async def clear_attrs(self, pattern: str, attrs: Sequence[str]) -> None:
        await self._run(C.clear_attrs(pattern, attrs))

    async def rm(self, pattern: str, condition: Optional[str] = None) -> None:
        await self._run(C.rm(pattern, condition))

    async def find(self, pattern: str, condition: str = "") -> List[str]:
        return await self._run(C.find(pattern, condition))

    async def update_attrs(self, pattern: str, updates: Mapping[str, str], condition: str) -> None:
        await self._run(C.update_attrs(pattern, updates, condition))

    async def sequence_create(self, name: str, directory: str, increment: int = 1, start: int = 1) -> None:
        await self._run(C.sequence_create(name, directory, increment, start))

    async def sequence_next(self, sequence: str) -> int:
        return await self._run(C.sequence_next(sequence))

    async def sequence_remove(self, sequence: str) -> None:
        await self._run(C.sequence_remove(sequence))

    async def chmod(self, path: str, mode: str) -> None:
        await self._run(C.simple("chmod", path, mode))

    async def chown(self, path: str, owner: str) -> None:
        await self._run(C.simple("chown", path, owner))

    async def acl_add(self, path: str, who: str, rights: str) -> None:
        await self._run(C.simple("acl_add", path, who, rights))

    async def acl_remove(self, path: str, who: str) -> None:
        await self._run(C.simple("acl_remove", path, who))

    async def acl_show(self, path: str) -> List[Tuple[str, str]]:
        return await self._run(C.acl_show(path))

    async def user_create(self, name: str, password: str) -> None:
        await self._run(C.simple("user_create", name, password))

    async def user_remove(self, name: str) -> None:
        await self._run(C.simple("user_remove", name))

    async def user_passwd(self, name: str, password: str) -> None:
        await self._run(C.simple("user_passwd", name, password))

    async def user_subject_add(self, name: str, subject: str) -> None:
        await self._run(C.simple("user_subject_add", name, subject))

    async def user_listcred(self, name: str) -> List[str]:
        return await self._run(C.lines("user_listcred", name))

    async def grp_create(self, group: str) -> None:
        await self._run(C.simple("grp_create", group))

    async def grp_remove(self, group: str) -> None:
        await self._run(C.simple("grp_remove", group))

    async def grp_adduser(self, group: str, user: str) -> None:
        await self._run(C.simple("grp_adduser", group, user))

    async def grp_removeuser(self, group: str, user: str) -> None:
        await self._run(C.simple("grp_removeuser", group, user))

    async def grp_member(self, user: Optional[str] = None) -> List[str]:
        return await self._run(C.grp_member(user))

    async def sudo(self, user: str) -> None:
        await self._run(C.simple("sudo", user))

    async def stats(self) -> Dict[str, str]:
        return await self._run(C.stats())

    async def help(self, command: Optional[str] = None) -> List[str]:
        return await self._run(C.lines("help", *([command] if command else [])))


class _Reply:
    def __init__(self, conn: Connection, line: str) -> None:
        self.conn = conn
        self.line = line
        self.seq = conn._seq
        self.done = False
        self.abort: Optional[Abort] = None
        self.task: "Optional[asyncio.Task[Any]]" = None

    def _finish(self) -> None:
        self.done = True
        self.conn._release_from(self)

    async def wait_status(self) -> None:
        ev = await self.conn._event()
        if isinstance(ev, Status) and ev.code == 0:
            return
        if isinstance(ev, End):
            self.done = True
            raise ProtocolError(f"reply without a status line to {self.line[:60]!r}")
        code, msg = (ev.code, ev.message) if isinstance(ev, (Status, Abort)) else (-1, "")
        while not isinstance(await self.conn._event(), End):
            pass
        self.done = True
        raise CommandError(code, msg, self.line)

    async def next_batch(self) -> Optional[List[str]]:
        if self.done:
            return None
        if self.conn._seq != self.seq:
            raise Error("this result was abandoned: another command ran on the connection")
        while True:
            ev = await self.conn._event()
            if isinstance(ev, Lines):
                return ev.lines
            if isinstance(ev, Abort):
                self.abort = ev
            elif isinstance(ev, End):
                self._finish()
                if self.abort is not None:
                    raise CommandError(self.abort.code, self.abort.message, self.line)
                return None

    def cancel_now(self) -> None:
        """Send CAN without waiting (the next command drains the rest) and let go of the
        connection."""
        if self.done or self.conn._seq != self.seq or self.conn.closed:
            self._finish()
            return
        self._finish()
        proto, wire = self.conn._proto, self.conn._wire
        if proto is None or wire is None or wire.transport is None:
            return
        proto.send_cancel()
        with contextlib.suppress(Exception):
            self.conn._flush()
            if wire.paused:
                wire.paused = False
                wire.transport.resume_reading()

    async def close(self) -> None:
        if self.done or self.conn._seq != self.seq or self.conn.closed:
            self._finish()
            return
        self.cancel_now()
        async with self.conn._locked():
            await self.conn._prepare()

    def __del__(self) -> None:
        if not self.done:
            with contextlib.suppress(Exception):
                self.cancel_now()


class Rows(AsyncIterator[T]):
    """A streamed result: ``async for row in rows``; ``await rows.aclose()`` or ``async with``
    cancels the rest on the server."""

    def __init__(self, reply: _Reply, builder: RowBuilder, columns: List[str]) -> None:
        self._reply = reply
        self._builder = builder
        self._it: Iterator[Any] = iter(())
        self.columns = columns

    def _pushback(self, lines: List[str]) -> None:
        if lines:
            self._it = self._builder.feed(lines)

    def __aiter__(self) -> "Rows[T]":
        return self

    async def __anext__(self) -> T:
        while True:
            for row in self._it:
                return row  # type: ignore[no-any-return]
            batch = await self._reply.next_batch()
            if batch is None:
                self._builder.finish()
                raise StopAsyncIteration
            self._it = self._builder.feed(batch)

    async def fetchall(self) -> List[T]:
        return [row async for row in self]

    async def aclose(self) -> None:
        await self._reply.close()

    async def __aenter__(self) -> "Rows[T]":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def connect(
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
    """``await ardacat.aio.connect(...)``: the same arguments as :func:`ardacat.connect`."""
    conn = Connection(resolve(host, port, login, password, ssl, ca, cert, key, session, escape, config))
    await conn._open(None)
    return conn
