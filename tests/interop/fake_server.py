#!/usr/bin/env python3
"""A tiny in-memory fake AMGA server, used only to self-test the interop client and scripts.

It is NOT a reference implementation. It speaks the wire protocol the way amga.md §2 and §9
describe it, and it makes the same reply-shape assumptions as scenario.py:

* ``dir`` names are full paths.
* ``getattr`` and ``find`` names are basenames.
* The query language is a toy: ``/d:attr`` references, bare attributes of the target
  directory, ``FILE``, double-quoted strings, numbers, ``= <> != < > <= >=``, ``+ - * /``,
  ``and or not``, parentheses and ``like()``. It is evaluated over the cartesian product of
  the directories it mentions.

Misbehaviour modes (``bad=``) let the self-test check that the strict client notices them:
``reply_after_login``, ``ok_after_resume``, ``reply_to_put`` and ``trailing_bytes``.

Standalone: ``python3 fake_server.py [--port 8822] [--sessions] [--protocol 2]``.
"""

from __future__ import annotations

import copy
import itertools
import re
import socket
import socketserver
import threading
from fnmatch import fnmatchcase
from posixpath import basename, dirname, normpath

EOT = "\x04"


class Err(Exception):
    def __init__(self, code: int, msg: str):
        super().__init__(msg)
        self.code = code
        self.msg = msg


# ---------------------------------------------------------------- values
def parse_type(t: str) -> str:
    t = t.lower()
    if t in ("int", "integer", "smallint", "bigint", "float", "double", "text"):
        return t
    if re.fullmatch(r"varchar\(\d+\)", t):
        return t
    raise Err(3, f"unknown type {t}")


def parse_value(typ: str, s: str):
    try:
        if typ in ("int", "integer", "smallint", "bigint"):
            return int(s.strip())
        if typ in ("float", "double"):
            return float(s.strip())
    except ValueError:
        raise Err(18, f"invalid value '{s}' for {typ}") from None
    m = re.fullmatch(r"varchar\((\d+)\)", typ)
    if m and len(s) > int(m.group(1)):
        raise Err(18, f"value too long for {typ}")
    return s


def to_wire(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(int(v)) if v == int(v) and abs(v) < 1e15 else repr(v)
    return str(v)


def split_args(line: str) -> list[str]:
    """Space-separated words; single quotes group, \\' inside quotes is a quote."""
    out, cur, i, inq, have = [], [], 0, False, False
    while i < len(line):
        ch = line[i]
        if inq:
            if ch == "\\" and line[i + 1:i + 2] == "'":
                cur.append("'")
                i += 2
                continue
            if ch == "'":
                inq = False
            else:
                cur.append(ch)
        elif ch == "'":
            inq, have = True, True
        elif ch == " ":
            if cur or have:
                out.append("".join(cur))
            cur, have = [], False
        else:
            cur.append(ch)
        i += 1
    if inq:
        raise Err(3, "unterminated quote")
    if cur or have:
        out.append("".join(cur))
    return out


# ---------------------------------------------------------------- query language
TOKEN = re.compile(r"""\s*(?:
    (?P<str>"[^"]*")
  | (?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<ref>/[\w./-]*:[A-Za-z_]\w*|[A-Za-z_]\w*)
  | (?P<op><=|>=|<>|!=|=|<|>|\+|-|\*|/|\(|\)|,)
)""", re.X)


def _like(v, pat) -> bool:
    if v is None or pat is None:
        return False
    rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pat)
    return re.fullmatch(rx, str(v), re.S) is not None


