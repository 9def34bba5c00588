#!/usr/bin/env bash
# Flood benchmark (issue #18; figures in docs/benchmarks.md, "Floods"):
#   bench/flood.sh [bench/flood.py options: --gets N --flood N --churners N --idle N]
# A legitimate client's `get` p50/p99 on TCP without and with a one-address flood (idle
# connections held from 127.0.0.2 plus threads reconnecting from it), then the server's resident
# memory per idle connection (10,000 by default). Loopback only; it stops by itself.
# Builds the release server first (BENCH_NO_BUILD=1 skips that; ARDACAT_SERVER=PATH picks the
# binary). Heavy for a shared machine: run it when nothing else builds.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every idle connection is a descriptor in this script and one in the server.
ulimit -n "$(ulimit -Hn)"

server="${ARDACAT_SERVER:-target/release/ardacat-server}"
if [[ -z "${BENCH_NO_BUILD:-}" && -z "${ARDACAT_SERVER:-}" ]]; then
    echo "== building the release server" >&2
    cargo build --release -q -p ardacat-server --bin ardacat-server
fi
exec python3 bench/flood.py --server "$server" "$@"
