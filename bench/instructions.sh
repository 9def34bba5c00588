#!/usr/bin/env bash
# Instructions the server executes per operation, counted by callgrind: repeatable for the same
# binary and workload whatever else the machine is doing, so it shows a change of a few per cent
# that the rate of a shared VM hides.
#   bench/instructions.sh SCENARIO OPS_SECONDS BIN_DIR…   (e.g. bench/instructions.sh get 20 /tmp/base target/release)
# For each BIN_DIR: starts `ardacat-server` under `valgrind --tool=callgrind` on a fresh SQLite file
# (DATABASE=postgres://USER@HOST:PORT: a fresh PostgreSQL database, dropped after), makes /bench
# with `ardacat bench --setup --entries 1000`, runs SCENARIO over TCP on one connection for
# OPS_SECONDS and then for 1 s, counting each run from zero, and prints the instructions per
# operation of the difference (all the server's threads: request, SQLite, log writer). KEEP=PREFIX
# keeps the first run's callgrind file as PREFIX.<bin dir name> for callgrind_annotate, and the
# second (one-second) run's as PREFIX.<bin dir name>.short, to take a function's fixed costs out.
# PROTOCOL=soap runs the scenario over SOAP (the server's HTTP port) instead of TCP.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/db.sh
(($# >= 3)) || { echo "usage: bench/instructions.sh SCENARIO OPS_SECONDS BIN_DIR…" >&2; exit 2; }
scenario=$1; secs=$2; shift 2
protocol=${PROTOCOL:-tcp}
command -v callgrind_control >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
echo "date $(date -u '+%F %T') UTC; $(lscpu | grep 'Model name' | tr -s ' '); ${DATABASE:-sqlite}; $scenario over $protocol, 1 connection, $secs s under callgrind"
for bin in "$@"; do
    work=$(mktemp -d); port=$((20000 + RANDOM % 20000))
    fresh_db ardacat_instr_$$_$port "$work"
    ARDACAT_ROOT_PASSWORD=pw valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
        "$bin/ardacat-server" --tcp-port $port --http-port $((port + 1)) --database "$url" \
        >"$work/server.log" 2>&1 &
    server=$!
    # A run that fails leaves no server under valgrind and no database behind.
    trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; drop_db; rm -rf "$work"' EXIT
    for _ in $(seq 600); do grep -q listening "$work/server.log" && break; sleep 0.2; done
    grep -q listening "$work/server.log" || { cat "$work/server.log" >&2; exit 1; }
    client=("$bin/ardacat" bench --host 127.0.0.1 --login root --password pw)
    "${client[@]}" --port $port --setup --entries 1000 --scenario ping --duration 1 >/dev/null 2>&1
    # Over SOAP the first request logs in (argon2: ~100M instructions) and the credential cache
    # serves the rest for a minute: log in before the counted runs, or the first of them carries it.
    [[ $protocol == soap ]] && "${client[@]}" --port $((port + 1)) --protocol soap --scenario ping \
        --connections 1 --duration 1 >/dev/null 2>&1
    # Two runs on the server, each from a fresh zero to a dump (parts 1 and 2): SECS seconds, then
    # one second. Their difference is SECS - 1 seconds of operations without the fixed costs each
    # run has (the load generator's connection and login: an argon2 hash is millions).
    run() {
        callgrind_control --zero $server >/dev/null 2>&1
        local json
        local target=$port; [[ $protocol == soap ]] && target=$((port + 1))
        json=$("${client[@]}" --port $target --protocol "$protocol" --entries 1000 --scenario "$scenario" \
            --connections 1 --duration "$1" --json | tail -1)
        callgrind_control --dump $server >/dev/null 2>&1
        # An operation that failed costs less than one that did not: a run with errors counts for nothing.
        python3 -c 'import json, sys; r = json.loads(sys.argv[1]); print(r["ops"]) if r["errors"] == 0 else sys.exit("errors: %s" % sys.argv[1])' "$json"
    }
    ops_long=$(run "$secs") || exit 1
    ops_short=$(run 1) || exit 1
    kill $server; wait $server 2>/dev/null || true
    drop_db; db=
    total() { grep -oP '^(summary|totals): \K[0-9]+' "$(ls "$work"/cg.*."$1")" | head -1; }
    long=$(total 1); short=$(total 2); ops=$((ops_long - ops_short)); dump=$(ls "$work"/cg.*.1)
    printf '%-24s %6d ops  %12.0f instructions per op\n' "$bin" "$ops" "$(echo "($long - $short) / $ops" | bc -l)"
    [[ -n ${KEEP:-} ]] && cp "$dump" "$KEEP.$(basename "$bin")" && cp "$(ls "$work"/cg.*.2)" "$KEEP.$(basename "$bin").short"
    rm -rf "$work"
    trap - EXIT
done
