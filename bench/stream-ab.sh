#!/usr/bin/env bash
# Used for docs/benchmarks.md ("Streaming 60-attribute rows"): A/B of release binary sets on one database.
# usage: bench/stream-ab.sh sqlite|pg ENTRIES ROUNDS DIR_A DIR_B [DIR…]  (each DIR holds ardacat + ardacat-server)
# Loads /bench with `ardacat bench --setup` through DIR_A's server, starts one server per DIR on the same
# database (pg: a fresh database on 127.0.0.1:5432, dropped at the end), then per round times the raw
# export (sqlite3 shell `select *` / psql `COPY … TO STDOUT`) and `ardacat -c "getattr /bench a0 … a59"`
# through each DIR in turn; prints rows/s, the server's CPU seconds during the stream, the client's
# user/sys seconds, on PostgreSQL the CPU seconds of the PostgreSQL processes during the stream,
# and the md5 of the output (byte-identical across DIRs).
# One database, one server per binary dir on it; client runs alternate A/B/.. each round.
# PG_SOCKET=DIR (pg): the server, COPY and every psql reach PostgreSQL through its local socket in DIR
# (e.g. /var/run/postgresql) instead of 127.0.0.1:5432 (docs/benchmarks.md, round 19).
# ANALYZE=1 (pg): `VACUUM ANALYZE` the loaded table before the rounds — the statistics autovacuum
# gathers within about a minute of a bulk load; without it the rounds run on a table never analyzed.
set -e
source "$(dirname "$0")/cpu.sh"
backend=$1; n=$2; rounds=$3; shift 3; dirs=("$@")
work=$(mktemp -d); base=$((20000 + RANDOM % 20000))
attrs=$(seq -f "a%g" 0 59 | tr '\n' ' ')
pghost=${PG_SOCKET:-127.0.0.1}; urlhost=127.0.0.1
[ -n "${PG_SOCKET:-}" ] && urlhost=$(printf %s "$PG_SOCKET" | sed 's|/|%2F|g')
if [ $backend = pg ]; then
  db=ardacat_streamab_$$; psql -q -h $pghost -U postgres -c "create database $db" >/dev/null
  url=postgres://postgres@$urlhost:5432/$db
else url="sqlite:$work/cat.db"; fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done
  [ $backend = pg ] && psql -q -h $pghost -U postgres -c "drop database $db" >/dev/null; rm -rf $work; }
trap cleanup EXIT
start() { # dir idx
  local port=$((base + 10*$2))
  ARDACAT_ROOT_PASSWORD=pw $1/ardacat-server --tcp-port $port --http-port $((port+1)) --database "$url" >$work/server$2.log 2>&1 &
  pids+=($!); for _ in $(seq 100); do grep -q listening $work/server$2.log && break; sleep 0.2; done; }
start ${dirs[0]} 0
${dirs[0]}/ardacat bench --host 127.0.0.1 --port $base --login root --password pw --setup --entries $n --scenario ping --duration 1 >/dev/null 2>&1
for i in $(seq 1 $((${#dirs[@]}-1))); do start ${dirs[$i]} $i; done
if [ $backend = pg ]; then cid=$(psql -At -h $pghost -U postgres -d $db -c "select id from collections where path='/bench'")
  [ "${ANALYZE:-0}" = 1 ] && psql -q -h $pghost -U postgres -d $db -c "vacuum analyze e$cid"
else cid=$(sqlite3 $work/cat.db "select id from collections where path='/bench'"); fi
echo "date $(date -u '+%F %T') UTC; load $(cut -d' ' -f1-3 /proc/loadavg); backend $backend; entries $n; analyzed ${ANALYZE:-0}; postgres via $pghost"
for r in $(seq $rounds); do
  s=$(date +%s.%N)
  if [ $backend = pg ]; then psql -h $pghost -U postgres -d $db -c "COPY e$cid TO STDOUT" >/dev/null
  else sqlite3 $work/cat.db "select * from e$cid" >/dev/null; fi
  e=$(date +%s.%N); echo "round $r raw-export $(echo "$n / ($e - $s)" | bc) rows/s"
  for i in "${!dirs[@]}"; do
    port=$((base + 10*i)); spid=${pids[$i]}
    c0=$(proc_ticks $spid)
    [ $backend = pg ] && pg_ticks_mark
    s=$(date +%s.%N)
    /usr/bin/time -o $work/t -f "%U %S" env ARDACAT_PASSWORD=pw ${dirs[$i]}/ardacat --host 127.0.0.1 --port $port --login root -c "getattr /bench $attrs" > $work/out$i
    e=$(date +%s.%N); c1=$(proc_ticks $spid)
    pgcpu=
    [ $backend = pg ] && pgcpu=" postgres-cpu $(pg_cpu_since_mark)"
    echo "round $r ${dirs[$i]} $(echo "$n / ($e - $s)" | bc) rows/s server-cpu $(echo "scale=2; ($c1 - $c0)/100" | bc) client-user-sys $(cat $work/t)$pgcpu md5 $(md5sum < $work/out$i | cut -c1-8)"
  done
done
