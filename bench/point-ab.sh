#!/usr/bin/env bash
# Same-run A/B of builds on one load-generator point, with the server's CPU per operation:
#   bench/point-ab.sh SCENARIO ROUNDS BIN_DIR BIN_DIR…   (e.g. bench/point-ab.sh get 3 /tmp/base target/release)
# Runs `bench/point.sh BIN_DIR SCENARIO tcp 16 SECS` (SECS: $SECS, default 5) for every BIN_DIR in
# turn, ROUNDS times (so the builds' points are seconds apart), and prints one line per point: ops/s,
# p99 in µs, and the server's CPU (utime+stime) per operation in µs. On a shared VM the rate of one
# point scatters by ±10 %; CPU per operation scatters less and shows a few per cent. DATABASE and
# SERVER_ARGS pass through to point.sh (DATABASE=postgres://postgres@127.0.0.1:5432 for PostgreSQL);
# PROTOCOL=soap measures the point over SOAP instead of TCP.
# BIN_DIRs are taken relative to the checkout's root (the script runs there).
set -euo pipefail
cd "$(dirname "$0")/.."
(($# >= 3)) || { echo "usage: bench/point-ab.sh SCENARIO ROUNDS BIN_DIR BIN_DIR…" >&2; exit 2; }
scenario=$1; rounds=$2; shift 2
echo "date $(date -u '+%F %T') UTC; $(lscpu | grep 'Model name' | tr -s ' '); ${DATABASE:-sqlite}; $scenario over ${PROTOCOL:-tcp}, 16 connections, ${SECS:-5} s"
for r in $(seq "$rounds"); do
    for bin in "$@"; do
        # A failed point says why instead of ending the table silently.
        out=$(bench/point.sh "$bin" "$scenario" "${PROTOCOL:-tcp}" 16 "${SECS:-5}" 2>&1) ||
            { printf 'point.sh %s failed:\n%s\n' "$bin" "$out" >&2; exit 1; }
        ops=$(grep -oP '^\s*ops\s+\K[0-9]+' <<<"$out")
        rate=$(grep -oP 'ops/s\s+\K[0-9.]+' <<<"$out")
        p99=$(grep -oP 'p99 \K[0-9]+' <<<"$out")
        cpu=$(grep -oP 'server cpu \K[0-9.]+' <<<"$out")
        printf '%s round %d %-24s %9.0f ops/s  p99 %5d µs  server %6.2f µs/op\n' "$(date -u +%T)" "$r" "$bin" \
            "$rate" "$p99" "$(echo "$cpu * 1000000 / $ops" | bc -l)"
    done
done
