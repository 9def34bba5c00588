#!/usr/bin/env bash
# Same-run A/B of two server builds on the bulkget scenario, TCP and SOAP alternating:
#   bench/soap-bulkget-ab.sh BASE_SERVER NEW_SERVER CLIENT {sqlite|pg} ROUNDS SECONDS CONNS...
# Both servers run at once (an idle one costs nothing), each on its own fresh database
# (PostgreSQL: 127.0.0.1:5432, user postgres, trust; databases created and dropped here).
# Per round and connection count: base tcp, base soap, new tcp, new soap, so that the
# machine's load (shared with other builds) hits both builds alike. One line per point:
#   BACKEND rROUND cCONNS base|new tcp|soap OPS_PER_S ERRORS P50_US load=LOAD1
set -u
BASE=$1; NEW=$2; CL=$3; BK=$4; ROUNDS=$5; DUR=$6; shift 6
declare -A BIN=([base]=$BASE [new]=$NEW) PORT=([base]=19300 [new]=19310)
WORK=$(mktemp -d)
PIDS=()
for b in base new; do
  P=${PORT[$b]}
  if [ "$BK" = sqlite ]; then DB=sqlite:$WORK/$b.db; else
    psql -h 127.0.0.1 -U postgres -qc "drop database if exists soap_ab_$b" 2>/dev/null
    psql -h 127.0.0.1 -U postgres -qc "create database soap_ab_$b"
    DB=postgres://postgres@127.0.0.1:5432/soap_ab_$b; fi
  ARDACAT_ROOT_PASSWORD=pw "${BIN[$b]}" --tcp-port "$P" --http-port $((P + 1)) --database "$DB" >"$WORK/$b.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 60); do grep -q listening "$WORK/$b.log" && break; sleep 0.5; done
  "$CL" bench --host 127.0.0.1 --port "$P" --login root --password pw --setup --entries 10000 \
    --scenario ping --duration 1 >/dev/null || echo "setup failed: $b"
done
echo "# start $(date -u +%FT%TZ) load $(cat /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do for c in "$@"; do for b in base new; do for proto in tcp soap; do
  P=${PORT[$b]}; if [ $proto = tcp ]; then PP=$P; else PP=$((P + 1)); fi
  out=$("$CL" bench --host 127.0.0.1 --port "$PP" --tcp-port "$P" --login root --password pw \
    --scenario bulkget --connections "$c" --duration "$DUR" --protocol $proto --json)
  echo "$BK r$r c$c $b $proto $(echo "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["ops_per_sec"], j["errors"], j["p50_us"])') load=$(cut -d' ' -f1 /proc/loadavg)"
done; done; done; done
echo "# end $(date -u +%FT%TZ) load $(cat /proc/loadavg)"
for p in "${PIDS[@]}"; do kill "$p"; wait "$p" 2>/dev/null; done
if [ "$BK" != sqlite ]; then for b in base new; do psql -h 127.0.0.1 -U postgres -qc "drop database if exists soap_ab_$b"; done; fi
rm -rf "$WORK"
