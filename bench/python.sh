#!/usr/bin/env bash
# The Python client's benchmark (docs/benchmarks.md, "Python client"): a fresh server on SQLite (and
# PostgreSQL with --postgres), then bench/python_bench.py, which times the Python client and the Rust
# CLI in the same run. usage: bench/python.sh [BIN_DIR] [--postgres] [python_bench.py options…]
#   BIN_DIR holds release `ardacat` and `ardacat-server` (default target/release; build them with
#   cargo build --release -p ardacat-server -p ardacat-client).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release
if [[ $# -gt 0 && $1 != --* ]]; then bin=$1; shift; fi
backends=(sqlite)
if [[ ${1:-} == --postgres ]]; then backends+=(postgres); shift; fi
py=${ARDACAT_PYTHON:-python3}
for backend in "${backends[@]}"; do
    work=$(mktemp -d)
    if [[ $backend == sqlite ]]; then url="sqlite:$work/b.db"; else
        db=ardacat_pyb_$$; psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE $db"
        url="postgres://postgres@127.0.0.1:5432/$db"; fi
    ARDACAT_ROOT_PASSWORD=pw "$bin/ardacat-server" --database "$url" --tcp-port 0 --http-port 0 >"$work/out" 2>"$work/err" &
    server=$!
    for _ in $(seq 50); do grep -q listening "$work/out" && break; sleep 0.2; done
    port=$(sed -n 's/.*tcp=127.0.0.1:\([0-9]*\).*/\1/p' "$work/out")
    echo "== backend $backend"
    PYTHONPATH=client/python/src "$py" bench/python_bench.py --port "$port" --password pw --cli "$bin/ardacat" "$@" || status=$?
    kill $server; wait $server 2>/dev/null || true
    [[ $backend == postgres ]] && psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE $db WITH (FORCE)"
    rm -rf "$work"
    [[ ${status:-0} == 0 ]] || exit "$status"
done
