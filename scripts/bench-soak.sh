#!/usr/bin/env bash
# The soak figure (issue 15): does wsload's memory stay flat over a long run? RSS sampled every minute.
usage() {
    cat <<'EOF'
Usage: scripts/bench-soak.sh [MINUTES] [MODE...]
       scripts/bench-soak.sh --help

Runs soak traffic for MINUTES (default 30) per mode and samples the resident memory (VmRSS from
/proc/PID/status) of the processes involved at the start and then every minute, on loopback, with the
release build. MODEs (default: serve storm):

  serve   Profiles/soak.json (500 connections, a 1 KiB text echo per second each, pings every 20 s)
          against `wsload serve` in its own process on 127.0.0.1 (a free port): `wsload run ... --target
          ws://127.0.0.1:PORT/ --duration <MINUTES>m`. Samples the client's and the server's RSS, and the
          server's once more after the client has gone.
  storm   Profiles/soak-storm.json: the same traffic over 1,000 connections against the embedded server
          (client and server share the process, which chaos needs), with a chaos event every 2 minutes
          (kill, reset, close 1012, kill, a 2 s restart; a 10-minute cycle). Samples that process's RSS.
          The profile's timeline is written for 30 minutes: a shorter run keeps the events before its end,
          a longer one repeats the timeline every 30 minutes (a copy of the profile in the work directory).

For each mode it prints the table (minute, RSS in MiB, the 1-minute load average), the growth after
the first 2 minutes (minute 2 to the last sample, and the least-squares slope over those minutes), the
peak (VmHWM: the end of the run, the stop and the report's writing included), the read-back peaks of the report
(`report --html`, `merge`, `compare`, from scripts/readback-peaks.py), the run's exit code (0 ok, 3 thresholds failed, 4 invariant violations, 124 killed by the
time limit) and the report's key figures; at the end a compact summary to paste into a note. The script
exits 1 when a run wrote no report or ended other than 0, 3 or 4 (64 for bad arguments). Minute
MINUTES is sampled 5 s before the run's duration ends, so every row is steady traffic (the stop and the
report's writing show only in the peak). Every process runs under `timeout` (the run's duration plus
its graceful stop plus 3 minutes); Ctrl-C (or SIGTERM) ends them with the script.

Environment:
  BUILD=0          skip `swift build -c release --product wsload`
  WSLOAD=PATH      the wsload binary to run (default .build/release/wsload)
  INTERVAL=DUR     replace the profiles' report.interval (soak.json says 1m) in a copy, e.g. INTERVAL=1s
                   for many more report intervals in the same time
  OUT=DIR          keep the reports, the profiles as run, stderr and the samples (samples-MODE.tsv) in DIR
                   (default: a temporary directory, removed at the end)

The box is shared: the load average (uptime) is printed at the start, per sample and at the end; say it
with the figures. Figures are printed, never asserted.
EOF
}
set -euo pipefail
case "${1:-}" in -h|--help|help) usage; exit 0 ;; esac
cd "$(dirname "$0")/.."
minutes="${1:-30}"
if ! [[ "$minutes" =~ ^[0-9]+$ ]] || [ "$minutes" -lt 1 ] || [ "$minutes" -gt 10080 ]; then
    echo "bench-soak: MINUTES must be a whole number of minutes from 1 to 10080, not \"$minutes\" (see --help)" >&2
    exit 64
