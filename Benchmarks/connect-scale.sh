#!/usr/bin/env bash
# Connects at scale (issue 17): N connections in one `wsload run` process against `wsload serve` in its own process
# on 127.0.0.1, how fast they open and how long each connect takes. Figures are printed, never asserted.
usage() {
    cat <<'EOF'
Usage: Benchmarks/connect-scale.sh [N]
       Benchmarks/connect-scale.sh --help

Starts `wsload serve` (--max-connections 0) on a free port, then ROUNDS times: runs `wsload run` with an idle
profile whose first stage ramps to N (default 19000) over RAMP seconds (default 0: all at once), holds them
HOLD seconds, stops gracefully, and reads the report. Prints per round and the medians over the rounds:

  ws.connect (TCP) p50 / p99 / max and ws.upgrade p50 / p99 / max, from the report;
  time to all open: the end of the first 100 ms report interval with N live connections, and the end of the one
  before (an interval is longer while the client's loops are starved: the figure is an upper bound), and the
  ramp rate = N / that time; when the kernel counted all N TCP connections established (Tcp CurrEstab, both
  ends, sampled every 10 ms from the client's spawn); connect attempts beyond N (failed connects retried);
  the kernel's counters over the round (/proc/net/netstat, /proc/net/snmp; the whole network namespace, so
  another process's traffic counts too): TcpExt ListenOverflows, ListenDrops, TCPReqQFullDrop, SyncookiesSent,
  TCPSynRetrans, and Tcp RetransSegs;
  the deepest accept queue seen (`ss -lnt` Recv-Q of the server's listeners, summed, sampled every 20 ms);
  CPU (user + system) per connection while connecting, client and server: their CPU 0.5 s before the end of the
  hold (idle connections cost nothing), over N; how long the graceful stop of all N took (the report's elapsed time
  past the planned one); the client's CPU for the whole round (the stop included); the load average.

Environment:
  BUILD=0           skip `swift build -c release --product wsload`
  WSLOAD=PATH       the wsload binary (default .build/release/wsload)
  ROUNDS=3          rounds (one server for all of them)
  RAMP=0            the first stage's duration in seconds (0: every connection starts at once; 1.9: 10,000/s)
  HOLD=8            seconds to hold the N open after the ramp (CPU is sampled 0.5 s before its end)
  SERVE_LOOPS=N     `wsload serve --loops` (default: its own, one per core)
  CLIENT_LOOPS=N    `wsload run --loops` (default: its own, one per core)
  KEEP=1            keep the work directory (profile, reports, stderr)

Only loopback; every process runs under `timeout`. The box is shared: the load average is printed with the
figures.
EOF
}
set -euo pipefail
case "${1:-}" in -h|--help|help) usage; exit 0 ;; esac
cd "$(dirname "$0")/.."
n=${1:-19000}
if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 19500 ]; then
    echo "connect-scale: N must be a whole number from 1 to 19500 (one process holds at most ~19,900 sockets), not \"$n\"" >&2
    exit 64
fi
rounds=${ROUNDS:-3}
if ! [[ "$rounds" =~ ^[0-9]+$ ]] || [ "$rounds" -lt 1 ] || [ "$rounds" -gt 20 ]; then
    echo "connect-scale: ROUNDS must be from 1 to 20, not \"$rounds\"" >&2
    exit 64
fi
for setting in "RAMP=${RAMP:-0}" "HOLD=${HOLD:-8}"; do
    if ! [[ "${setting#*=}" =~ ^[0-9]{1,4}(\.[0-9]{1,3})?$ ]]; then
        echo "connect-scale: ${setting%%=*} must be seconds (0 to 9999, e.g. 1.9), not \"${setting#*=}\"" >&2
        exit 64
    fi
done
if [ "${BUILD:-1}" != 0 ]; then swift build -c release --product wsload >/dev/null; fi
export WSLOAD="${WSLOAD:-.build/release/wsload}"
exec python3 - "$n" "$rounds" "${RAMP:-0}" "${HOLD:-8}" "${SERVE_LOOPS:-}" "${CLIENT_LOOPS:-}" <<'PY'
import json, os, re, resource, shutil, signal, statistics, subprocess, sys, tempfile, threading, time

n, rounds, ramp, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
serve_loops, client_loops = sys.argv[5], sys.argv[6]
wsload = os.environ["WSLOAD"]
work = tempfile.mkdtemp(prefix="connect-scale-")

def counters():
    values = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        with open(path) as f:
            lines = f.read().splitlines()
        for names, numbers in zip(lines[::2], lines[1::2]):
            prefix = names.split(":")[0]
            for name, number in zip(names.split()[1:], numbers.split()[1:]):
                try:
                    values[f"{prefix}.{name}"] = int(number)
                except ValueError:
                    pass
    return values

watched = ["TcpExt.ListenOverflows", "TcpExt.ListenDrops", "TcpExt.TCPReqQFullDrop", "TcpExt.SyncookiesSent",
           "TcpExt.TCPSynRetrans", "Tcp.RetransSegs"]

def start_server():
    out = open(f"{work}/serve.out", "w+")
    args = [wsload, "serve", "--port", "0", "--max-connections", "0", "--head-timeout", "60s"]
    if serve_loops:
        args += ["--loops", serve_loops]
    server = subprocess.Popen(["timeout", "3600"] + args, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    deadline = time.time() + 30
    while time.time() < deadline:
        out.seek(0)
        match = re.search(r"listening on (ws://127\.0\.0\.1:(\d+)/)", out.read())
        if match:
            return server, match.group(1), int(match.group(2))
        time.sleep(0.1)
    server.kill()
    sys.exit(f"connect-scale: wsload serve did not say where it listens within 30 s (see {out.name})")

ticks = os.sysconf("SC_CLK_TCK")

def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    except (OSError, IndexError, ValueError):
        return float("nan")

def child_pid(wrapper):  # the process `timeout` runs
    try:
        with open(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children") as f:
            children = f.read().split()
        return int(children[0]) if children else wrapper.pid
    except OSError:
        return wrapper.pid

def established():
    with open("/proc/net/snmp") as f:
        lines = [line.split() for line in f if line.startswith("Tcp:")]
    return int(lines[1][lines[0].index("CurrEstab")])

def accept_queue_sampler(port, stop, deepest):
    # Recv-Q of a listening socket is its accept queue: connections the kernel completed, not yet accepted.
    while not stop.is_set():
        try:
            out = subprocess.run(["ss", "-lntH", f"sport = :{port}"], capture_output=True, text=True, timeout=5).stdout
            depth = sum(int(line.split()[1]) for line in out.splitlines() if line.split())
            deepest[0] = max(deepest[0], depth)
        except (subprocess.SubprocessError, ValueError, IndexError):
            pass
        stop.wait(0.02)

def established_sampler(started, stop, reached):
    # Tcp CurrEstab counts both ends of a loopback connection: N more established sockets on each side.
    base = established()
    while not stop.is_set() and reached[0] is None:
        if established() - base >= 2 * n:
            reached[0] = time.time() - started
        stop.wait(0.01)

def run_round(index, url, port, server_pid):
    profile = {
        "version": 1, "name": f"connect-scale-{n}", "target": url, "duration": "10m", "gracefulStop": "60s",
        "report": {"interval": "100ms"},
        "scenarios": [{"name": "idle", "pattern": "idle", "pingInterval": "30s", "pingTimeout": "10s",
                       "reconnect": {"initial": "1s", "max": "10s", "multiplier": 2, "jitter": "full", "maxAttempts": 10},
                       "stages": [{"target": n, "duration": f"{round(ramp * 1000)}ms"},
                                  {"target": n, "duration": f"{round(hold * 1000)}ms"}]}],
    }
    path = f"{work}/profile.json"
    with open(path, "w") as f:
        json.dump(profile, f)
    report_path = f"{work}/report-{index}.json"
    before = counters()
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    stop, deepest = threading.Event(), [0]
    sampler = threading.Thread(target=accept_queue_sampler, args=(port, stop, deepest), daemon=True)
    sampler.start()
    load = os.getloadavg()[0]
    reached = [None]
    tcp_sampler = threading.Thread(target=established_sampler, args=(time.time(), stop, reached), daemon=True)
    tcp_sampler.start()
    # The run ends by itself: the ramp and the hold are the profile's stages; the duration is their sum.
    args = [wsload, "run", path, "--quiet", "--out", report_path, "--duration", f"{round((ramp + hold) * 1000)}ms"]
    if client_loops:
        args += ["--loops", client_loops]
    server_cpu_before = cpu_seconds(server_pid)
    client = subprocess.Popen(["timeout", "600"] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(f"{work}/run-{index}.err", "w"))
    # Just before the stop every connection is open (or has given up) and idle ones cost nothing: the CPU so far
    # is what connecting cost.
    time.sleep(0.2)
    pid = child_pid(client)
    sampled_at = max(0.2, ramp + hold - 0.5)
    time.sleep(sampled_at - 0.2)
    client_cpu, server_cpu = cpu_seconds(pid), cpu_seconds(server_pid) - server_cpu_before
    status = client.wait()
    stop.set()
    sampler.join()
    tcp_sampler.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    after = counters()
    cpu = (usage.ru_utime - usage_before.ru_utime) + (usage.ru_stime - usage_before.ru_stime)
    try:
        report = json.load(open(report_path))
    except (OSError, ValueError):
        sys.exit(f"connect-scale: no report from round {index} (exit {status}; see {work}/run-{index}.err)")
    metrics = report["total"]["metrics"]
    # The gathers behind the intervals run on the client's loops: a starved loop makes a long interval, so the
    # figure is an upper bound, and the interval before it (not yet all open) a lower one.
    intervals = report["intervals"]
    first = next((k for k, i in enumerate(intervals) if i["connections"] >= n), None)
    all_open = intervals[first]["end"] if first is not None else None
    not_yet = intervals[first - 1]["end"] if first else 0.0
    def figure(name, key):
        return metrics.get(name, {}).get(key, 0) / 1000  # us -> ms
    return {
        "connect_p50": figure("ws.connect", "p50"), "connect_p99": figure("ws.connect", "p99"),
        "connect_max": figure("ws.connect", "max"),
        "upgrade_p50": figure("ws.upgrade", "p50"), "upgrade_p99": figure("ws.upgrade", "p99"),
        "upgrade_max": figure("ws.upgrade", "max"),
        "opened": metrics.get("ws.connections_opened", {}).get("count", 0),
        "attempts": metrics.get("ws.connect_attempts", {}).get("count", 0),
        "errors": metrics.get("errors", {}).get("count", 0),
        "all_open": all_open, "not_yet": not_yet, "rate": n / all_open if all_open else 0.0,
        "tcp_established": reached[0] if reached[0] is not None else float("inf"),
        "kernel": {name: after.get(name, 0) - before.get(name, 0) for name in watched},
        "accept_queue": deepest[0], "cpu": cpu, "load": load, "status": status,
        "client_us": client_cpu / n * 1e6, "server_us": server_cpu / n * 1e6, "sampled_at": sampled_at,
        "stop": report["run"]["elapsedSeconds"] - report["run"]["plannedSeconds"],
    }

def line(r):
    kernel = ", ".join(f"{name.split('.')[1]} {value}" for name, value in r["kernel"].items())
    opened = f"by {r['all_open']:.2f} s (not at {r['not_yet']:.2f} s)" if r["all_open"] else "never"
    tcp = f"{r['tcp_established']:.2f} s" if r["tcp_established"] != float("inf") else "never"
    return (f"connect p50/p99/max {r['connect_p50']:.1f}/{r['connect_p99']:.1f}/{r['connect_max']:.1f} ms; "
            f"upgrade {r['upgrade_p50']:.1f}/{r['upgrade_p99']:.1f}/{r['upgrade_max']:.1f} ms; "
            f"all {n} open {opened} = {r['rate']:,.0f}/s; TCP all established {tcp} after the client started; "
            f"opened {r['opened']}, attempts {r['attempts']}, "
            f"errors {r['errors']}; accept queue max {r['accept_queue']}; {kernel}; CPU per connection while connecting: "
            f"client {r['client_us']:.0f} us, server {r['server_us']:.0f} us"
            + (" (sampled before all were open: an undercount)" if not r["all_open"] or r["all_open"] > r["sampled_at"] else "")
            + f"; the graceful stop {r['stop']:.1f} s; client CPU for the round {r['cpu']:.2f} s; "
            f"load {r['load']:.1f}; exit {r['status']}")

server, url, port = start_server()
print(f"connect-scale: N {n}, RAMP {ramp:g} s, {rounds} rounds; somaxconn {open('/proc/sys/net/core/somaxconn').read().strip()}, "
      f"tcp_max_syn_backlog {open('/proc/sys/net/ipv4/tcp_max_syn_backlog').read().strip()}; serve loops "
      f"{serve_loops or 'default'}, client loops {client_loops or 'default'}; {wsload}; work files in {work}", flush=True)
results = []
try:
    for index in range(rounds):
        result = run_round(index, url, port, child_pid(server))
        results.append(result)
        print(f"round {index + 1}: {line(result)}", flush=True)
        time.sleep(2)  # let the server's closes settle (TIME_WAIT stays on the client's side)
finally:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
median = {key: statistics.median(r[key] for r in results)
          for key in results[0] if key not in ("kernel", "all_open", "not_yet", "status", "sampled_at")}
median["sampled_at"] = results[0]["sampled_at"]
median["all_open"] = statistics.median(r["all_open"] or float("inf") for r in results)
median["all_open"] = None if median["all_open"] == float("inf") else median["all_open"]
median["not_yet"] = statistics.median(r["not_yet"] for r in results)
median["kernel"] = {name: statistics.median(r["kernel"][name] for r in results) for name in watched}
median["status"] = max(r["status"] for r in results)
print(f"median of {rounds}: {line(median)}")
if os.environ.get("KEEP") != "1":
    shutil.rmtree(work, ignore_errors=True)
PY
