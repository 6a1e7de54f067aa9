#!/usr/bin/env bash
# The README's test command: installs build and test dependencies, then runs every test.
# Tests talk only to loopback and to network namespaces they create (which needs root).
#   scripts/test.sh                       install, build, run the suite once
#   scripts/test.sh --stress N            run the suite N times in a row (flake hunting); stops at the first failure
#   scripts/test.sh --stress N --one-cpu  the same on one CPU (taskset), shared with a busy loop, as a loaded box is
# Extra arguments after `--` go to `swift test` (e.g. `-- --filter RunTests`).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=1
one_cpu=0
extra=()
while (($#)); do
    case "$1" in
        --stress) runs="${2:?--stress needs a count}"; shift 2 ;;
        --one-cpu) one_cpu=1; shift ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "test.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "test.sh: --stress takes a positive count, not '$runs'" >&2; exit 64; }

scripts/install-dependencies.sh --test
swift build --build-tests

# A crash prints the crashed thread only: CI keeps the end of a log, and a few hundred idle threads would push the
# frames that matter out of it.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=yes,interactive=no,threads=crashed}"
# Every suite has its own time limit; this bounds the whole run too, so nothing can hang CI.
limit=(timeout --foreground 40m)
if ((runs == 1 && one_cpu == 0)); then
    exec "${limit[@]}" swift test --skip-build "${extra[@]}"
fi

hog=""
prefix=()
if ((one_cpu)); then
    # A busy loop on CPU 0 for as long as the runs last; the suite shares that CPU with it.
    taskset -c 0 sh -c 'while :; do :; done' &
    hog=$!
    trap 'kill "$hog" 2>/dev/null' EXIT
    prefix=(taskset -c 0)
fi
logs=".build/stress"
mkdir -p "$logs"
for run in $(seq 1 "$runs"); do
    start=$SECONDS
    if "${limit[@]}" "${prefix[@]}" swift test --skip-build "${extra[@]}" >"$logs/run-$run.log" 2>&1; then
        echo "run $run/$runs: passed in $((SECONDS - start)) s ($(grep -E '^✔ Test run with' "$logs/run-$run.log" | tail -n 1))"
    else
        echo "run $run/$runs: FAILED in $((SECONDS - start)) s; failures (log: $logs/run-$run.log):"
        grep -E '^✘ ' "$logs/run-$run.log" | head -n 20
        exit 1
    fi
done
echo "$runs passed, 0 failed"
