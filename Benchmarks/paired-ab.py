#!/usr/bin/env python3
# Paired A/B of two wsload builds on this noisy box (issue 17): short runs that alternate the binaries (the order
# flips every round), each against the same `wsload serve --loops 1` (the first binary's) on 127.0.0.1, so both
# see the same minute; per run the client's CPU (wait4 user + system) per message sent; per scenario the medians
# and the median of the round-by-round ratios B/A, which is steadier than either median when the box's speed drifts.
# Scenarios: echo (closed, 64-byte text), open (the open model, 64-byte text, 10 messages/s per connection), fj (flow:
# send json, expect $.type), ft (flow: send text, expect regex).
# Usage: Benchmarks/paired-ab.py A,B SCENARIOS ROUNDS [DURATION]   e.g. Benchmarks/paired-ab.py old/wsload,new/wsload echo,open,fj 8 3s
#        CONNS=N connections per run (default 500). Every run is bounded by its profile's duration.
import json, os, shutil, socket, subprocess, sys, tempfile, time, statistics
bins = sys.argv[1].split(",")          # A,B paths
names = sys.argv[2].split(",")         # scenario names: echo,fj,ft
rounds = int(sys.argv[3]); seconds = sys.argv[4] if len(sys.argv) > 4 else "3s"
conns = int(os.environ.get("CONNS", "500"))
work = tempfile.mkdtemp(prefix="paired-ab-")
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]
port = free_port()
server = subprocess.Popen([bins[0], "serve", "--port", str(port), "--loops", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(100):  # up to 10 s for the server to listen
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
    except OSError:
        time.sleep(0.1)
scen = {
 "echo": {"name":"echo","connections":conns,"schedule":{"model":"closed"},"pattern":"echo","message":{"size":64,"format":"text"}},
 "open": {"name":"open","connections":conns,"schedule":{"model":"open","rate":10 * conns,"per":"total"},"pattern":"echo",
          "message":{"size":64,"format":"text"}},
 "fj": {"name":"fj","connections":conns,"pattern":"flow","steps":[{"loop":{"steps":[
    {"send": {"json": {"type": "hello", "n": "${seq}", "from": "${vu}", "pad": "padding-padding"}}},
    {"name": "echoed", "expect": {"json": [{"path": "$.type", "equals": "hello"}], "within": "5s"}}]}}]},
 "ft": {"name":"ft","connections":conns,"pattern":"flow","steps":[{"loop":{"steps":[
    {"send": {"text": "hello ${seq} from ${vu} padding-padding-padding-padding"}},
    {"name": "echoed", "expect": {"text": {"regex": "^hello ([0-9]+)"}, "within": "5s"}}]}}]},
}
res = {(b, n): [] for b in range(len(bins)) for n in names}
try:
    for r in range(rounds):
        for n in names:
            for b in (range(len(bins)) if r % 2 == 0 else reversed(range(len(bins)))):
                prof = {"version":1,"name":n,"target":f"ws://127.0.0.1:{port}/","duration":seconds,"gracefulStop":"5s","seed":1,"scenarios":[scen[n]]}
                json.dump(prof, open(f"{work}/{n}.json","w"))
                child = subprocess.Popen([bins[b], "run", f"{work}/{n}.json", "--quiet", "--out", f"{work}/report.json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, st, ru = os.wait4(child.pid, 0)
                m = json.load(open(f"{work}/report.json"))["total"]["metrics"]
                sent = m["ws.messages_sent"]["count"]
                res[(b, n)].append((ru.ru_utime + ru.ru_stime) / sent * 1e6)
finally:
    server.terminate(); server.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)
for n in names:
    meds = [statistics.median(res[(b, n)]) for b in range(len(bins))]
    pairs = [res[(1, n)][i] / res[(0, n)][i] for i in range(rounds)] if len(bins) > 1 else []
    print(f"{n:5s} " + "  ".join(f"bin{b}: median {meds[b]:6.2f} us/sent  [{min(res[(b,n)]):.2f}..{max(res[(b,n)]):.2f}]" for b in range(len(bins)))
          + (f"  B/A paired median {statistics.median(pairs):.3f}" if pairs else ""))
if "echo" in names:
    for b in range(len(bins)):
        e = statistics.median(res[(b, "echo")])
        print(f"bin{b}: " + "  ".join(f"{n} {statistics.median(res[(b, n)]) / e:.2f}x echo" for n in names if n != "echo"))
