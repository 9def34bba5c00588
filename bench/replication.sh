#!/usr/bin/env bash
# Replication figures for docs/benchmarks.md ("Replication"): replay lag p50/p99 of a hot standby
# under a steady write load, a direct write's latency on the primary, and reads served by a server
# on the standby, and the forwarding overhead: `addentry` through a replica started with
# `--primary` (forwarded to the primary's ardacat as the session's user) vs the same write sent to
# the primary directly, at 1 and CONNECTIONS connections, in interleaved rounds (ROUNDS, default 2).
# usage: bench/replication.sh BIN_DIR SECONDS CONNECTIONS
#   BIN_DIR holds `ardacat` and `ardacat-server` (e.g. target/release); run as root (the clusters run
#   as the postgres user through runuser). PG_BIN overrides /usr/lib/postgresql/15/bin.
# Starts its own primary and standby clusters on free loopback ports (initdb, pg_basebackup -R),
# removes them at the end.
set -euo pipefail
bin=$1; secs=$2; conns=$3
pgbin=${PG_BIN:-/usr/lib/postgresql/15/bin}
[[ -x $pgbin/initdb ]] || { echo "no $pgbin/initdb: install postgresql-15 or set PG_BIN" >&2; exit 1; }
work=$(mktemp -d); chown postgres:postgres "$work"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pp=$(port); sp=$(port); ap=$(port); rp=$(port); fp=$(port)
rounds=${ROUNDS:-2}
as_pg() { runuser -u postgres -- "$@"; }
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    as_pg "$pgbin/pg_ctl" -D "$work/standby" -m immediate -w stop >/dev/null 2>&1 || true
    as_pg "$pgbin/pg_ctl" -D "$work/primary" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
opts="-k $work -c listen_addresses=127.0.0.1"
as_pg "$pgbin/initdb" -D "$work/primary" -U postgres -A trust -E UTF8 --no-locale >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/primary" -l "$work/primary.log" -o "-p $pp $opts -c wal_level=replica -c max_wal_senders=4" -w start >/dev/null
as_pg "$pgbin/pg_basebackup" -h 127.0.0.1 -p "$pp" -U postgres -D "$work/standby" -R -X stream -c fast
as_pg "$pgbin/pg_ctl" -D "$work/standby" -l "$work/standby.log" -o "-p $sp $opts -c hot_standby=on" -w start >/dev/null

start_server() { # port database-port log [flags…]
    local p=$1 d=$2 log=$3; shift 3
    ARDACAT_MAX_CONNECTIONS_PER_PEER=0 ARDACAT_ROOT_PASSWORD=pw ARDACAT_PRIMARY_PASSWORD=fw "$bin/ardacat-server" \
        --tcp-port "$p" --http-port $((p + 1)) --database "postgres://postgres@127.0.0.1:$d/postgres" "$@" >"$log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do grep -q listening "$log" && return; sleep 0.2; done
    echo "server on $d did not start:" >&2; cat "$log" >&2; exit 1
}
start_server "$ap" "$pp" "$work/a.log"
client=("$bin/ardacat" bench --host 127.0.0.1 --login root --password pw)
"${client[@]}" --port "$ap" --setup --entries 1000 --scenario ping --duration 1 >/dev/null
# The forwarding replica's service account, and a user who owns /bench_add (root's writes are not
# forwarded).
"$bin/ardacat" --host 127.0.0.1 --port "$ap" --login root --password pw \
    -c "user_create forwarder fw" -c "user_may_sudo forwarder on" -c "user_create writer wpw" \
    -c "chown /bench_add writer" >/dev/null
start_server "$rp" "$sp" "$work/r.log"
start_server "$fp" "$sp" "$work/f.log" --primary "127.0.0.1:$ap" --primary-login forwarder

echo "== direct write on the primary (addentry of 60 attributes, $conns connections, $secs s)"
# Replay lag as PostgreSQL measures it (pg_stat_replication.replay_lag), sampled every 100 ms
# while the write load runs.
( while :; do
    as_pg "$pgbin/psql" -h "$work" -p "$pp" -U postgres -Atc \
        "SELECT EXTRACT(EPOCH FROM replay_lag) * 1000 FROM pg_stat_replication WHERE replay_lag IS NOT NULL" \
        >>"$work/lag.txt" 2>/dev/null || true
    sleep 0.1
  done ) &
pids+=($!)
"${client[@]}" --port "$ap" --scenario add --connections "$conns" --duration "$secs"
kill "${pids[-1]}" 2>/dev/null || true
n=$(grep -c . "$work/lag.txt" || true)
if [[ $n -gt 0 ]]; then
    sort -g "$work/lag.txt" >"$work/lag.sorted"
    q() { sed -n "$(( ( $1 * n + 99 ) / 100 ))p" "$work/lag.sorted"; }
    echo "== replay lag under that load: $n samples, p50 $(q 50) ms, p99 $(q 99) ms, max $(tail -1 "$work/lag.sorted") ms"
else
    echo "== replay lag under that load: no samples (the standby kept up between samples)"
fi
echo "== reads on the standby's server (get, $conns connections, $secs s)"
"${client[@]}" --port "$rp" --scenario get --entries 1000 --connections "$conns" --duration "$secs"
writer=("$bin/ardacat" bench --host 127.0.0.1 --login writer --password wpw --scenario add --duration "$secs")
for round in $(seq "$rounds"); do
    for c in 1 "$conns"; do
        echo "== round $round: direct addentry on the primary as writer, $c connections, $secs s"
        "${writer[@]}" --port "$ap" --connections "$c"
        echo "== round $round: forwarded addentry through the replica as writer, $c connections, $secs s"
        "${writer[@]}" --port "$fp" --connections "$c"
    done
done
