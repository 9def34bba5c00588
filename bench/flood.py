"""Flood benchmark (issue #18): a legitimate client's `get` latency with and without a one-address
flood, and the server's resident memory per idle connection. Run through bench/flood.sh.

Everything stays on loopback: the legitimate client connects from 127.0.0.1, the flood from
127.0.0.2. Standard library only.

1. quiet: --gets `getattr /bench/e<i> v` round trips on one logged-in connection; p50/p99.
2. flood: --flood idle connections from 127.0.0.2 are opened and held (past the per-address cap
   the server refuses them at once), and --churners threads keep reconnecting from 127.0.0.2
   for the whole measurement; the same gets are measured again.
3. rss: a second server with the per-address cap off; VmRSS before and after --idle idle
   connections that received their greeting (no login), divided by their number.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PASSWORD = "flood-bench-secret"


def start_server(binary: str, db: str, extra: list[str]) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ, ARDACAT_ROOT_PASSWORD=PASSWORD, RUST_LOG="warn")
    env.pop("ARDACAT_CONFIG", None)
    proc = subprocess.Popen(
        [binary, "--database", db, "--tcp-port", "0", "--http-port", "0", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    port = next(int(w.split(":")[-1]) for w in line.split() if w.startswith("tcp="))
    return proc, port


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.bind((source, 0))
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    return s


def read_until(s: socket.socket, end: bytes, buf: bytearray) -> bytes:
    while end not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError(f"closed; have {bytes(buf)!r}")
        buf += chunk
    i = buf.index(end) + len(end)
    out = bytes(buf[:i])
    del buf[:i]
    return out


def greeting(s: socket.socket) -> bytes:
    got = b""
    while got.count(b"\n") < 3:
        chunk = s.recv(1024)
        if not chunk:
            return got  # refused: one line, then close
        got += chunk
    return got


class Client:
    def __init__(self, port: int):
        self.s = connect(port)
        self.buf = bytearray()
        g = greeting(self.s)
        if not g.startswith(b"ARDA Metadata Server"):
            raise RuntimeError(f"not greeted: {g!r}")
        self.s.sendall(b"plain\n\n")
        read_until(self.s, b"OK\n", self.buf)
        self.s.sendall(f"0 root\n5 {PASSWORD}\n\n".encode())

    def cmd(self, line: str) -> bytes:
        self.s.sendall(line.encode() + b"\n")
        reply = read_until(self.s, b"\x04\x04", self.buf)
        if not reply.startswith(b"0"):
            raise RuntimeError(f"{line}: {reply!r}")
        return reply


def measure_gets(c: Client, n: int, entries: int) -> tuple[float, float]:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        c.cmd(f"getattr /bench/e{i % entries} v")
        times.append(time.perf_counter() - t0)
    times.sort()
    return statistics.median(times) * 1e3, times[int(len(times) * 0.99) - 1] * 1e3


def churn(port: int, stop: threading.Event, counts: list[int]) -> None:
    """Reconnect from the flooding address as fast as the server answers."""
    while not stop.is_set():
        try:
            s = connect(port, "127.0.0.2")
            greeting(s)
            s.close()
            counts[0] += 1
        except OSError:
            time.sleep(0.01)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True, help="the ardacat-server binary")
    ap.add_argument("--gets", type=int, default=20000)
    ap.add_argument("--entries", type=int, default=1000)
    ap.add_argument("--flood", type=int, default=2000, help="idle connections the flood opens and holds")
    ap.add_argument("--churners", type=int, default=2, help="threads reconnecting from the flood address")
    ap.add_argument("--idle", type=int, default=10000, help="idle connections for the RSS measurement")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        # handshake_timeout_secs: the flood's held connections must outlive the measurement.
        cfg = os.path.join(tmp, "flood.toml")
        with open(cfg, "w") as f:
            f.write("handshake_timeout_secs = 3600\n")
        proc, port = start_server(a.server, f"sqlite:{tmp}/flood.db",
                                  ["--config", cfg, "--max-connections", str(a.flood + 100)])
        try:
            c = Client(port)
            c.cmd("createdir /bench")
            c.cmd("addattr /bench v int")
            c.cmd("upload /bench v\n" + "".join(f"put e{i} {i}\n" for i in range(a.entries)) + "commit")
            measure_gets(c, min(a.gets, 2000), a.entries)  # warm-up
            quiet = measure_gets(c, a.gets, a.entries)
            print(f"quiet: get p50 {quiet[0]:.3f} ms, p99 {quiet[1]:.3f} ms ({a.gets} gets)", flush=True)

            held, refused = [], 0
            for _ in range(a.flood):
                s = connect(port, "127.0.0.2")
                s.settimeout(5)
                g = greeting(s)
                if g.startswith(b"ARDA"):
                    held.append(s)
                else:
                    refused += 1
                    s.close()
            stop, counts = threading.Event(), [0]
            threads = [threading.Thread(target=churn, args=(port, stop, counts)) for _ in range(a.churners)]
            for t in threads:
                t.start()
            t0 = time.perf_counter()
            flooded = measure_gets(c, a.gets, a.entries)
            elapsed = time.perf_counter() - t0
            stop.set()
            for t in threads:
                t.join()
            print(f"flood: {len(held)} held, {refused} refused of {a.flood} idle connections from 127.0.0.2; "
                  f"{counts[0] / elapsed:.0f} reconnects/s by {a.churners} threads during the gets", flush=True)
            print(f"flood: get p50 {flooded[0]:.3f} ms, p99 {flooded[1]:.3f} ms "
                  f"(p99 {flooded[1] / quiet[1]:.2f}x quiet)", flush=True)
            for s in held:
                s.close()
        finally:
            proc.kill()
            proc.wait()

        proc, port = start_server(a.server, f"sqlite:{tmp}/rss.db",
                                  ["--config", cfg, "--max-connections", str(a.idle + 100),
                                   "--max-connections-per-peer", "0"])
        try:
            Client(port).cmd("pwd")
            time.sleep(0.5)
            before = rss_kb(proc.pid)
            idle = []
            for _ in range(a.idle):
                s = connect(port, "127.0.0.2")
                if not greeting(s).startswith(b"ARDA"):
                    raise RuntimeError("an idle connection was refused")
                idle.append(s)
            time.sleep(1)
            after = rss_kb(proc.pid)
            print(f"rss: {before} kB before, {after} kB with {a.idle} idle connections: "
                  f"{(after - before) * 1024 / a.idle:.0f} bytes per idle connection", flush=True)
            for s in idle:
                s.close()
        finally:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
