#!/usr/bin/env bash
# End-to-end DDS, SOAP-vs-TCP writes and keep-alive benchmarks in one command (bench/README.md):
#   bench/dds-e2e.sh [--duration S] [--rounds N] [--backend sqlite|postgres] [--out DIR] [--no-profile] …
# It provides what the run needs, then runs bench/dds_e2e.py:
#   - target/release/{ardacat,ardacat-server} (release build);
#   - target/perf/release/ardacat-server: the server again with frame pointers, for `perf record -g`;
#   - perf (apt-get linux-perf) and inferno (cargo install inferno) for the profile and flame graph.
# BENCH_NO_BUILD=1 skips the cargo builds. Results go to target/dds-e2e unless --out says otherwise
# (the committed figures were made with --out docs/bench; perf.data is never written there unless
# --keep-perf, and must not be committed).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }

profile=1
for a in "$@"; do
    case "$a" in
        --no-profile) profile=0 ;;
        -h | --help) exec python3 bench/dds_e2e.py --help ;;
    esac
done

if [[ -z "${BENCH_NO_BUILD:-}" ]]; then
    log "building release binaries"
    cargo build --release -q -p ardacat-client -p ardacat-server --bins
    if ((profile)); then
        log "building the server with frame pointers (target/perf) for perf record -g"
        RUSTFLAGS="-C force-frame-pointers=yes" CARGO_TARGET_DIR=target/perf \
            cargo build --release -q -p ardacat-server --bin ardacat-server
    fi
fi

if ((profile)); then
    if ! command -v perf >/dev/null; then
        log "installing perf"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
    fi
    if ! command -v inferno-flamegraph >/dev/null; then
        log "installing inferno (cargo install)"
        cargo install -q inferno --locked
    fi
fi

exec python3 bench/dds_e2e.py "$@"
