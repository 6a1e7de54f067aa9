#!/usr/bin/env bash
# Memory that does not grow with duration (issue 15 item 1): `wsload run` of a small echo profile against the
# embedded server with "report": {"interval": "100ms"} for MINUTES minutes (10 minutes = 6,000 intervals, the count
# of 8 h at 5 s), VmRSS of the wsload process sampled from /proc every 10 s.
# Prints RSS after the warm-up (1 minute), at the end of the load (the last sample within the duration), the growth
# between them, and the end-of-run peak (wait4's ru_maxrss: the stop and writing the report included); the report's
# size, its interval entries and factor; the interval log's size (the full-resolution journal kept beside the report
# when the series was downsampled); then the read-back peaks of the report (`report --html`, `merge`, `compare`:
# scripts/readback-peaks.py). Targets: growth < 5 MB after the warm-up over 10 minutes, report < 2 MB, the end-of-run
# and read-back peaks a small multiple of the steady state. Also prints the box's load average at the start and the
# end (the figures are this box's, shared).
# Usage: scripts/bench-intervals.sh [MINUTES]   (default 10; a decimal is fine, e.g. 0.5)
#        BUILD=0 skips the release build; WSLOAD=PATH runs another binary; CONNECTIONS=N (default 10);
#        MAX_INTERVALS=N sets report.maxIntervals (a build that knows the key).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-10}"
if [ "${BUILD:-1}" != 0 ]; then swift build -c release --product wsload 2>&1 | grep -E 'error|Compiling|Build' | tail -3; fi
wsload="${WSLOAD:-$PWD/.build/release/wsload}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" "$minutes" "$wsload" "${CONNECTIONS:-10}" "${MAX_INTERVALS:-}" "$PWD/scripts/readback-peaks.py" <<'PY'
import json, os, subprocess, sys, time

work, minutes, wsload, connections, max_intervals = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
readback = sys.argv[6]
seconds = max(1, int(round(minutes * 60)))
warmup, every = 60, 10
report = {"interval": "100ms"}
if max_intervals: report["maxIntervals"] = int(max_intervals)
profile = {
    "version": 1, "name": "bench-intervals", "target": "embedded", "duration": f"{seconds}s", "seed": 1, "loops": 1,
    "report": report,
    "scenarios": [{"name": "echo", "pattern": "echo", "connections": connections, "message": {"size": 64},
                   "schedule": {"model": "closed", "thinkTime": "10ms"}}],
}
with open(f"{work}/profile.json", "w") as f: json.dump(profile, f)
out = f"{work}/r.json"

def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"): return int(line.split()[1])
    except FileNotFoundError:
        return None
    return None

def load():
    with open("/proc/loadavg") as f: return " ".join(f.read().split()[:3])

print(f"bench-intervals: {seconds} s at 100 ms intervals ({seconds * 10:,} intervals), {connections} echo connections, "
      f"one loop; load average at the start {load()} on {os.cpu_count()} cores")
started = time.monotonic()
child = subprocess.Popen([wsload, "run", f"{work}/profile.json", "--quiet", "--out", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
samples = []  # (seconds since start, KiB)
next_sample = 0.0
while True:
    # wait4: the child's own peak RSS (ru_maxrss, KiB) comes with its exit status.
    pid, status, usage = os.wait4(child.pid, os.WNOHANG)
    if pid:
        child.returncode = os.waitstatus_to_exitcode(status)
        break
    now = time.monotonic() - started
    if now >= next_sample:
        value = rss_kib(child.pid)
        if value: samples.append((now, value))
        next_sample += every
    time.sleep(0.2)
error = child.stderr.read().decode(errors="replace")
if child.returncode not in (0, 3):
    sys.exit(f"wsload run exited {child.returncode}: {error}")
for at, value in samples: print(f"  {at:6.0f} s  {value / 1024:8.1f} MiB")
after_warmup = next((v for at, v in samples if at >= warmup), None)
# The end of the load: the last sample within the duration (later ones are the graceful stop and the report's writing:
# those are in the peak).
end = next((v for at, v in reversed(samples) if at <= seconds), None)
peak = max((v for _, v in samples), default=None)
mib = lambda kib: f"{kib / 1024:.1f} MiB"
if after_warmup is not None and end is not None:
    print(f"RSS after warm-up ({warmup} s): {mib(after_warmup)}; at the end of the load: {mib(end)}; "
          f"growth {(end - after_warmup) / 1024:+.1f} MiB; highest sample {mib(peak)}")
else:
    print(f"RSS: the run was shorter than the warm-up; at the end {mib(end) if end else 'n/a'}, highest sample {mib(peak) if peak else 'n/a'}")
print(f"end-of-run peak RSS (wait4 ru_maxrss of the run: the stop and writing the report included): {mib(usage.ru_maxrss)}"
      + (f"; {usage.ru_maxrss / end:.2f}x the RSS at the end of the load" if end else ""))
with open(out) as f: document = json.load(f)
series = document.get("intervalSeries") or {}
print(f"report: {os.path.getsize(out) / 1e6:.2f} MB, {len(document.get('intervals', []))} interval entries, "
      f"factor {series.get('factor', 1)}, {series.get('count', len(document.get('intervals', [])))} base intervals")
log = series.get("file")
if log:
    path = os.path.join(work, log)
    size = os.path.getsize(path) if os.path.exists(path) else None
    print(f"interval log: {log}, " + (f"{size / 1e6:.1f} MB" if size is not None else "missing"))
else:
    print("interval log: none (the report holds every interval, or this build keeps none)")
rtt = document["total"]["metrics"].get("ws.message_rtt", {})
print(f"messages received: {document['total']['metrics'].get('ws.messages_received', {}).get('count', 0):,}; "
      f"rtt p99 {rtt.get('p99', 0)} us; load average at the end {load()}")
sys.stdout.flush()
subprocess.run([sys.executable, readback, wsload, out, work], check=False)
PY
