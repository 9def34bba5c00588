#!/bin/bash
# Web interface speed (docs/ui.md): first page and next page of a 1M-entry collection at /ui/browse,
# and server memory during a 1M-row CSV export at /ui/export, on both backends. Needs release
# binaries (cargo build --release -p ardacat-server -p ardacat-client), curl and psql. The times are
# curl's time to first byte on loopback (the server's time plus a loopback round trip); each page is
# fetched 5 times and the best and median are printed. Heavy (it loads 1M entries): run by hand.
# ENTRIES=N loads fewer, BACKENDS="sqlite" runs one backend, ARDACAT_BIN_DIR=target/debug uses other binaries.
set -euo pipefail
BIN=${ARDACAT_BIN_DIR:-"$(dirname "$0")/../target/release"}
B="$BIN/ardacat"
S="$BIN/ardacat-server"
export ARDACAT_PASSWORD=pw ARDACAT_ROOT_PASSWORD=pw
ENTRIES=${ENTRIES:-1000000}
for backend in ${BACKENDS:-sqlite postgres}; do
  work=$(mktemp -d)
  if [ "$backend" = sqlite ]; then url="sqlite:$work/b.db"; else
    db=ardacat_bui_$$; psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE $db"; url="postgres://postgres@127.0.0.1:5432/$db"; fi
  $S --database "$url" --tcp-port 0 --http-port 0 > "$work/out" 2> "$work/err" &
  pid=$!; sleep 2
  port=$(sed -n 's/.*tcp=127.0.0.1:\([0-9]*\).*/\1/p' "$work/out")
  http=$(sed -n 's/.*http=127.0.0.1:\([0-9]*\).*/\1/p' "$work/out")
  $B bench --host 127.0.0.1 --port "$port" --login root --scenario ping --connections 1 --duration 1 --setup --entries "$ENTRIES" 2>&1 | grep -i setup || true
  base="http://127.0.0.1:$http"
  jar="$work/cookies"
  csrf=$(curl -s -c "$jar" "$base/ui/login" | sed -n 's/.*name="csrf" value="\([0-9a-f]*\)".*/\1/p' | head -n1)
  curl -s -b "$jar" -c "$jar" -o /dev/null -d "user=root&password=pw&csrf=$csrf" "$base/ui/login"
  timed() { # url → best and median time to first byte of 5 fetches, in ms
    for _ in 1 2 3 4 5; do curl -s -b "$jar" -o /dev/null -w '%{time_starttransfer}\n' "$1"; done |
      sort -n | awk '{a[NR]=$1*1000} END {printf "best_ms=%.1f median_ms=%.1f", a[1], a[3]}'
  }
  first="$base/ui/browse/bench?size=50"
  next=$(curl -s -b "$jar" "$first" | sed -n 's/.*href="\([^"]*\)" rel="next".*/\1/p' | head -n1 | sed 's/&amp;/\&/g')
  echo "UI backend=$backend first_page $(timed "$first")"
  echo "UI backend=$backend next_page $(timed "$base/ui/browse/bench$next")"
  sorted="$base/ui/browse/bench?size=50&sort=a1&dir=desc"
  echo "UI backend=$backend sorted_first_page $(timed "$sorted")"
  rss0=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
  ( peak=0; while kill -0 $pid 2>/dev/null; do r=$(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null || true); [ -n "$r" ] && [ "$r" -gt "$peak" ] && peak=$r && echo $peak > "$work/peak"; sleep 0.2; done ) &
  mon=$!
  t0=$(date +%s.%N)
  lines=$(curl -s -b "$jar" "$base/ui/export/bench?format=csv" | wc -l)
  t1=$(date +%s.%N)
  kill $mon 2>/dev/null || true
  echo "UI backend=$backend export_lines=$lines export_s=$(echo "$t1 - $t0" | bc) rss_before_kib=$rss0 rss_peak_kib=$(cat "$work/peak" 2>/dev/null || echo "$rss0")"
  kill $pid; wait $pid 2>/dev/null || true
  [ "$backend" = postgres ] && psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE $db WITH (FORCE)"
  rm -rf "$work"
done
