#!/usr/bin/env bash
# Memory per idle connection in the engine (issue 17): `wsload run` holding N idle connections (pattern "idle",
# a ping every 30 s) against `wsload serve` in its own process on 127.0.0.1, ws and wss.
usage() {
    cat <<'EOF'
Usage: Benchmarks/idle-memory.sh [N...]
       Benchmarks/idle-memory.sh --help

For each mode (MODES, default "ws wss") and each N (default 10000 19000), plus a baseline run of BASE
(default 100) connections per mode: starts `wsload serve` (--tls for wss, --max-connections 0) on a free
port, runs `wsload run` with an idle profile (ramp to N, then hold; a failed connect retries up to 10
times with backoff), waits until the client holds N
sockets, lets it settle, and samples the client's VmRSS (/proc/PID/status) and CPU (utime + stime from
/proc/PID/stat). Then SIGINT (a graceful stop) and the next run. Prints per mode and N:

  RSS per connection = (RSS at N - RSS at BASE) / (sockets at N - sockets at BASE)
  client CPU per connection while connecting (ramp, handshakes: TLS for wss), the same difference;
  the server's RSS per connection, for context.

Environment:
  BUILD=0        skip `swift build -c release --product wsload`
  WSLOAD=PATH    the wsload binary (default .build/release/wsload)
  MODES="ws wss" which modes to run
  BASE=100       the baseline run's connections
  RAMP=SECONDS   ramp duration (default: N/1000 s for ws, N/500 s for wss, at least 2 s)
  SETTLE=5       seconds to wait once all N are connected before sampling (sampled twice, 2 s apart)
  WAIT=300       seconds past the ramp to wait for all N (a busy box connects slowly; failed connects retry)
  KEEP=1         keep the work directory (profiles, reports, stderr) instead of removing it

