"""Renders the criterion results of `cargo bench -p ardacat-soap --bench dds` (target/criterion) as the
markdown tables of docs/benchmarks-dds.md: full parse vs DDS hit per change rate with DDS MB/s beside
the memcmp MB/s of the same run, the clone/miss/loop-path table, and the goal check for messages of
10 kB and more (>= 4x at <= 10 % changed, at most 5 % slower than the full parse at 100 %).

    python3 bench/dds_criterion_table.py [target/criterion]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FAMILIES = ["setAttributes60", "createEntry1", "createEntry100", "createEntry10k"]
STYLES = ["zeep", "gsoap"]
PCTS = [0, 1, 10, 50, 100]


def estimate(d: Path) -> tuple[float, int] | None:
    """(point estimate in ns, throughput bytes) of one benchmark, or None if it did not run."""
    est, bench = d / "new" / "estimates.json", d / "new" / "benchmark.json"
    if not est.exists():
        return None
    e = json.loads(est.read_text())
    ns = (e.get("slope") or e["mean"])["point_estimate"]
    tp = json.loads(bench.read_text()).get("throughput") or {}
    return ns, int(tp.get("Bytes") or tp.get("BytesDecimal") or 0)


def t(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def size(b: int) -> str:
    return f"{b / 1e6:.1f} MB" if b >= 1e6 else (f"{b / 1e3:.0f} kB" if b >= 1e4 else f"{b:,} B")


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
    rows, extra, goals = [], [], []
    for fam in FAMILIES:
        for st in STYLES:
            g = root / f"{fam}_{st}"
            if not g.exists():
                continue
            mc = estimate(g / "memcmp" / "0")
            memcmp_mbs = mc[1] / mc[0] * 1e3 if mc and mc[1] else None
            for pct in PCTS:
                f, d = estimate(g / "full" / str(pct)), estimate(g / "dds" / str(pct))
                if not (f and d):
                    continue
                mbs = d[1] / d[0] * 1e3
                rows.append(f"| {fam} | {st} | {size(d[1])} | {pct} % | {t(f[0])} | {t(d[0])} | **{f[0] / d[0]:.1f}×** "
                            f"| {mbs:,.0f} | {memcmp_mbs:,.0f} | {mbs / memcmp_mbs * 100:.1f} % |"
                            if memcmp_mbs else
                            f"| {fam} | {st} | {size(d[1])} | {pct} % | {t(f[0])} | {t(d[0])} | **{f[0] / d[0]:.1f}×** "
                            f"| {mbs:,.0f} | – | – |")
                if d[1] >= 10_000 and (pct <= 10 or pct == 100):
                    ok = f[0] / d[0] >= 4 if pct <= 10 else d[0] <= 1.05 * f[0]
                    goals.append((fam, st, pct, f[0] / d[0], ok))
            f0, d0 = estimate(g / "full" / "0"), estimate(g / "dds" / "0")
            cl, miss = estimate(g / "clone_result" / "0"), estimate(g / "miss" / "0")
            fp, lp = estimate(g / "full_plus1" / "10"), estimate(g / "dds_loop_plus1" / "10")
            if f0 and d0 and cl and miss:
                loop = f"{t(fp[0])} | {t(lp[0])} | **{fp[0] / lp[0]:.1f}×**" if fp and lp else "– | – | –"
                extra.append(f"| {fam} | {st} | {t(f0[0])} | {t(cl[0])} | {t(d0[0])} | {d0[0] / cl[0]:.2f} | "
                             f"{t(miss[0])} | {miss[0] / f0[0]:.2f} | {loop} |")
    print("| family | style | size | changed | full parse | DDS hit | speed-up (full / DDS) | DDS MB/s "
          "| memcmp MB/s | DDS / memcmp |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print()
    print("| family | style | full parse (0 %) | clone of the result | DDS hit (0 %) | DDS / clone | miss = full parse "
          "+ record | miss / full | full parse, N+1 entries | DDS loop path, N+1 entries | speed-up |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(extra))
    print()
    print("Goals for messages of 10 kB and more (>= 4x at <= 10 % changed; <= 5 % slower than the full parse at 100 %):")
    for fam, st, pct, sp, ok in goals:
        print(f"  {fam} {st} {pct:3d} %: {sp:5.1f}x {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
