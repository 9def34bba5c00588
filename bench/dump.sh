#!/usr/bin/env bash
# Dump and restore against upload, in the same run, on both backends (docs/benchmarks.md, "Dump and
# restore"). For each backend: a fresh server; `ardacat import` (the TCP upload/put/commit bulk path)
# of N entries × A attributes; `ardacat dump / -o FILE`; then a second fresh server and `ardacat
# restore -i FILE`; prints the three wall times and rates, and checks that the restored catalogue
# dumps to the same bytes.
# usage: bench/dump.sh [BIN_DIR [ENTRIES [ATTRIBUTES]]]
#   BIN_DIR holds `ardacat` and `ardacat-server` (default target/release); ENTRIES default 1000000,
#   ATTRIBUTES default 10. PostgreSQL: ARDACAT_BENCH_PG (default postgres://postgres@127.0.0.1:5432),
#   on which the script creates and drops its own databases.
#   e.g. bench/dump.sh target/release 1000000 10     # the figure (do not run it on a shared machine)
#        bench/dump.sh target/debug 2000 10           # a smoke run
set -euo pipefail
bin=${1:-target/release}; n=${2:-1000000}; attrs=${3:-10}
pg=${ARDACAT_BENCH_PG:-postgres://postgres@127.0.0.1:5432}
work=$(mktemp -d); servers=(); dbs=()
cleanup() {
    for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    for d in "${dbs[@]}"; do psql "$pg/postgres" -qc "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# start URL → sets $port (the server's TCP port)
start() {
    port=$((20000 + RANDOM % 20000))
    ARDACAT_ROOT_PASSWORD=pw "$bin/ardacat-server" --database "$1" --tcp-port $port --http-port $((port + 1)) \
        --max-connections-per-peer 0 >"$work/server-$port.log" 2>&1 &
    servers+=($!)
    for _ in $(seq 100); do grep -q listening "$work/server-$port.log" && return; sleep 0.2; done
    echo "server on $1 did not start" >&2; cat "$work/server-$port.log" >&2; exit 1
}
db_url() { # backend tag → sets $url to a fresh database (not in a subshell: cleanup needs $dbs)
    if [[ $1 == sqlite ]]; then url="sqlite:$work/$2.db"; else
        local name="ardacat_bench_$2_$$"; psql "$pg/postgres" -qc "CREATE DATABASE $name" >/dev/null
        dbs+=("$name"); url="$pg/$name"; fi
}
now() { date +%s.%N; }
rate() { echo "scale=0; $n / ($2 - $1)" | bc; }
cli() { "$bin/ardacat" --host 127.0.0.1 --port "$1" --login root --password pw "${@:2}"; }

# The CSV the upload loads: FILE plus A attributes (int, float, text in turn).
header="FILE"; types=()
for i in $(seq "$attrs"); do
    header+=",a$i"
    case $((i % 3)) in 0) types+=("a$i varchar(40)");; 1) types+=("a$i int");; 2) types+=("a$i float");; esac
done
awk -v n="$n" -v a="$attrs" -v h="$header" 'BEGIN { print h; for (r = 0; r < n; r++) { line = "e" r;
    for (i = 1; i <= a; i++) { m = i % 3; if (m == 1) v = r * i; else if (m == 2) v = r / 7; else v = "text-" r "-" i;
    line = line "," v } print line } }' >"$work/load.csv"

for backend in sqlite postgres; do
    db_url $backend up; start "$url"; p1=$port
    setup=(-c "createdir /bench")
    for t in "${types[@]}"; do setup+=(-c "addattr /bench $t"); done
    cli $p1 "${setup[@]}" >/dev/null
    t0=$(now); cli $p1 import --dir /bench --file "$work/load.csv" --batch 100000 2>/dev/null; t1=$(now)
    cli $p1 dump / -o "$work/$backend.dump.zst"; t2=$(now)
    db_url $backend restored; start "$url"; p2=$port
    t3=$(now); cli $p2 restore -i "$work/$backend.dump.zst"; t4=$(now)
    cli $p2 dump / -o "$work/$backend.again.zst"
    cmp -s <(zstd -dc "$work/$backend.dump.zst") <(zstd -dc "$work/$backend.again.zst") \
        || { echo "$backend: the restored catalogue dumps differently" >&2; exit 1; }
    printf '%s: %d entries x %d attributes: upload %.2f s (%s/s), dump %.2f s (%s/s), restore %.2f s (%s/s) = %s%% of upload\n' \
        "$backend" "$n" "$attrs" "$(echo "$t1 - $t0" | bc)" "$(rate $t0 $t1)" "$(echo "$t2 - $t1" | bc)" "$(rate $t1 $t2)" \
        "$(echo "$t4 - $t3" | bc)" "$(rate $t3 $t4)" "$(echo "scale=0; 100 * ($t1 - $t0) / ($t4 - $t3)" | bc)"
done
