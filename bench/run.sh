#!/usr/bin/env bash
# The ardacat benchmark suite in one command (see bench/README.md):
#   bench/run.sh [--quick | --full] [--backends sqlite,postgres] [--out DIR] [suite.py options…]
# It provides what the suite needs, builds the release binaries, then runs bench/suite.py:
#   - the sqlite3 shell and psql (apt-get, if missing), for the raw export baselines;
#   - PostgreSQL on 127.0.0.1:5432 (started if installed but down), unless --backends leaves it out;
#   - a Python venv with matplotlib (target/bench-venv) for the plots;
#   - target/release/{ardacat,ardacat-server,echo_baseline}.
# `bench/run.sh --goals [goals.sh options] [BIN_DIR…]` runs instead the same-run table of performance
# round 2 (issue #17, bench/goals.sh: ping, get, SOAP get, bulkget, streaming against the pgbench and
# export references); BIN_DIR defaults to target/release, built first.
# BENCH_TINY=1 shrinks --quick to a smoke test (1 s points, connections 1/4, 2000 entries) written
# to target/bench-tiny. BENCH_NO_BUILD=1 skips the cargo build.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }

if [[ ${1:-} == --goals ]]; then
    shift
    [[ -n "${BENCH_NO_BUILD:-}" ]] || cargo build --release -q -p ardacat-client -p ardacat-server --bins
    has_bin=0
    for a in "$@"; do [[ -x $a/ardacat-server ]] && has_bin=1; done
    ((has_bin)) || set -- "$@" target/release
    exec bench/goals.sh "$@"
fi

want_pg=1
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        --backends) [[ "${args[i + 1]:-}" == *postgres* ]] || want_pg=0 ;;
        --backends=*) [[ "${args[i]}" == *postgres* ]] || want_pg=0 ;;
        -h | --help) exec python3 bench/suite.py --help ;;
    esac
done

missing=()
command -v sqlite3 >/dev/null || missing+=(sqlite3)
if ((want_pg)) && ! command -v psql >/dev/null; then missing+=(postgresql-client); fi
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ((want_pg)); then
    pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
    if ! pg_up; then
        log "PostgreSQL is not answering on 127.0.0.1:5432; starting the local cluster"
        if command -v pg_ctlcluster >/dev/null && [[ -d /etc/postgresql ]]; then
            pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start || true
        fi
        for _ in $(seq 1 30); do pg_up && break; sleep 1; done
        pg_up || { log "PostgreSQL unavailable (use --backends sqlite to run without it)"; exit 1; }
    fi
fi

venv=target/bench-venv
if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    log "creating $venv with matplotlib"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q matplotlib
fi

if [[ -z "${BENCH_NO_BUILD:-}" ]]; then
    log "building release binaries"
    cargo build --release -q -p ardacat-client -p ardacat-server --bins
fi

exec "$venv/bin/python" bench/suite.py "$@"