fi
if [ $# -gt 0 ]; then shift; fi
modes=("$@")
if [ ${#modes[@]} -eq 0 ]; then modes=(serve storm); fi
for mode in "${modes[@]}"; do
    case "$mode" in serve|storm) ;; *) echo "bench-soak: unknown mode \"$mode\" (serve or storm; see --help)" >&2; exit 64 ;; esac
done
for tool in timeout python3; do
    command -v "$tool" >/dev/null || { echo "bench-soak: needs $tool on PATH" >&2; exit 69; }
done
if [ -n "${WSLOAD:-}" ]; then
    [ -x "$WSLOAD" ] || { echo "bench-soak: WSLOAD=$WSLOAD is not an executable" >&2; exit 66; }
elif [ "${BUILD:-1}" != 0 ]; then
    log=$(mktemp)
    echo "building wsload (release)..." >&2
    if ! swift build -c release --product wsload >"$log" 2>&1; then
        tail -30 "$log" >&2; rm -f "$log"; echo "bench-soak: the release build failed" >&2; exit 1
    fi
    rm -f "$log"
fi
wsload="${WSLOAD:-$PWD/.build/release/wsload}"
[ -x "$wsload" ] || { echo "bench-soak: no $wsload (build it, or give WSLOAD=PATH)" >&2; exit 66; }
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"; work=$(cd "$OUT" && pwd)
else
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi
python3 - "$work" "$minutes" "$wsload" "$PWD" "${INTERVAL:-}" "${modes[@]}" <<'PY'
import json, os, re, select, signal, subprocess, sys, time

work, minutes, wsload, root, interval = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
modes = sys.argv[6:]
STOP_MARGIN = 5  # the last row is sampled this many seconds before the duration ends
started_processes = []  # the `timeout` wrappers this script started: ended with it (timeout passes the signal on)

def end_started_processes(signum=None, frame=None):
    for process in started_processes:
        if process.poll() is None:
            try: process.send_signal(signal.SIGTERM)
            except OSError: pass
    if signum is not None: sys.exit(128 + signum)

signal.signal(signal.SIGTERM, end_started_processes)
signal.signal(signal.SIGINT, end_started_processes)

def uptime():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: %.2f, %.2f, %.2f" % os.getloadavg()

def seconds_of(text):
    """A profile duration ("500ms", "1m", "2h") in seconds."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(us|ms|s|m|h)", text)
    if not match: sys.exit(f"bench-soak: {text!r} is not a duration")
    return float(match.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[match.group(2)]

def duration_text(seconds):
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{int(seconds * 1000)}ms"

def status_kib(pid, field):
    """VmRSS or VmHWM of pid in KiB, or None when the process has gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"): return int(line.split()[1])
    except OSError:
        pass
    return None

def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f: fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None

def child_of(pid, deadline=10):
    """The process `timeout` (pid) started: the one whose memory counts."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f: children = f.read().split()
            if children: return int(children[0])
        except OSError:
            return None
        time.sleep(0.02)
    return None

def mib(kib): return "-" if kib is None else f"{kib / 1024:.1f}"

def bounded(limit_seconds, command, signal_name="INT"):
    # SIGINT first (wsload stops gracefully and writes what it collected), SIGKILL 60 s later.
    return ["timeout", f"--signal={signal_name}", "--kill-after=60", f"{int(limit_seconds)}s"] + command

def profile_copy(name, source, run_seconds, storm):
    """The profile as it runs: the shipped file, or a copy with INTERVAL and (storm) the chaos timeline fitted."""
    with open(source) as f: profile = json.load(f)
    changed = False
    if interval:
        profile.setdefault("report", {})["interval"] = interval; changed = True
    if storm and profile.get("chaos"):
        period = seconds_of(profile["duration"])
        events, cycle = [], 0
        while cycle * period < run_seconds:
            for event in profile["chaos"]:
                at = seconds_of(event["at"]) + cycle * period
                if at < run_seconds: events.append(dict(event, at=duration_text(at)))
            cycle += 1
        if events != profile["chaos"]:
            profile["chaos"] = events; changed = True
    if not changed: return source, profile
    path = os.path.join(work, f"{name}-profile.json")
    with open(path, "w") as f: json.dump(profile, f, indent=2)
    return path, profile

def start_server(limit):
    command = bounded(limit, [wsload, "serve", "--port", "0"], "TERM")
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve-stderr.txt"), "w"))
    started_processes.append(server)
    pid = child_of(server.pid)
    end, line = time.monotonic() + 60, b""
    while time.monotonic() < end and b"\n" not in line:
        ready, _, _ = select.select([server.stdout], [], [], 1)
        if ready:
            chunk = os.read(server.stdout.fileno(), 4096)
            if not chunk: break
            line += chunk
    match = re.search(rb"listening on (ws://127\.0\.0\.1:([0-9]+)/)", line)
    if not match or pid is None:
        server.kill()
        sys.exit(f"bench-soak: wsload serve did not start listening within 60 s: {line.decode(errors='replace')}")
    return server, pid, match.group(1).decode()

def stop_server(server, pid):
    if pid and server.poll() is None: os.kill(pid, signal.SIGTERM)
    try:
        out, _ = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill(); out, _ = server.communicate()
    text = out.decode(errors="replace").strip().splitlines()
    return text[-1] if text else ""

def run_sampled(name, profile_path, duration_seconds, graceful_seconds, extra, watched, client_label="client"):
    """Runs the client under timeout, sampling RSS of the client (and `watched` processes) every minute."""
    report = os.path.join(work, f"{name}-report.json")
    limit = duration_seconds + graceful_seconds + 180
    command = bounded(limit, [wsload, "run", profile_path, "--duration", f"{minutes}m", "--quiet", "--out", report] + extra)
    stderr = open(os.path.join(work, f"{name}-stderr.txt"), "w")
    started = time.monotonic()
    runner = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    started_processes.append(runner)
    client = child_of(runner.pid)
    if client is None: sys.exit(f"bench-soak: {name}: wsload run did not start")
    pids = [(client_label, client)] + watched
    cpu_before = {label: cpu_seconds(pid) for label, pid in watched}
    plan = [(0, 1.0)] + [(m, m * 60.0) for m in range(1, minutes)] + [(minutes, minutes * 60.0 - STOP_MARGIN)]
    rows, peak, status, usage = [], {}, None, None
    for minute, at in plan:
        while status is None and time.monotonic() - started < at:
            time.sleep(min(1.0, max(0.01, at - (time.monotonic() - started))))
            done, status_word, rusage = os.wait4(runner.pid, os.WNOHANG)
            if done: status, usage = status_word, rusage
        if status is not None: break
        row = {"minute": minute, "seconds": round(time.monotonic() - started, 1), "load": os.getloadavg()[0]}
        for label, pid in pids:
            row[label] = status_kib(pid, "VmRSS")
            hwm = status_kib(pid, "VmHWM")
            if hwm is not None: peak[label] = max(peak.get(label, 0), hwm)
        rows.append(row)
        print(f"  {name} minute {minute:>3} ({row['seconds']:7.1f} s): " +
              "  ".join(f"{label} {mib(row[label])} MiB" for label, _ in pids) + f"  load {row['load']:.2f}", flush=True)
    while status is None:
        for label, pid in pids:  # the stop and the report's writing: only the peak
            hwm = status_kib(pid, "VmHWM")
            if hwm is not None: peak[label] = max(peak.get(label, 0), hwm)
        done, status_word, rusage = os.wait4(runner.pid, os.WNOHANG)
        if done: status, usage = status_word, rusage
        else: time.sleep(0.5)
    wall = time.monotonic() - started
    stderr.close()
    peak[client_label] = max(peak.get(client_label, 0), usage.ru_maxrss)  # KiB on Linux: the stop included
    cpu = {client_label: usage.ru_utime + usage.ru_stime}
    for label, pid in watched:
        after = cpu_seconds(pid)
        cpu[label] = (after - cpu_before[label]) if after is not None and cpu_before[label] is not None else None
    return {"rows": rows, "peak": peak, "exit": os.waitstatus_to_exitcode(status), "wall": wall, "cpu": cpu,
            "report": report, "labels": [label for label, _ in pids]}

def growth(rows, label):
    """(rss at minute 2, rss at the last row, difference, least-squares MiB per minute) in KiB, from minute 2 on."""
    points = [(r["minute"], r[label]) for r in rows if r["minute"] >= 2 and r.get(label) is not None]
    if len(points) < 2: return None
    n = len(points); mx = sum(m for m, _ in points) / n; my = sum(v for _, v in points) / n
    slope = sum((m - mx) * (v - my) for m, v in points) / max(sum((m - mx) ** 2 for m, _ in points), 1e-9)
    return points[0][1], points[-1][1], points[-1][1] - points[0][1], slope

def figures(path):
    try:
        with open(path) as f: report = json.load(f)
    except (OSError, ValueError) as error:
        return None, f"no report ({error})"
    metrics = report.get("total", {}).get("metrics", {})
    def count(name): return (metrics.get(name) or {}).get("count", 0)
    rtt = metrics.get("ws.message_rtt") or {}
    recovery = metrics.get("ws.reconnect_recovery") or {}
    errors = metrics.get("errors") or {}
    invariants = report.get("invariants") or {}
    violations = sum(v.get("violations", 0) for v in invariants.values())
    checks = sum(v.get("checked", 0) for v in invariants.values())
    failed = [t["expression"] for t in report.get("thresholds", []) if not t.get("passed")]
    def ms(us): return "-" if us is None else f"{us / 1000:.1f} ms"
    f = {
        "commit": (report.get("tool", {}).get("commit") or "")[:10],
        "sent": count("ws.messages_sent"), "received": count("ws.messages_received"), "lost": count("ws.messages_lost"),
        "errors": errors.get("count", 0), "byCode": errors.get("byCode", {}),
        "p50": ms(rtt.get("p50")), "p99": ms(rtt.get("p99")), "p999": ms(rtt.get("p99.9")), "max": ms(rtt.get("max")),
        "reconnects": count("ws.reconnects"), "recovery_p99": ms(recovery.get("p99")),
        "chaos": len(report.get("chaos") or []), "chaos_hit": sum(e.get("affected", 0) for e in report.get("chaos") or []),
        "held": report.get("invariantsHeld"), "violations": violations, "checks": checks,
        "violated": sorted(k for k, v in invariants.items() if v.get("violations")),
        "failed": failed, "intervals": len(report.get("intervals") or []),
        "bytes": os.path.getsize(path), "elapsed": report.get("run", {}).get("elapsedSeconds"),
    }
    return f, None

def describe(name, result, f, note, extra_rows=()):
    labels = result["labels"]
    print(f"\n== {name}: {minutes} min, exit {result['exit']}, {result['wall']:.0f} s wall ==")
    print("minute  " + "  ".join(f"{label + ' RSS MiB':>16}" for label in labels) + "   load(1m)")
    for r in result["rows"]:
        tag = f"{r['minute']}*" if r["minute"] == minutes else str(r["minute"])
        print(f"{tag:>6}  " + "  ".join(f"{mib(r[label]):>16}" for label in labels) + f"   {r['load']:8.2f}")
    for tag, values in extra_rows:
        print(f"{tag:>6}  " + "  ".join(f"{values.get(label, ''):>16}" for label in labels))
    print(f"peak    " + "  ".join(f"{mib(result['peak'].get(label)):>16}" for label in labels) + "   (VmHWM, stop included)")
    if any(r["minute"] == minutes for r in result["rows"]): print(f"(* sampled {STOP_MARGIN} s before the duration ends)")
    for label in labels:
        g = growth(result["rows"], label)
        if g: print(f"growth {label}: minute 2 {mib(g[0])} MiB -> last {mib(g[1])} MiB: {g[2] / 1024:+.1f} MiB "
                    f"(slope {g[3] / 1024:+.2f} MiB/min)")
        else: print(f"growth {label}: needs samples at minute 2 and later (run 3 minutes or more)")
    cpu = "  ".join(f"{label} {v:.1f} CPU-s" for label, v in result["cpu"].items() if v is not None)
    print(f"cpu: {cpu} over {result['wall']:.0f} s")
    if f is None or result["exit"] not in (0, 3, 4):
        try:
            with open(os.path.join(work, f"{name.split()[0]}-stderr.txt")) as err: tail = err.read().strip().splitlines()[-20:]
        except OSError:
            tail = []
        if tail: print("wsload run's stderr (last lines):\n  " + "\n  ".join(tail))
    if f is None:
        print(f"report: {note}")
        return
    print(f"report: {f['bytes'] / 1e6:.2f} MB, {f['intervals']} intervals, elapsed {f['elapsed']} s"
          + (f", commit {f['commit']}" if f["commit"] else ""))
    print(f"messages: sent {f['sent']:,}, received {f['received']:,}, lost {f['lost']:,}; errors {f['errors']:,} "
          f"{json.dumps(f['byCode'], sort_keys=True) if f['byCode'] else ''}")
    print(f"rtt: p50 {f['p50']}, p99 {f['p99']}, p99.9 {f['p999']}, max {f['max']}")
    if f["reconnects"] or f["chaos"]:
        print(f"chaos: {f['chaos']} events hit {f['chaos_hit']:,} connections; reconnects {f['reconnects']:,}, "
              f"recovery p99 {f['recovery_p99']}")
    print(f"invariants: {'held' if f['held'] else 'VIOLATED ' + ', '.join(f['violated'])} "
          f"({f['violations']:,} violations in {f['checks']:,} checks)")
    print(f"thresholds: {'all passed' if not f['failed'] else 'failed: ' + '; '.join(f['failed'])}")

def summary_line(name, result, f):
    parts = []
    for label in result["labels"]:
        g = growth(result["rows"], label)
        series = " ".join(mib(r[label]) for r in result["rows"])
        grown = f"{g[2] / 1024:+.1f} MiB after min 2 ({g[3] / 1024:+.2f}/min)" if g else "growth n/a"
        parts.append(f"{label} RSS MiB/min [{series}] {grown}, peak {mib(result['peak'].get(label))}")
    line = f"{name}: exit {result['exit']}; " + "; ".join(parts)
    if f:
        line += (f"; {f['sent']:,} sent / {f['received']:,} received, {f['errors']:,} errors, p99 {f['p99']}, "
                 f"invariants {'held' if f['held'] else 'violated'} ({f['violations']} violations)")
        if f["chaos"]: line += f", {f['chaos']} chaos event{'s' if f['chaos'] != 1 else ''}, {f['reconnects']:,} reconnects (recovery p99 {f['recovery_p99']})"
        line += f", report {f['bytes'] / 1e6:.2f} MB / {f['intervals']} intervals"
    if result.get("readback"): line += f"; read back: {result['readback']}"
    return line

print(f"bench-soak: {minutes} min per mode ({' '.join(modes)}), {wsload}, {os.cpu_count()} cores, work dir {work}")
print(f"start: {uptime()}", flush=True)
start_load = os.getloadavg()
summaries, failed_modes = [], []
for mode in modes:
    if mode == "serve":
        path, profile = profile_copy("serve", os.path.join(root, "Profiles/soak.json"), minutes * 60, storm=False)
        graceful = seconds_of(profile.get("gracefulStop", "5s"))
        server, server_pid, url = start_server(minutes * 60 + graceful + 300)
        print(f"serve: wsload serve pid {server_pid} at {url}; {path}", flush=True)
        try:
            result = run_sampled("serve", path, minutes * 60, graceful, ["--target", url], [("server", server_pid)])
            time.sleep(5)
            after = {"server": mib(status_kib(server_pid, "VmRSS"))}
        finally:
            stopped = stop_server(server, server_pid)
        f, note = figures(result["report"])
        describe("serve", result, f, note, [("after", after)])
        if stopped: print(f"server: {stopped}")
    else:
        path, profile = profile_copy("storm", os.path.join(root, "Profiles/soak-storm.json"), minutes * 60, storm=True)
        graceful = seconds_of(profile.get("gracefulStop", "5s"))
        print(f"storm: {len(profile.get('chaos', []))} chaos events; {path}", flush=True)
        result = run_sampled("storm", path, minutes * 60, graceful, [], [], client_label="process")
        f, note = figures(result["report"])
        describe("storm (client and embedded server in one process)", result, f, note)
    with open(os.path.join(work, f"samples-{mode}.tsv"), "w") as out:
        out.write("minute\tseconds\t" + "\t".join(f"{l}_rss_kib" for l in result["labels"]) + "\tload1\n")
        for r in result["rows"]:
            out.write(f"{r['minute']}\t{r['seconds']}\t" + "\t".join(str(r[l]) for l in result["labels"]) + f"\t{r['load']:.2f}\n")
    if f is not None:
        readback = subprocess.run([sys.executable, os.path.join(root, "scripts/readback-peaks.py"), wsload, result["report"], work],
                                  capture_output=True, text=True).stdout
        print(readback, end="", flush=True)
        result["readback"] = next((l[len("readback: "):] for l in readback.splitlines() if l.startswith("readback: ")), None)
    summaries.append(summary_line(mode, result, f))
    if f is None or result["exit"] not in (0, 3, 4): failed_modes.append(f"{mode} (exit {result['exit']})")

print(f"\nend: {uptime()}")
print("\n---- summary (paste into a note) ----")
if os.environ.get("WSLOAD"):
    binary = wsload
else:
    def git(*arguments):
        return subprocess.run(["git", "-C", root, *arguments], capture_output=True, text=True).stdout.strip()
    sources = git("log", "-1", "--format=%h", "--", "Sources", "Package.swift") or "?"
    if git("status", "--porcelain", "--", "Sources", "Package.swift"): sources += " plus uncommitted changes"
    binary = f"release build of {root} (Sources as of {sources})"
print(f"wsload soak, {minutes} min per mode, {binary}, "
      f"{os.cpu_count()} cores shared; load avg start {' '.join(f'{x:.2f}' for x in start_load)}, "
      f"end {' '.join(f'{x:.2f}' for x in os.getloadavg())}" + (f"; report.interval {interval}" if interval else ""))
for line in summaries: print(line)
if failed_modes:
    sys.exit(f"bench-soak: no complete figures from {', '.join(failed_modes)}: see the lines above")
PY
