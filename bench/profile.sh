#!/usr/bin/env bash
# CPU profile of the server under the load generator, rendered as a flamegraph SVG.
#   bench/profile.sh [scenario] [connections] [seconds] [out.svg]
#   defaults: get 16 10 docs/bench/flamegraph-get.svg
# Builds the release binaries, starts a server on a scratch SQLite file (10,000 entries of 60
# attributes made by `ardacat bench --setup`), records it with `perf record -e cpu-clock -g` (the
# VM has no hardware counters) while the load generator runs, and folds the stacks with inferno
# (`cargo install inferno` if it is missing). perf.data stays in the scratch directory.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-get}
conns=${2:-16}
secs=${3:-10}
out=${4:-docs/bench/flamegraph-${scenario}.svg}

command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null; }
command -v inferno-flamegraph >/dev/null || cargo install --quiet inferno
[[ ${BENCH_NO_BUILD:-} == 1 ]] || cargo build --release --quiet -p ardacat-server -p ardacat-client

work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
# The load generator is one address: no per-address cap.
ARDACAT_MAX_CONNECTIONS_PER_PEER=0 ARDACAT_ROOT_PASSWORD=pw target/release/ardacat-server --tcp-port "$port" --http-port $((port + 1)) \
    --database "sqlite:$work/cat.db" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q listening "$work/server.log" && break; sleep 0.2; done
client=(target/release/ardacat bench --host 127.0.0.1 --port "$port" --login root --password pw)
"${client[@]}" --setup --entries 10000 --scenario ping --duration 1 >/dev/null
perf record -q -e cpu-clock -F 999 -g -p "$server" -o "$work/perf.data" -- sleep "$secs" 2>/dev/null &
recorder=$!
"${client[@]}" --scenario "$scenario" --connections "$conns" --duration "$secs"
wait $recorder || true
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf | inferno-flamegraph \
    --title "ardacat-server: $scenario, $conns connections, SQLite ($(date -u +%F))" >"$out"
echo "wrote $out (perf data in $work)"
