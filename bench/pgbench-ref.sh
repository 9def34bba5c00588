#!/usr/bin/env bash
# The PostgreSQL references for a single `get` (issue #17), on the cluster ardacat uses:
#   bench/pgbench-ref.sh [CONNECTIONS] [SECONDS] [ADMIN_URL]   (defaults: 16 10 postgres://postgres@127.0.0.1:5432)
# 1. `pgbench -S -M prepared -c N -j 2` on a fresh scale-10 database (pgbench_accounts: one row of 4
#    narrow columns per transaction);
# 2. the same load with a custom script on a table shaped like an ardacat entry table of /bench
#    (`ardacat bench --setup`: id, file, owner, grp, perms, created, modified and 20 bigint, 20 double,
#    20 varchar(20) columns; 10,000 rows): `\set id random(1, 10000)` `SELECT * FROM t60 WHERE id = :id`,
#    so the row width is the one `get` returns.
# Each prints one line: `pgbench-S tps T p50_ms A p99_ms B` / `pgbench-60col …`; the latencies come
# from pgbench's per-transaction log (-l, 10 % sample). The databases are dropped at the end.
# CPU=1 adds to each line the CPU that a transaction cost PostgreSQL and pgbench itself, in µs
# (utime+stime from /proc over the middle half of the run, divided by the run's tps times that span;
# every PostgreSQL process alive at both samples counts, background ones too, as in
# bench/cpu-split.sh, whose figures for ardacat's `get` these are to be set beside). Give it 8 s or more:
# runs of 2–4 s gave up to a third more PostgreSQL CPU per transaction (every process counts, and the
# tables were loaded just before).
set -euo pipefail
source "$(dirname "$0")/cpu.sh"
conns=${1:-16}; secs=${2:-10}; admin=${3:-postgres://postgres@127.0.0.1:5432}
db=ardacat_pgbench_$$
work=$(mktemp -d)
cleanup() { psql -q "$admin/postgres" -c "drop database if exists $db" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
psql -q "$admin/postgres" -c "create database $db" >/dev/null
pgbench -q -i -s 10 "$admin/$db" >/dev/null 2>&1
ints=$(seq -f "a%g bigint" 0 19 | paste -sd,); floats=$(seq -f "a%g double precision" 20 39 | paste -sd,)
texts=$(seq -f "a%g varchar(20)" 40 59 | paste -sd,)
rep() { for _ in $(seq 20); do printf '%s\n' "$1"; done | paste -sd,; }
ivals=$(rep "(random()*1000000)::bigint"); fvals=$(rep "random()*1000"); tvals=$(rep "substr(md5(random()::text), 1, 12)")
psql -q "$admin/$db" -v ON_ERROR_STOP=1 >/dev/null <<SQL
create table t60 (id bigint primary key, file varchar(1024) collate "C" not null unique, owner text not null,
  grp text not null, perms int not null, created timestamp not null, modified timestamp not null, $ints, $floats, $texts);
insert into t60 select i, 'e' || i, 'root', 'root', 420, now(), now(), $ivals, $fvals, $tvals
  from generate_series(1, 10000) as i;
vacuum analyze t60;
SQL
printf '\\set id random(1, 10000)\nSELECT * FROM t60 WHERE id = :id;\n' >"$work/t60.sql"
run() { # label, pgbench args…
    local label=$1; shift
    rm -f "$work"/log*
    (cd "$work" && pgbench -n -M prepared -c "$conns" -j 2 -T "$secs" -l --sampling-rate=0.1 --log-prefix=log "$@" "$admin/$db" >"$work/out" 2>&1) &
    local job=$! cpu=""
    if [[ ${CPU:-0} == 1 ]]; then
        local bench="" span b0 b1 pg
        span=$(echo "scale=2; $secs / 2" | bc)
        for _ in $(seq 100); do bench=$(pgrep -n -x pgbench || true); [[ -n $bench ]] && break; sleep 0.05; done
        [[ -n $bench ]] || { wait $job || true; cat "$work/out" >&2; echo "pgbench did not start" >&2; exit 1; }
        sleep "$(echo "scale=2; $secs / 4" | bc)"
        pg_ticks_mark
        b0=$(proc_ticks "$bench")
        sleep "$span"
        b1=$(proc_ticks "$bench")
        pg=$(pg_cpu_since_mark)
        cpu="$pg $(echo "scale=2; ($b1 - $b0) / 100" | bc) $span"
    fi
    wait $job || { cat "$work/out" >&2; exit 1; }
    local out
    out=$(cat "$work/out")
    local tps
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | tail -1)
    # per-transaction log: client, transaction, latency µs, script, epoch s, µs
    cat "$work"/log* | awk '{print $3}' | sort -n >"$work/lat"
    local n p50 p99
    n=$(wc -l <"$work/lat")
    p50=$(sed -n "$(( (n * 50 + 99) / 100 ))p" "$work/lat"); p99=$(sed -n "$(( (n * 99 + 99) / 100 ))p" "$work/lat")
    printf '%s tps %.0f p50_ms %.3f p99_ms %.3f' "$label" "$tps" "$(echo "$p50 / 1000" | bc -l)" "$(echo "$p99 / 1000" | bc -l)"
    if [[ -n $cpu ]]; then
        local pg_s bench_s span
        read -r pg_s bench_s span <<<"$cpu"
        printf ' cpu_us_per_txn postgres %.1f pgbench %.1f' "$(echo "$pg_s * 1000000 / ($tps * $span)" | bc -l)" \
            "$(echo "$bench_s * 1000000 / ($tps * $span)" | bc -l)"
    fi
    printf '\n'
}
run pgbench-S -S
run pgbench-60col -f "$work/t60.sql"
