"""Typed values: attribute type names (as ``listattr`` prints them) to Python converters, and the
fast path that turns a batch of data lines into tuples. No I/O.

Types: ``int``/``smallint``/``bigint`` → ``int``; ``float``/``double`` → ``float``; ``timestamp``
→ ``datetime.datetime``; ``bool`` → ``bool``; ``varchar(n)``/``text`` and anything unknown →
``str``. NULL is ``None``. Without the ``escape`` extension NULL is an empty line, so an empty
string and NULL cannot be told apart in a text column (it reads as ``""``).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Iterator, List, Optional, Sequence

from ._proto import unescape_value
from .errors import ProtocolError

Converter = Callable[[str], Any]
Value = Any  # int | float | str | bool | datetime | None

_BOOLS = {"true": True, "false": False, "t": True, "f": False, "1": True, "0": False}


def _bool(v: str) -> bool:
    try:
        return _BOOLS[v]
    except KeyError:
        raise ProtocolError(f"not a boolean: {v[:40]!r}") from None


def _timestamp(v: str) -> _dt.datetime:
    # The server prints YYYY-MM-DD HH:MM:SS[.ffffff]; Python 3.9's fromisoformat wants 3 or 6
    # fraction digits, so pad what it sends.
    head, dot, frac = v.partition(".")
    if dot:
        v = head + "." + (frac + "000000")[:6]
    try:
        return _dt.datetime.fromisoformat(v)
    except ValueError:
        raise ProtocolError(f"not a timestamp: {v[:40]!r}") from None


def converter(type_name: str) -> Optional[Converter]:
    """The converter of an attribute type; ``None`` means text (no conversion)."""
    t = type_name.strip().lower()
    if t in ("int", "integer", "smallint", "bigint", "int2", "int4", "int8", "serial", "bigserial"):
        return int
    if t in ("float", "double", "real", "double precision", "float4", "float8", "numeric", "decimal"):
        return float
    if t.startswith(("numeric(", "decimal(")):
        return float
    if t in ("timestamp", "datetime", "timestamp without time zone"):
        return _timestamp
    if t in ("bool", "boolean"):
        return _bool
    return None


def format_value(v: Any) -> Optional[str]:
    """A Python value as an argument (``None`` is NULL)."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, _dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, _dt.date):
        return v.isoformat()
    return str(v)


def _nullable(conv: Optional[Converter], escape: bool) -> Converter:
    """The slow, per-value path: NULLs and escapes."""
    if escape:
        if conv is None:
            return unescape_value
        c = conv

        def esc(v: str) -> Any:
            u = unescape_value(v)
            return None if u is None else c(u)

        return esc
    if conv is None:
        return str
    c2 = conv
    return lambda v: c2(v) if v else None


class RowBuilder:
    """Groups data lines into rows of ``width`` typed values, across batch boundaries.

    ``convs[i]`` converts column ``i`` (``None``: text). Columns are converted a whole batch at a
    time (``map`` over a column slice), which is several times faster in CPython than a call per
    row; a batch without any backslash (under ``escape``) or empty line (without it) has no NULL
    and no escape, so it takes the plain converters.
    """

    def __init__(self, convs: Sequence[Optional[Converter]], escape: bool, named: bool = False) -> None:
        # named: the first column is an entry name, rows come out as (name, (v1, …, vN)).
        self.named = named
        self.width = len(convs)
        self.convs = list(convs)
        self.escape = escape
        self.slow = [_nullable(c, escape) for c in convs]
        self.pending: List[str] = []

    def feed(self, lines: List[str]) -> Iterator[Any]:
        if self.pending:
            lines = self.pending + lines
            self.pending = []
        w = self.width
        n = len(lines) - len(lines) % w
        if n != len(lines):
            self.pending = lines[n:]
            lines = lines[:n]
        if not lines:
            return iter(())
        if self.escape:
            clean = not any("\\" in line for line in lines) if len(lines) < 8 else "\\" not in "\n".join(lines)
        else:
            clean = "" not in lines
        cols: List[Any] = []
        for i in range(w):
            col = lines[i::w] if w > 1 else lines
            conv = self.convs[i] if clean else self.slow[i]
            cols.append(col if conv is None else list(map(conv, col)))
        if self.named:
            return zip(cols[0], zip(*cols[1:]))
        return zip(*cols)

    def finish(self) -> None:
        if self.pending:
            raise ProtocolError(f"the reply ended inside a row ({len(self.pending)} of {self.width} values)")
