#!/usr/bin/env bash
# Used for docs/benchmarks.md (round 19): which server threads a SQLite stream keeps busy.
# usage: bench/stream-threads.sh DIR…   (each DIR holds ardacat + ardacat-server release binaries)
# Starts one server per DIR on one SQLite file, loads /bench with 100,000 entries of 60 attributes
# (`ardacat bench --setup` through the first), then four times per DIR, alternating, streams
# `getattr /bench a0 … a59` with the CLI and prints the wall time and the three threads of the
# server that used the most CPU during it (name, clock ticks of utime+stime from
# /proc/PID/task/*/stat; 100 ticks = 1 s).
set -euo pipefail
work=$(mktemp -d); base=$((20000 + RANDOM % 20000)); url="sqlite:$work/cat.db"; pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done; rm -rf $work' EXIT
i=0
for dir in "$@"; do
  port=$((base + 10*i))
  ARDACAT_ROOT_PASSWORD=pw $dir/ardacat-server --tcp-port $port --http-port $((port+1)) --database "$url" >$work/s$i.log 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening $work/s$i.log && break; sleep 0.2; done
  if [ $i = 0 ]; then
    $dir/ardacat bench --host 127.0.0.1 --port $port --login root --password pw --setup --entries 100000 \
      --scenario ping --duration 1 >/dev/null 2>&1
  fi
  i=$((i+1))
done
attrs=$(seq -f "a%g" 0 59 | tr '\n' ' ')
# One line per thread: tid, (name), utime+stime ticks; sorted by tid as text, for join.
snap() { for t in /proc/$1/task/*; do echo "$(basename $t) $(cut -d' ' -f2 $t/stat) $(awk '{print $14+$15}' $t/stat)"; done | sort; }
for r in 1 2 3 4; do
  i=0
  for dir in "$@"; do
    port=$((base + 10*i)); pid=${pids[$i]}
    snap $pid > $work/a; s=$(date +%s.%N)
    ARDACAT_PASSWORD=pw $dir/ardacat --host 127.0.0.1 --port $port --login root -c "getattr /bench $attrs" >/dev/null
    e=$(date +%s.%N); snap $pid > $work/b
    top=$(join $work/a $work/b | awk '{d = $5 - $3; if (d > 0) print $2, d}' | sort -k2 -nr | head -3 | tr '\n' ' ')
    echo "round $r $dir wall $(echo "$e - $s" | bc) s; busiest threads (name, ticks): $top"
    i=$((i+1))
  done
done
