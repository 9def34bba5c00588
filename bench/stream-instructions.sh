#!/usr/bin/env bash
# Used for docs/benchmarks.md (round 19): instructions the server executes for one streamed
# `getattr` of 100,000 rows of 60 attributes on SQLite, counted by callgrind (repeatable whatever
# else the machine does).
# usage: bench/stream-instructions.sh DIR…   (each DIR holds ardacat + ardacat-server release binaries)
# Loads /bench (`ardacat bench --setup --entries 100000`) through the first DIR's server into one
# file, then per DIR starts the server under `valgrind --tool=callgrind`, runs a one-attribute
# `getattr` (so the first statements are prepared and the page cache warm), zeroes the counters
# (`callgrind_control -z`), streams `getattr /bench a0 … a59` with the CLI, dumps the counters
# (`callgrind_control -d`) and prints their total and the md5 of the output. KEEP=PREFIX keeps each
# DIR's callgrind file as PREFIX.<dir name> for callgrind_annotate.
set -euo pipefail
work=$(mktemp -d); server=
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf $work' EXIT
start() { # dir [valgrind…]: sets port and server
  local dir=$1; shift
  port=$((20000 + RANDOM % 20000))
  ARDACAT_ROOT_PASSWORD=pw "$@" $dir/ardacat-server --tcp-port $port --http-port $((port+1)) \
    --database sqlite:$work/cat.db >$work/server.log 2>&1 &
  server=$!
  for _ in $(seq 600); do grep -q listening $work/server.log && return; sleep 0.2; done
  echo "the server did not start:"; cat $work/server.log; exit 1
}
stop() { kill $server; wait $server 2>/dev/null || true; server=; }
cli() { ARDACAT_PASSWORD=pw $1/ardacat --host 127.0.0.1 --port $port --login root -c "$2"; }
start $1
$1/ardacat bench --host 127.0.0.1 --port $port --login root --password pw --setup --entries 100000 \
  --scenario ping --duration 1 >/dev/null 2>&1
stop
attrs=$(seq -f "a%g" 0 59 | tr '\n' ' ')
for dir in "$@"; do
  start $dir valgrind --tool=callgrind --callgrind-out-file=$work/cg.%p
  cli $dir "getattr /bench a0" >/dev/null
  callgrind_control -z $server >/dev/null 2>&1
  sum=$(cli $dir "getattr /bench $attrs" | md5sum | cut -c1-8)
  callgrind_control -d $server >/dev/null 2>&1
  total=$(callgrind_annotate $work/cg.$server.1 2>/dev/null | grep -m1 'PROGRAM TOTALS' | awk '{print $1}')
  echo "$(date -u +%T) $dir $total instructions, output md5 $sum"
  [[ -n ${KEEP:-} ]] && cp $work/cg.$server.1 "$KEEP.$(basename $dir)"
  stop
done
