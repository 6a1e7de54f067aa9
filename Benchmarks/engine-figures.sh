#!/usr/bin/env bash
# The engine's rate and latency figures that tests must not assert (they are the box's speed, not promises):
#   1. receive: 20 connections on the embedded push stream every 20 ms — pushes per second and the gap p50/p99
#      (ideal: 1,000/s and 20 ms);
#   2. open model: 20 typed connections at 20 requests/s each — the share of the schedule delivered;
#   3. ramp: 30 connections ramped up in 1 s — how many were live at the top of the ramp.
# Usage: Benchmarks/engine-figures.sh [SECONDS]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
swift build -c release --product wsload >/dev/null
wsload=.build/release/wsload
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {  # name, profile JSON
    printf '%s' "$2" > "$work/$1.json"
    "$wsload" run "$work/$1.json" --quiet --out "$work/$1-report.json" >/dev/null || true
}

run push '{"version": 1, "name": "push", "target": "embedded", "duration": "'"$seconds"'s",
  "scenarios": [{"name": "push", "pattern": "receive", "connections": 20, "path": "/push?interval=20ms&size=100"}]}'
run open '{"version": 1, "name": "open", "target": "embedded", "duration": "'"$seconds"'s",
  "scenarios": [{"name": "typed", "pattern": "typed", "connections": 20, "typeName": "order.create",
                 "schedule": {"model": "open", "rate": 20}}]}'
run ramp '{"version": 1, "name": "ramp", "target": "embedded", "duration": "3s", "report": {"interval": "100ms"},
  "scenarios": [{"name": "r", "pattern": "echo", "schedule": {"model": "closed", "thinkTime": "50ms"},
                 "stages": [{"target": 30, "duration": "1s"}, {"target": 0, "duration": "1s"}]}]}'

python3 - "$work" "$seconds" <<'PY'
import json, sys
work, seconds = sys.argv[1], float(sys.argv[2])
def report(name):
    with open(f"{work}/{name}-report.json") as f:
        return json.load(f)
def metric(document, name):
    return document["total"]["metrics"].get(name) or {}
push = report("push")
received = metric(push, "ws.messages_received").get("count", 0)
gap = metric(push, "ws.message_gap")
print(f"receive: {received / seconds:,.0f} pushes/s (ideal 1,000/s); gap p50 {gap.get('p50', 0) / 1000:.1f} ms, "
      f"p99 {gap.get('p99', 0) / 1000:.1f} ms (ideal 20 ms)")
open_ = report("open")
print(f"open model: {open_['scenarios'][0].get('scheduleDelivered')} of the schedule delivered (20 x 20/s)")
ramp = report("ramp")
print(f"ramp: {max(i.get('connections', 0) for i in ramp.get('intervals', []))} of 30 live at the top of a 1 s ramp")
PY
