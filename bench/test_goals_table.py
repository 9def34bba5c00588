"""bench/goals_table.py on logs shaped as bench/goals.sh prints them (run by tests/bench_tools.rs)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import goals_table

# Two builds (one of them the same binary with a SQLite flag), two rounds, then both streams;
# the shape of a real run, the figures chosen so that each ratio is easy to check by hand.
LOG = """\
date 2026-12-06 07:43:52 UTC; Model name: AMD EPYC; load 0.64 1.31 0.89
16 connections, 5 s per point, 2 rounds; bins: /b/new /b/new /b/old
setup: 10000 entries in /bench, 1000 in /bench1k
-- round 1 (07:43:57 UTC, load 0.67)
/b/new:--sqlite-exclusive=true sqlite ping tcp      50000 /s  p99 0.80 ms  errors 0
/b/old sqlite ping tcp                         50000 /s  p99 0.90 ms  errors 0
/b/new:--sqlite-exclusive=true sqlite get tcp       25000 /s  p99 1.50 ms  errors 0
/b/old sqlite get tcp                          19000 /s  p99 1.70 ms  errors 0
/b/new:--sqlite-exclusive=true sqlite get soap      16000 /s  p99 2.10 ms  errors 0
/b/old sqlite get soap                         9500 /s  p99 2.30 ms  errors 0
/b/new:--sqlite-exclusive=true sqlite bulkget tcp  160000 /s  p99 160.00 ms  errors 0
/b/old sqlite bulkget tcp                      150000 /s  p99 170.00 ms  errors 0
/b/new:--sqlite-exclusive=true sqlite bulkget soap 176000 /s  p99 180.00 ms  errors 0
/b/old sqlite bulkget soap                     135000 /s  p99 190.00 ms  errors 0
reference pgbench-S tps 20000 p50_ms 0.458 p99_ms 2.397
reference pgbench-60col tps 16000 p50_ms 0.518 p99_ms 2.624
/b/new:--sqlite-exclusive=true postgres ping tcp    52000 /s  p99 0.76 ms  errors 0
/b/old postgres ping tcp                       52000 /s  p99 0.76 ms  errors 0
/b/new:--sqlite-exclusive=true postgres get tcp     12000 /s  p99 3.10 ms  errors 0
/b/old postgres get tcp                         9000 /s  p99 3.30 ms  errors 0
/b/new:--sqlite-exclusive=true postgres get soap     9000 /s  p99 4.20 ms  errors 0
/b/old postgres get soap                        5000 /s  p99 4.40 ms  errors 0
-- round 2 (07:44:53 UTC, load 3.1)
/b/new:--sqlite-exclusive=true sqlite ping tcp      40000 /s  p99 0.90 ms  errors 0
/b/old sqlite ping tcp                         40000 /s  p99 0.90 ms  errors 2
/b/new:--sqlite-exclusive=true sqlite get tcp       14000 /s  p99 1.90 ms  errors 0
/b/old sqlite get tcp                          16000 /s  p99 1.80 ms  errors 0
reference pgbench-S tps 30000 p50_ms 0.400 p99_ms 2.000
reference pgbench-60col tps 20000 p50_ms 0.500 p99_ms 2.500
/b/new:--sqlite-exclusive=true postgres get tcp     15000 /s  p99 3.00 ms  errors 0
/b/old postgres get tcp                        14000 /s  p99 3.20 ms  errors 0
-- streaming (100000 rows of 60 attributes, 2 rounds)
date 2026-12-06 07:46:48 UTC; load 3.75 2.39 1.38; backend sqlite; entries 100000; analyzed 0; postgres via 127.0.0.1
round 1 raw-export 80000 rows/s
round 1 /b/new 180000 rows/s server-cpu .72 client-user-sys 0.07 0.08 md5 bd654ca6
round 1 /b/old 150000 rows/s server-cpu .80 client-user-sys 0.07 0.08 md5 bd654ca6
round 2 raw-export 100000 rows/s
round 2 /b/new 190000 rows/s server-cpu .66 client-user-sys 0.07 0.07 md5 bd654ca6
round 2 /b/old 210000 rows/s server-cpu .66 client-user-sys 0.07 0.07 md5 bd654ca6
date 2026-12-06 07:47:04 UTC; load 3.14 2.33 1.37; backend pg; entries 100000; analyzed 0; postgres via 127.0.0.1
round 1 raw-export 100000 rows/s
round 1 /b/new 120000 rows/s server-cpu .47 client-user-sys 0.07 0.05 postgres-cpu .45 md5 2805bd22
round 1 /b/old 90000 rows/s server-cpu .47 client-user-sys 0.07 0.05 postgres-cpu .45 md5 2805bd22
round 2 raw-export 100000 rows/s
round 2 /b/new 100000 rows/s server-cpu .69 client-user-sys 0.06 0.10 postgres-cpu .62 md5 2805bd22
round 2 /b/old 130000 rows/s server-cpu .69 client-user-sys 0.06 0.10 postgres-cpu .62 md5 2805bd22
"""

FLAGGED = "/b/new:--sqlite-exclusive=true"


def table(log: str = LOG) -> str:
    return goals_table.render(goals_table.parse(io.StringIO(log)))


def row(text: str, build: str, goal: str) -> list[str]:
    """The cells of one goal's row in one build's table."""
    section = text.split(f"## {build}\n", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0].startswith(goal):
            return cells[1:]
    raise AssertionError(f"no row {goal!r} for {build!r} in\n{text}")


def test_points_and_references_are_read_per_round() -> None:
    run = goals_table.parse(io.StringIO(LOG))
    assert [r.number for r in run.rounds] == [1, 2]
    assert run.builds == [FLAGGED, "/b/old"]
    assert run.rounds[0].points[("/b/old", "sqlite", "get", "soap")] == (9500.0, 2.3)
    assert run.rounds[1].references["pgbench-S"] == (30000.0, 2.0)
    assert run.raw_export[("pg", 2)] == 100000.0
    assert run.streams[("sqlite", "/b/old", 2)] == 210000.0
    assert run.rounds[1].errors == 2


def test_each_ratio_divides_figures_of_its_own_round() -> None:
    text = table()
    # 25000 / 50000, then 14000 / 40000: the second round's ping, not the first's.
    assert row(text, FLAGGED, "SQLite get / ping") == [
        "0.50 ok (p99 1.50/0.80 ms)",
        "0.35 MISS (p99 1.90/0.90 ms)",
        "met 1 of 2",
    ]
    # The references of each round: 12000 / 20000 and 15000 / 30000.
    assert row(text, FLAGGED, "PostgreSQL get / pgbench -S") == [
        "0.60 ok (p99 3.10/2.40 ms)",
        "0.50 ok (p99 3.00/2.00 ms)",
        "met 2 of 2",
    ]
    assert row(text, "/b/old", "PostgreSQL get / pgbench -S")[:2] == [
        "0.45 MISS (p99 3.30/2.40 ms)",
        "0.47 MISS (p99 3.20/2.00 ms)",
    ]
    # No threshold for the 60-column reference: a ratio, no verdict, no tally.
    assert row(text, "/b/old", "PostgreSQL get / 60-column reference") == [
        "0.56 (p99 3.30/2.62 ms)",
        "0.70 (p99 3.20/2.50 ms)",
        "",
    ]
    assert row(text, "/b/old", "SOAP get / TCP get, SQLite")[0] == "0.50 MISS (p99 2.30/1.70 ms)"
    assert row(text, FLAGGED, "SOAP bulkget / TCP bulkget")[0] == "1.10 ok (p99 180.00/160.00 ms)"


def test_a_near_miss_is_not_printed_as_the_threshold() -> None:
    assert goals_table.cell(0.4997, 0.5, (None, None)) == "0.4997 MISS"
    assert goals_table.cell(0.4951, 0.5, (None, None)) == "0.495 MISS"
    assert goals_table.cell(0.5, 0.5, (None, None)) == "0.50 ok"
    assert goals_table.cell(0.4949, 0.5, (1.0, None)) == "0.49 MISS (p99 1.00 ms)"


def test_a_point_missing_from_a_round_is_not_counted() -> None:
    # Round 2 has no SOAP point: a dash, and the tally counts the one round that has it.
    assert row(table(), "/b/old", "SOAP get / TCP get, PostgreSQL") == [
        "0.56 MISS (p99 4.40/3.30 ms)",
        "-",
        "met 0 of 1",
    ]


def test_streams_compare_with_the_raw_export_of_their_round() -> None:
    text = table()
    assert row(text, "/b/old", "streaming SQLite / sqlite3 shell") == ["1.88 MISS", "2.10 ok", "met 1 of 2"]
    assert row(text, "/b/old", "streaming PostgreSQL / COPY") == ["0.90 MISS", "1.30 ok", "met 1 of 2"]
    # A build run with SQLite flags streams as its plain build: no streaming row of its own.
    assert "streaming" not in text.split(f"## {FLAGGED}\n", 1)[1].split("\n## ", 1)[0]


def test_failed_operations_are_called_out() -> None:
    assert "2 operations failed in this run" in table()
    clean = LOG.replace("errors 2", "errors 0")
    assert "failed" not in table(clean)


def test_the_script_reads_standard_input_and_fails_on_no_round() -> None:
    script = Path(__file__).with_name("goals_table.py")
    ok = subprocess.run([sys.executable, str(script)], input=LOG, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith(f"## {FLAGGED}\n| goal (threshold) | round 1 07:43:57 | round 2 07:44:53 | rounds met |")
    empty = subprocess.run(
        [sys.executable, str(script)], input="pgbench failed\n", capture_output=True, text=True, check=False
    )
    assert empty.returncode == 1
    assert "no round" in empty.stderr
