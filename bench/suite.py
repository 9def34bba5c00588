"""The ardacat benchmark suite: runs every measurement of one mode against fresh databases and
writes results.json, results.md and the plots (see bench/README.md). Started by bench/run.sh,
which installs what it needs and builds the release binaries first.

    bench/run.sh [--quick | --full] [--backends sqlite,postgres] [--out DIR] [...]

BENCH_TINY=1 shrinks the quick mode to a smoke test (1 s points, connections 1/4, 2000 entries)
and writes to target/bench-tiny unless --out says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402
import wire  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release"
PASSWORD = "bench-suite-root"
ATTRS = [f"a{i}" for i in range(60)]
# `update` (update by query) last: it changes a2 of /bench entries, which no earlier scenario
# depends on; SOAP has no update by query.
TCP_SCENARIOS = ["ping", "get", "add", "addbulk", "bulkget", "query", "update"]
# SOAP: ping, getAttributes of one entry and of /bench1k, createEntry of 1 and of 100 entries.
SOAP_SCENARIOS = ["ping", "get", "add", "addbulk", "bulkget"]
# SOAP with a new HTTP connection per request (`--keep-alive off`), at up to this many
# connections: beyond, the sockets left in TIME_WAIT would exhaust the loopback's ports.
CLOSE_SCENARIOS = ["ping", "get", "bulkget"]
CLOSE_MAX_CONNECTIONS = 16
SIZE_SCENARIOS = ["get", "query"]
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/postgres"


@dataclass
class Plan:
    mode: str
    duration: float
    connections: list[int]
    entries: int
    sizes: list[int]
    backends: list[str]
    export_repeats: int = 3
    server_benches: bool = False
    catalogue_entries: int = 10_000_000
    catalogue_queries: int = 200
    stream_rows: int = 10_000_000
    tree_collections: int = 100_000
    extra: dict = field(default_factory=dict)


def make_plan(args: argparse.Namespace) -> Plan:
    tiny = os.environ.get("BENCH_TINY", "") not in ("", "0")
    if args.full:
        plan = Plan("full", 10.0, [1, 16, 64, 256], 10_000, [10_000, 100_000, 1_000_000], [],
                    server_benches=True)
    elif tiny:
        plan = Plan("tiny", 1.0, [1, 4], 2_000, [2_000, 5_000], [], export_repeats=1,
                    catalogue_entries=2_000, catalogue_queries=20, stream_rows=2_000,
                    tree_collections=500)
    else:
        plan = Plan("quick", 3.0, [1, 16, 64], 10_000, [10_000, 100_000], [])
    plan.backends = [b for b in args.backends.split(",") if b]
    for b in plan.backends:
        if b not in ("sqlite", "postgres"):
            raise SystemExit(f"unknown backend {b!r} (sqlite, postgres)")
    if args.duration is not None:
        plan.duration = args.duration
    if args.connections:
        plan.connections = [int(c) for c in args.connections.split(",")]
    if args.entries is not None:
        plan.entries = args.entries
    if args.sizes:
        plan.sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.server_benches is not None:
        plan.server_benches = args.server_benches == "on"
    if args.catalogue_entries is not None:
        plan.catalogue_entries = args.catalogue_entries
    if args.stream_rows is not None:
        plan.stream_rows = args.stream_rows
    if args.tree_collections is not None:
        plan.tree_collections = args.tree_collections
    return plan


# --- small helpers ------------------------------------------------------------------------------

START = time.monotonic()


def log(msg: str) -> None:
    t = int(time.monotonic() - START)
    print(f"[{t // 60:3d}:{t % 60:02d}] {msg}", file=sys.stderr, flush=True)


def clean_env(**extra: str) -> dict:
    """The caller's environment without ARDACAT_* settings (which would change the server or
    client under test), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARDACAT_")}
    env.update(extra)
    return env


def run(cmd: list, timeout: float, env: dict | None = None, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, env=env or clean_env(), cwd=ROOT)