class Expr:
    def __init__(self, text: str, default_dir: str | None, store: "Store"):
        self.refs: list[tuple[str, str]] = []
        out, pos = [], 0
        text = text.strip()
        while pos < len(text):
            m = TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise Err(8, f"illegal query near {text[pos:]!r}")
            pos = m.end()
            if m.group("str") is not None:
                out.append(repr(m.group("str")[1:-1]))
            elif m.group("num") is not None:
                out.append(m.group("num"))
            elif m.group("op") is not None:
                op = m.group("op")
                out.append({"=": "==", "<>": "!="}.get(op, op))
            else:
                word = m.group("ref")
                low = word.lower()
                if low in ("and", "or", "not"):
                    out.append(f" {low} ")
                elif low == "like" and text[pos:].lstrip().startswith("("):
                    out.append("_like")
                else:
                    if ":" in word:
                        d, attr = word.rsplit(":", 1)
                    elif default_dir is None:
                        raise Err(8, f"unqualified attribute {word}")
                    else:
                        d, attr = default_dir, word
                    d = normpath(d)
                    if d not in store.dirs:
                        raise Err(1, f"{d}: no such directory")
                    if attr != "FILE" and attr not in store.dirs[d]["attrs"]:
                        raise Err(10, f"no such attribute {attr}")
                    self.refs.append((d, attr))
                    out.append(f"_v[{len(self.refs) - 1}]")
        src = " ".join(out) or "True"
        try:
            self.code = compile(src, "<query>", "eval")
        except SyntaxError:
            raise Err(8, f"illegal query: {text}") from None

    def eval(self, row: dict[str, tuple[str, dict]]):
        vals = []
        for d, attr in self.refs:
            name, e = row[d]
            vals.append(name if attr == "FILE" else e.get(attr))
        try:
            return eval(self.code, {"__builtins__": {}, "_like": _like}, {"_v": vals})
        except (TypeError, ZeroDivisionError):
            return None


def rows_over(store: "Store", dirs: list[str], first: str | None = None,
              first_pattern: str = "*"):
    order = ([first] if first else []) + [d for d in dict.fromkeys(dirs) if d != first]
    lists = []
    for d in order:
        ents = store.dirs[d]["entries"]
        names = sorted(n for n in ents if d != first or fnmatchcase(n, first_pattern))
        lists.append([(d, n) for n in names])
    for combo in itertools.product(*lists):
        yield {d: (n, store.dirs[d]["entries"][n]) for d, n in combo}


# ---------------------------------------------------------------- store
class Store:
    def __init__(self):
        self.lock = threading.RLock()
        self.dirs: dict[str, dict] = {"/": self.newdir()}
        self.sessions: dict[int, dict] = {}
        self.next_session = 1000

    @staticmethod
    def newdir() -> dict:
        return {"attrs": {}, "entries": {}, "seqs": {}}

    def snapshot(self):
        return copy.deepcopy(self.dirs)


