#!/usr/bin/env python3
"""The read-back peaks of a report (issue 15): the peak RSS (wait4's ru_maxrss) of `wsload report R --html`,
`wsload merge R R2` and `wsload compare R R2`, R2 being a copy of R with another run id (merge refuses one run twice).
Used by scripts/bench-intervals.sh and scripts/bench-soak.sh; prints one line per command and a last `readback:` line
with the three figures. Figures are printed, never asserted.
Usage: scripts/readback-peaks.py WSLOAD REPORT WORKDIR"""
import json, os, subprocess, sys, time

def peak_kib(command):
    """(ru_maxrss in KiB, exit status, seconds) of `command`, its output discarded."""
    started = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    return usage.ru_maxrss, os.waitstatus_to_exitcode(status), time.monotonic() - started

def main():
    if len(sys.argv) != 4: sys.exit(__doc__)
    wsload, report, work = sys.argv[1:]
    with open(report) as f: document = json.load(f)
    document.setdefault("run", {})["id"] = "0" * 31 + "1" if document["run"].get("id") != "0" * 31 + "1" else "0" * 32
    other = os.path.join(work, "readback-copy.json")
    with open(other, "w") as f: json.dump(document, f)
    size = os.path.getsize(report) / 1e6
    entries = len(document.get("intervals", []))
    figures = []
    for name, command in [
        ("report --html", [wsload, "report", report, "--html", os.path.join(work, "readback.html")]),
        ("merge", [wsload, "merge", report, other, "--out", os.path.join(work, "readback-merged.json")]),
        ("compare", [wsload, "compare", report, other]),
    ]:
        kib, code, seconds = peak_kib(command)
        print(f"  read back ({size:.2f} MB, {entries} interval entries): {name}: peak RSS {kib / 1024:.1f} MiB, "
              f"exit {code}, {seconds:.1f} s", flush=True)
        figures.append(f"{name} {kib / 1024:.1f}")
    print("readback: peak RSS MiB: " + ", ".join(figures))

main()
