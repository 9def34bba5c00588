"""End-to-end DDS and SOAP-vs-TCP write benchmarks, all ratios from one run (see bench/README.md,
docs/benchmarks-dds.md and docs/bench/soap-vs-tcp-writes.md). Started by bench/dds-e2e.sh, which
builds the release binaries (and a frame-pointer build of the server for the profile) first.

    bench/dds-e2e.sh [--duration S] [--rounds N] [--backend sqlite|postgres] [--out DIR] [--no-profile]

1. DDS end to end: 16 SOAP clients repeat `setAttributes` of their own job's 60 attributes, three
   values changing per request (`ardacat bench --scenario setattr`), against servers with
   `--soap-dds on` and `--soap-dds off` on the same database, alternated for --rounds rounds;
   requests/s, p50/p99, the server's own read+parse time per request and the DDS counters
   from /metrics. TCP `setattr` at 16 connections as a reference point.
2. A CPU profile of the DDS-on server during that scenario: `perf record -g -e cpu-clock`, folded
   with inferno and drawn as a flame graph (SVG into --out), plus the shares of the main frames.
3. Writes: TCP `addentry` vs SOAP `createEntry` of one entry, TCP `upload` vs SOAP `createEntry`
   of --batch entries, at 1 and 16 connections: entries/s and TCP:SOAP.
4. Keep-alive: SOAP `ping` and `get` at 16 connections with persistent connections and with a
   new connection per request (TCP as the reference).

Writes OUT/dds-e2e.json (every point with the load average before and after it) and
OUT/dds-e2e.md (the tables), and the flame graph OUT/dds-e2e-flamegraph.svg.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite  # noqa: E402
from suite import BIN, PASSWORD, clean_env, git_describe, last_json, log, machine_info, pg_url, psql  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PERF_BIN = ROOT / "target" / "perf" / "release"
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/postgres"

# Frame patterns for the profile summary: a sample counts for a group if any frame of its stack
# matches (inclusive shares; groups overlap).
PROFILE_GROUPS = [
    ("SOAP request decode (decode_request: DDS or full parse)", r"ardacat_server::soap::decode_request"),
    ("  DDS fast path (Template::fast_parse)", r"ardacat_soap::dds::fast::.*fast_parse"),
    ("  DDS result building (Template::build)", r"ardacat_soap::dds::fast::.*build"),
    ("  full parser (parse_request)", r"ardacat_soap::parse::parse_request"),
    ("  template recording (Template::record)", r"ardacat_soap::dds::template::.*record"),
    ("SOAP dispatch to the catalogue (dispatch::dispatch)", r"ardacat_server::soap::dispatch::"),
    ("catalogue service (ardacat_core)", r"ardacat_core::"),
    ("SQLite (sqlite3_*)", r"^sqlite3|[^a-z_]sqlite3"),
    ("PostgreSQL client (sqlx)", r"sqlx"),
    ("HTTP Basic auth (soap::auth)", r"ardacat_server::soap::auth"),
    ("response writing (ardacat_soap::write)", r"ardacat_soap::write"),
    ("hyper (HTTP/1)", r"^hyper::|[<]hyper::"),
    ("tokio runtime", r"^tokio::|[<]tokio::"),
    ("memory allocation (malloc/free)", r"malloc|free|realloc|cfree|_int_"),
    ("kernel", r"\[kernel\.kallsyms\]|^entry_SYSCALL|^do_syscall|^__x64_sys"),
    ("  fsync/fdatasync", r"fsync|fdatasync"),
    ("  network send/recv", r"tcp_sendmsg|tcp_recvmsg|sock_sendmsg|sock_recvmsg|__sys_sendto|__sys_recvfrom"),
]


# Exclusive breakdown of server CPU: each sample goes to the first category (in this order)
# that one of its frames matches, so the shares add up to 100 %.
BREAKDOWN = [
    ("SOAP decode (DDS or full parse)", r"ardacat_server::soap::decode_request|ardacat_soap::dds|ardacat_soap::parse"),
    ("fsync (SQLite commit)", r"fsync|fdatasync"),
    ("thread hand-off: futex wait/wake, scheduler", r"__x64_sys_futex|finish_task_switch|__schedule|futex::Mutex"),
    ("tokio idle poll (epoll_wait)", r"__x64_sys_epoll_wait"),
    ("SQLite engine (sqlite3*)", r"^sqlite3|^btree|^pager|^getAndInitPage|^vdbe|^unixWrite|^unixRead"),
    ("socket send/recv (kernel)", r"tcp_sendmsg|tcp_recvmsg|sock_sendmsg|sock_recvmsg|__sys_sendto|__sys_recvfrom|"
                                  r"ksys_write|ksys_read"),
    ("catalogue service (ardacat_core)", r"ardacat_core::"),
    ("store executor (ardacat_store)", r"ardacat_store::"),
    ("SOAP frontend: auth, dispatch, response writing (ardacat_server, ardacat_soap::write)",
     r"ardacat_server::|ardacat_soap::"),
    ("HTTP/1 (hyper, axum)", r"^hyper::|[<]hyper::|^axum::|[<]axum::"),
    ("malloc/free", r"malloc|free|realloc|_int_"),
]


class Server(suite.Server):
    """The suite's server process, plus a reading of its /metrics."""

    def metrics(self) -> dict[str, float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=10) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    out[name] = float(value)
                except ValueError:
                    pass
        return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load() -> float:
    return round(os.getloadavg()[0], 2)