class Conn:
    """Per-connection command state."""

    def __init__(self, store: Store, login: str):
        self.s = store
        self.login = login
        self.cwd = "/"
        self.tx: dict | None = None       # snapshot taken at 'transaction'
        self.upload: dict | None = None   # {'dir', 'attrs', 'rows', 'error'}

    def abs(self, p: str) -> str:
        return normpath(p if p.startswith("/") else self.cwd.rstrip("/") + "/" + p)

    def need_dir(self, p: str) -> dict:
        d = self.s.dirs.get(p)
        if d is None:
            raise Err(1, f"{p}: no such file or directory")
        return d

    def split_pattern(self, p: str) -> tuple[str, str]:
        p = self.abs(p)
        if p in self.s.dirs:
            return p, "*"
        parent, pat = dirname(p), basename(p)
        self.need_dir(parent)
        return parent, pat

    # each command returns a list of data lines or raises Err
    def run(self, line: str) -> list[str]:
        args = split_args(line)
        if not args:
            raise Err(3, "empty command")
        cmd, a = args[0], args[1:]
        with self.s.lock:
            if self.upload is not None and cmd not in ("put", "commit", "abort"):
                self.upload = None
            fn = getattr(self, "c_" + cmd, None)
            if fn is None:
                raise Err(3, f"Illegal command {cmd}")
            return fn(a)

    def c_pwd(self, a):
        return [self.cwd]

    def c_whoami(self, a):
        return [self.login]

    def c_cd(self, a):
        p = self.abs(a[0] if a else "/")
        self.need_dir(p)
        self.cwd = p
        return []

    def c_createdir(self, a):
        p = self.abs(a[0])
        if p in self.s.dirs:
            raise Err(16, f"{p}: directory exists")
        parent = self.need_dir(dirname(p))
        if basename(p) in parent["entries"]:
            raise Err(15, f"{p}: exists")
        self.s.dirs[p] = self.s.newdir()
        return []

    def c_rmdir(self, a):
        p = self.abs(a[0])
        d = self.need_dir(p)
        if p == "/" or d["entries"] or d["seqs"] or any(dirname(k) == p for k in self.s.dirs
                                                        if k != p):
            raise Err(11, f"{p}: directory not empty")
        del self.s.dirs[p]
        if self.cwd == p:
            self.cwd = "/"
        return []

    def c_dir(self, a):
        d, pat = self.split_pattern(a[0] if a else self.cwd)
        out = []
        for k in sorted(self.s.dirs):
            if k != d and dirname(k) == d and fnmatchcase(basename(k), pat):
                out += [k, "collection"]
        for n in sorted(self.s.dirs[d]["entries"]):
            if fnmatchcase(n, pat):
                out += [d.rstrip("/") + "/" + n, "entry"]
        return out

    def c_addattr(self, a):
        if len(a) != 3:
            raise Err(3, "usage: addattr dir name type")
        d = self.need_dir(self.abs(a[0]))
        if a[1] in d["attrs"] or a[1] == "FILE":
            raise Err(15, f"{a[1]}: exists")
        d["attrs"][a[1]] = parse_type(a[2])
        for e in d["entries"].values():
            e[a[1]] = None
        return []

    def c_removeattr(self, a):
        d = self.need_dir(self.abs(a[0]))
        if a[1] not in d["attrs"]:
            raise Err(10, f"no such attribute {a[1]}")
        del d["attrs"][a[1]]
        for e in d["entries"].values():
            e.pop(a[1], None)
        return []

    def c_listattr(self, a):
        p = self.abs(a[0])
        d = self.s.dirs.get(p)
        if d is None:
            parent = self.need_dir(dirname(p))
            if basename(p) not in parent["entries"]:
                raise Err(1, f"{p}: no such file or directory")
            d = parent
        return [x for k, t in d["attrs"].items() for x in (k, t)]

    def _add(self, p: str, pairs: list[tuple[str, str]]):
        p = self.abs(p)
        d = self.need_dir(dirname(p))
        name = basename(p)
        if name in d["entries"] or p in self.s.dirs:
            raise Err(15, f"{p}: exists")
        e = {k: None for k in d["attrs"]}
        for k, v in pairs:
            if k not in d["attrs"]:
                raise Err(10, f"no such attribute {k}")
            e[k] = parse_value(d["attrs"][k], v)
        d["entries"][name] = e

    def c_addentry(self, a):
        if len(a) % 2 != 1:
            raise Err(3, "usage: addentry path (attr value)*")
        self._add(a[0], list(zip(a[1::2], a[2::2])))
        return []

    def c_addentries(self, a):
        for p in a:
            self._add(p, [])
        return []

    def c_setattr(self, a):
        d, pat = self.split_pattern(a[0])
        t = self.s.dirs[d]
        names = [n for n in t["entries"] if fnmatchcase(n, pat)]
        if not names:
            raise Err(1, f"{a[0]}: no such file or directory")
        pairs = list(zip(a[1::2], a[2::2]))
        for k, v in pairs:
            if k not in t["attrs"]:
                raise Err(10, f"no such attribute {k}")
            parse_value(t["attrs"][k], v)
        for n in names:
            for k, v in pairs:
                t["entries"][n][k] = parse_value(t["attrs"][k], v)
        return []

    def c_clearattr(self, a):
        return self.c_setattr_null(a)

    def c_setattr_null(self, a):
        d, pat = self.split_pattern(a[0])
        for n, e in self.s.dirs[d]["entries"].items():
            if fnmatchcase(n, pat):
                e[a[1]] = None
        return []

    def c_getattr(self, a):
        d, pat = self.split_pattern(a[0])
        t = self.s.dirs[d]
        for k in a[1:]:
            if k != "FILE" and k not in t["attrs"]:
                raise Err(10, f"no such attribute {k}")
        out = []
        for n in sorted(t["entries"]):
            if fnmatchcase(n, pat):
                e = t["entries"][n]
                out.append(n)
                out += [n if k == "FILE" else to_wire(e[k]) for k in a[1:]]
        return out

    def c_rm(self, a):
        d, pat = self.split_pattern(a[0])
        ents = self.s.dirs[d]["entries"]
        names = [n for n in ents if fnmatchcase(n, pat)]
        if not names:
            raise Err(1, f"{a[0]}: no such file or directory")
        for n in names:
            del ents[n]
        return []

    def c_find(self, a):
        if len(a) != 2:
            raise Err(3, "usage: find pattern condition")
        d, pat = self.split_pattern(a[0])
        cond = Expr(a[1], d, self.s)
        out = []
        for row in rows_over(self.s, [r[0] for r in cond.refs], d, pat):
            if cond.eval(row) and row[d][0] not in out:
                out.append(row[d][0])
        return out

    def c_selectattr(self, a):
        if len(a) < 2:
            raise Err(3, "usage: selectattr expr+ condition")
        exprs = [Expr(x, None, self.s) for x in a[:-1]]
        cond = Expr(a[-1], None, self.s)
        dirs = [r[0] for e in exprs + [cond] for r in e.refs]
        out = []
        for row in rows_over(self.s, dirs):
            if cond.eval(row):
                out += [to_wire(e.eval(row)) for e in exprs]
        return out

    def c_updateattr(self, a):
        if len(a) < 4 or len(a) % 2:
            raise Err(3, "usage: updateattr pattern (attr expr)+ condition")
        d, pat = self.split_pattern(a[0])
        t = self.s.dirs[d]
        ups = []
        for k, x in zip(a[1:-1:2], a[2:-1:2]):
            if k not in t["attrs"]:
                raise Err(10, f"no such attribute {k}")
            ups.append((k, Expr(x, d, self.s)))
        cond = Expr(a[-1], d, self.s)
        dirs = [r[0] for e in [cond] + [u[1] for u in ups] for r in e.refs]
        changes = []
        for row in rows_over(self.s, dirs, d, pat):
            if cond.eval(row):
                changes.append((row[d][1], [(k, e.eval(row)) for k, e in ups]))
        for e, vals in changes:
            for k, v in vals:
                e[k] = None if v is None else parse_value(t["attrs"][k], to_wire(v))
        return []

    def c_transaction(self, a):
        if self.tx is not None:
            raise Err(9, "transaction already in progress")
        self.tx = self.s.snapshot()
        return []

    def c_upload(self, a):
        d = self.abs(a[0])
        self.need_dir(d)
        for k in a[1:]:
            if k not in self.s.dirs[d]["attrs"]:
                raise Err(10, f"no such attribute {k}")
        self.upload = {"dir": d, "attrs": a[1:], "rows": [], "error": None}
        return []

    def c_put(self, a):
        u = self.upload
        if u is None:
            raise Err(9, "No upload in progress")
        if u["error"] is None:
            if len(a) != len(u["attrs"]) + 1:
                u["error"] = Err(3, "Illegal command")
            else:
                try:
                    t = self.s.dirs[u["dir"]]["attrs"]
                    for k, v in zip(u["attrs"], a[1:]):
                        parse_value(t[k], v)
                except Err as e:
                    u["error"] = e
                u["rows"].append(a)
        return []

    def c_commit(self, a):
        if self.upload is not None:
            u, self.upload = self.upload, None
            if u["error"] is not None:
                raise u["error"]
            snap = self.s.snapshot()
            try:
                for row in u["rows"]:
                    self._add(u["dir"] + "/" + row[0], list(zip(u["attrs"], row[1:])))
            except Err:
                self.s.dirs = snap
                raise
            return []
        if self.tx is None:
            raise Err(9, "No transaction in progress")
        self.tx = None
        return []

    def c_abort(self, a):
        if self.upload is not None:
            self.upload = None
            return []
        if self.tx is None:
            raise Err(9, "No transaction in progress")
        self.s.dirs, self.tx = self.tx, None
        return []

    def c_sequence_create(self, a):
        d = self.need_dir(self.abs(a[1]))
        if a[0] in d["seqs"] or a[0] in d["entries"]:
            raise Err(15, f"{a[0]}: exists")
        incr = int(a[2]) if len(a) > 2 else 1
        start = int(a[3]) if len(a) > 3 else 1
        d["seqs"][a[0]] = [start, incr]
        return []

    def _seq(self, p: str) -> list[int]:
        p = self.abs(p)
        d = self.s.dirs.get(dirname(p))
        if d is None or basename(p) not in d["seqs"]:
            raise Err(17, f"{p}: not a sequence")
        return d["seqs"][basename(p)]

    def c_sequence_next(self, a):
        s = self._seq(a[0])
        v = s[0]
        s[0] += s[1]
        return [str(v)]

    def c_sequence_remove(self, a):
        self._seq(a[0])
        p = self.abs(a[0])
        del self.s.dirs[dirname(p)]["seqs"][basename(p)]
        return []


