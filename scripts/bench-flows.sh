#!/usr/bin/env bash
# Client CPU of flows against the plain echo pattern (issue 14's targets), on loopback, with the release build:
#   a. echo pattern vs raw flows `loop { send text; expect regex }` and `loop { send json; expect json }` against
#      `wsload serve --loops 1` in its own process: 1,000 connections, closed model, interleaved twice;
#      messages sent per client CPU-second and the ratio to echo (target: flow costs <= 1.5x echo);
#   b. the same conversation against /chat: 1,000 connections in rooms of 10 (a feeder binds the room), each says
#      and expects its own `said` (closed model); counted per message sent (each say brings 10 saids back);
#   c. Socket.IO: 1,000 connections against Tests/Peers/socketio_server.py, emit `echo` with ack at 1/s per
#      connection; wsload's and the server's CPU as % of one core (target: wsload < 30%, the server the bottleneck).
# Client CPU is the wsload process's own user+system time (wait4 rusage), server CPU from /proc/PID/stat; both
# include connecting the 1,000 connections. Figures come from the JSON report (ws.messages_sent/received).
# Usage: scripts/bench-flows.sh [SECONDS] [PARTS]   (default 15 s each; PARTS any of "abc", default all)
#        BUILD=0 skips the release build; WSLOAD=PATH runs another binary; PERF=1 records `perf record -g` of the client for each run (perf-NAME.data).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-15}"
parts="${2:-abc}"
if [ "${BUILD:-1}" != 0 ]; then swift build -c release --product wsload 2>&1 | grep -E 'error|Compiling|Build' | tail -3; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" "$seconds" "$parts" "$PWD" <<'PY'
import json, os, resource, socket, subprocess, sys, time

work, seconds, parts, root = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
wsload = os.environ.get("WSLOAD") or os.path.join(root, ".build/release/wsload")
connections = 1000
ticks = os.sysconf("SC_CLK_TCK")

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def process_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

def wait_listening(port, deadline=30):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"no server on port {port} after {deadline} s")

def scenario(name, **fields):
    body = {"name": name, "connections": connections}
    if fields.get("pattern") != "flow": body["schedule"] = {"model": "closed"}  # a flow's loop is closed unless paced
    body.update(fields)
    return body

def run(name, target, scen, data=None, server_pid=None):
    profile = {"version": 1, "name": name, "target": target, "duration": f"{seconds}s", "gracefulStop": "5s",
               "seed": 1, "scenarios": [scen]}
    if data: profile["data"] = data
    path = f"{work}/{name}.json"
    with open(path, "w") as f: json.dump(profile, f)
    out = f"{work}/{name}-report.json"
    command = [wsload, "run", path, "--quiet", "--out", out]
    if os.environ.get("PERF") == "1":
        command = ["perf", "record", "-g", "-o", f"{root}/perf-{name}.data", "--"] + command
    server_before = process_cpu(server_pid) if server_pid else 0
    started = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    server = (process_cpu(server_pid) - server_before) if server_pid else 0
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    try:
        with open(out) as f: report = json.load(f)
    except OSError:
        sys.exit(f"{name}: no report (exit {code}): {child.stderr.read().decode()[-2000:]}")
    metrics = report["total"]["metrics"]
    def count(metric): return (metrics.get(metric) or {}).get("count", 0)
    errors = sum(v for k, v in (metrics.get("errors") or {}).get("codes", {}).items()) if isinstance(metrics.get("errors"), dict) else 0
    return {"name": name, "exit": code, "cpu": cpu, "wall": wall, "server": server,
            "sent": count("ws.messages_sent"), "received": count("ws.messages_received"),
            "errors": count("errors") or errors}

rows = []
def show(row, base=None):
    per_sent = row["sent"] / max(row["cpu"], 1e-3)
    per_all = (row["sent"] + row["received"]) / max(row["cpu"], 1e-3)
    ratio = f"{base / per_sent:5.2f}x" if base else "    -"
    print(f"{row['name']:<14} exit {row['exit']:>2}  sent {row['sent']:>9,}  recv {row['received']:>9,}  "
          f"client {row['cpu']:6.2f} CPU-s / {row['wall']:5.1f} s ({100 * row['cpu'] / row['wall']:5.1f}%)  "
          f"server {row['server']:6.2f} CPU-s ({100 * row['server'] / row['wall']:5.1f}%)  "
          f"{per_sent:9,.0f} sent/CPU-s  {per_all:9,.0f} msgs/CPU-s  cost vs echo {ratio}  errors {row['errors']}",
          flush=True)
    return per_sent