def delta(m0: dict, m1: dict, key: str) -> float:
    return m1.get(key, 0.0) - m0.get(key, 0.0)


class E2E:
    def __init__(self, args: argparse.Namespace, work: Path):
        self.a = args
        self.work = work
        self.cfg = work / "mdclient.config"
        self.cfg.write_text("# empty: every setting is a flag\n")
        self.server: Server | None = None
        self.db_url = ""
        self.pg_db: str | None = None
        self.res: dict = {"dds": [], "dds_tcp_reference": [], "profile": {}, "writes": [], "keepalive": [],
                          "errors": []}

    # --- servers and clients

    def start(self, dds: str, binary: Path = BIN / "ardacat-server") -> Server:
        self.stop()
        self.server = Server(self.db_url, dds, self.work / "server.log", binary)
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def bench(self, scenario: str, protocol: str, connections: int, duration: float, keep_alive: str = "on",
              setup: bool = False, background: bool = False):
        s = self.server
        assert s is not None
        port = s.tcp_port if protocol == "tcp" else s.http_port
        cmd = [BIN / "ardacat", "--config", self.cfg, "--host", "127.0.0.1", "--port", port, "--login", "root",
               "bench", "--scenario", scenario, "--protocol", protocol, "--connections", connections,
               "--duration", duration, "--entries", self.a.entries, "--batch", self.a.batch,
               "--keep-alive", keep_alive, "--json"]
        if setup:
            cmd.append("--setup")
        env = clean_env(ARDACAT_PASSWORD=PASSWORD)
        if background:
            return subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env=env, cwd=ROOT)
        before = load()
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=duration + 180 + (self.a.entries / 200 if setup else 0))
        r = last_json(p.stdout)
        if r is None:
            raise RuntimeError(f"ardacat bench {scenario}/{protocol}/{connections} failed ({p.returncode}): "
                               f"{p.stderr.strip()[-800:]}")
        r.update(load_before=before, load_after=load(), utc=datetime.now(timezone.utc).strftime("%H:%M:%S"))
        return r

    def point(self, label: str, r: dict) -> None:
        s = f"{r['ops_per_sec']:,.0f} ops/s p50 {r['p50_us']} µs p99 {r['p99_us']} µs"
        if r.get("entries_per_sec") is not None:
            s += f", {r['entries_per_sec']:,.0f} entries/s"
        if r.get("errors"):
            s += f" ({r['errors']} errors: {str(r.get('first_error', ''))[:160]})"
        log(f"  {label}: {s} (load {r['load_before']} → {r['load_after']})")

    def error(self, what: str, e: Exception) -> None:
        log(f"  FAILED {what}: {e}")
        self.res["errors"].append({"what": what, "error": str(e)[-1000:]})

    # --- database

    def make_db(self) -> None:
        if self.a.backend == "sqlite":
            (self.work / "db").mkdir(exist_ok=True)
            self.db_url = f"sqlite:{self.work / 'db' / 'ardacat.db'}"
        else:
            admin = os.environ.get("BENCH_PG", DEFAULT_PG)
            self.pg_db = f"ardacat_e2e_{os.getpid()}_{int(time.time())}"
            psql(admin, f"CREATE DATABASE {self.pg_db}")
            self.db_url = pg_url(admin, self.pg_db)

    def drop_db(self) -> None:
        if self.pg_db:
            try:
                psql(os.environ.get("BENCH_PG", DEFAULT_PG), f"DROP DATABASE IF EXISTS {self.pg_db} WITH (FORCE)")
            except Exception as e:  # noqa: BLE001
                log(f"  could not drop {self.pg_db}: {e}")
            self.pg_db = None

    # --- 1. DDS on vs off

    def dds(self) -> None:
        d = self.a.duration
        log(f"== 1. DDS end to end: setattr over SOAP, {self.a.dds_connections} clients, {d:g} s per point, "
            f"{self.a.rounds} rounds")
        for rnd in range(self.a.rounds):
            order = ["on", "off"] if rnd % 2 == 0 else ["off", "on"]
            for dds in order:
                s = self.start(dds)
                for c in self.a.dds_connections:
                    self.dds_point(s, dds, rnd, c, d)
        s = self.start("on")
        for c in self.a.dds_connections:
            try:
                r = self.bench("setattr", "tcp", c, d)
                self.res["dds_tcp_reference"].append(r)
                self.point(f"tcp setattr c={c}", r)
            except Exception as e:  # noqa: BLE001
                self.error("setattr tcp", e)

    def dds_point(self, s: Server, dds: str, rnd: int, c: int, d: float) -> None:
        try:
            self.bench("setattr", "soap", c, 1.0)  # warm-up: connections, templates, caches
            m0, cpu0 = s.metrics(), cpu_seconds(s.p.pid)
            r = self.bench("setattr", "soap", c, d)
            m1, cpu1 = s.metrics(), cpu_seconds(s.p.pid)
        except Exception as e:  # noqa: BLE001
            self.error(f"setattr soap dds={dds} round {rnd} c={c}", e)
            return
        parse_key = 'ardacat_stage_duration_seconds_{}{{frontend="soap",stage="parse"}}'
        n = delta(m0, m1, parse_key.format("count"))
        r["server_read_parse_us_mean"] = round(delta(m0, m1, parse_key.format("sum")) / n * 1e6, 2) if n else None
        exe_key = 'ardacat_stage_duration_seconds_{}{{frontend="soap",stage="execute"}}'
        n = delta(m0, m1, exe_key.format("count"))
        r["server_execute_us_mean"] = round(delta(m0, m1, exe_key.format("sum")) / n * 1e6, 1) if n else None
        for k, key in [("hits", "ardacat_soap_dds_hits_total"), ("misses", "ardacat_soap_dds_misses_total"),
                       ("bypassed", "ardacat_soap_dds_bypassed_total"),
                       ("loop_hits", "ardacat_soap_dds_loop_hits_total"),
                       ("declines_structure", 'ardacat_soap_dds_declines_total{reason="structure"}'),
                       ("templates", "ardacat_soap_dds_templates"),
                       ("template_bytes", "ardacat_soap_dds_template_bytes")]:
            if key in m1:
                r[f"dds_{k}"] = m1[key] if k.startswith("template") else delta(m0, m1, key)
        requests = delta(m0, m1, 'ardacat_requests_total{frontend="soap",operation="setAttributes"}')
        r["server_cpu_us_per_request"] = round((cpu1 - cpu0) / requests * 1e6, 1) if requests else None
        r.update(dds=dds, round=rnd)
        self.res["dds"].append(r)
        self.point(f"round {rnd} soap setattr dds={dds} c={c}", r)
        log(f"    server CPU {r['server_cpu_us_per_request']} µs/request, read+parse "
            f"{r['server_read_parse_us_mean']} µs/request, execute {r['server_execute_us_mean']} µs/request, "
            f"DDS hits {r.get('dds_hits', '-')}")

    # --- 2. profile

    def profile(self) -> None:
        binary = PERF_BIN / "ardacat-server"
        if not binary.exists():
            binary = BIN / "ardacat-server"
            log(f"  no frame-pointer build at {PERF_BIN}; profiling {binary} (stacks may be cut short)")
        secs = self.a.profile_seconds
        log(f"== 2. CPU profile of the DDS-on server: perf record -g -e cpu-clock, {secs:g} s of setattr c=16")
        s = self.start("on", binary)
        self.bench("setattr", "soap", 16, 1.0)  # warm-up
        bench = self.bench("setattr", "soap", 16, secs + 2, background=True)
        time.sleep(1.0)
        data = self.work / "perf.data"
        before = load()
        p = subprocess.run(["perf", "record", "-g", "-e", "cpu-clock", "-F", str(self.a.perf_freq), "-p",
                            str(s.p.pid), "-o", str(data), "--", "sleep", str(secs)],
                           capture_output=True, text=True, timeout=secs + 120)
        out, _ = bench.communicate(timeout=secs + 180)
        r = last_json(out) or {}
        r.update(load_before=before, load_after=load())
        if p.returncode != 0:
            raise RuntimeError(f"perf record failed: {p.stderr.strip()[-800:]}")
        folded = self.work / "stacks.folded"
        with open(folded, "w") as f:
            script = subprocess.Popen(["perf", "script", "-i", str(data)], stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL)
            subprocess.run(["inferno-collapse-perf"], stdin=script.stdout, stdout=f, check=True)
            script.wait()
        svg = self.a.out / "dds-e2e-flamegraph.svg"
        title = (f"ardacat-server, SOAP setAttributes x16 clients, DDS on ({self.a.backend}, "
                 f"{datetime.now(timezone.utc):%Y-%m-%d})")
        with open(folded) as fin, open(svg, "w") as fout:
            subprocess.run(["inferno-flamegraph", "--title", title, "--width", "1400", "--minwidth", "0.2"],
                           stdin=fin, stdout=fout, check=True)
        shutil.copy(folded, ROOT / "target" / "dds-e2e-stacks.folded")
        summary = summarize(folded)
        self.res["profile"] = {"seconds": secs, "frequency_hz": self.a.perf_freq, "binary": str(binary.relative_to(ROOT)),
                               "bench": r, "svg": str(svg.relative_to(ROOT)) if svg.is_relative_to(ROOT) else str(svg),
                               "stacks": "target/dds-e2e-stacks.folded", **summary}
        log(f"  {summary['cpu_seconds']} CPU seconds sampled; flame graph {svg}")
        for t, c, pct in summary["breakdown"]:
            log(f"    {pct:5.1f} %  {t}: {c}")
        if self.a.keep_perf:
            shutil.copy(data, self.a.out / "perf.data")

    # --- 3. writes

    def writes(self) -> None:
        d = self.a.duration
        log(f"== 3. writes: TCP addentry/upload vs SOAP createEntry (1 and {self.a.batch} entries per request)")
        self.start("on")
        for rnd in range(self.a.point_rounds):
            for c in self.a.write_connections:
                for scenario in ["add", "addbulk"]:
                    for protocol in (["tcp", "soap"] if rnd % 2 == 0 else ["soap", "tcp"]):
                        label = f"round {rnd} {protocol} {scenario} c={c}"
                        try:
                            r = self.bench(scenario, protocol, c, d)
                        except Exception as e:  # noqa: BLE001
                            self.error(label, e)
                            continue
                        r["round"] = rnd
                        self.res["writes"].append(r)
                        self.point(label, r)

    # --- 4. keep-alive

    def keepalive(self) -> None:
        d, c = self.a.duration, 16
        log(f"== 4. keep-alive on vs off: SOAP ping and get, {c} connections")
        self.start("on")
        for rnd in range(self.a.point_rounds):
            for scenario in ["ping", "get"]:
                order = [("tcp", "on"), ("soap", "on"), ("soap", "off")]
                for protocol, ka in (order if rnd % 2 == 0 else order[::-1]):
                    label = f"round {rnd} {protocol} {scenario} keep-alive={ka} c={c}"
                    try:
                        r = self.bench(scenario, protocol, c, d, keep_alive=ka)
                    except Exception as e:  # noqa: BLE001
                        self.error(label, e)
                        continue
                    r.update(keep_alive=ka == "on", round=rnd)
                    self.res["keepalive"].append(r)
                    self.point(label, r)

    def run(self) -> dict:
        self.res["meta"] = {
            "started_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "commit": git_describe(), "machine": machine_info(), "backend": self.a.backend,
            "duration_s": self.a.duration, "rounds": self.a.rounds, "entries": self.a.entries,
            "batch": self.a.batch, "command": " ".join(["bench/dds-e2e.sh"] + sys.argv[1:]),
        }
        self.make_db()
        try:
            self.start("on")
            log(f"== setup: /bench with {self.a.entries} entries of 60 attributes, /bench1k, /bench_add")
            self.bench("ping", "tcp", 1, 0.2, setup=True)
            if "dds" in self.a.parts:
                self.dds()
            if "profile" in self.a.parts:
                try:
                    self.profile()
                except Exception as e:  # noqa: BLE001
                    self.error("profile", e)
            if "writes" in self.a.parts:
                self.writes()
            if "keepalive" in self.a.parts:
                self.keepalive()
        finally:
            self.stop()
            self.drop_db()
        self.res["meta"]["finished_utc"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        return self.res


def summarize(folded: Path) -> dict:
    """Of folded stacks (weights: ns of CPU, as perf's cpu-clock period): the inclusive shares
    of PROFILE_GROUPS, the exclusive BREAKDOWN per thread kind, and the top leaf functions."""
    pats = [(name, re.compile(p)) for name, p in PROFILE_GROUPS]
    cats = [(name, re.compile(p)) for name, p in BREAKDOWN]
    counts: Counter = Counter()
    leaves: Counter = Counter()
    excl: Counter = Counter()
    threads: Counter = Counter()
    total = 0
    for line in folded.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        try:
            n = int(n)
        except ValueError:
            continue
        total += n
        frames = stack.split(";")
        thread = re.sub(r"[-_]?\d+$", "", frames[0])
        threads[thread] += n
        leaves[frames[-1]] += n
        for name, pat in pats:
            if any(pat.search(f) for f in frames):
                counts[name] += n
        cat = next((name for name, pat in cats if any(pat.search(f) for f in frames[1:])), "other")
        excl[(thread, cat)] += n
    pct = lambda n: round(100.0 * n / total, 1) if total else 0.0  # noqa: E731
    return {
        "cpu_seconds": round(total / 1e9, 2),
        "groups": [(name, pct(counts[name])) for name, _ in pats],
        "threads": [(t, pct(n)) for t, n in threads.most_common()],
        "breakdown": [(t, c, pct(n)) for (t, c), n in sorted(excl.items(), key=lambda kv: -kv[1])],
        "top_leaf_functions": [(f, pct(n)) for f, n in leaves.most_common(15)],
    }


def med(points: list, key: str) -> float:
    v = sorted(p[key] for p in points if p.get(key) is not None)
    return (v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2) if v else 0.0


def round_ratios(a: list, b: list, key: str) -> list[float]:
    """The per-round ratios a/b (points of the same round)."""
    return sorted(x[key] / y[key] for x in a for y in b if x.get("round") == y.get("round") and y.get(key))


def paired(a: list, b: list, key: str) -> str:
    """Median of the per-round ratios a/b, bold, with their min–max."""
    rs = round_ratios(a, b, key)
    if not rs:
        return "–"
    m = rs[len(rs) // 2] if len(rs) % 2 else (rs[len(rs) // 2 - 1] + rs[len(rs) // 2]) / 2
    return f"**{m:.2f}** ({rs[0]:.2f}–{rs[-1]:.2f})"


def loads(points: list) -> str:
    v = [p[k] for p in points for k in ("load_before", "load_after") if p.get(k) is not None]
    return f"{min(v)}–{max(v)}" if v else "–"


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "–"


def render(res: dict) -> str:
    m = res["meta"]
    out = [f"# dds-e2e results ({m['started_utc']} – {m['finished_utc']})", "",
           f"`{m['command']}` on {m['machine']['cores']} × {m['machine']['cpu']}, backend {m['backend']}, "
           f"commit {m['commit']}, {m['duration_s']:g} s per point, load average at start "
           f"{m['machine'].get('load_average_at_start')}.", ""]
    out += ["## 1. DDS on vs off: SOAP setAttributes (60 values, 3 changing per request)", "",
            "| round | clients | DDS | requests/s | p50 µs | p99 µs | server CPU µs/request | server read+parse µs/request "
            "| server execute µs/request | DDS hits | misses | load before → after |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in res["dds"]:
        num = lambda k: f"{r[k]:,.0f}" if k in r else "–"  # noqa: E731
        out.append(f"| {r['round']} | {r['connections']} | {r['dds']} | {r['ops_per_sec']:,.0f} | {r['p50_us']} | {r['p99_us']} | "
                   f"{r.get('server_cpu_us_per_request')} | {r.get('server_read_parse_us_mean')} | "
                   f"{r.get('server_execute_us_mean')} | {num('dds_hits')} | {num('dds_misses')} | {r['load_before']} → {r['load_after']} |")
    out += ["", "Medians over the rounds; ratios are the median of the rounds' own ratios (each round has both "
            "servers), with their range (on/off for rates, off/on for times):", "",
            "| clients | requests/s on | off | on/off | p50 off/on | p99 off/on | server CPU µs/request on | off "
            "| off/on | server read+parse µs on | off | off/on |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in sorted({r["connections"] for r in res["dds"]}):
        on = [r for r in res["dds"] if r["connections"] == c and r["dds"] == "on"]
        off = [r for r in res["dds"] if r["connections"] == c and r["dds"] == "off"]
        if on and off:
            k_cpu, k_parse = "server_cpu_us_per_request", "server_read_parse_us_mean"
            out.append(
                f"| {c} | {med(on, 'ops_per_sec'):,.0f} | {med(off, 'ops_per_sec'):,.0f} | "
                f"{paired(on, off, 'ops_per_sec')} | {paired(off, on, 'p50_us')} | {paired(off, on, 'p99_us')} | "
                f"{med(on, k_cpu):.0f} | {med(off, k_cpu):.0f} | {paired(off, on, k_cpu)} | "
                f"{med(on, k_parse):.1f} | {med(off, k_parse):.1f} | {paired(off, on, k_parse)} |")
    out.append("")
    for rnd, c in sorted({(r["round"], r["connections"]) for r in res["dds"]}):
        pts = [r for r in res["dds"] if r["round"] == rnd and r["connections"] == c]
        on = next((r for r in pts if r["dds"] == "on"), None)
        off = next((r for r in pts if r["dds"] == "off"), None)
        if on and off:
            out.append(f"* round {rnd}, {c} clients: on/off requests/s **{ratio(on['ops_per_sec'], off['ops_per_sec'])}**, "
                       f"p50 off/on {ratio(off['p50_us'], on['p50_us'])}, p99 off/on {ratio(off['p99_us'], on['p99_us'])}"
                       f", server read+parse off/on {ratio(off.get('server_read_parse_us_mean'), on.get('server_read_parse_us_mean'))}"
                       f", server CPU per request off/on {ratio(off.get('server_cpu_us_per_request'), on.get('server_cpu_us_per_request'))}")
    for r in res["dds_tcp_reference"]:
        out.append(f"* TCP setattr, {r['connections']} connections: {r['ops_per_sec']:,.0f} requests/s, p50 {r['p50_us']} µs, "
                   f"p99 {r['p99_us']} µs (load {r['load_before']} → {r['load_after']})")
    out.append("")
    p = res.get("profile") or {}
    if p:
        out += [f"## 2. CPU profile (DDS on): {p['cpu_seconds']} CPU seconds sampled at {p['frequency_hz']} Hz "
                f"over {p['seconds']} s", "",
                f"Flame graph: `{p['svg']}`; load {p['bench'].get('load_before')} → {p['bench'].get('load_after')}; "
                f"{p['bench'].get('ops_per_sec', 0):,.0f} requests/s while profiled. Threads: "
                + ", ".join(f"{t} {pct} %" for t, pct in p["threads"]) + ".", "",
                "| thread | where (exclusive, first match) | share of server CPU |", "|---|---|---:|"]
        out += [f"| {t} | {c} | {pct} % |" for t, c, pct in p["breakdown"]]
        out += ["", "| frames (inclusive) | share of server CPU |", "|---|---:|"]
        out += [f"| {name} | {pct} % |" for name, pct in p["groups"]]
        out += ["", "| leaf function | self share |", "|---|---:|"]
        out += [f"| `{f[:110]}` | {pct} % |" for f, pct in p["top_leaf_functions"]]
        out.append("")
    rounds = max([r.get("round", 0) for r in res["writes"] + res["keepalive"]] + [0]) + 1
    out += ["## 3. Writes: entries/s, TCP vs SOAP", "",
            f"Medians over {rounds} rounds (order alternated); TCP:SOAP is the median of the rounds' own ratios, "
            "with their range.", "",
            "| connections | operation | TCP entries/s | SOAP entries/s | TCP:SOAP | TCP p50/p99 µs "
            "| SOAP p50/p99 µs | load |", "|---:|---|---:|---:|---:|---|---|---|"]
    for c in sorted({r["connections"] for r in res["writes"]}):
        for sc, what in [("add", "1 entry per request (addentry / createEntry)"),
                         ("addbulk", f"{m['batch']} entries per request (upload / createEntry)")]:
            t = [r for r in res["writes"] if r["connections"] == c and r["scenario"] == sc and r["protocol"] == "tcp"]
            s = [r for r in res["writes"] if r["connections"] == c and r["scenario"] == sc and r["protocol"] == "soap"]
            if t and s:
                te, se = med(t, "entries_per_sec"), med(s, "entries_per_sec")
                out.append(f"| {c} | {what} | {te:,.0f} | {se:,.0f} | {paired(t, s, 'entries_per_sec')} "
                           f"| {med(t, 'p50_us'):.0f} / {med(t, 'p99_us'):.0f} | {med(s, 'p50_us'):.0f} / {med(s, 'p99_us'):.0f} "
                           f"| {loads(t + s)} |")
    out += ["", "## 4. Keep-alive, 16 connections", "",
            f"Medians over {rounds} rounds (order alternated); on:off is the median of the rounds' own ratios, "
            "with their range.", "",
            "| scenario | TCP ops/s | SOAP keep-alive ops/s | SOAP new connection per request ops/s | on:off "
            "| TCP:SOAP (keep-alive) | p50 on/off µs | p99 on/off µs | load |", "|---|---:|---:|---:|---:|---|---|---|---|"]
    for sc in ["ping", "get"]:
        t = [r for r in res["keepalive"] if r["scenario"] == sc and r["protocol"] == "tcp"]
        on = [r for r in res["keepalive"] if r["scenario"] == sc and r["protocol"] == "soap" and r["keep_alive"]]
        off = [r for r in res["keepalive"] if r["scenario"] == sc and r["protocol"] == "soap" and not r["keep_alive"]]
        if t and on and off:
            a, b = med(on, "ops_per_sec"), med(off, "ops_per_sec")
            out.append(f"| {sc} | {med(t, 'ops_per_sec'):,.0f} | {a:,.0f} | {b:,.0f} | {paired(on, off, 'ops_per_sec')} | "
                       f"{paired(t, on, 'ops_per_sec')} | {med(on, 'p50_us'):.0f} / {med(off, 'p50_us'):.0f} | "
                       f"{med(on, 'p99_us'):.0f} / {med(off, 'p99_us'):.0f} | {loads(t + on + off)} |")
    if res["errors"]:
        out += ["", "## Errors", ""] + [f"* {e['what']}: {e['error'][:300]}" for e in res["errors"]]
    return "\n".join(out) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description="DDS end to end, SOAP vs TCP writes, keep-alive (use bench/dds-e2e.sh)")
    p.add_argument("--duration", type=float, default=5.0, help="seconds per point (default 5)")
    p.add_argument("--rounds", type=int, default=2, help="DDS on/off rounds, alternating the order (default 2)")
    p.add_argument("--entries", type=int, default=10_000, help="entries in /bench (default 10000)")
    p.add_argument("--batch", type=int, default=100, help="entries per bulk request (default 100)")
    p.add_argument("--write-connections", default="1,16", help="connection counts of the write points")
    p.add_argument("--dds-connections", default="16", help="connection counts of the DDS on/off points")
    p.add_argument("--point-rounds", type=int, default=3,
                   help="rounds of the write and keep-alive points, alternating the order; medians reported")
    p.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--parts", default="dds,profile,writes,keepalive", help="which parts to run")
    p.add_argument("--profile-seconds", type=float, default=10.0)
    p.add_argument("--perf-freq", type=int, default=999, help="perf sampling frequency (Hz)")
    p.add_argument("--keep-perf", action="store_true", help="copy perf.data to --out (never commit it)")
    p.add_argument("--no-profile", action="store_true", help="same as leaving profile out of --parts")
    p.add_argument("--out", type=Path, default=ROOT / "target" / "dds-e2e",
                   help="where results go (default target/dds-e2e; the docs use docs/bench)")
    p.add_argument("--render-only", action="store_true", help="re-render OUT/dds-e2e.md from OUT/dds-e2e.json")
    args = p.parse_args()
    if args.render_only:
        md = render(json.loads((args.out / "dds-e2e.json").read_text()))
        (args.out / "dds-e2e.md").write_text(md)
        print(md)
        return 0
    args.parts = [x for x in args.parts.split(",") if x and not (args.no_profile and x == "profile")]
    args.write_connections = [int(c) for c in args.write_connections.split(",")]
    args.dds_connections = [int(c) for c in args.dds_connections.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    for b in ["ardacat", "ardacat-server"]:
        if not (BIN / b).exists():
            raise SystemExit(f"{BIN / b} is missing: run bench/dds-e2e.sh (it builds the release binaries)")
    work = Path(tempfile.mkdtemp(prefix="ardacat-dds-e2e-", dir=ROOT / "target"))

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    e2e = E2E(args, work)
    try:
        res = e2e.run()
    except KeyboardInterrupt:
        log("interrupted: stopping the server")
        e2e.stop()
        e2e.drop_db()
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (args.out / "dds-e2e.json").write_text(json.dumps(res, indent=1) + "\n")
    md = render(res)
    (args.out / "dds-e2e.md").write_text(md)
    print(md)
    log(f"wrote {args.out / 'dds-e2e.json'}, {args.out / 'dds-e2e.md'}")
    return 1 if res["errors"] else 0


if __name__ == "__main__":
    threading.current_thread().name = "dds-e2e"
    sys.exit(main())