def timed(cmd: list, env: dict | None = None, timeout: float = 3600) -> float:
    """Seconds a command takes with its output thrown away; raises on failure."""
    t0 = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, env=env or clean_env(), cwd=ROOT)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{Path(str(cmd[0])).name} failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    return dt


def last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def pg_url(admin: str, db: str) -> str:
    return admin[: admin.rfind("/")] + "/" + db


def psql(url: str, sql: str, timeout: float = 120) -> str:
    p = run(["psql", url, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql], timeout)
    if p.returncode != 0:
        raise RuntimeError(f"psql: {p.stderr.strip()}")
    return p.stdout.strip()


def git_describe() -> str:
    try:
        rev = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], 10).stdout.strip()
        dirty = run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], 10).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except Exception:  # noqa: BLE001 (no git is fine)
        return "unknown"


def machine_info() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    info = {"cores": os.cpu_count(), "cpu": cpu, "memory_gib": mem_gib, "kernel": platform.release(),
            "python": platform.python_version()}
    for name, cmd in [("rustc", ["rustc", "--version"]), ("sqlite3", ["sqlite3", "--version"]),
                      ("psql", ["psql", "--version"])]:
        try:
            out = run(cmd, 10).stdout.strip()
            info[name] = " ".join(out.split()[:2]) if name == "sqlite3" else out.split(" (")[0]
        except Exception:  # noqa: BLE001
            info[name] = None
    try:
        info["load_average_at_start"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    return info


# --- processes ----------------------------------------------------------------------------------


class Proc:
    """A long-running child whose first stdout line matching `ready` says it is up."""

    def __init__(self, cmd: list, env: dict, log_path: Path, ready: str, timeout: float = 120):
        self.log_file = open(log_path, "ab")  # noqa: SIM115 (closed in stop)
        self.p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=self.log_file, env=env,
                                  text=True, cwd=ROOT)
        self.log_path = log_path
        lines: queue.Queue = queue.Queue()

        def drain() -> None:
            assert self.p.stdout is not None
            for line in self.p.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"{Path(str(cmd[0])).name} did not start in {timeout:.0f} s; see {log_path}")
            if line is None:
                self.stop()
                raise RuntimeError(f"{Path(str(cmd[0])).name} exited at start: {self.log_tail()}")
            if ready in line:
                self.ready_line = line.strip()
                break

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        self.log_file.close()


class Server(Proc):
    def __init__(self, database: str, dds: str, log_path: Path, binary: Path | None = None):
        # The load generator is one address with up to 256 connections: no per-address cap (an
        # environment variable, which servers older than the cap ignore, for A/B runs).
        env = clean_env(ARDACAT_ROOT_PASSWORD=PASSWORD, RUST_LOG=os.environ.get("BENCH_SERVER_LOG", "warn"),
                        ARDACAT_MAX_CONNECTIONS_PER_PEER="0")
        cmd = [binary or BIN / "ardacat-server", "--database", database, "--bind", "127.0.0.1", "--tcp-port", "0",
               "--http-port", "0", "--soap-dds", dds, "--max-connections", "2048"]
        super().__init__(cmd, env, log_path, "ardacat-server listening")
        m = re.search(r"tcp=\S*:(\d+) http=\S*:(\d+)", self.ready_line)
        if not m:
            self.stop()
            raise RuntimeError(f"cannot read the ports from {self.ready_line!r}")
        self.tcp_port, self.http_port = int(m.group(1)), int(m.group(2))
        self.dds = dds


# --- the measurements ---------------------------------------------------------------------------


