#!/usr/bin/env python3
"""End-to-end AMGA conformance scenario (amga.md §8.3), driven by the independent client.

Run:  python3 tests/interop/scenario.py --host 127.0.0.1 --port 8822 [--login root]
      (password: --password or env ARDACAT_ROOT_PASSWORD)

Every step checks exact results and prints one line, ``ok   <step>`` or ``FAIL <step>: why``.
The last line is exactly ``N passed, M failed``. The exit status is 0 only if nothing failed.

The directories are ``/pytest<suffix>`` and ``/pylock<suffix>``. The suffix defaults to
``_<pid>`` so that reruns do not collide. ``--suffix ''`` gives the literal §8.3 paths.
Leftovers are removed at the end unless ``--no-cleanup`` is given.

Assumptions about reply shapes. These can be changed with flags, and the lead should check them
against the server:

* ``dir <d>``: 2 lines per item, the name then ``collection`` or ``entry``. The name is the
  item's full path (``--dir-names full``, the default). ``base`` expects the last component
  only; ``any`` accepts either.
* The name line of each ``getattr`` row and each ``find`` line is the entry's basename
  (``--entry-names base``, the default; also ``full`` or ``any``).
* Row order is never assumed. ``getattr``, ``dir``, ``find`` and ``listattr`` results are
  compared as sets or maps keyed by name, and duplicates count as failures.
* ``listattr`` types print as they were declared: ``int``, ``varchar(20)``, ``float``.
* A NULL value is an empty line. Values come back in the server's canonical form: int ``'000'``
  reads back as ``0``, and floats use the shortest form (``0.5``, ``1.5``).
* The first ``sequence_next`` returns the start value (1 by default), and each later call adds
  the increment.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import posixpath
import sys
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from amga_client import AmgaClient, AmgaError, CommandError, ProtocolError  # noqa: E402


class Failed(Exception):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Failed(msg)


def eq(actual, expected, what: str) -> None:
    if actual != expected:
        raise Failed(f"{what}: expected {expected!r}, got {actual!r}")


def diff_maps(got: dict, exp: dict, what: str) -> None:
    if got == exp:
        return
    missing = sorted(set(exp) - set(got))
    extra = sorted(set(got) - set(exp))
    wrong = sorted(k for k in set(got) & set(exp) if got[k] != exp[k])
    parts = []
    if missing:
        parts.append(f"missing {missing}")
    if extra:
        parts.append(f"unexpected {extra}")
    for k in wrong[:5]:
        parts.append(f"{k}: expected {exp[k]!r}, got {got[k]!r}")
    if len(wrong) > 5:
        parts.append(f"... {len(wrong) - 5} more differ")
    raise Failed(f"{what}: " + "; ".join(parts))


def wire(v: str | None) -> str:
    """Expected wire text of a model value (NULL is an empty line)."""
    return "" if v is None else v


def fmt_float(f: float) -> str:
    """Shortest round-trip float text, integral values without '.0' (PostgreSQL float8 style)."""
    if f == int(f) and abs(f) < 1e15:
        return str(int(f))
    return repr(f)


class Scenario:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        suffix = f"_{os.getpid()}" if args.suffix is None else args.suffix
        self.P = "/pytest" + suffix
        self.L = "/pylock" + suffix
        self.passed = 0
        self.failed = 0
        self.c = self.new_client()
        # model of /pytest: entry basename -> {attr: wire value or None}
        self.model: dict[str, dict[str, str | None]] = {}
        self.attrs: dict[str, str] = {}  # attr name -> declared type
        self.collections: set[str] = set()  # sub-collections of P (basenames)

    # -------------------------------------------------------------- plumbing
    def new_client(self) -> AmgaClient:
        a = self.args
        return AmgaClient(a.host, a.port, a.login, a.password, strict=not a.lenient,
                          timeout=a.timeout, trace=a.trace)

    def step(self, name: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except (Failed, AmgaError, OSError) as e:
            self.failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            if isinstance(e, (ProtocolError, OSError)) or (
                    isinstance(e, CommandError) and e.code == -1):
                # the connection may be out of step: start a fresh one (absolute paths only)
                self.c.close()
                self.c = self.new_client()
        else:
            self.passed += 1
            print(f"ok   {name}", flush=True)

    def info(self, text: str) -> None:
        print(f"info {text}", flush=True)

    def expect_error(self, code: int | None, cmd: str, client: AmgaClient | None = None
                     ) -> CommandError:
        c = client or self.c
        try:
            lines = c.execute(cmd)
        except CommandError as e:
            if code is None:
                check(e.code not in (0, -1), f"{cmd!r}: expected a non-zero status, got {e}")
            else:
                eq(e.code, code, f"status code of {cmd!r} (message {e.msg!r})")
            return e
        raise Failed(f"{cmd!r} succeeded with {lines!r}; expected error "
                     f"{code if code is not None else '!= 0'}")

    def name_key(self, name: str, mode: str, parent: str, what: str) -> str:
        base = posixpath.basename(name)
        if mode == "base":
            check(name == base, f"{what}: name {name!r} should be a basename "
                                f"(--{'dir' if what == 'dir' else 'entry'}-names base)")
        elif mode == "full":
            check(name == parent + "/" + base,
                  f"{what}: name {name!r} should be the full path {parent + '/' + base!r}")
        return base

    def expect_empty(self, lines: list[str], cmd: str) -> None:
        eq(lines, [], f"data lines of {cmd!r}")

    def run(self, cmd: str) -> None:
        """A write command: must succeed with no data lines."""
        self.expect_empty(self.c.execute(cmd), cmd)

    # -------------------------------------------------------------- model-based checks
    def check_getattr(self, pattern: str, attrs: list[str], names: set[str] | None = None
                      ) -> None:
        if names is None:
            names = set(self.model)
        rows = self.c.getattr(pattern, attrs)
        got: dict[str, list[str]] = {}
        for name, vals in rows:
            k = self.name_key(name, self.args.entry_names, self.P, "getattr")
            check(k not in got, f"getattr {pattern}: entry {k!r} returned twice")
            got[k] = vals
        exp = {k: [wire(self.model[k][a]) for a in attrs] for k in names}
        diff_maps(got, exp, f"getattr {pattern} {' '.join(attrs)}")

    def check_dir(self) -> None:
        items = self.c.dir(self.P)
        got: dict[str, str] = {}
        for name, typ in items:
            k = self.name_key(name, self.args.dir_names, self.P, "dir")
            check(k not in got, f"dir {self.P}: item {k!r} returned twice")
            got[k] = typ
        exp = {k: "entry" for k in self.model}
        exp.update({k: "collection" for k in self.collections})
        diff_maps(got, exp, f"dir {self.P}")

    def check_find(self, condition: str, expected: set[str]) -> None:
        lines = self.c.find(self.P, condition)
        keys = [self.name_key(n, self.args.entry_names, self.P, "find") for n in lines]
        check(len(keys) == len(set(keys)), f"find: duplicate names in {lines!r}")
        eq(set(keys), expected, f"find {self.P} {condition!r}")

    def check_listattr(self, path: str) -> None:
        pairs = self.c.listattr(path)
        got = dict(pairs)
        check(len(got) == len(pairs), f"listattr {path}: duplicate names in {pairs!r}")
        diff_maps(got, dict(self.attrs), f"listattr {path}")

    def new_entry(self, name: str, **vals: str) -> None:
        self.model[name] = {a: None for a in self.attrs}
        self.model[name].update(vals)

    # -------------------------------------------------------------- the scenario
    def main(self) -> int:
        P, L, c = self.P, self.L, self.c
        a = self.args
        print(f"info scenario against {a.host}:{a.port} as {a.login!r}, collections {P} {L}",
              flush=True)
        try:
            self.scenario()
        finally:
            if not a.no_cleanup:
                self.cleanup()
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1

    def scenario(self) -> None:
        P, L = self.P, self.L

        # --- 0. connection
        def connect():
            self.c.connect()
            lines = self.c.greeting_lines
            self.info(f"greeting {lines!r}, protocol {self.c.protocol}")
            check(self.c.protocol >= 1, f"protocol digit {self.c.protocol} (expected >= 1)")
        self.step("connect: greeting, plain/OK, login block (no reply)", connect)
        if self.failed:
            self.info("cannot run the scenario without a working connection; stopping")
            return
        self.step("whoami returns the login",
                  lambda: eq(self.c.whoami(), self.args.login, "whoami"))
        self.step("pwd on a fresh connection is /", lambda: eq(self.c.pwd(), "/", "pwd"))

        # --- 1. createdir
        self.step(f"createdir {P}", lambda: self.run(f"createdir {P}"))
        self.step(f"createdir {P} again -> 16", lambda: self.expect_error(16, f"createdir {P}"))

        # --- 2. addentries
        def addentries():
            self.run(f"addentries {P}/a {P}/b {P}/c")
            for n in "abc":
                self.new_entry(n)
        self.step("addentries a b c", addentries)

        # --- 3. addattr
        for name, typ in (("events", "int"), ("eventGen", "varchar(20)"), ("sssin", "float"),
                          ("l1", "int")):
            def add(name=name, typ=typ):
                self.run(f"addattr {P} {name} {typ}")
                self.attrs[name] = typ
                for e in self.model.values():
                    e[name] = None
            self.step(f"addattr {P} {name} {typ}", add)
        self.step("addattr existing attribute -> 15",
                  lambda: self.expect_error(15, f"addattr {P} events int"))

        # --- 4. listattr
        self.step(f"listattr {P}: name/type pairs", lambda: self.check_listattr(P))
        self.step(f"listattr {P}/a (an entry): same pairs", lambda: self.check_listattr(f"{P}/a"))

        # --- 5. 10 x addentry (values quoted like the original: events '100' ...)
        def addentries_t():
            for n in range(1, 11):
                self.expect_empty(self.c.addentry(f"{P}/t{n}", [
                    ("events", f"{n}00"), ("eventGen", "myGen"), ("sssin", "0.5")]),
                    f"addentry t{n}")
                self.new_entry(f"t{n}", events=str(n * 100), eventGen="myGen", sssin="0.5")
        self.step("10 x addentry tN events 'N00' eventGen 'myGen' sssin '0.5'", addentries_t)
        self.step("addentry existing entry -> 15",
                  lambda: self.expect_error(15, f"addentry {P}/t1 events '1'"))

        # --- 6. getattr
        g3 = ["eventGen", "sssin", "events"]
        self.step(f"getattr {P} eventGen sssin events (13 entries, NULL = empty line)",
                  lambda: self.check_getattr(P, g3))
        self.step(f"getattr {P}/t1 (single entry)",
                  lambda: self.check_getattr(f"{P}/t1", g3, {"t1"}))
        self.step(f"getattr {P}/t? (wildcard: t1..t9, not t10)",
                  lambda: self.check_getattr(f"{P}/t?", g3, {f"t{n}" for n in range(1, 10)}))
        self.step(f"getattr {P}/t1* (wildcard: t1, t10)",
                  lambda: self.check_getattr(f"{P}/t1*", ["events"], {"t1", "t10"}))

        # --- 7. createdir testdir, dir
        def testdir():
            self.run(f"createdir {P}/testdir")
            self.collections.add("testdir")
        self.step(f"createdir {P}/testdir", testdir)
        self.step(f"dir {P}: entries + testdir collection", self.check_dir)

        # --- 8. pylock
        self.step(f"createdir {L}", lambda: self.run(f"createdir {L}"))
        self.step(f"addattr {L} id int", lambda: self.run(f"addattr {L} id int"))
        self.step(f"addentry {L}/lock id '4711'",
                  lambda: self.expect_empty(self.c.addentry(f"{L}/lock", [("id", "4711")]),
                                            "addentry lock"))
        self.step(f"getattr {L} id",
                  lambda: eq([(posixpath.basename(n), v) for n, v in self.c.getattr(L, ["id"])],
                             [("lock", ["4711"])], f"getattr {L} id"))

        # --- 9. selectattr
        self.step("selectattr eventGen sssin events where FILE=\"t1\" -> 3 lines",
                  lambda: eq(self.c.selectattr([f"{P}:eventGen", f"{P}:sssin", f"{P}:events"],
                                               f'{P}:FILE="t1"'),
                             [["myGen", "0.5", "100"]], "selectattr"))
        self.step("selectattr with no matching row -> no lines",
                  lambda: eq(self.c.selectattr([f"{P}:events"], f'{P}:FILE="nope"'), [],
                             "selectattr"))

        # --- 10. updateattr with an implicit join
        def set_t2():
            self.expect_empty(self.c.setattr(f"{P}/t2", [("events", "4711")]), "setattr t2")
            self.model["t2"]["events"] = "4711"
        self.step(f"setattr {P}/t2 events '4711'", set_t2)

        def updateattr():
            self.expect_empty(self.c.updateattr(P, [("sssin", "sssin + 1")],
                                                f"{P}:events = {L}:id"), "updateattr")
            for e in self.model.values():
                if e["events"] == "4711":
                    e["sssin"] = fmt_float(float(e["sssin"]) + 1)
            eq(self.model["t2"]["sssin"], "1.5", "model sanity")
        self.step(f"updateattr {P} sssin 'sssin + 1' '{P}:events = {L}:id'", updateattr)
        self.step("after updateattr: only t2 has sssin 1.5",
                  lambda: self.check_getattr(P, ["sssin", "events"]))

        # --- 11. setattr with wildcards
        def setattr_t():
            self.expect_empty(self.c.setattr(f"{P}/t?", [("events", "42")]), "setattr t?")
            for k, e in self.model.items():
                if fnmatch.fnmatchcase(k, "t?"):
                    e["events"] = "42"
        self.step(f"setattr {P}/t? events '42'", setattr_t)

        def setattr_q():
            # the original sends non-string values unquoted: setattr /pytest/? l1 7
            self.expect_empty(self.c.setattr(f"{P}/?", [("l1", 7)]), "setattr ?")
            for k, e in self.model.items():
                if fnmatch.fnmatchcase(k, "?"):
                    e["l1"] = "7"
        self.step(f"setattr {P}/? l1 7 (unquoted int)", setattr_q)
        self.step("after setattr: t1..t9 events 42, t10 1000; a b c l1 7",
                  lambda: self.check_getattr(P, ["events", "l1", "eventGen"]))

        # --- quoting: a value with a space and an apostrophe
        def quoting():
            self.expect_empty(self.c.addentry(f"{P}/q1", [("eventGen", "it's here")]),
                              "addentry q1")
            self.new_entry("q1", eventGen="it's here")
            self.check_getattr(f"{P}/q1", ["eventGen", "events"], {"q1"})
        self.step("quoting: addentry value 'it\\'s here' round-trips", quoting)
        self.step("find with a quoted string literal: eventGen = \"it's here\"",
                  lambda: self.check_find(f"{P}:eventGen = \"it's here\"", {"q1"}))

        # --- 12. upload
        def upload_ok():
            rows = [(f"u{i}", [str(i % 10), f"g{i}"]) for i in range(100)]
            eq(self.c.upload(P, ["events", "eventGen"], rows), [], "commit data lines")
            for i in range(100):
                self.new_entry(f"u{i}", events=str(i % 10), eventGen=f"g{i}")
        self.step(f"upload {P} events eventGen + 100 put + commit", upload_ok)
        u7 = {f"u{i}" for i in range(100) if i % 10 == 7}
        self.step("find 'events = 7' -> 10 uploaded entries",
                  lambda: self.check_find("events = 7", u7))
        self.step(f"find '{P}:events = 7' (qualified) -> same",
                  lambda: self.check_find(f"{P}:events = 7", u7))
        self.step("find with no match -> no lines",
                  lambda: self.check_find("events = 123456", set()))
        self.step("getattr of one uploaded entry",
                  lambda: self.check_getattr(f"{P}/u42", ["events", "eventGen"], {"u42"}))

        def upload_bad():
            rows = [("bad1", ["1", "x"]), ("bad2", ["notanint", "y"]), ("bad3", ["3", "z"])]
            try:
                lines = self.c.upload(P, ["events", "eventGen"], rows)
            except CommandError as e:
                check(e.code not in (0, -1), f"commit status {e.code}")
                self.info(f"bad upload: commit failed with {e.code} {e.msg!r}")
            else:
                raise Failed(f"commit of an upload with a non-integer int value succeeded "
                             f"({lines!r})")
        self.step("upload with a non-integer for an int attr: commit fails", upload_bad)
        self.step("connection still in step after the failed commit (pwd)",
                  lambda: eq(self.c.pwd(), "/", "pwd"))
        self.step("none of the failed upload's entries exist (dir)", self.check_dir)
        self.step("getattr bad* -> nothing or error 1", self.check_no_bad)

        def upload_abort():
            eq(self.c.upload(P, ["events"], [("ab1", ["1"])], finish="abort"), [], "abort")
        self.step("upload + put + abort", upload_abort)
        self.step("aborted upload left nothing (dir)", self.check_dir)

        # --- transactions
        def tx_abort():
            self.run("transaction")
            self.expect_empty(self.c.addentry(f"{P}/tx", [("events", "1")]), "addentry tx")
            self.run("abort")
        self.step("transaction / addentry tx / abort", tx_abort)
        self.step("aborted entry tx is absent (dir)", self.check_dir)

        def tx_commit():
            self.run("transaction")
            self.expect_empty(self.c.addentry(f"{P}/ty", [("events", "2")]), "addentry ty")
            self.run("commit")
            self.new_entry("ty", events="2")
        self.step("transaction / addentry ty / commit", tx_commit)
        self.step("committed entry ty is present",
                  lambda: self.check_getattr(f"{P}/ty", ["events"], {"ty"}))

        # --- negative cases with exact codes
        self.step("rmdir non-empty -> 11", lambda: self.expect_error(11, f"rmdir {P}"))
        self.step("cd missing -> 1", lambda: self.expect_error(1, f"cd {P}/nosuchdir"))
        self.step("rm missing -> 1", lambda: self.expect_error(1, f"rm {P}/nosuchentry"))
        self.step("sequence_next on an entry (not a sequence) -> 17",
                  lambda: self.expect_error(17, f"sequence_next {P}/a"))
        self.step("unknown command -> 3", lambda: self.expect_error(3, "frobnicate_xyz 1 2"))
        self.step("bad query syntax -> 8",
                  lambda: self.expect_error(8, f"find {P} 'events = = 3'"))
        self.step("getattr of a missing attribute -> 10",
                  lambda: self.expect_error(10, f"getattr {P} nosuchattr"))
        self.step("connection still in step after errors (whoami)",
                  lambda: eq(self.c.whoami(), self.args.login, "whoami"))

        # --- per-connection state
        def second_connection():
            c2 = self.new_client()
            try:
                eq(c2.pwd(), "/", "second connection pwd")
                eq(c2.whoami(), self.args.login, "second connection whoami")
                self.expect_empty(self.c.cd(P), f"cd {P}")
                eq(self.c.pwd(), P, "pwd after cd")
                eq(c2.pwd(), "/", "second connection pwd after the first did cd")
                self.expect_empty(self.c.cd("/"), "cd /")
                eq(self.c.pwd(), "/", "pwd after cd /")
            finally:
                c2.close()
        self.step("second connection: pwd /, whoami; cwd is per connection", second_connection)

        # --- 12b. removal
        def rmdir_testdir():
            self.run(f"rmdir {P}/testdir")
            self.collections.discard("testdir")
        self.step(f"rmdir {P}/testdir", rmdir_testdir)

        def rm_all():
            self.run(f"rm {P}/*")
            self.model.clear()
        self.step(f"rm {P}/*", rm_all)
        self.step(f"dir {P} is empty", lambda: eq(self.c.dir(P), [], f"dir {P}"))
        self.step(f"getattr {P} on an empty collection -> no lines",
                  lambda: eq(self.c.getattr(P, ["events"]), [], "getattr"))

        def removeattr_sssin():
            self.run(f"removeattr {P} sssin")
            self.attrs.pop("sssin", None)
            self.check_listattr(P)
        self.step(f"removeattr {P} sssin; listattr without it", removeattr_sssin)
        self.step("removeattr of a missing attribute -> 10",
                  lambda: self.expect_error(10, f"removeattr {P} sssin"))

        # --- 13. sequences
        def seq():
            self.run(f"sequence_create seq {P} 1 1")  # the original always sends incr + start
            eq(self.c.sequence_next(f"{P}/seq"), "1", "first sequence_next")
            eq(self.c.sequence_next(f"{P}/seq"), "2", "second sequence_next")
            self.run(f"sequence_remove {P}/seq")
        self.step("sequence_create seq (1 1); next 1, next 2; sequence_remove", seq)
        self.step("sequence_next after sequence_remove -> error",
                  lambda: self.expect_error(None, f"sequence_next {P}/seq"))

        def seq_bare():
            self.run(f"sequence_create seq2 {P}")
            eq(self.c.sequence_next(f"{P}/seq2"), "1", "sequence_next, default start")
            eq(self.c.sequence_next(f"{P}/seq2"), "2", "sequence_next, default increment")
            self.run(f"sequence_remove {P}/seq2")
        self.step("sequence_create seq2 without increment/start: 1, 2", seq_bare)

        def seq_incr():
            self.run(f"sequence_create seq3 {P} 5 10")
            eq(self.c.sequence_next(f"{P}/seq3"), "10", "first value = start")
            eq(self.c.sequence_next(f"{P}/seq3"), "15", "second value = start + increment")
            self.run(f"sequence_remove {P}/seq3")
        self.step("sequence_create seq3 increment 5 start 10: 10, 15", seq_incr)

        # --- 14. teardown like the original test: entries, attributes, directories
        def rm_lock():
            self.run(f"rm {L}/*")
            self.run(f"removeattr {L} id")
        self.step(f"rm {L}/*; removeattr {L} id", rm_lock)

        def removeattrs():
            for name in list(self.attrs):
                self.run(f"removeattr {P} {name}")
                self.attrs.pop(name)
            eq(self.c.listattr(P), [], f"listattr {P}")
        self.step(f"removeattr the remaining attributes of {P}", removeattrs)
        self.step(f"rmdir {P}", lambda: self.run(f"rmdir {P}"))
        self.step(f"rmdir {L}", lambda: self.run(f"rmdir {L}"))
        self.step(f"cd {P} after rmdir -> 1", lambda: self.expect_error(1, f"cd {P}"))
        self.step(f"rmdir {P} again -> 1", lambda: self.expect_error(1, f"rmdir {P}"))

        # --- 15. AMGA completeness (AMGA 2.x and ardacat, not the 1.x server the fake models):
        # update, rm -rf, ACL rights as letters, sites and replicas
        if self.args.completeness:
            self.completeness()

        c = self.c
        self.info(f"connections {c.connects}, sessions issued {c.sessions_issued}, "
                  f"resumes {c.resumes}")

    def completeness(self) -> None:
        X = self.P + "_x"

        def update_and_rm_rf():
            self.run(f"createdir {X}")
            self.run(f"createdir {X}/sub")
            self.run(f"addattr {X} n int")
            self.run(f"addentry {X}/e n 1")
            self.expect_empty(self.c.update(f"{X}/*", [("n", "n + 41")], ""), "update")
            eq(self.c.getattr(f"{X}/e", ["n"]), [("e", ["42"])], "getattr after update")
            self.run(f"acl_add {X} {self.args.login} rw")
            eq(self.c.execute(f"acl_show {X}"), [f"{self.args.login} rw-"], "acl_show")
            self.expect_empty(self.c.rm(f"-rf {X}"), "rm -rf")
            self.expect_error(1, f"cd {X}")
        self.step(f"update, acl_add rw and rm -rf {X}", update_and_rm_rf)

        site = "site" + self.P.replace("/pytest", "").replace("_", "")

        def sites_and_replicas():
            self.expect_empty(self.c.site_add(site, "srm://se.example.org"), "site_add")
            sites = self.c.site_list()
            check(site in sites, f"site_list {sites!r} lacks {site}")
            sid = sites[site]
            guid = "guid" + site
            self.expect_empty(self.c.replica_register([(guid, site)]), "replica_register -c")
            eq(self.c.replica_list([guid]), {guid: [sid]}, "replica_list")
            self.expect_error(11, f"site_remove {site}")
            self.expect_empty(self.c.replica_unregister(guid, str(sid), delete=True),
                              "replica_unregister -d")
            self.expect_error(1, f"replica_list {guid}")
            self.expect_empty(self.c.site_remove(site), "site_remove")
            check(site not in self.c.site_list(), "site_list after site_remove")
        self.step(f"site_add {site}; replica_register/list/unregister; site_remove",
                  sites_and_replicas)

    def check_no_bad(self) -> None:
        try:
            rows = self.c.getattr(f"{self.P}/bad*", ["events"])
        except CommandError as e:
            eq(e.code, 1, "getattr of a pattern with no match")
            return
        eq(rows, [], f"getattr {self.P}/bad*")

    def cleanup(self) -> None:
        """Best effort removal of anything this run left behind (errors ignored)."""
        try:
            c = AmgaClient(self.args.host, self.args.port, self.args.login, self.args.password,
                           strict=False, timeout=self.args.timeout)
            cmds = [f"sequence_remove {self.P}/{s}" for s in ("seq", "seq2", "seq3")]
            cmds += [f"rmdir {self.P}/testdir", f"rm {self.P}/*", f"rm {self.L}/*"]
            cmds += [f"removeattr {self.P} {a}" for a in ("events", "eventGen", "sssin", "l1")]
            cmds += [f"removeattr {self.L} id", f"rmdir {self.P}", f"rmdir {self.L}"]
            cmds += [f"rm -rf {self.P}_x"]
            left = []
            for cmd in cmds:
                try:
                    c.execute(cmd)
                    left.append(cmd)
                except CommandError:
                    pass
            c.close()
            if left:
                print(f"info cleanup removed leftovers: {left}", flush=True)
        except (AmgaError, OSError) as e:
            print(f"info cleanup failed: {e}", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8822)
    p.add_argument("--login", default="root")
    p.add_argument("--password", default=os.environ.get("ARDACAT_ROOT_PASSWORD", ""))
    p.add_argument("--suffix", default=None,
                   help="collection name suffix (default _<pid>; '' for the literal paths)")
    p.add_argument("--dir-names", choices=("full", "base", "any"), default="full",
                   help="form of item names in 'dir' replies (default full path)")
    p.add_argument("--entry-names", choices=("full", "base", "any"), default="base",
                   help="form of entry names in 'getattr' and 'find' replies (default basename)")
    p.add_argument("--lenient", action="store_true",
                   help="turn off the strict byte checks (behave exactly like the original)")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--trace", action="store_true", help="print every byte block to stderr")
    p.add_argument("--no-cleanup", action="store_true")
    p.add_argument("--completeness", action="store_true",
                   help="also run the AMGA 2.x completeness steps (update, rm -rf, ACL rights "
                        "as letters, sites and replicas)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return Scenario(parse_args(argv)).main()


if __name__ == "__main__":
    sys.exit(main())
