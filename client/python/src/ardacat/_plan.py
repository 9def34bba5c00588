"""Which schema lookups give the types of a streamed result: the collection behind a ``getattr``
pattern, the ``/dir:attr`` references of ``selectattr`` expressions, and the shape of a native SQL
``SELECT`` (how many columns, which tables). Text analysis only; no I/O.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ._types import Converter, converter

PSEUDO = {"FILE", "OWNER", "PERMISSIONS", "GROUP_RIGHT"}
_REF = re.compile(r"^\s*([^\s:'\"()]*):([A-Za-z_][A-Za-z0-9_]*)\s*$")
_ALIAS_REF = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\s*$")
_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
_AGGREGATE = re.compile(r"^\s*(COUNT|SUM|AVG|MIN|MAX)\s*\(\s*(?:DISTINCT\s+)?(.*?)\s*\)\s*$", re.I)


def getattr_schema_path(pattern: str) -> Optional[str]:
    """The path whose ``listattr`` types a ``getattr`` of ``pattern``; ``None``: the current
    directory. A collection or a single entry answers ``listattr`` itself; a wildcard pattern
    is typed by its collection."""
    head, slash, last = pattern.rpartition("/")
    if "*" not in last and "?" not in last:
        return pattern
    if not slash:
        return None
    return head or "/"


def expr_ref(expr: str) -> Optional[Tuple[str, str]]:
    """``(dir, attr)`` when ``expr`` is a plain attribute reference ``dir:attr``."""
    m = _REF.match(expr)
    if not m or not m.group(1) or m.group(2).upper() in PSEUDO:
        return None
    return m.group(1), m.group(2)


def _split_top(text: str, sep: str = ",") -> List[str]:
    """Split at ``sep`` outside parentheses and quotes."""
    parts: List[str] = []
    cur: List[str] = []
    depth, quote = 0, ""
    for c in text:
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur))
    return parts


_KEYWORDS_AFTER_FROM = re.compile(r"\b(WHERE|GROUP|ORDER|HAVING|LIMIT|OFFSET)\b", re.I)


class SelectShape:
    """A native SQL ``SELECT``: its column count and its tables (alias → path)."""

    def __init__(self, ncols: int, tables: Dict[str, str], single: Optional[str]) -> None:
        self.ncols = ncols
        self.tables = tables
        self.single = single

    def ref(self, header: str) -> Optional[Tuple[str, str]]:
        """The ``(dir, attr)`` a header line names, if it can be told."""
        r = expr_ref(header)
        if r:
            return r
        m = _ALIAS_REF.match(header)
        if m and m.group(1) in self.tables:
            return self.tables[m.group(1)], m.group(2)
        m = _NAME.match(header)
        if m and self.single and m.group(1).upper() not in PSEUDO:
            return self.single, m.group(1)
        return None

    def type_name(self, header: str, schemas: Dict[str, Dict[str, str]]) -> str:
        """The attribute type of a header line's column: an attribute's own, an aggregate's
        (``COUNT`` int, ``AVG`` float, ``MIN``/``MAX`` their argument's, ``SUM`` int over int
        and float otherwise); ``text`` when it cannot be told (expressions, entry columns)."""
        m = _AGGREGATE.match(header)
        if m:
            kind = m.group(1).upper()
            if kind == "COUNT":
                return "int"
            if kind == "AVG":
                return "float"
            inner = self.type_name(m.group(2), schemas)
            if kind == "SUM":
                return "int" if inner == "int" else "float"
            return inner
        ref = self.ref(header)
        return "text" if ref is None else schemas.get(ref[0], {}).get(ref[1], "text")

    def converters(self, headers: List[str], schemas: Dict[str, Dict[str, str]]) -> List[Optional[Converter]]:
        """One converter per column (``None``: text), from the tables' schemas."""
        return [converter(self.type_name(h, schemas)) for h in headers]


def select_shape(statement: str) -> Optional[SelectShape]:
    """``None`` for a statement that is not a ``SELECT`` (its reply has no data lines)."""
    m = re.match(r"^\s*SELECT\s+(?:DISTINCT\s+)?", statement, re.I)
    if not m:
        return None
    rest = statement[m.end():]
    fm = None
    depth, quote = 0, ""
    for i, c in enumerate(rest):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and re.match(r"\sFROM\s", rest[i : i + 6], re.I):
            fm = i
            break
    select_list = rest[:fm] if fm is not None else rest
    cols = _split_top(select_list)
    if any(c.strip() == "*" or c.strip().endswith(".*") for c in cols):
        raise ValueError(
            "sql(): name the columns instead of '*': a SELECT reply does not say how many "
            "columns it has, so the client must know"
        )
    tables: Dict[str, str] = {}
    single: Optional[str] = None
    if fm is not None:
        from_text = rest[fm + 6 :]
        k = _KEYWORDS_AFTER_FROM.search(from_text)
        if k:
            from_text = from_text[: k.start()]
        items = [t.split() for t in _split_top(from_text) if t.strip()]
        for words in items:
            path = words[0]
            alias = words[-1] if len(words) > 1 else path
            tables[alias] = path
        if len(items) == 1:
            single = items[0][0]
    return SelectShape(len(cols), tables, single)