class Suite:
    def __init__(self, plan: Plan, out: Path, work: Path):
        self.plan = plan
        self.out = out
        self.work = work
        self.client_cfg = work / "mdclient.config"
        self.client_cfg.write_text("# empty: the suite passes every setting as a flag\n")
        self.results: dict = {"points": [], "echo": [], "sizes": [], "export": [], "wire": [],
                               "server_benches": [], "errors": []}
        self.server: Server | None = None
        self.pg_admin = os.environ.get("BENCH_PG", DEFAULT_PG)
        self.pg_db: str | None = None
        self.point = 0

    # client invocations

    def client_env(self) -> dict:
        return clean_env(ARDACAT_PASSWORD=PASSWORD)

    def client_base(self, port: int) -> list:
        return [BIN / "ardacat", "--config", self.client_cfg, "--host", "127.0.0.1", "--port", port,
                "--login", "root"]

    def bench(self, scenario: str, protocol: str, connections: int, entries: int, duration: float | None = None,
              setup: bool = False, keep_alive: bool = True) -> dict:
        assert self.server is not None
        duration = self.plan.duration if duration is None else duration
        port = self.server.tcp_port if protocol == "tcp" else self.server.http_port
        cmd = self.client_base(port) + ["bench", "--scenario", scenario, "--protocol", protocol,
                                        "--connections", connections, "--duration", duration,
                                        "--entries", entries, "--json"]
        if setup:
            cmd.append("--setup")
        if not keep_alive:
            cmd += ["--keep-alive", "off"]
        # Connecting and logging in many clients, and a slow last operation, come on top.
        timeout = duration + 120 + connections + (entries / 200 if setup else 0)
        p = run(cmd, timeout, env=self.client_env())
        result = last_json(p.stdout)
        if result is None:
            raise RuntimeError(f"ardacat bench {scenario}/{protocol}/{connections} failed ({p.returncode}): "
                               f"{p.stderr.strip()[-800:]}")
        if p.returncode != 0 and not result.get("first_error"):
            result["first_error"] = p.stderr.strip()[-300:]
        return result

    def record_error(self, what: str, e: Exception) -> None:
        log(f"  FAILED {what}: {e}")
        self.results["errors"].append({"what": what, "error": str(e)[-1000:]})

    def point_str(self, r: dict) -> str:
        s = f"{r.get('ops_per_sec', 0):,.0f} ops/s p50 {r.get('p50_us')} µs p99 {r.get('p99_us')} µs"
        if r.get("entries_per_sec") is not None:
            s += f", {r['entries_per_sec']:,.0f} entries/s"
        if r.get("errors"):
            s += f" ({r['errors']} errors: {r.get('first_error', '')[:120]})"
        return s

    def matrix(self, backend: str, protocol: str, scenarios: list[str], dds: str | None,
               keep_alive: bool = True) -> None:
        for scenario in scenarios:
            for c in self.plan.connections:
                if not keep_alive and c > CLOSE_MAX_CONNECTIONS:
                    continue
                label = (f"{backend} {protocol}{'' if dds is None else ' dds=' + dds}"
                         f"{'' if keep_alive else ' keep-alive=off'} {scenario} c={c}")
                try:
                    r = self.bench(scenario, protocol, c, self.plan.entries, keep_alive=keep_alive)
                except Exception as e:  # noqa: BLE001 (a failed point is recorded, the run goes on)
                    self.record_error(label, e)
                    continue
                r.update(backend=backend, dds=dds, entries=self.plan.entries)
                self.results["points"].append(r)
                log(f"  {label}: {self.point_str(r)}")

    def setup_data(self, entries: int) -> float:
        log(f"  setup: /bench with {entries} entries, /bench1k, /bench_add")
        t0 = time.perf_counter()
        self.bench("ping", "tcp", 1, entries, duration=0.2, setup=True)
        dt = time.perf_counter() - t0
        log(f"  setup took {dt:.1f} s ({(entries + 1000) / dt:,.0f} entries/s incl. /bench1k)")
        return dt

    # backends

    def database_url(self, backend: str) -> str:
        if backend == "sqlite":
            path = self.work / "sqlite" / "ardacat.db"
            path.parent.mkdir(parents=True, exist_ok=True)
            return f"sqlite:{path}"
        self.pg_db = f"ardacat_suite_{os.getpid()}_{int(time.time())}"
        psql(self.pg_admin, f"CREATE DATABASE {self.pg_db}")
        return pg_url(self.pg_admin, self.pg_db)

    def drop_database(self, backend: str) -> None:
        if backend == "sqlite":
            shutil.rmtree(self.work / "sqlite", ignore_errors=True)
        elif self.pg_db:
            try:
                psql(self.pg_admin, f"DROP DATABASE IF EXISTS {self.pg_db} WITH (FORCE)")
            except Exception as e:  # noqa: BLE001
                log(f"  could not drop {self.pg_db}: {e}")
            self.pg_db = None

    def start_server(self, url: str, dds: str, backend: str) -> None:
        self.stop_server()
        self.server = Server(url, dds, self.work / f"server-{backend}.log")
        log(f"  server up (dds={dds}): tcp {self.server.tcp_port}, http {self.server.http_port}")

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def run_backend(self, backend: str) -> None:
        log(f"== backend {backend}")
        url = self.database_url(backend)
        try:
            self.start_server(url, "on", backend)
            self.setup_data(self.plan.entries)
            loaded = self.plan.entries
            self.matrix(backend, "tcp", TCP_SCENARIOS, None)
            self.matrix(backend, "soap", SOAP_SCENARIOS, "on")
            self.matrix(backend, "soap", CLOSE_SCENARIOS, "on", keep_alive=False)
            if backend == self.plan.backends[0]:
                self.wire_bytes(backend)
            self.start_server(url, "off", backend)
            self.matrix(backend, "soap", SOAP_SCENARIOS, "off")
            self.start_server(url, "on", backend)
            for size in self.plan.sizes:
                if size != loaded:
                    try:
                        self.setup_data(size)
                        loaded = size
                    except Exception as e:  # noqa: BLE001
                        self.record_error(f"{backend} setup {size}", e)
                        break
                for scenario in SIZE_SCENARIOS:
                    label = f"{backend} size={size} tcp {scenario} c=1"
                    try:
                        r = self.bench(scenario, "tcp", 1, size)
                    except Exception as e:  # noqa: BLE001
                        self.record_error(label, e)
                        continue
                    r.update(backend=backend, dds=None, entries=size)
                    self.results["sizes"].append(r)
                    log(f"  {label}: {self.point_str(r)}")
            self.export_rate(backend, url, loaded)
        finally:
            self.stop_server()
            self.drop_database(backend)

    # baselines

    def echo_baseline(self) -> None:
        log("== baseline: tokio echo server")
        env = clean_env()
        server = Proc([BIN / "echo_baseline", "server", "0"], env, self.work / "echo.log", "echo_baseline listening")
        port = server.ready_line.split()[-1]
        try:
            for c in self.plan.connections:
                cmd = [BIN / "echo_baseline", "ping", "--port", port, "--connections", c, "--duration",
                       self.plan.duration, "--json"]
                try:
                    p = run(cmd, self.plan.duration + 60, env=env)
                    r = last_json(p.stdout)
                    if r is None:
                        raise RuntimeError(p.stderr.strip()[-500:])
                except Exception as e:  # noqa: BLE001
                    self.record_error(f"echo c={c}", e)
                    continue
                self.results["echo"].append(r)
                log(f"  echo c={c}: {self.point_str(r)}")
        finally:
            server.stop()

    def export_rate(self, backend: str, url: str, rows: int) -> None:
        """The database's own export of the /bench rows vs our streamed getattr of them."""
        assert self.server is not None
        log(f"  export baseline over {rows} rows")
        sql_id = "select id from collections where path='/bench'"
        try:
            if backend == "sqlite":
                db = url.removeprefix("sqlite:")
                cid = run(["sqlite3", db, sql_id], 60).stdout.strip()
                raw_cmd = ["sqlite3", db, f"select * from e{cid}"]
                raw_tool = "sqlite3 shell: select *"
            else:
                cid = psql(url, sql_id)
                raw_cmd = ["psql", url, "-v", "ON_ERROR_STOP=1", "-c", f"COPY e{cid} TO STDOUT"]
                raw_tool = "psql: COPY TO STDOUT"
            if not cid.isdigit():
                raise RuntimeError(f"no collection id for /bench: {cid!r}")
            ours_cmd = self.client_base(self.server.tcp_port) + ["-c", f"getattr /bench {' '.join(ATTRS)}"]
            for tool, cmd, env in [(raw_tool, raw_cmd, None),
                                   ("ardacat getattr stream (TCP)", ours_cmd, self.client_env())]:
                times = [timed(cmd, env=env) for _ in range(self.plan.export_repeats)]
                best = min(times)
                r = {"backend": backend, "tool": tool, "rows": rows, "seconds": round(best, 4),
                     "seconds_all": [round(t, 4) for t in times], "rows_per_sec": round(rows / best, 1)}
                self.results["export"].append(r)
                log(f"  {tool}: {rows / best:,.0f} rows/s (best of {len(times)}: {best:.3f} s)")
        except Exception as e:  # noqa: BLE001
            self.record_error(f"{backend} export baseline", e)

    def wire_bytes(self, backend: str) -> None:
        assert self.server is not None
        log("  bytes on the wire per operation")
        try:
            rows = wire.measure("127.0.0.1", self.server.tcp_port, self.server.http_port, "root", PASSWORD)
        except Exception as e:  # noqa: BLE001
            self.record_error("wire bytes", e)
            return
        for r in rows:
            r["backend"] = backend
            self.results["wire"].append(r)
            if r["operation"] != "login":
                log(f"  {r['operation']:8} {r['protocol']:10} {r['request_bytes']:>7} B out, "
                    f"{r['response_bytes']:>8} B in")

    def server_benches(self) -> None:
        """cargo bench: the 10-attribute catalogue (3-predicate query, single-attribute indexes and
        the composite index), the stream bench and the collection tree."""
        jobs = []
        backend_arg = "both" if len(self.plan.backends) == 2 else self.plan.backends[0]
        jobs.append(("catalogue", ["--entries", self.plan.catalogue_entries, "--queries",
                                   self.plan.catalogue_queries, "--backend", backend_arg, "--analyze"]))
        jobs.append(("catalogue", ["--entries", self.plan.catalogue_entries, "--queries",
                                   self.plan.catalogue_queries, "--backend", backend_arg, "--analyze",
                                   "--composite"]))
        for b in self.plan.backends:
            jobs.append(("stream", ["--rows", self.plan.stream_rows, "--backend", b]))
        for b in self.plan.backends:
            jobs.append(("tree", ["--collections", self.plan.tree_collections, "--backend", b]))
        log("== building the cargo benches (catalogue, stream, tree)")
        p = run(["cargo", "bench", "-q", "-p", "ardacat-server", "--bench", "catalogue", "--bench", "stream",
                 "--bench", "tree", "--no-run"], 3 * 3600)
        if p.returncode != 0:
            self.record_error("cargo bench --no-run", RuntimeError(p.stderr.strip()[-800:]))
            return
        for bench, args in jobs:
            log(f"== cargo bench --bench {bench} -- {' '.join(map(str, args))}")
            cmd = ["cargo", "bench", "-q", "-p", "ardacat-server", "--bench", bench, "--"] + args
            t0 = time.perf_counter()
            try:
                p = run(cmd, 6 * 3600, env=clean_env(ARDACAT_BENCH_PG=self.pg_admin))
                if p.returncode != 0:
                    raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()[-800:]}")
            except Exception as e:  # noqa: BLE001
                self.record_error(f"cargo bench {bench}", e)
                continue
            table = parse_markdown_table(p.stdout)
            self.results["server_benches"].append({"bench": bench, "args": [str(a) for a in args],
                                                   "seconds": round(time.perf_counter() - t0, 1), **table})
            for row in table["rows"]:
                log(f"  {' | '.join(row)}")

    # the whole run

    def run(self) -> dict:
        self.results["meta"] = {
            "started_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "commit": git_describe(),
            "plan": asdict(self.plan),
            "machine": machine_info(),
            "attributes_per_entry": len(ATTRS),
        }
        if "postgres" in self.plan.backends:
            try:
                self.results["meta"]["machine"]["postgres_server"] = psql(self.pg_admin, "show server_version")
            except Exception as e:  # noqa: BLE001
                raise SystemExit(f"PostgreSQL is not reachable at {self.pg_admin}: {e}") from e
        self.echo_baseline()
        for backend in self.plan.backends:
            try:
                self.run_backend(backend)
            except Exception as e:  # noqa: BLE001
                self.record_error(f"backend {backend}", e)
        if self.plan.server_benches:
            self.server_benches()
        self.results["meta"]["wall_seconds"] = round(time.monotonic() - START, 1)
        return self.results


