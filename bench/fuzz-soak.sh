#!/usr/bin/env bash
# Soak run of the stateful fuzzers (tests/fuzz_stateful.rs: TCP; tests/fuzz_soap_stateful.rs: SOAP)
# on both backends: fresh random seeds, each printed, until the time is up. See docs/fuzzing.md.
# usage: bench/fuzz-soak.sh [SECONDS per fuzzer and backend, default 600] [STEPS per seed, default 2000]
# A failure prints the seed and step that reproduce it:
#   ARDACAT_FUZZ_SEEDS=<seed> ARDACAT_FUZZ_STEPS=<step> cargo test -p ardacat-server --test fuzz_stateful
set -euo pipefail
secs=${1:-600}; steps=${2:-2000}
cd "$(dirname "$0")/.."
for t in fuzz_stateful fuzz_soap_stateful; do
    # One backend at a time: the run is long, and PostgreSQL and SQLite then do not compete for CPU.
    ARDACAT_FUZZ_SECS=$secs ARDACAT_FUZZ_STEPS=$steps \
        cargo test --release -p ardacat-server --test "$t" -- --test-threads 1 --nocapture stateful_
done
