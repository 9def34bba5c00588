#!/bin/bash
# Used for docs/benchmarks.md: needs release binaries (cargo build --release -p ardacat-server -p ardacat-client).
# 1M entries of 60 attributes: upload rate and streamed getattr rate, server RSS, both backends.
B="$(dirname "$0")/../target/release/ardacat"
S="$(dirname "$0")/../target/release/ardacat-server"
export ARDACAT_PASSWORD=pw ARDACAT_ROOT_PASSWORD=pw
attrs=$(for i in $(seq 0 59); do printf 'a%d ' $i; done)
for backend in sqlite postgres; do
  work=$(mktemp -d)
  if [ $backend = sqlite ]; then url="sqlite:$work/b.db"; else
    db=ardacat_b1m_$$; psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE $db"; url="postgres://postgres@127.0.0.1:5432/$db"; fi
  $S --database "$url" --tcp-port 0 --http-port 0 > $work/out 2> $work/err &
  pid=$!; sleep 2
  port=$(sed -n 's/.*tcp=127.0.0.1:\([0-9]*\).*/\1/p' $work/out)
  t0=$(date +%s.%N)
  $B bench --host 127.0.0.1 --port $port --login root --scenario ping --connections 1 --duration 1 --setup --entries 1000000 2>&1 | grep -i setup
  t1=$(date +%s.%N)
  echo "UPLOAD backend=$backend seconds=$(echo "$t1 - $t0" | bc)"
  rss0=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
  ( peak=0; while kill -0 $pid 2>/dev/null; do r=$(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null); [ -n "$r" ] && [ "$r" -gt "$peak" ] && peak=$r && echo $peak > $work/peak; sleep 0.2; done ) &
  mon=$!
  s0=$(date +%s.%N)
  $B --host 127.0.0.1 --port $port --login root -c "getattr /bench $attrs" > $work/rows
  s1=$(date +%s.%N)
  lines=$(wc -l < $work/rows)
  kill $mon 2>/dev/null
  echo "RESULT backend=$backend stream_lines=$lines entries=$((lines/61)) stream_s=$(echo "$s1 - $s0" | bc) rss_before_kib=$rss0 rss_peak_kib=$(cat $work/peak)"
  kill $pid; wait $pid 2>/dev/null
  [ $backend = postgres ] && psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE $db WITH (FORCE)"
  rm -rf $work
done
uptime
