"""What each helper sends and how its reply is read, shared by the blocking and the asyncio
front: a :class:`Cmd` is the argument list plus a parser of the decoded data lines. No I/O here.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar

from ._proto import join_args
from ._types import format_value
from .errors import ProtocolError

T = TypeVar("T")
Values = List[Optional[str]]


class Cmd(Generic[T]):
    __slots__ = ("args", "parse")

    def __init__(self, args: Sequence[Optional[str]], parse: Callable[[Values], T]) -> None:
        self.args = list(args)
        self.parse = parse


def _none(values: Values) -> None:
    return None


def _lines(values: Values) -> List[str]:
    return ["" if v is None else v for v in values]


def _one(values: Values) -> str:
    if len(values) != 1:
        raise ProtocolError(f"expected one data line, got {len(values)}")
    return values[0] or ""


def _groups(values: Values, n: int) -> List[Tuple[str, ...]]:
    if len(values) % n:
        raise ProtocolError(f"{len(values)} lines is not a multiple of {n}")
    flat = _lines(values)
    return [tuple(flat[i : i + n]) for i in range(0, len(flat), n)]


def _pairs(values: Values) -> List[Tuple[str, str]]:
    return [(a, b) for a, b in _groups(values, 2)]


def _pair_dict(values: Values) -> Dict[str, str]:
    return dict(_pairs(values))


def _kv(values: Values) -> Dict[str, str]:
    out = {}
    for line in _lines(values):
        k, _, v = line.partition(" ")
        out[k] = v
    return out


def _pairs_args(attrs: Optional[Mapping[str, Any]], kw: Mapping[str, Any]) -> List[Optional[str]]:
    merged: Dict[str, Any] = dict(attrs or {})
    merged.update(kw)
    out: List[Optional[str]] = []
    for k, v in merged.items():
        out.append(k)
        out.append(format_value(v))
    return out


def pwd() -> Cmd[str]:
    return Cmd(["pwd"], _one)


def whoami() -> Cmd[str]:
    return Cmd(["whoami"], _one)


def cd(path: str) -> Cmd[None]:
    return Cmd(["cd", path], _none)


def mkdir(path: str, plain: bool = False) -> Cmd[None]:
    return Cmd(["createdir", path] + (["plain"] if plain else []), _none)


def rmdir(path: str) -> Cmd[None]:
    return Cmd(["rmdir", path], _none)


def ls(path: Optional[str]) -> Cmd[List[str]]:
    return Cmd(["ls"] + ([path] if path is not None else []), _lines)


def listentries(path: Optional[str]) -> Cmd[List[str]]:
    return Cmd(["listentries"] + ([path] if path is not None else []), _lines)


def dir_(path: Optional[str]) -> Cmd[List[Tuple[str, str]]]:
    return Cmd(["dir"] + ([path] if path is not None else []), _pairs)


def stat(path: str) -> Cmd[List[Tuple[str, ...]]]:
    return Cmd(["stat", path], lambda v: _groups(v, 5))


def addattr(directory: str, name: str, type_name: str, indexed: bool = False) -> Cmd[None]:
    return Cmd(["addattr", directory, name, type_name] + (["indexed"] if indexed else []), _none)


def removeattr(directory: str, name: str) -> Cmd[None]:
    return Cmd(["removeattr", directory, name], _none)


def listattr(path: str) -> Cmd[Dict[str, str]]:
    return Cmd(["listattr", path], _pair_dict)


def index_create(directory: str, name: str, attrs: Sequence[str]) -> Cmd[None]:
    return Cmd(["index_create", directory, name] + list(attrs), _none)


def index_remove(directory: str, name: str) -> Cmd[None]:
    return Cmd(["index_remove", directory, name], _none)


def _index_list(values: Values) -> Dict[str, List[str]]:
    out = {}
    for line in _lines(values):
        name, _, cols = line.partition(" ")
        out[name] = cols.split(",") if cols else []
    return out


def index_list(directory: str) -> Cmd[Dict[str, List[str]]]:
    return Cmd(["index_list", directory], _index_list)


def add_entry(path: str, attrs: Optional[Mapping[str, Any]], kw: Mapping[str, Any]) -> Cmd[None]:
    # An attribute left out is NULL; the server reads a NULL argument as "" (so not sent).
    merged = {k: v for k, v in {**dict(attrs or {}), **kw}.items() if v is not None}
    return Cmd(["addentry", path] + _pairs_args(merged, {}), _none)


def add_entries(paths: Sequence[str]) -> Cmd[None]:
    if isinstance(paths, str):
        paths = [paths]
    return Cmd(["addentries"] + list(paths), _none)


def set_attrs(
    pattern: str, attrs: Optional[Mapping[str, Any]], kw: Mapping[str, Any], escape: bool
) -> Cmd[None]:
    """``setattr``; a ``None`` value sets NULL, which only the ``escape`` extension can send
    (without it NULL would arrive as the empty string)."""
    args = _pairs_args(attrs, kw)
    if not escape and any(v is None for v in args[1::2]):
        raise ValueError("set_attrs cannot set NULL without escape: use clear_attrs")
    if not args:
        raise ValueError("set_attrs needs at least one attribute")
    return Cmd(["setattr", pattern] + args, _none)


def clear_attrs(pattern: str, attrs: Sequence[str]) -> Cmd[None]:
    if isinstance(attrs, str):
        attrs = [attrs]
    return Cmd(["clearattr", pattern] + list(attrs), _none)


def rm(pattern: str, condition: Optional[str]) -> Cmd[None]:
    return Cmd(["rm", pattern] + ([condition] if condition is not None else []), _none)


def find(pattern: str, condition: str) -> Cmd[List[str]]:
    return Cmd(["find", pattern, condition], _lines)


def update_attrs(pattern: str, updates: Mapping[str, str], condition: str) -> Cmd[None]:
    args: List[Optional[str]] = ["updateattr", pattern]
    for attr, expr in updates.items():
        args += [attr, expr]
    if len(args) == 2:
        raise ValueError("update_attrs needs at least one attribute")
    return Cmd(args + [condition], _none)


def sequence_create(name: str, directory: str, increment: int, start: int) -> Cmd[None]:
    return Cmd(["sequence_create", name, directory, str(int(increment)), str(int(start))], _none)


def sequence_next(sequence: str) -> Cmd[int]:
    return Cmd(["sequence_next", sequence], lambda v: int(_one(v)))


def sequence_remove(sequence: str) -> Cmd[None]:
    return Cmd(["sequence_remove", sequence], _none)


def simple(*args: str) -> Cmd[None]:
    return Cmd(list(args), _none)


def lines(*args: str) -> Cmd[List[str]]:
    return Cmd(list(args), _lines)


def acl_show(path: str) -> Cmd[List[Tuple[str, str]]]:
    def parse(values: Values) -> List[Tuple[str, str]]:
        out = []
        for line in _lines(values):
            who, _, rights = line.rpartition(" ")
            out.append((who, rights))
        return out

    return Cmd(["acl_show", path], parse)


def grp_member(user: Optional[str]) -> Cmd[List[str]]:
    def parse(values: Values) -> List[str]:
        text = _one(values) if values else ""
        return [g for g in text.split(",") if g]

    return Cmd(["grp_member"] + ([user] if user is not None else []), parse)


def stats() -> Cmd[Dict[str, str]]:
    return Cmd(["stats"], _kv)


def put_line(row: Sequence[Any], escape: bool) -> str:
    """One ``put <entry> <v1> … <vN>`` line of an upload."""
    return join_args(["put"] + [format_value(v) for v in row], escape)
