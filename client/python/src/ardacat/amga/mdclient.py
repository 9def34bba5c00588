"""``mdclient``: ``MDClient``, the original AMGA Python client's class, for Python 3 and over the
ardacat protocol core. Legacy code runs by changing its import to ``from ardacat.amga import
mdclient``. Method names, arguments, the quoting of values and the return shapes are the
original's (amga.md § "Completeness"); the socket, TLS and reply framing are ardacat's
(:mod:`ardacat.client`), so replies are never read out of step and TLS is 1.2+ with the server's
certificate checked.

Like the original: it connects on the first command; with ``keepalive=False`` it reconnects for
every command; a reply that ends with a session id makes it disconnect and ``resume`` the session
on the next command; ``upload``/``put`` lines are sent without reading a reply; a failed command
raises ``CommandException(code, message + ". Command was: " + command)``. It never asks for the
``escape`` extension, so values travel raw as in AMGA.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple, Union

from .._config import Settings
from ..client import Connection, _Reply
from ..errors import CommandError, ConnectError, Error
from .mdinterface import CommandException, MDInterface


class MDClient(MDInterface):
    def __init__(self, host: str, port: int, login: str = "anonymous", password: str = "",
                 keepalive: bool = True) -> None:
        self.host = host
        self.port = int(port)
        self.login = login
        self.password = password or ""
        self.keepalive = keepalive
        self.reqSSL = False
        self.keyFile: Optional[str] = None
        self.certFile: Optional[str] = None
        self.caFile: Optional[str] = None
        self.sessionID = 0
        self.connected = False
        self.currentCommand = ""
        self.nattrs = 0
        self.siteCache: Dict[str, int] = {}
        self.idCache: Dict[int, str] = {}
        self.greetings = ""
        self.protocolVersion = 0
        self._conn: Optional[Connection] = None
        self._reply: Optional[_Reply] = None
        self._rows: Deque[str] = deque()
        self._nattrs_upload: Optional[int] = None

    # -- connection ----------------------------------------------------------------------------
    def requireSSL(self, key: Optional[str] = None, cert: Optional[str] = None,  # noqa: N802
                   ca: Optional[str] = None) -> None:
        """Use TLS (``ssl``) on the next connect; ``cert``/``key``: a client certificate (with an
        empty login, log in by certificate). ``ca`` (an ardacat addition): the CA file or
        directory the server's certificate must chain to."""
        self.reqSSL = True
        self.keyFile = key
        self.certFile = cert
        self.caFile = ca

    def _settings(self) -> Settings:
        import os

        ca = self.caFile
        if self.reqSSL and ca is None and os.path.isdir("/etc/grid-security/certificates"):
            ca = "/etc/grid-security/certificates"
        return Settings(self.host, self.port, self.login if self.login else None, self.password or None,
                        self.reqSSL, False, ca, self.certFile, self.keyFile, False, False)

    def connect(self) -> int:
        try:
            conn = Connection(self._settings(), verify_login=False, resume=self.sessionID or None)
        except (ConnectError, OSError, ValueError) as e:
            raise CommandException(-1, f"Cannot connect: {e}") from None
        self._conn = conn
        proto = conn._proto
        if proto is not None and proto.greeting is not None:
            g = proto.greeting
            self.protocolVersion = g.protocol
            self.greetings = f"ARDA Metadata Server {g.version}\nProtocol {g.protocol}\n{' '.join(g.options)}\n"
        self.connected = True
        self._rows.clear()
        self._reply = None
        return 0

    def disconnect(self, saveSession: bool = False) -> None:  # noqa: N803
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._reply = None
        self.connected = False

    # -- raw commands ----------------------------------------------------------------------
    def _ensure(self) -> Connection:
        if not self.keepalive:
            self.disconnect()
        if self._conn is None or self._conn.closed:
            self.connect()
        assert self._conn is not None
        return self._conn

    def execute(self, command: str) -> None:
        """Send one command line; raise ``CommandException`` if it fails. Its data lines are then
        read with ``fetchRow()`` until ``eot()``."""
        self.currentCommand = command
        self._rows.clear()
        conn = self._ensure()
        try:
            self._reply = conn._start(command)
            # Read what has arrived: a reply without data ends here (and a session id in its
            # end marker takes effect now, as in the original).
            self._fill()
        except CommandError as e:
            self._reply = None
            self._after_reply(conn)
            raise CommandException(e.code, e.message + ". Command was: " + command) from None
        except Error as e:
            self.disconnect()
            raise CommandException(-1, f"{e}. Command was: {command}") from None

    def retrieveResult(self) -> None:
        """Kept for the original's callers: ``execute`` already reads the status."""

    def executeNoWait(self, command: str) -> None:
        """Send a line without reading a reply (``upload`` and ``put`` get none)."""
        self.currentCommand = command
        conn = self._ensure()
        try:
            conn._prepare()
            assert conn._proto is not None
            conn._proto.send_nowait(command)
            conn._flush()
        except (Error, ValueError) as e:
            raise CommandException(-1, f"{e}. Command was: {command}") from None

    def _after_reply(self, conn: Connection) -> None:
        # A reply that carried a session id: close now and resume on the next command.
        if conn._proto is not None and conn._proto.last_session:
            self.sessionID = conn._proto.last_session
            self.disconnect(True)
        else:
            self.sessionID = 0

    def _fill(self) -> bool:
        """Read more data lines; False at the end of the reply."""
        reply = self._reply
        if reply is None:
            return False
        try:
            batch = reply.next_batch()
        except CommandError as e:
            self._reply = None
            if self._conn is not None:
                self._after_reply(self._conn)
            raise CommandException(e.code, e.message + ". Command was: " + self.currentCommand) from None
        if batch is None:
            self._reply = None
            if self._conn is not None:
                self._after_reply(self._conn)
            return False
        self._rows.extend(batch)
        return True

    def fetchRow(self) -> Optional[str]:  # noqa: N802
        """The next data line of the current reply, ``None`` after the last."""
        while not self._rows:
            if not self._fill():
                return None
        return self._rows.popleft()

    def eot(self) -> bool:
        """True when the current reply has no more data lines."""
        while not self._rows:
            if not self._fill():
                return True
        return False

    def _all(self) -> List[str]:
        out: List[str] = []
        while not self.eot():
            row = self.fetchRow()
            out.append(row if row is not None else "")
        return out

    @staticmethod
    def _quote(value: Any) -> str:
        if isinstance(value, str):
            return "'" + value.replace("'", "\\'") + "'"
        return str(value)

    # -- the original methods --------------------------------------------------------------
    def getattr(self, file: str, attributes: Sequence[str]) -> None:
        self.nattrs = len(attributes)
        self.execute("getattr " + file + "".join(" " + a for a in attributes))

    def getEntry(self) -> Tuple[Optional[str], List[Optional[str]]]:  # noqa: N802
        name = self.fetchRow()
        return name, [self.fetchRow() for _ in range(self.nattrs)]

    def setAttr(self, file: str, keys: Sequence[str], values: List[Any]) -> None:  # noqa: N802
        command = "setattr " + file
        for i, k in enumerate(keys):
            values[i] = self._quote(values[i])
            command += " " + k + " " + str(values[i])
        self.execute(command)

    def addEntry(self, file: str, keys: Sequence[str], values: List[Any]) -> None:  # noqa: N802
        command = "addentry " + file
        for i, k in enumerate(keys):
            values[i] = self._quote(str(values[i]))
            command += " " + k + " " + values[i]
        self.execute(command)

    def addEntries(self, entries: Sequence[str]) -> None:  # noqa: N802
        self.execute("addentries" + "".join(" " + e for e in entries))

    def addAttr(self, file: str, name: str, t: str) -> None:  # noqa: N802
        self.execute("addattr " + file + " " + name + " " + t)

    def removeAttr(self, file: str, name: str) -> None:  # noqa: N802
        self.execute("removeattr " + file + " " + name)

    def clearAttr(self, file: str, name: str) -> None:  # noqa: N802
        self.execute("clearattr " + file + " " + name)

    def listEntries(self, pattern: str) -> None:  # noqa: N802
        self.execute("dir " + pattern)
        self.nattrs = 1

    def pwd(self) -> Optional[str]:
        self.execute("pwd")
        return self.fetchRow()

    def listAttr(self, file: str) -> Tuple[List[Optional[str]], List[Optional[str]]]:  # noqa: N802
        self.execute("listattr " + file)
        names: List[Optional[str]] = []
        types: List[Optional[str]] = []
        while not self.eot():
            names.append(self.fetchRow())
            types.append(self.fetchRow())
        return names, types

    def createDir(self, dir: str) -> None:  # noqa: N802,A002
        self.execute("createdir " + dir)

    def createPlainDir(self, dir: str) -> None:  # noqa: N802,A002
        self.execute("createdir " + dir + " plain")

    def removeDir(self, dir: str) -> None:  # noqa: N802,A002
        self.execute("rmdir " + dir)

    def rm(self, path: str) -> None:
        self.execute("rm " + path)

    def find(self, pattern: str, query: str) -> None:
        self.nattrs = 1
        self.execute("find " + pattern + " " + self._quote(query))

    def selectAttr(self, attributes: Sequence[str], query: str) -> None:  # noqa: N802
        self.nattrs = len(attributes)
        self.execute("selectattr" + "".join(" " + a for a in attributes) + " " + self._quote(query))

    def getSelectAttrEntry(self) -> List[Optional[str]]:  # noqa: N802
        return [self.fetchRow() for _ in range(self.nattrs)]

    def _update(self, verb: str, pattern: str, updateExpr: Sequence[str], condition: str) -> None:  # noqa: N803
        command = verb + " " + pattern
        for clause in updateExpr:
            var, exp = self.splitUpdateClause(clause)
            command += " " + var + " " + self._quote(exp)
        self.execute(command + " " + self._quote(condition))

    def updateAttr(self, pattern: str, updateExpr: Sequence[str], condition: str) -> None:  # noqa: N802,N803
        self._update("updateattr", pattern, updateExpr, condition)

    def update(self, pattern: str, updateExpr: Sequence[str], condition: str) -> None:  # noqa: N803
        self._update("update", pattern, updateExpr, condition)

    def upload(self, collection: str, attributes: Sequence[str]) -> None:
        self.nattrs = len(attributes)
        self.executeNoWait("upload " + collection + "".join(" " + a for a in attributes))

    def put(self, file: str, values: Sequence[str]) -> None:
        if len(values) != self.nattrs:
            raise CommandException(3, "Illegal command")
        self.executeNoWait("put " + file + "".join(" " + str(v) for v in values))

    def abort(self) -> None:
        self.execute("abort")

    def commit(self) -> None:
        self.execute("commit")

    def transaction(self) -> None:
        self.execute("transaction")

    def sequenceCreate(self, name: str, directory: str, increment: int = 1, start: int = 1) -> None:  # noqa: N802
        self.execute(f"sequence_create {name} {directory} {increment} {start}")

    def sequenceNext(self, name: str) -> Optional[str]:  # noqa: N802
        self.execute("sequence_next " + name)
        return self.fetchRow()

    def sequenceRemove(self, name: str) -> None:  # noqa: N802
        self.execute("sequence_remove " + name)

    def cd(self, dir: str) -> None:  # noqa: A002
        self.execute("cd " + dir)

    # constraints (AMGA 1.x; answered by servers that have them)
    def constraintAddNotNull(self, directory: str, attribute: str, name: str) -> None:  # noqa: N802
        self.execute(f"constraint_add_not_null {directory} {attribute} {name}")

    def constraintAddUnique(self, directory: str, attribute: str, name: str) -> None:  # noqa: N802
        self.execute(f"constraint_add_unique {directory} {attribute} {name}")

    def constraintAddReference(self, directory: str, attribute: str, reffered_attr: str,  # noqa: N802
                               name: str) -> None:
        self.execute(f"constraint_add_reference {directory} {attribute} {reffered_attr} {name}")

    def constraintAddCheck(self, directory: str, check: str, name: str) -> None:  # noqa: N802
        self.execute(f"constraint_add_check {directory} {self._quote(check)} {name}")

    def constraintDrop(self, directory: str, name: str) -> None:  # noqa: N802
        self.execute(f"constraint_drop {directory} {name}")

    def constraintList(self, directory: str) -> List[str]:  # noqa: N802
        self.execute("constraint_list " + directory)
        return self._all()

    def remoteExecute(self, remoteCommand: str) -> str:  # noqa: N802,N803
        self.execute("execute " + remoteCommand)
        return "".join(line + "\n" for line in self._all())

    # sites and replicas (AMGA 2.x)
    def siteAdd(self, site: str, server: str = "") -> None:  # noqa: N802
        self.execute("site_add " + site + (" " + server if server else ""))

    def siteRemove(self, site: str) -> None:  # noqa: N802
        self.execute("site_remove " + site)

    def siteList(self) -> Dict[str, int]:  # noqa: N802
        self.execute("site_list")
        self.siteCache, self.idCache = {}, {}
        for line in self._all():
            parts = line.split()
            if len(parts) < 2:
                continue
            sid, name = int(parts[0]), parts[1]
            self.siteCache[name] = sid
            self.idCache[sid] = name
        return self.siteCache

    def replicaRegister(self, guidSiteList: Sequence[Tuple[str, str]], create: bool = True) -> None:  # noqa: N802,N803
        command = "replica_register" + (" -c" if create else "")
        for guid, site in guidSiteList:
            command += " " + guid + " " + (str(self.siteCache[site]) if site in self.siteCache else site)
        self.execute(command)

    def replicaUnregister(self, guid: str, site: str, delete: bool = False) -> None:  # noqa: N802
        self.execute("replica_unregister " + ("-d " if delete else "") + guid + " " + site)

    def replicaList(self, files: Sequence[str], resolveSites: bool = True,  # noqa: N802,N803
                    isLFN: bool = False) -> Dict[str, List[Union[int, Optional[str]]]]:  # noqa: N803
        if resolveSites and not self.idCache:
            self.siteList()
        self.execute("replica_list" + (" -l" if isLFN else "") + "".join(" " + f for f in files))
        out: Dict[str, List[Union[int, Optional[str]]]] = {}
        for line in self._all():
            file, _, rest = line.partition(" ")
            ids = [int(x) for x in rest.split()]
            out[file] = [self.idCache.get(i) for i in ids] if resolveSites else list(ids)
        return out


__all__ = ["MDClient", "CommandException", "MDInterface"]
