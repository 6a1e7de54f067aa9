#!/usr/bin/env bash
# Figures for `wsload run --processes` (issue 16), printed, never asserted:
#   1. Profiles/reconnect-storm.json as shipped (no --processes: auto applies when one process cannot hold it):
#      processes used, invariant violations, reconnect recovery p99, peak RSS of every process.
#   2. 36,000 echo connections at once across local processes against embedded servers in their own processes
#      (127.0.0.1 and 127.0.0.2), merged: connect p99 and peak RSS per connection.
# Usage: scripts/bench-processes.sh [storm|36k|all]   (release build; a few minutes each; loopback only)
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
swift build -c release >/dev/null
wsload=$(pwd)/.build/release/wsload
work=$(mktemp -d "${TMPDIR:-/tmp}/wsload-bench-processes.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Samples the peak RSS (VmHWM, kB) of every wsload process whose command line names $1, until $2 (a pid) ends;
# prints "role kB" lines.
sample_rss() {
    local marker=$1 watched=$2
    declare -A peak role
    while kill -0 "$watched" 2>/dev/null; do
        for status in /proc/[0-9]*/status; do
            local pid=${status#/proc/}; pid=${pid%/status}
            local cmdline
            cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
            [[ "$cmdline" == *"$marker"* && "$cmdline" == *wsload* ]] || continue
            local hwm
            hwm=$(awk '/^VmHWM/ {print $2}' "$status" 2>/dev/null) || continue
            [[ -n "$hwm" ]] || continue
            if [[ "$cmdline" == *--profile-server* ]]; then role[$pid]="server"
            elif [[ "$cmdline" == *--shard* ]]; then role[$pid]="shard $(sed -E 's/.*--shard ([0-9]+\/[0-9]+).*/\1/' <<<"$cmdline")"
            else role[$pid]="parent"; fi
            (( hwm > ${peak[$pid]:-0} )) && peak[$pid]=$hwm
        done
        sleep 1
    done
    for pid in "${!peak[@]}"; do echo "${role[$pid]} (pid $pid) ${peak[$pid]}"; done | sort
}

figure() {  # figure REPORT JQ-LIKE-PYTHON-EXPRESSION
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); m=r['total']['metrics']; print($2)" "$1"
}

if [[ $which == storm || $which == all ]]; then
    echo "== Profiles/reconnect-storm.json as shipped (limit $(ulimit -Hn) open files)"
    start=$SECONDS
    "$wsload" run Profiles/reconnect-storm.json --out "$work/storm.json" --quiet 2>"$work/storm.err" &
    run=$!
    sample_rss "reconnect-storm.json" "$run" >"$work/storm.rss" &
    sampler=$!
    status=0; wait "$run" || status=$?
    wait "$sampler"
    echo "exit $status after $((SECONDS - start)) s; $(grep -m1 'running' "$work/storm.err" || echo 'one process')"
    figure "$work/storm.json" "'violations', sum(v['violations'] for v in r['invariants'].values()), '| reconnects', m['ws.reconnects']['count'], '| recovery n', m['ws.reconnect_recovery']['count'], 'p99', m['ws.reconnect_recovery']['p99'], 'us | connections opened', m['ws.connections_opened']['count'], '| chaos', [(c['action'], c['affected']) for c in r.get('chaos', [])]"
    echo "peak RSS (kB):"; sed 's/^/  /' "$work/storm.rss"
fi

if [[ $which == 36k || $which == all ]]; then
    echo "== 36,000 echo connections at once, --processes auto (servers in their own processes)"
    cat >"$work/36k.json" <<'PROFILE'
{"version": 1, "name": "bench-36k", "target": "embedded", "duration": "60s", "gracefulStop": "30s",
 "scenarios": [{"name": "echo", "pattern": "echo",
                "stages": [{"target": 36000, "duration": "30s"}, {"target": 36000, "duration": "30s"}],
                "message": {"size": 32}, "schedule": {"model": "closed", "thinkTime": "5s"}}]}
PROFILE
    start=$SECONDS
    "$wsload" run "$work/36k.json" --processes auto --out "$work/36k-report.json" --quiet 2>"$work/36k.err" &
    run=$!
    sample_rss "36k.json" "$run" >"$work/36k.rss" &
    sampler=$!
    status=0; wait "$run" || status=$?
    wait "$sampler"
    echo "exit $status after $((SECONDS - start)) s; $(grep -m1 'running' "$work/36k.err" || echo 'one process')"
    figure "$work/36k-report.json" "'connections opened', m['ws.connections_opened']['count'], '| peak live', max(i['connections'] for i in r['intervals']), '| connect p99', m['ws.connect']['p99'], 'us | upgrade p99', m['ws.upgrade']['p99'], 'us | violations', sum(v['violations'] for v in r['invariants'].values()), '| errors', r.get('errors')"
    echo "peak RSS (kB):"; sed 's/^/  /' "$work/36k.rss"
    awk '/^shard/ {c += $NF} /^server/ {s += $NF} END {printf "per connection: clients %.1f KB, servers %.1f KB\n", c/36000, s/36000}' "$work/36k.rss"
fi
