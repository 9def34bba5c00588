"""The goals of issue #17 as ratios, from what bench/goals.sh printed (read on standard input).

    bench/goals.sh … | tee goals.txt        (goals.sh runs this itself at its end)
    python3 bench/goals_table.py < goals.txt

Every ratio divides two figures of the same round of the same run: a build's `get` by that
build's `ping` of the round, by the `pgbench` references measured right before the round's
PostgreSQL points, and so on. One line per goal, one column per round, then how many rounds met
it; p99 of the points behind each ratio is printed beside it, since the issue asks for it beside
every figure. Lines this script does not know are ignored, so it reads a whole goals.sh log.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, TextIO, Tuple

ROUND = re.compile(r"^-- round (\d+) \((\S+) UTC")
REFERENCE = re.compile(r"^reference (pgbench-S|pgbench-60col) tps (\d+(?:\.\d+)?) .*?p99_ms ([\d.]+)")
POINT = re.compile(
    r"^(\S+) (sqlite|postgres) (ping|get|bulkget) (tcp|soap)\s+(\d+(?:\.\d+)?) /s\s+p99 ([\d.]+) ms\s+errors (\d+)"
)
STREAM_HEADER = re.compile(r"^date .*; backend (sqlite|pg);")
STREAM_RAW = re.compile(r"^round (\d+) raw-export (\d+(?:\.\d+)?) rows/s")
STREAM_BUILD = re.compile(r"^round (\d+) (\S+) (\d+(?:\.\d+)?) rows/s")

Figure = Tuple[float, Optional[float]]  # rate, p99 in ms (None: not measured)


@dataclass
class Round:
    number: int
    time: str
    # (build, backend, scenario, protocol) -> (rate, p99 ms)
    points: Dict[Tuple[str, str, str, str], Figure] = field(default_factory=dict)
    references: Dict[str, Figure] = field(default_factory=dict)
    errors: int = 0


@dataclass
class Run:
    rounds: List[Round] = field(default_factory=list)
    builds: List[str] = field(default_factory=list)
    # (backend, round) -> raw export rows/s; (backend, build, round) -> the build's rows/s
    raw_export: Dict[Tuple[str, int], float] = field(default_factory=dict)
    streams: Dict[Tuple[str, str, int], float] = field(default_factory=dict)


def parse(lines: TextIO) -> Run:
    run = Run()
    current: Optional[Round] = None
    stream_backend: Optional[str] = None
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("-- streaming"):
            current = None
            continue
        m = ROUND.match(line)
        if m:
            current = Round(int(m.group(1)), m.group(2))
            run.rounds.append(current)
            continue
        m = STREAM_HEADER.match(line)
        if m:
            stream_backend = m.group(1)
            continue
        if current is not None:
            m = REFERENCE.match(line)
            if m:
                current.references[m.group(1)] = (float(m.group(2)), float(m.group(3)))
                continue
            m = POINT.match(line)
            if m:
                build = m.group(1)
                if build not in run.builds:
                    run.builds.append(build)
                key = (build, m.group(2), m.group(3), m.group(4))
                current.points[key] = (float(m.group(5)), float(m.group(6)))
                current.errors += int(m.group(7))
                continue
        if stream_backend is not None:
            m = STREAM_RAW.match(line)
            if m:
                run.raw_export[(stream_backend, int(m.group(1)))] = float(m.group(2))
                continue
            m = STREAM_BUILD.match(line)
            if m:
                run.streams[(stream_backend, m.group(2), int(m.group(1)))] = float(m.group(3))
    return run


@dataclass(frozen=True)
class Goal:
    name: str
    # What the ratio must reach; 0: a ratio reported without a goal (the 60-column reference).
    threshold: float
    # The ratio's numerator and denominator in a round for a build (None: not in this run).
    numerator: Callable[[Round, str], Optional[Figure]]
    denominator: Callable[[Round, str], Optional[Figure]]


def point(backend: str, scenario: str, protocol: str) -> Callable[[Round, str], Optional[Figure]]:
    return lambda r, build: r.points.get((build, backend, scenario, protocol))


def reference(name: str) -> Callable[[Round, str], Optional[Figure]]:
    return lambda r, build: r.references.get(name)


GOALS = [
    Goal("SQLite get / ping", 0.4, point("sqlite", "get", "tcp"), point("sqlite", "ping", "tcp")),
    Goal("PostgreSQL get / pgbench -S", 0.5, point("postgres", "get", "tcp"), reference("pgbench-S")),
    Goal("PostgreSQL get / 60-column reference", 0.0, point("postgres", "get", "tcp"), reference("pgbench-60col")),
    Goal("SOAP get / TCP get, SQLite", 0.6, point("sqlite", "get", "soap"), point("sqlite", "get", "tcp")),
    Goal("SOAP get / TCP get, PostgreSQL", 0.6, point("postgres", "get", "soap"), point("postgres", "get", "tcp")),
    Goal("SOAP bulkget / TCP bulkget", 1.0, point("sqlite", "bulkget", "soap"), point("sqlite", "bulkget", "tcp")),
]
# Streaming: the build's rows/s over the raw export of the same round.
STREAM_GOALS = [("streaming SQLite / sqlite3 shell", "sqlite", 2.0), ("streaming PostgreSQL / COPY", "pg", 1.0)]


def ratio(a: Optional[Figure], b: Optional[Figure]) -> Optional[float]:
    if a is None or b is None or b[0] <= 0:
        return None
    return a[0] / b[0]


def cell(value: Optional[float], threshold: float, p99: Tuple[Optional[float], Optional[float]]) -> str:
    if value is None or math.isnan(value):
        return "-"
    mark = "" if threshold <= 0 else (" ok" if value >= threshold else " MISS")
    # Two decimals, more where two would print a miss as the threshold itself (0.4997 as 0.50).
    digits = 2
    while digits < 4 and value < threshold <= round(value, digits):
        digits += 1
    shown = [f"{p:.2f}" for p in p99 if p is not None]
    return f"{value:.{digits}f}{mark}" + (f" (p99 {'/'.join(shown)} ms)" if shown else "")


def tally(values: List[Optional[float]], threshold: float) -> str:
    measured = [v for v in values if v is not None]
    if threshold <= 0 or not measured:
        return ""
    met = sum(1 for v in measured if v >= threshold)
    return f"met {met} of {len(measured)}"


def render(run: Run) -> str:
    out: List[str] = []
    numbers = [r.number for r in run.rounds]
    header = ["goal (threshold)"] + [f"round {r.number} {r.time}" for r in run.rounds] + ["rounds met"]
    for build in run.builds:
        out.append(f"## {build}")
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + " --- |" * len(header))
        for g in GOALS:
            values: List[Optional[float]] = []
            cells: List[str] = []
            for r in run.rounds:
                a, b = g.numerator(r, build), g.denominator(r, build)
                v = ratio(a, b)
                values.append(v)
                cells.append(cell(v, g.threshold, (a[1] if a else None, b[1] if b else None)))
            name = g.name + (f" (>= {g.threshold:g})" if g.threshold > 0 else "")
            out.append("| " + " | ".join([name] + cells + [tally(values, g.threshold)]) + " |")
        for name, backend, threshold in STREAM_GOALS:
            values = []
            for n in numbers:
                raw = run.raw_export.get((backend, n))
                rows = run.streams.get((backend, build, n))
                values.append(rows / raw if rows is not None and raw else None)
            if any(v is not None for v in values):
                cells = [cell(v, threshold, (None, None)) for v in values]
                label = f"{name} (>= {threshold:g})"
                out.append("| " + " | ".join([label] + cells + [tally(values, threshold)]) + " |")
        out.append("")
    errors = sum(r.errors for r in run.rounds)
    if errors:
        out.append(f"**{errors} operations failed in this run: its figures are not comparable.**")
    return "\n".join(out)


def main() -> int:
    run = parse(sys.stdin)
    if not run.rounds:
        print("no round of bench/goals.sh found on standard input", file=sys.stderr)
        return 1
    print(render(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