def parse_markdown_table(text: str) -> dict:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    if not cells:
        return {"header": [], "rows": [], "raw": text[-2000:]}
    rows = [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
    return {"header": cells[0], "rows": rows}


def main() -> int:
    p = argparse.ArgumentParser(description="ardacat benchmark suite (use bench/run.sh, which builds first)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the default: 3 s points, connections 1/16/64")
    mode.add_argument("--full", action="store_true",
                      help="10 s points, 256 connections, 1M entries, cargo benches with 10M rows (hours)")
    p.add_argument("--backends", default="sqlite,postgres", help="comma-separated: sqlite,postgres")
    p.add_argument("--out", type=Path, help="output folder (default docs/bench; target/bench-tiny with BENCH_TINY)")
    p.add_argument("--duration", type=float, help="seconds per point")
    p.add_argument("--connections", help="comma-separated connection counts")
    p.add_argument("--entries", type=int, help="entries in /bench for the scenario matrix")
    p.add_argument("--sizes", help="comma-separated data-set sizes for latency vs size")
    p.add_argument("--server-benches", choices=["on", "off"], help="run the cargo benches (default: on with --full)")
    p.add_argument("--catalogue-entries", type=int, help="entries for the catalogue cargo bench")
    p.add_argument("--stream-rows", type=int, help="rows for the stream cargo bench")
    p.add_argument("--tree-collections", type=int, help="collections for the tree cargo bench")
    p.add_argument("--keep", action="store_true", help="keep the work folder (server logs)")
    args = p.parse_args()
    plan = make_plan(args)
    out = args.out or (ROOT / ("target/bench-tiny" if plan.mode == "tiny" else "docs/bench"))
    out.mkdir(parents=True, exist_ok=True)
    for b in ["ardacat", "ardacat-server", "echo_baseline"]:
        if not (BIN / b).exists():
            raise SystemExit(f"{BIN / b} is missing: run bench/run.sh (it builds the release binaries)")
    work = Path(tempfile.mkdtemp(prefix="ardacat-bench-", dir=ROOT / "target"))

    def on_term(signum, _frame):  # turn SIGTERM into an exception so servers stop and databases drop
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    log(f"mode {plan.mode}: {plan.duration:g} s per point, connections {plan.connections}, "
        f"/bench {plan.entries} entries, sizes {plan.sizes}, backends {plan.backends}; work folder {work}")
    suite = Suite(plan, out, work)
    try:
        results = suite.run()
    except KeyboardInterrupt:
        log("interrupted: stopping the server and dropping the scratch database")
        suite.stop_server()
        for b in plan.backends:
            suite.drop_database(b)
        return 130
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    files = report.render(results, out)
    log(f"done in {results['meta']['wall_seconds']:.0f} s: {out / 'results.json'}, " + ", ".join(str(f) for f in files))
    if results["errors"]:
        log(f"{len(results['errors'])} measurement(s) failed; see the Errors section of results.md")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