echo = scenario("echo", pattern="echo", message={"size": 64, "format": "text"})
text_flow = scenario("flowtext", pattern="flow", steps=[{"loop": {"steps": [
    {"send": {"text": "hello ${seq} from ${vu} padding-padding-padding-padding"}},
    {"name": "echoed", "expect": {"text": {"regex": "^hello ([0-9]+)"}, "within": "5s"}}]}}])
json_flow = scenario("flowjson", pattern="flow", steps=[{"loop": {"steps": [
    {"send": {"json": {"type": "hello", "n": "${seq}", "from": "${vu}", "pad": "padding-padding"}}},
    {"name": "echoed", "expect": {"json": [{"path": "$.type", "equals": "hello"}], "within": "5s"}}]}}])

if "a" in parts:
    port = free_port()
    server = subprocess.Popen([wsload, "serve", "--port", str(port), "--loops", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port)
        target = f"ws://127.0.0.1:{port}/"
        print(f"(a) against wsload serve --loops 1 (pid {server.pid}), {connections} connections, {seconds} s each")
        for round in range(2):
            base = show(run("echo", target, echo, server_pid=server.pid))
            show(run("flow-text", target, text_flow, server_pid=server.pid), base)
            show(run("flow-json", target, json_flow, server_pid=server.pid), base)
    finally:
        server.terminate(); server.wait(timeout=30)

if "b" in parts:
    port = free_port()
    server = subprocess.Popen([wsload, "serve", "--port", str(port), "--loops", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(f"{work}/rooms.csv", "w") as f:
        f.write("room\n" + "".join(f"r{i // 10}\n" for i in range(connections)))
    chat = scenario("chat", pattern="flow", path="/chat",
                    classify=[{"type": "said", "json": [{"path": "$.type", "equals": "said"}]}], steps=[
        {"send": {"json": {"type": "join", "room": "${rooms.room}"}}},
        {"name": "join", "expect": {"json": [{"path": "$.type", "equals": "joined"}], "capture": {"me": "$.id"},
                                    "within": "10s", "onTimeout": "close"}},
        {"loop": {"steps": [
            {"send": {"json": {"type": "say", "room": "${rooms.room}", "text": "hello ${seq}"}}},
            {"name": "said", "expect": {"json": [{"path": "$.type", "equals": "said"},
                                                  {"path": "$.from", "equals": "${me}"}], "within": "5s"}}]}}])
    try:
        wait_listening(port)
        target = f"ws://127.0.0.1:{port}/"
        print(f"(b) /chat on wsload serve --loops 1, rooms of 10; per message sent (each say brings 10 saids back)")
        for round in range(2):
            base = show(run("echo", target, echo, server_pid=server.pid))
            show(run("chat", target, chat, data={"rooms": {"file": f"{work}/rooms.csv"}}, server_pid=server.pid), base)
    finally:
        server.terminate(); server.wait(timeout=30)

if "c" in parts:
    port = free_port()
    server = subprocess.Popen([sys.executable, f"{root}/Tests/Peers/socketio_server.py", "--port", str(port)],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sio = scenario("sio", pattern="flow", protocol="socketio", socketio={"namespace": "/", "timeout": "30s"}, steps=[
        {"loop": {"rate": 1, "per": "connection", "steps": [
            {"name": "echo", "emit": {"event": "echo", "args": [{"n": "${iteration}"}], "ack": True, "within": "10s"}}]}}])
    try:
        wait_listening(port)
        print(f"(c) Socket.IO: python-socketio (pid {server.pid}), emit echo + ack at 1/s per connection")
        show(run("socketio", f"ws://127.0.0.1:{port}/", sio, server_pid=server.pid))
    finally:
        server.stdin.close(); server.terminate(); server.wait(timeout=30)
PY