Only loopback; every process runs under `timeout`. The box is shared: the load average is printed with
the figures. Figures are printed, never asserted.
EOF
}
set -euo pipefail
case "${1:-}" in -h|--help|help) usage; exit 0 ;; esac
cd "$(dirname "$0")/.."
counts=("$@")
if [ ${#counts[@]} -eq 0 ]; then counts=(10000 19000); fi
for n in "${counts[@]}"; do
    if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 19500 ]; then
        echo "idle-memory: N must be a whole number from 1 to 19500 (one process holds at most ~19,900 sockets), not \"$n\"" >&2
        exit 64
    fi
done
if [ "${BUILD:-1}" != 0 ]; then swift build -c release --product wsload >/dev/null; fi
export WSLOAD="${WSLOAD:-.build/release/wsload}"
exec python3 - "${MODES:-ws wss}" "${BASE:-100}" "${SETTLE:-5}" "${RAMP:-}" "${counts[@]}" <<'PY'
import json, os, re, shutil, signal, subprocess, sys, tempfile, time

modes, base, settle, ramp_override = sys.argv[1].split(), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
counts = [int(n) for n in sys.argv[5:]]
wsload = os.environ["WSLOAD"]
work = tempfile.mkdtemp(prefix="idle-memory-")
ticks = os.sysconf("SC_CLK_TCK")

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime

def sockets(pid):
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count

def start_server(mode):
    out = open(f"{work}/serve-{mode}.out", "w+")
    # A 60 s head timeout: on a busy box a connection may wait long for its upgrade at the top of a fast ramp.
    args = [wsload, "serve", "--port", "0", "--max-connections", "0", "--head-timeout", "60s"]
    args += ["--tls"] if mode == "wss" else []
    server = subprocess.Popen(["timeout", "900"] + args, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    deadline = time.time() + 30
    while time.time() < deadline:
        out.seek(0)
        match = re.search(r"listening on (wss?://127\.0\.0\.1:\d+/)", out.read())
        if match:
            return server, match.group(1)
        time.sleep(0.1)
    server.kill()
    sys.exit(f"idle-memory: wsload serve did not say where it listens within 30 s (see {out.name})")

def child_pid(wrapper):  # the process `timeout` runs
    with open(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children") as f:
        children = f.read().split()
    return int(children[0]) if children else None

def measure(mode, n):
    server, url = start_server(mode)
    ramp = float(ramp_override) if ramp_override else max(2.0, n / (1000 if mode == "ws" else 500))
    profile = {
        "version": 1, "name": f"idle-{mode}-{n}", "target": url, "duration": "10m", "gracefulStop": "60s",
        "scenarios": [{"name": "idle", "pattern": "idle", "pingInterval": "30s", "pingTimeout": "10s",
                       "reconnect": {"initial": "1s", "max": "10s", "multiplier": 2, "jitter": "full", "maxAttempts": 10},
                       "stages": [{"target": n, "duration": f"{ramp:g}s"}, {"target": n, "duration": "10m"}]}],
    }
    if mode == "wss":
        profile["tls"] = {"insecure": True}
    path = f"{work}/idle-{mode}-{n}.json"
    with open(path, "w") as f:
        json.dump(profile, f)
    server_pid = child_pid(server) or server.pid
    server_cpu_before = cpu_seconds(server_pid)
    started = time.time()
    client = subprocess.Popen(["timeout", "900", wsload, "run", path, "--quiet", "--out", f"{work}/report-{mode}-{n}.json"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(f"{work}/run-{mode}-{n}.err", "w"))
    time.sleep(0.2)
    pid = child_pid(client)
    deadline = started + ramp + float(os.environ.get("WAIT", "300"))
    connected_at = None
    while time.time() < deadline:
        if client.poll() is not None:
            sys.exit(f"idle-memory: wsload run ended early ({client.returncode}); see {work}/run-{mode}-{n}.err")
        if sockets(pid) >= n:
            connected_at = time.time()
            break
        time.sleep(0.2)
    if connected_at is None:
        print(f"{mode} {n}: only {sockets(pid)} of {n} sockets after {deadline - started:.0f} s", flush=True)
    cpu_connected = cpu_seconds(pid)
    server_cpu = cpu_seconds(server_pid) - server_cpu_before
    time.sleep(settle)
    first = rss_kib(pid)
    time.sleep(2)
    rss = rss_kib(pid)
    server_rss = rss_kib(server_pid)
    live = sockets(pid)
    os.kill(pid, signal.SIGINT)
    try:
        client.wait(timeout=90)
    except subprocess.TimeoutExpired:
        client.kill()
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
    errors = 0
    try:
        report = json.load(open(f"{work}/report-{mode}-{n}.json"))
        errors = report["total"]["metrics"].get("errors", {}).get("count", 0)
    except (OSError, ValueError, KeyError):
        errors = None
    return {"rss": rss, "rss_first": first, "cpu": cpu_connected, "server_cpu": server_cpu, "server_rss": server_rss,
            "connect_s": (connected_at or time.time()) - started, "sockets": live, "errors": errors}

print(f"idle-memory: load average {os.getloadavg()[0]:.1f}; wsload {wsload}; BASE {base}; work files in {work}", flush=True)
summary = []
for mode in modes:
    baseline = measure(mode, base)
    print(f"{mode} baseline {base}: client RSS {baseline['rss'] / 1024:.1f} MiB, CPU {baseline['cpu']:.2f} s; "
          f"server RSS {baseline['server_rss'] / 1024:.1f} MiB", flush=True)
    for n in counts:
        m = measure(mode, n)
        # Per connection actually held (a busy box may not connect all N in time: the line says so).
        held = max(1, m["sockets"] - baseline["sockets"])
        per = (m["rss"] - baseline["rss"]) / held
        per_first = (m["rss_first"] - baseline["rss"]) / held
        cpu_per = (m["cpu"] - baseline["cpu"]) / held * 1e6
        server_per = (m["server_rss"] - baseline["server_rss"]) / held
        server_cpu_per = (m["server_cpu"] - baseline["server_cpu"]) / held * 1e6
        line = (f"{mode} {n:>6}: client RSS {m['rss'] / 1024:7.1f} MiB = {per:5.2f} KiB per connection "
                f"({per_first:.2f} {settle:g} s earlier); client CPU {cpu_per:5.0f} us per connection "
                f"(connecting, {m['connect_s']:.1f} s); server RSS {server_per:5.2f} KiB, CPU {server_cpu_per:4.0f} us "
                f"per connection; sockets {m['sockets']}, errors {m['errors']}; load {os.getloadavg()[0]:.1f}")
        print(line, flush=True)
        summary.append(line)
print("summary:")
for line in summary:
    print("  " + line)
if os.environ.get("KEEP") != "1":
    shutil.rmtree(work, ignore_errors=True)
PY
