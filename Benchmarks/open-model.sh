#!/usr/bin/env bash
# The open model's cost per message (issue 17): `wsload run` sending on a fixed timetable against `wsload serve
# --loops 1` in its own process on 127.0.0.1, repeated; medians of the figures.
usage() {
    cat <<'EOF'
Usage: Benchmarks/open-model.sh [ROUNDS]   (default 3)
       Benchmarks/open-model.sh --help

Each round starts `wsload serve --loops 1` on a free port, then runs `wsload run` under /usr/bin/time with an
echo scenario on the open model: CONNECTIONS connections (default 2000) sharing RATE messages/s (default
20000, "per": "total"), 64-byte text, for DURATION seconds (default 20). Prints per round and as medians:

  messages received per client CPU-second (user + system of the whole `wsload run`, connects included),
  the share of the schedule delivered (received / scheduled), the RTT from the intended send time
  (p50, p99), dropped and missed slots, and the load average when the round ended.

Environment:
  BUILD=0            skip `swift build -c release --product wsload`
  WSLOAD=PATH        the client binary (default .build/release/wsload)
  SERVER=PATH        the server binary (default: the client binary)
  CONNECTIONS=2000   RATE=20000   DURATION=20 (bash keeps its own SECONDS)
  LOOPS=N            the client's --loops (default: the run's default, one per core)

Only loopback; every process runs under `timeout`. Figures are printed, never asserted.
EOF
}
set -euo pipefail
case "${1:-}" in -h|--help|help) usage; exit 0 ;; esac
cd "$(dirname "$0")/.."
rounds="${1:-3}"
if ! [[ "$rounds" =~ ^[0-9]+$ ]] || [ "$rounds" -lt 1 ] || [ "$rounds" -gt 20 ]; then
    echo "open-model: ROUNDS must be a whole number from 1 to 20, not \"$rounds\"" >&2
    exit 64
fi
if [ "${BUILD:-1}" != 0 ]; then swift build -c release --product wsload >/dev/null; fi
export WSLOAD="${WSLOAD:-.build/release/wsload}"
export SERVER="${SERVER:-$WSLOAD}"
exec python3 - "$rounds" "${CONNECTIONS:-2000}" "${RATE:-20000}" "${DURATION:-20}" "${LOOPS:-}" <<'PY'
import json, os, re, shutil, signal, statistics, subprocess, sys, tempfile, time

rounds, connections, rate, seconds, loops = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
wsload, server_binary = os.environ["WSLOAD"], os.environ["SERVER"]
work = tempfile.mkdtemp(prefix="open-model-")

def start_server():
    out = open(f"{work}/serve.out", "w+")
    args = ["timeout", str(seconds + 120), server_binary, "serve", "--port", "0", "--loops", "1", "--max-connections", "0"]
    server = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    deadline = time.time() + 30
    while time.time() < deadline:
        out.seek(0)
        match = re.search(r"listening on (ws://127\.0\.0\.1:\d+/)", out.read())
        if match:
            return server, match.group(1)
        time.sleep(0.1)
    server.kill()
    sys.exit(f"open-model: wsload serve did not say where it listens within 30 s (see {out.name})")

profile = {
    "version": 1, "name": "open-model", "target": "embedded", "duration": f"{seconds}s", "gracefulStop": "10s",
    "scenarios": [{"name": "open", "pattern": "echo", "connections": connections,
                   "message": {"size": 64, "format": "text"},
                   "schedule": {"model": "open", "rate": rate, "per": "total"}}],
}
path = f"{work}/open.json"
with open(path, "w") as f:
    json.dump(profile, f)

print(f"open-model: {connections} connections, {rate:g} msgs/s in total, {seconds} s; client {wsload}, server "
      f"{server_binary}; load average {os.getloadavg()[0]:.1f}", flush=True)
results = []
for round in range(1, rounds + 1):
    server, url = start_server()
    report = f"{work}/report-{round}.json"
    command = ["/usr/bin/time", "-f", "%U %S", "-o", f"{work}/time", "timeout", str(seconds + 90), wsload, "run", path,
               "--target", url, "--quiet", "--out", report] + (["--loops", loops] if loops else [])
    subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(f"{work}/run-{round}.err", "w"))
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
    try:
        user, system = map(float, open(f"{work}/time").read().split()[-2:])
        total = json.load(open(report))["total"]["metrics"]
    except (OSError, ValueError) as error:
        print(f"round {round}: no figures ({error}); see {work}/run-{round}.err", flush=True)
        continue
    count = lambda name: total.get(name, {}).get("count", 0)
    received, scheduled = count("ws.messages_received"), count("ws.messages_scheduled")
    rtt = total.get("ws.message_rtt", {})
    figures = {
        "per_cpu": received / max(user + system, 1e-9), "cpu": user + system,
        "delivered": received / scheduled if scheduled else 0.0,
        "p50": rtt.get("p50", 0) / 1000, "p99": rtt.get("p99", 0) / 1000,
        "dropped": count("ws.messages_dropped"), "missed": count("ws.messages_missed"),
        "errors": total.get("errors", {}).get("count", 0), "load": os.getloadavg()[0],
    }
    results.append(figures)
    print(f"round {round}: {figures['per_cpu']:,.0f} msgs per client CPU-s ({figures['cpu']:.2f} CPU-s, {received:,} "
          f"received), {figures['delivered']:.3%} of {scheduled:,} scheduled delivered, rtt p50 {figures['p50']:.2f} ms "
          f"p99 {figures['p99']:.2f} ms, dropped {figures['dropped']}, missed {figures['missed']}, errors "
          f"{figures['errors']}; load {figures['load']:.1f}", flush=True)
if results:
    median = lambda key: statistics.median(r[key] for r in results)
    print(f"median of {len(results)}: {median('per_cpu'):,.0f} msgs per client CPU-s, {median('delivered'):.3%} delivered, "
          f"rtt p50 {median('p50'):.2f} ms p99 {median('p99'):.2f} ms; load {median('load'):.1f}")
shutil.rmtree(work, ignore_errors=True)
PY