# ---------------------------------------------------------------- network
class Handler(socketserver.StreamRequestHandler):
    server: "FakeServer"

    def w(self, s: str) -> None:
        self.wfile.write(s.encode("utf-8", "surrogateescape"))
        self.wfile.flush()

    def rl(self) -> str | None:
        try:
            b = self.rfile.readline()
        except OSError:
            return None
        if not b:
            return None
        return b.decode("utf-8", "surrogateescape").rstrip("\n")

    def handle(self) -> None:
        srv = self.server
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.w(f"ARDA Metadata Server 9.9.9-fake\nProtocol {srv.protocol}\nplain\n")
        opts = []
        while True:
            line = self.rl()
            if line is None:
                return
            if line == "":
                break
            opts.append(line)
        if not opts:
            return
        session: int | None = None
        if opts[0].startswith("resume"):
            try:
                session = int(opts[0][6:])
            except ValueError:
                return
            st = srv.store.sessions.get(session)
            if st is None:
                return
            if srv.bad == "ok_after_resume":
                self.w("OK\n")
            conn: Conn = st
        elif opts[0] == "plain":
            self.w("OK\n")
            ctx = {}
            while True:
                line = self.rl()
                if line is None:
                    return
                if line == "":
                    break
                k, _, v = line.partition(" ")
                ctx[k] = v
            login, pw = ctx.get("0", ""), ctx.get("5", "")
            if srv.bad == "reply_after_login":
                self.w("0\n" + EOT + EOT)
            if srv.users.get(login) != pw:
                self.rl()
                self.w("4 permission denied: bad login or password\n" + EOT + EOT)
                return
            conn = Conn(srv.store, login)
            if srv.sessions:
                with srv.store.lock:
                    srv.store.next_session += 1
                    session = srv.store.next_session
                    srv.store.sessions[session] = conn
        else:
            return

        while True:
            line = self.rl()
            if line is None:
                return
            cmd = line.split(" ", 1)[0]
            try:
                lines = conn.run(line)
                if cmd in ("upload", "put") and srv.bad != "reply_to_put":
                    continue  # upload mode: no reply, errors surface at commit
                out = "0\n" + "".join(x + "\n" for x in lines)
            except Err as e:
                if cmd in ("upload", "put") and srv.bad != "reply_to_put":
                    if conn.upload is not None and conn.upload["error"] is None:
                        conn.upload["error"] = e
                    elif conn.upload is None:
                        conn.upload = {"dir": "", "attrs": [], "rows": [], "error": e}
                    continue
                out = f"{e.code} {e.msg}\n"
            if srv.protocol >= 2:
                out += EOT + (f"session{session}" if session is not None else "") + EOT
            else:
                out += EOT
            if srv.bad == "trailing_bytes":
                out += "x"
            self.w(out)
            if session is not None:
                # the client closes after a token; wait for it
                continue


class FakeServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, port: int = 0, *, sessions: bool = False, protocol: int = 2,
                 bad: str | None = None, users: dict[str, str] | None = None):
        super().__init__(("127.0.0.1", port), Handler)
        self.store = Store()
        self.sessions = sessions
        self.protocol = protocol
        self.bad = bad
        self.users = users if users is not None else {"root": "secret"}

    @property
    def port(self) -> int:
        return self.server_address[1]

    def start(self) -> "FakeServer":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=8822)
    p.add_argument("--sessions", action="store_true")
    p.add_argument("--protocol", type=int, default=2)
    p.add_argument("--bad", default=None)
    p.add_argument("--password", default="secret")
    a = p.parse_args()
    s = FakeServer(a.port, sessions=a.sessions, protocol=a.protocol, bad=a.bad,
                   users={"root": a.password})
    print(f"fake AMGA server on 127.0.0.1:{s.port}", flush=True)
    s.serve_forever()
