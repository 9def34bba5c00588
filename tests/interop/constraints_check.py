#!/usr/bin/env python3
"""Constraints through the independent client: constraint_add_not_null/_unique/_reference/_check,
constraint_list and constraint_drop as the original client's constraintAdd…/constraintList/
constraintDrop send them, and violations (code 21, naming the constraint; nothing stored) through
addentry, setattr, rm, an upload and a transaction.

Run:  python3 tests/interop/constraints_check.py --port 8822 --password <root password>
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from amga_client import AmgaClient, AmgaError, CommandError  # noqa: E402


class Failed(Exception):
    pass


def eq(actual: object, expected: object, what: str) -> None:
    if actual != expected:
        raise Failed(f"{what}: got {actual!r}, expected {expected!r}")


class Check:
    def __init__(self, args: argparse.Namespace):
        self.c = AmgaClient(args.host, args.port, args.login, args.password)
        self.d = f"/cons_{os.getpid()}"
        self.passed = 0
        self.failed = 0

    def step(self, name: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except (Failed, AmgaError, OSError) as e:
            self.failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        else:
            self.passed += 1
            print(f"ok   {name}", flush=True)

    def run(self, cmd: str) -> None:
        eq(self.c.execute(cmd), [], f"data lines of {cmd!r}")

    def violates(self, cmd: str, name: str) -> None:
        try:
            lines = self.c.execute(cmd)
        except CommandError as e:
            eq(e.code, 21, f"status code of {cmd!r} ({e.msg!r})")
            if name not in e.msg:
                raise Failed(f"{cmd!r}: {e.msg!r} does not name {name}")
            return
        raise Failed(f"{cmd!r} succeeded with {lines!r}; expected 21")

    def main(self) -> int:
        d = self.d
        refs = f"{d}/runs"

        def setup() -> None:
            self.run(f"createdir {d}")
            self.run(f"addattr {d} status varchar(10)")
            self.run(f"addattr {d} run int")
            self.run(f"createdir {refs} plain")
            self.run(f"addattr {refs} num int")
        self.step("set up two collections", setup)

        def add() -> None:
            self.run(f"constraint_add_not_null {d} status st_set")
            self.run(f"constraint_add_unique {d} status st_unique")
            self.run(f"constraint_add_unique {refs} num num_unique")
            self.run(f"constraint_add_reference {d} run {refs}:num run_ref")
            self.run(f"constraint_add_check {d} 'run > 0' run_pos")
        self.step("constraint_add_not_null/_unique/_reference/_check", add)
        self.step("constraint_list: one line per constraint (name kind definition)",
                  lambda: eq(self.c.execute(f"constraint_list {d}"),
                             ["run_pos check run > 0", f"run_ref reference run {refs}:num",
                              "st_set not_null status", "st_unique unique status"],
                             "constraint_list"))

        def violations() -> None:
            self.run(f"addentry {refs}/r1 num 1")
            self.run(f"addentry {d}/a status 'ok' run 1")
            self.violates(f"addentry {d}/b run 1", "st_set")
            self.violates(f"addentry {d}/b status 'ok'", "st_unique")
            self.violates(f"addentry {d}/b status 'b' run 7", "run_ref")
            self.violates(f"setattr {d}/a run 0", "run_pos")
            self.violates(f"rm {refs}/r1", "run_ref")
            eq(self.c.execute(f"getattr {d} status run"), ["a", "ok", "1"], "entries after violations")
        self.step("violations are 21 naming the constraint; nothing stored", violations)

        def transaction() -> None:
            self.run("transaction")
            self.run(f"addentry {d}/t1 status 't1'")
            self.violates(f"addentry {d}/t2 status 't1'", "st_unique")
            self.run("commit")
            eq(self.c.execute(f"find {d} 'FILE like \"t%\"'"), ["t1"], "entries after the transaction")
        self.step("a violation inside a transaction leaves it usable", transaction)

        def upload() -> None:
            self.violates_upload(d, [("u1", ["u1"]), ("u2", ["u1"])], "st_unique")
            eq(self.c.execute(f"find {d} 'FILE like \"u%\"'"), [], "entries after the upload")
        self.step("an upload with a duplicate stores nothing (commit: 21)", upload)

        def drop() -> None:
            for n in ["run_pos", "run_ref", "st_set", "st_unique"]:
                self.run(f"constraint_drop {d} {n}")
            self.run(f"constraint_drop {refs} num_unique")
            eq(self.c.execute(f"constraint_list {d}"), [], "constraint_list after drops")
            self.run(f"addentry {d}/b")
        self.step("constraint_drop lifts the rules", drop)

        def cleanup() -> None:
            self.run(f"rm {d}/*")
            self.run(f"rm {refs}/*")
            self.run(f"rmdir {refs}")
            self.run(f"rmdir {d}")
        self.step("clean up", cleanup)
        self.c.close()
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1

    def violates_upload(self, d: str, rows: list[tuple[str, list[object]]], name: str) -> None:
        try:
            lines = self.c.upload(d, ["status"], rows)
        except CommandError as e:
            eq(e.code, 21, f"status code of commit ({e.msg!r})")
            if name not in e.msg:
                raise Failed(f"commit: {e.msg!r} does not name {name}")
            return
        raise Failed(f"commit succeeded with {lines!r}; expected 21")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8822)
    p.add_argument("--login", default="root")
    p.add_argument("--password", default=os.environ.get("ARDACAT_ROOT_PASSWORD", ""))
    return Check(p.parse_args(argv)).main()


if __name__ == "__main__":
    sys.exit(main())
