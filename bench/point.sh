#!/usr/bin/env bash
# One load-generator point against a fresh server, for the same-run A/B tables in docs/benchmarks.md
# (the allocator, the load generator's own cost, TCP_NODELAY on the HTTP port, performance round 2).
# usage: bench/point.sh BIN_DIR SCENARIO PROTOCOL CONNECTIONS SECONDS [ardacat bench options…]
#   BIN_DIR holds `ardacat` and `ardacat-server` release binaries (e.g. copies of target/release from
#   two commits); e.g. bench/point.sh target/release get tcp 16 10
#                      bench/point.sh target/release bulkget soap 1 6 --keep-alive off
#                      DATABASE=postgres://postgres@127.0.0.1:5432 bench/point.sh target/release get tcp 16 10
# Starts the server on a new SQLite file, or, with DATABASE=postgres://USER@HOST:PORT[/ignored], on a
# fresh PostgreSQL database of that cluster (created here, dropped at the end); makes /bench (10,000
# entries of 60 attributes) and /bench1k with `ardacat bench --setup`, runs the point, and prints the
# load generator's summary (ops/s, p50/p90/p99), the server's CPU seconds during the point
# (utime+stime from /proc) and the client's user/sys seconds. SERVER_ARGS adds server options, e.g.
#   SERVER_ARGS="--config /tmp/pool16.toml" (a file holding `db_pool_size = 16`).
set -euo pipefail
bin=$1; scenario=$2; protocol=$3; conns=$4; secs=$5; shift 5
work=$(mktemp -d); port=$((20000 + RANDOM % 20000))
source "$(dirname "$0")/db.sh"
fresh_db ardacat_point_$$_$port "$work"
server=
cleanup() {
    # Under set -e a failing command would end the trap: the server may be gone already.
    [[ -n $server ]] && { kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; }
    drop_db
    rm -rf "$work"
}
trap cleanup EXIT
# A random port may be taken by another process: a server that cannot listen is started again on
# another one (up to five times), and one that never listens ends the point with its log.
for _ in 1 2 3 4 5; do
    # The load generator is one address: no per-address cap.
    ARDACAT_MAX_CONNECTIONS_PER_PEER=0 ARDACAT_ROOT_PASSWORD=pw "$bin/ardacat-server" --tcp-port $port \
        --http-port $((port + 1)) --database "$url" ${SERVER_ARGS:-} >"$work/server.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do
        grep -q listening "$work/server.log" && break 2
        kill -0 $server 2>/dev/null || break
        sleep 0.2
    done
    kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; server=
    port=$((20000 + RANDOM % 20000))
done
[[ -n $server ]] || { echo "the server never listened:" >&2; cat "$work/server.log" >&2; exit 1; }
client=("$bin/ardacat" bench --host 127.0.0.1 --login root --password pw)
"${client[@]}" --port $port --setup --entries 10000 --scenario ping --duration 1 >/dev/null
target=$port; [[ $protocol == soap ]] && target=$((port + 1))
cpu() { awk '{print $14 + $15}' /proc/$server/stat; }
before=$(cpu)
/usr/bin/time -f "client %U s user, %S s sys" "${client[@]}" --port $target --protocol "$protocol" \
    --scenario "$scenario" --connections "$conns" --duration "$secs" "$@"
echo "server cpu $(echo "scale=2; ($(cpu) - $before) / 100" | bc) s"
