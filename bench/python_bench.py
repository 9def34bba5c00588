#!/usr/bin/env python3
"""The Python client's figures for docs/benchmarks.md, in one run with the Rust client's:
streamed getattr rows/s into Python tuples vs the Rust CLI's rows/s (10 attributes), upload
entries/s, and single-entry getattr round trips/s. Usage (bench/python.sh runs it):

    python_bench.py --port PORT --password PW --cli path/to/ardacat [--rows N] [--seconds S]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

import ardacat


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--seconds", type=float, default=5.0)
    a = ap.parse_args()
    attrs = [f"a{i}" for i in range(10)]
    d = "/pybench"
    with ardacat.connect(a.host, a.port, login="root", password=a.password) as c:
        c.mkdir(d)
        for i, name in enumerate(attrs):
            c.addattr(d, name, "int" if i % 2 == 0 else "varchar(32)")
        rows = ((f"e{n}", *[n + i if i % 2 == 0 else f"value-{n}-{i}" for i in range(10)]) for n in range(a.rows))
        t = time.perf_counter()
        n = c.upload(d, attrs, rows)
        up = n / (time.perf_counter() - t)
        print(f"python upload: {n} entries, {up:,.0f} entries/s")

        def rust() -> float:
            t = time.perf_counter()
            subprocess.run([a.cli, "--host", a.host, "--port", str(a.port), "--login", "root", "-c",
                            f"getattr {d} {' '.join(attrs)}"], check=True, stdout=subprocess.DEVNULL,
                           env=dict(os.environ, ARDACAT_PASSWORD=a.password))
            return a.rows / (time.perf_counter() - t)

        def python() -> float:
            t = time.perf_counter()
            k = 0
            for _name, _values in c.getattr(d, attrs):
                k += 1
            assert k == a.rows, k
            return k / (time.perf_counter() - t)

        # Alternate and keep the best of three each: the same run, the same server state.
        r_rates, p_rates = [], []
        for _ in range(3):
            r_rates.append(rust())
            p_rates.append(python())
        r, p = max(r_rates), max(p_rates)
        print(f"rust cli getattr stream: {r:,.0f} rows/s (10 attributes, best of 3)")
        print(f"python getattr stream into typed tuples: {p:,.0f} rows/s (best of 3), {100 * p / r:.0f} % of the Rust client")
        k = 0
        t = time.perf_counter()
        while time.perf_counter() - t < a.seconds:
            for _ in c.getattr(f"{d}/e{k % a.rows}", attrs):
                pass
            k += 1
        print(f"python single getattr round trips: {k / (time.perf_counter() - t):,.0f} /s")


if __name__ == "__main__":
    main()
