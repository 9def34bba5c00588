#!/usr/bin/env bash
# Runs the whole ardacat test suite. It first makes sure what the tests need is there:
#   - PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth), started if it is installed but down;
#   - gSOAP (wsdl2h, soapcpp2, libgsoap) for the SOAP interop test, installed with apt-get if missing;
#   - JAX-WS (wsimport, the reference implementation, a JDK) for the same test, likewise;
#   - promtool (Debian package prometheus) for the /metrics format test (tests/ops.rs), likewise;
#   - headless Chromium and its WebDriver (Debian packages chromium, chromium-driver) for the browser
#     test of the web interface (tests/ui_browser.rs), likewise;
#   - a Python venv with zeep and suds for the SOAP interop test, and pytest, cryptography, mypy,
#     setuptools and wheel for the Python client's suite (target/interop-venv);
#   - Node.js and npm (Debian packages nodejs npm) if missing, for node-soap, which the SOAP interop
#     test installs from npm into target/interop-node.
# Nothing is skipped: if a dependency cannot be provided, the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
if ! pg_up; then
    log "PostgreSQL is not answering on 127.0.0.1:5432; starting the local cluster"
    if command -v pg_ctlcluster >/dev/null; then
        pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start || true
    fi
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
    pg_up || { log "PostgreSQL unavailable: the PostgreSQL suite cannot run"; exit 1; }
fi

if ! command -v wsdl2h >/dev/null || ! command -v soapcpp2 >/dev/null; then
    log "installing gSOAP (Debian packages gsoap libgsoap-dev)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gsoap libgsoap-dev >/dev/null
fi

if ! command -v wsimport >/dev/null || ! command -v javac >/dev/null || [ ! -f /usr/share/java/jaxws-rt.jar ]; then
    log "installing JAX-WS and a JDK (Debian packages jaxws libjaxws-java default-jdk-headless)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends jaxws libjaxws-java default-jdk-headless >/dev/null
fi

if ! command -v promtool >/dev/null; then
    log "installing promtool (Debian package prometheus)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    log "installing Chromium and its WebDriver (Debian packages chromium chromium-driver)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    log "installing Node.js and npm (Debian packages nodejs npm)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

venv=target/interop-venv
if ! "$venv/bin/python" -c 'import zeep, suds, pytest, cryptography, mypy, setuptools, wheel' 2>/dev/null; then
    log "creating $venv with zeep, suds-community, pytest, cryptography, mypy, setuptools, wheel"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q zeep suds-community pytest cryptography mypy 'setuptools>=61' wheel
fi
export ARDACAT_PYTHON="$PWD/$venv/bin/python"

cargo test --workspace "$@"
