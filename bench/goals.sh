#!/usr/bin/env bash
# The goals of performance round 2 (issue #17) in one command, same run, interleaved rounds:
#   bench/goals.sh [--secs S] [--rounds R] [--stream-rows N] [--pg ADMIN_URL] BIN_DIR [BIN_DIR…]
#   (also `bench/run.sh --goals …`). Each BIN_DIR holds `ardacat` and `ardacat-server` (e.g. the
#   baseline copy and target/release), so one run is also the A/B of two builds.
# Per BIN_DIR two servers stay up for the whole run: one on a fresh SQLite file and one on a fresh
# PostgreSQL database (dropped at the end), each loaded once with `ardacat bench --setup --entries 10000`.
# Each round runs, at 16 connections for S seconds, for every BIN_DIR in turn (scenario by scenario;
# in the given order in odd rounds, reversed in even ones)
# TCP `ping`, TCP `get`, SOAP `get`, TCP `bulkget` and SOAP `bulkget` on SQLite, then the PostgreSQL
# references (bench/pgbench-ref.sh: `pgbench -S -M prepared -c 16 -j 2` at scale 10 and the
# 60-column variant), then TCP `ping`, TCP `get` and SOAP `get` on PostgreSQL. Every point prints ops/s (bulkget: entries/s) and p99 in ms. Then
# the streaming goal: bench/stream-ab.sh on both backends with all BIN_DIRs (N rows, R rounds; its data set
# is loaded through the first BIN_DIR's server, so put the build under test first).
# A BIN_DIR may carry flags for its SQLite server after a colon, e.g. `target/release:--sqlite-exclusive=true`
# (the same build with and without, in one run); the streaming goal runs every build without them
# (its baseline, the sqlite3 shell, reads the server's file while it runs).
# At the end bench/goals_table.py prints each goal's ratio per build and round, the p99s of the two
# figures behind it, and in how many rounds it was met.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=8; rounds=2; stream_rows=100000; admin=postgres://postgres@127.0.0.1:5432
while [[ $# -gt 0 && $1 == --* ]]; do
    case $1 in
        --secs) secs=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --stream-rows) stream_rows=$2; shift 2 ;;
        --pg) admin=$2; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
(($# >= 1)) || { echo "usage: bench/goals.sh [--secs S] [--rounds R] [--stream-rows N] [--pg URL] BIN_DIR…" >&2; exit 2; }
specs=("$@"); bins=(); sqlite_flags=()
for s in "${specs[@]}"; do
    bins+=("${s%%:*}")
    if [[ $s == *:* ]]; then sqlite_flags+=("${s#*:}"); else sqlite_flags+=(""); fi
done
work=$(mktemp -d); base=$((20000 + RANDOM % 20000))
pids=(); dbs=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    for d in "${dbs[@]}"; do psql -q "$admin/postgres" -c "drop database if exists $d" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT
# Everything below is also kept in a log, which bench/goals_table.py turns into the ratios.
exec 3>&1 > >(tee "$work/goals.log")
tee_pid=$!
start() { # bin idx backend [sqlite flags] → port
    local bin=$1 idx=$2 backend=$3 port=$((base + 10 * $2)) url flags=()
    if [[ $backend == postgres ]]; then
        local db=ardacat_goals_$$_$idx; dbs+=("$db")
        psql -q "$admin/postgres" -c "create database $db" >/dev/null; url=$admin/$db
    else
        url=sqlite:$work/cat$idx.db
        read -r -a flags <<<"${4:-}"
    fi
    ARDACAT_MAX_CONNECTIONS_PER_PEER=0 ARDACAT_ROOT_PASSWORD=pw "$bin/ardacat-server" --tcp-port $port \
        --http-port $((port + 1)) --database "$url" "${flags[@]}" >"$work/server$idx.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do grep -q listening "$work/server$idx.log" && break; sleep 0.2; done
    "$bin/ardacat" bench --host 127.0.0.1 --port $port --login root --password pw --setup --entries 10000 \
        --scenario ping --duration 1 >/dev/null
}
point() { # bin port label scenario protocol
    local bin=$1 port=$2 label=$3 scenario=$4 protocol=$5 target=$2
    [[ $protocol == soap ]] && target=$((port + 1))
    "$bin/ardacat" bench --host 127.0.0.1 --port $target --tcp-port $port --login root --password pw \
        --protocol "$protocol" --scenario "$scenario" --connections 16 --duration "$secs" --json |
        python3 -c "$summary" "$label"
}
# One line per point from the load generator's --json summary (the last line it prints).
summary='
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
rate = r.get("entries_per_sec") or r["ops_per_sec"]
print("%-40s %10.0f /s  p99 %.2f ms  errors %d" % (sys.argv[1], rate, r["p99_us"] / 1000, r["errors"]))'
echo "date $(date -u '+%F %T') UTC; $(lscpu | grep 'Model name' | tr -s ' '); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "16 connections, $secs s per point, $rounds rounds; bins: ${bins[*]}"
for i in "${!bins[@]}"; do
    start "${bins[$i]}" $((2 * i)) sqlite "${sqlite_flags[$i]}"
    start "${bins[$i]}" $((2 * i + 1)) postgres
done
for r in $(seq "$rounds"); do
    echo "-- round $r ($(date -u +%T) UTC, load $(cut -d' ' -f1 /proc/loadavg))"
    # The builds in the given order in odd rounds, reversed in even ones, so that no build always
    # runs first after the previous scenario (round 23 of docs/benchmarks.md: the first of a pair
    # ran behind in TCP `bulkget` in two runs while a separate A/B showed no difference).
    mapfile -t order < <(seq 0 $((${#bins[@]} - 1)))
    ((r % 2 == 0)) && mapfile -t order < <(seq $((${#bins[@]} - 1)) -1 0)
    # Scenario by scenario, every BIN_DIR in turn: an A/B's points are seconds apart.
    for what in "sqlite ping tcp" "sqlite get tcp" "sqlite get soap" "sqlite bulkget tcp" "sqlite bulkget soap" \
        "postgres ping tcp" "postgres get tcp" "postgres get soap"; do
        read -r backend scenario protocol <<<"$what"
        # The PostgreSQL references right before the PostgreSQL points (the load of a shared
        # machine moves within a round).
        [[ $what == "postgres ping tcp" ]] && bench/pgbench-ref.sh 16 "$secs" "$admin" | sed 's/^/reference /'
        for i in "${order[@]}"; do
            b=${bins[$i]}; port=$((base + 20 * i)); [[ $backend == postgres ]] && port=$((port + 10))
            point "$b" $port "${specs[$i]} $what" "$scenario" "$protocol"
        done
    done
done
echo "-- streaming ($stream_rows rows of 60 attributes, $rounds rounds)"
# Each build once (a build given with and without SQLite flags is one build here).
mapfile -t stream_bins < <(printf '%s\n' "${bins[@]}" | awk '!seen[$0]++')
bench/stream-ab.sh sqlite "$stream_rows" "$rounds" "${stream_bins[@]}"
bench/stream-ab.sh pg "$stream_rows" "$rounds" "${stream_bins[@]}"
exec >&3 3>&-
wait "$tee_pid"
echo "-- the goals as ratios of the same round (bench/goals_table.py)"
python3 bench/goals_table.py <"$work/goals.log"
