"""``mdinterface``: the original AMGA client's exception and interface class, for Python 3.

``CommandException(errorCode, msg)`` keeps the attributes ``errorCode`` and ``msg`` and the
original string form (``repr(code) + ' - ' + repr(msg)``). ``MDInterface`` declares the methods
:class:`ardacat.amga.mdclient.MDClient` implements and carries ``splitUpdateClause``. No I/O.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple


class CommandException(Exception):
    """A command failed on the server (``errorCode`` as on the status line, -1: cannot connect).
    The connection is not necessarily broken."""

    def __init__(self, errorCode: int, msg: str) -> None:  # noqa: N803 (the original names)
        super().__init__(errorCode, msg)
        self.errorCode = errorCode
        self.msg = msg

    def __str__(self) -> str:
        return repr(self.errorCode) + " - " + repr(self.msg)


class MDInterface:
    """The methods of an AMGA client; :class:`~ardacat.amga.mdclient.MDClient` implements them."""

    def _missing(self, name: str) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement {name}")

    def eot(self) -> bool:
        return bool(self._missing("eot"))

    def getattr(self, file: str, attributes: Sequence[str]) -> None:
        self._missing("getattr")

    def getEntry(self) -> Tuple[Optional[str], List[Optional[str]]]:
        return self._missing("getEntry")  # type: ignore[no-any-return]

    def setAttr(self, file: str, keys: Sequence[str], values: List[Any]) -> None:
        self._missing("setAttr")

    def addEntry(self, file: str, keys: Sequence[str], values: List[Any]) -> None:
        self._missing("addEntry")

    def addEntries(self, entries: Sequence[str]) -> None:
        self._missing("addEntries")

    def addAttr(self, file: str, name: str, t: str) -> None:
        self._missing("addAttr")

    def removeAttr(self, file: str, name: str) -> None:
        self._missing("removeAttr")

    def clearAttr(self, file: str, name: str) -> None:
        self._missing("clearAttr")

    def listEntries(self, pattern: str) -> None:
        self._missing("listEntries")

    def pwd(self) -> Optional[str]:
        return self._missing("pwd")  # type: ignore[no-any-return]

    def listAttr(self, file: str) -> Tuple[List[Optional[str]], List[Optional[str]]]:
        return self._missing("listAttr")  # type: ignore[no-any-return]

    def createDir(self, dir: str) -> None:  # noqa: A002 (the original name)
        self._missing("createDir")

    def removeDir(self, dir: str) -> None:  # noqa: A002
        self._missing("removeDir")

    def rm(self, path: str) -> None:
        self._missing("rm")

    def selectAttr(self, attributes: Sequence[str], query: str) -> None:
        self._missing("selectAttr")

    def getSelectAttrEntry(self) -> List[Optional[str]]:
        return self._missing("getSelectAttrEntry")  # type: ignore[no-any-return]

    def updateAttr(self, pattern: str, updateExpr: Sequence[str], condition: str) -> None:  # noqa: N803
        self._missing("updateAttr")

    def upload(self, collection: str, attributes: Sequence[str]) -> None:
        self._missing("upload")

    def put(self, file: str, values: Sequence[str]) -> None:
        self._missing("put")

    def abort(self) -> None:
        self._missing("abort")

    def commit(self) -> None:
        self._missing("commit")

    def sequenceCreate(self, name: str, directory: str, increment: int = 1, start: int = 1) -> None:
        self._missing("sequenceCreate")

    def sequenceNext(self, name: str) -> Optional[str]:
        return self._missing("sequenceNext")  # type: ignore[no-any-return]

    def sequenceRemove(self, name: str) -> None:
        self._missing("sequenceRemove")

    def splitUpdateClause(self, clause: str) -> Tuple[str, str]:
        """Split ``"var expr"`` at the first space outside single quotes; a ``var`` or ``expr``
        wholly wrapped in single quotes loses them. Raises ``CommandException(3, …)`` when there
        is no expression."""
        clause = clause.lstrip(" \t")
        quoted = False
        escaped = False
        i = 0
        while i < len(clause):
            c = clause[i]
            if c == "'" and not escaped:
                quoted = not quoted
            escaped = c == "\\" and not escaped
            if c in " \t" and not quoted:
                break
            i += 1
        if i == 0 or i >= len(clause) - 1:
            raise CommandException(3, "Invalid update statement")
        var, exp = clause[:i], clause[i + 1 :]
        if len(exp) >= 2 and exp[0] == "'" and exp[-1] == "'":
            exp = exp[1:-1]
        if len(var) >= 2 and var[0] == "'" and var[-1] == "'":
            var = var[1:-1]
        return var, exp
