#!/usr/bin/env bash
# Where the two cores go during a load-generator point on PostgreSQL (docs/benchmarks.md, round 5):
#   bench/cpu-split.sh BIN_DIR [SCENARIO] [ADMIN_URL]   (defaults: get postgres://postgres@127.0.0.1:5432)
# Runs `DATABASE=ADMIN_URL bench/point.sh BIN_DIR SCENARIO tcp 16 10` and, for 4 s in the middle of
# the timed part, sums utime+stime (/proc/PID/stat) of the server, of the PostgreSQL processes alive
# at both samples and of the load generator; prints them in CPU seconds, then point.sh's summary.
# The server's environment passes through (e.g. RUST_LOG=off, TOKIO_WORKER_THREADS=1).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/cpu.sh
bin=$1; scenario=${2:-get}; admin=${3:-postgres://postgres@127.0.0.1:5432}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
DATABASE=$admin bench/point.sh "$bin" "$scenario" tcp 16 10 >"$out" 2>&1 &
point=$!
loadgen=
for _ in $(seq 600); do
    loadgen=$(pgrep -n -f "$bin/ardacat bench .*--scenario $scenario" || true)
    [[ -n $loadgen ]] && break
    sleep 0.1
done
[[ -n $loadgen ]] || { echo "the load generator did not start" >&2; cat "$out" >&2; exit 1; }
sleep 3
server=$(pgrep -n -f "$bin/ardacat-server")
pg_ticks_mark
s0=$(proc_ticks "$server"); l0=$(proc_ticks "$loadgen")
sleep 4
s1=$(proc_ticks "$server"); l1=$(proc_ticks "$loadgen")
pg=$(pg_cpu_since_mark)
wait $point
echo "over 4 s: server $(echo "scale=2; ($s1 - $s0) / 100" | bc) s, postgres $pg s, load generator $(echo "scale=2; ($l1 - $l0) / 100" | bc) s"
grep -E "ops/s|entries/s|latency" "$out"
