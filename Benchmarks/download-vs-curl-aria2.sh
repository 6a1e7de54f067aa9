#!/usr/bin/env bash
# `wsload download` beside curl and aria2c, back to back, fetching one file from nginx on loopback:
#   wsload single stream and ranged (4, 8, 16 segments) vs `curl` and `aria2c -x16 -s16`:
#   wall time, MB/s, CPU seconds (user + system) per GiB. Each tool runs RUNS times; the best wall time and
#   the median CPU are reported, and ratios against curl and aria2c.
# Then `wsload run` of 1,000 concurrent 1 MiB downloads (Profiles/downloads-1k.json against the embedded
# server): downloads per second.
# Usage: Benchmarks/download-vs-curl-aria2.sh [SIZE_MIB] [RUNS]   (default 1024 and 3)
# Needs: nginx, curl, aria2 (apt).
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib="${1:-1024}"
runs="${2:-3}"
swift build -c release --product wsload >/dev/null
wsload="$PWD/.build/release/wsload"
work=$(mktemp -d /var/tmp/wsload-bench.XXXXXX)
nginx_pid=""
trap '[[ -n "$nginx_pid" ]] && kill "$nginx_pid" 2>/dev/null; rm -rf "$work"' EXIT

mkdir -p "$work/root" "$work/out" "$work/nginx/logs"
head -c "$((size_mib * 1024 * 1024))" /dev/urandom > "$work/root/file.bin"
expected=$(sha256sum "$work/root/file.bin" | cut -d' ' -f1)
port=$((30000 + RANDOM % 10000))
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    server { listen 127.0.0.1:$port; root $work/root; location / { } }
}
CONF
/usr/sbin/nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
url="http://127.0.0.1:$port/file.bin"

# measure NAME COMMAND...: runs it $runs times; prints "NAME best_wall median_cpu".
measure() {
    local name="$1"; shift
    local walls=() cpus=()
    for _ in $(seq "$runs"); do
        rm -rf "$work/out"/*
        sync
        local start end usage
        start=$(date +%s.%N)
        usage=$( { /usr/bin/env time -f "%U %S" "$@" >/dev/null 2>"$work/err"; } 2>&1; tail -1 "$work/err")
        end=$(date +%s.%N)
        local got
        got=$(sha256sum "$work/out/file.bin" | cut -d' ' -f1)
        [[ "$got" == "$expected" ]] || { echo "$name: wrong digest" >&2; cat "$work/err" >&2; exit 1; }
        walls+=("$(echo "$end - $start" | bc -l)")
        cpus+=("$(echo "$usage" | awk '{print $1 + $2}')")
    done
    local best median
    best=$(printf '%s\n' "${walls[@]}" | sort -g | head -1)
    median=$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
    echo "$name $best $median"
}

results=()
results+=("$(measure curl curl -s -o "$work/out/file.bin" "$url")")
results+=("$(measure aria2c-x16-s16 aria2c -q -x16 -s16 -k1M --file-allocation=none --allow-overwrite=true -d "$work/out" -o file.bin "$url")")
results+=("$(measure wsload-1 "$wsload" download "$url" -o "$work/out/file.bin" --quiet)")
for segments in 4 8 16; do
    results+=("$(measure "wsload-$segments" "$wsload" download "$url" -o "$work/out/file.bin" --segments "$segments" --quiet)")
done

echo
echo "$size_mib MiB from nginx on loopback, best of $runs (CPU: median, user + system, of the client process)"
printf '%-16s %9s %10s %12s %10s %10s\n' tool "wall s" "MB/s" "CPU s/GiB" "vs curl" "vs aria2c"
curl_rate=""; aria_rate=""; curl_cpu=""
for line in "${results[@]}"; do
    read -r name wall cpu <<<"$line"
    rate=$(echo "$size_mib * 1.048576 / $wall" | bc -l)
    cpu_gib=$(echo "$cpu * 1024 / $size_mib" | bc -l)
    [[ "$name" == curl ]] && { curl_rate=$rate; curl_cpu=$cpu_gib; }
    [[ "$name" == aria2c* ]] && aria_rate=$rate
    printf '%-16s %9.3f %10.0f %12.3f %9.2fx %9.2fx  (CPU %.2fx curl)\n' "$name" "$wall" "$rate" "$cpu_gib" \
        "$(echo "$rate / $curl_rate" | bc -l)" "$(echo "$rate / ${aria_rate:-$rate}" | bc -l)" "$(echo "$cpu_gib / $curl_cpu" | bc -l)"
done

[[ -n "${SKIP_PROFILE:-}" ]] && exit 0
echo
echo "1,000 concurrent 1 MiB downloads (Profiles/downloads-1k.json, embedded server in the same process):"
# A failed threshold (exit 3, e.g. transfer_duration p99 on a loaded box) still leaves the report to read.
status=0
"$wsload" run Profiles/downloads-1k.json --quiet --out "$work/downloads.json" || status=$?
[[ -f "$work/downloads.json" ]] || { echo "wsload run exited $status without a report" >&2; exit 1; }
python3 - "$work/downloads.json" "$status" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
if sys.argv[2] != "0":
    failed = [t.get("expression", t) for t in report.get("thresholds", []) if not t.get("passed", True)]
    print(f"(wsload run exited {sys.argv[2]}; thresholds failed: {', '.join(map(str, failed)) or 'see the report'})")
metrics = report["total"]["metrics"]
seconds = report["run"]["elapsedSeconds"]
completed = metrics["http.transfers_completed"]["count"]
print(f"downloads per second: {completed / seconds:.0f} ({completed} in {seconds:.1f} s), "
      f"{metrics['http.bytes_received']['count'] / seconds / 1e6:.0f} MB/s verified")
PY
