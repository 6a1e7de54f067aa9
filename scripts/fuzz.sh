#!/usr/bin/env bash
# Builds and runs the libFuzzer targets in Fuzz/ (Fuzz/README.md).
#
#   scripts/fuzz.sh --smoke              every target briefly (CI: .ci/run calls this after the tests)
#   scripts/fuzz.sh [--time S] [--jobs N] a long run: S seconds per target (default 600), N parallel jobs
#   scripts/fuzz.sh --target NAME ...    only that target (repeatable; names as in --list)
#   scripts/fuzz.sh --no-build ...       run what .build/fuzz already holds
#   scripts/fuzz.sh --list               the targets
#   scripts/fuzz.sh --reproduce NAME FILE  run one input through a target (after a crash)
#
# The build uses its own scratch path (.build/fuzz, release, -sanitize=fuzzer,address), so it never
# disturbs .build. Each run reads the committed seeds in Fuzz/Corpus/<target>/ (never written) and keeps
# what it learns in .build/fuzz/corpus/<target>/. A crash, timeout, leak or out-of-memory input is saved
# under .build/fuzz/artifacts/<target>/; the script prints its path and how to rerun it, and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

TARGETS=(WebSocketFrames WebSocketConnection PerMessageDeflate Handshake HTTPHead HTTPBody HTTPFields
         JSON Profile Histogram Report ResumeData SessionJournal)
SCRATCH="$ROOT/.build/fuzz"
BIN="$SCRATCH/release"

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }

smoke=0; time_per_target=600; jobs=1; build=1; selected=(); reproduce=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) smoke=1 ;;
        --time) time_per_target="${2:?--time needs SECONDS}"; shift ;;
        --jobs) jobs="${2:?--jobs needs a count}"; shift ;;
        --target) selected+=("${2:?--target needs a NAME}"); shift ;;
        --no-build) build=0 ;;
        --list) printf '%s\n' "${TARGETS[@]}"; exit 0 ;;
        --reproduce) reproduce=("${2:?--reproduce needs NAME FILE}" "${3:?--reproduce needs NAME FILE}"); shift 2 ;;
        -h|--help) usage ;;
        *) echo "fuzz.sh: unknown argument $1" >&2; usage ;;
    esac
    shift
done
[[ "$time_per_target" =~ ^[0-9]+$ && "$time_per_target" -gt 0 ]] || { echo "fuzz.sh: --time must be a positive integer" >&2; exit 64; }
[[ "$jobs" =~ ^[0-9]+$ && "$jobs" -gt 0 ]] || { echo "fuzz.sh: --jobs must be a positive integer" >&2; exit 64; }
[ ${#reproduce[@]} -gt 0 ] && selected=("${reproduce[0]}")
[ ${#selected[@]} -eq 0 ] && selected=("${TARGETS[@]}")
for name in "${selected[@]}"; do
    [[ " ${TARGETS[*]} " == *" $name "* ]] || { echo "fuzz.sh: no target $name (see --list)" >&2; exit 64; }
done

# Swift's own backtracer would race libFuzzer's crash handler; libFuzzer + ASan print the stack.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"

if [ "$build" -eq 1 ]; then
    started=$(date +%s)
    for name in "${selected[@]}"; do
        echo "== building Fuzz$name"
        WSLOAD_FUZZ=1 swift build -c release --scratch-path "$SCRATCH" -Xswiftc -sanitize=fuzzer,address \
            --product "Fuzz$name" 2>&1 | grep -v "Cannot export local symbol" | grep -E "error|warning:|Compiling|Build" || true
        [ -x "$BIN/Fuzz$name" ] || { echo "fuzz.sh: building Fuzz$name failed" >&2; exit 1; }
    done
    echo "== build took $(( $(date +%s) - started )) s"
fi

if [ ${#reproduce[@]} -gt 0 ]; then
    exec "$BIN/Fuzz${reproduce[0]}" -rss_limit_mb=2048 -timeout=25 "${reproduce[1]}"
fi

if [ "$smoke" -eq 1 ]; then
    # Bounded in time, count and memory: about 10 s per target.
    limits=(-max_total_time=10 -runs=5000000 -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10)
else
    limits=(-max_total_time="$time_per_target" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=25)
    [ "$jobs" -gt 1 ] && limits+=(-jobs="$jobs" -workers="$jobs")
fi

failed=()
summary=()
for name in "${selected[@]}"; do
    seeds="$ROOT/Fuzz/Corpus/$name"
    corpus="$SCRATCH/corpus/$name"
    artifacts="$SCRATCH/artifacts/$name"
    logs="$SCRATCH/logs/$name"
    mkdir -p "$corpus" "$artifacts" "$logs"
    extra=()
    [ -f "$ROOT/Fuzz/Dictionaries/$name.dict" ] && extra+=(-dict="$ROOT/Fuzz/Dictionaries/$name.dict")
    max_len=8192
    [ "$name" = Report ] && max_len=32768  # the seed report is 23 KB
    log="$logs/run-$(date +%Y%m%d-%H%M%S).log"
    echo "== fuzzing $name (log: $log)"
    before=$(ls -1 "$artifacts" | wc -l)
    status=0
    # -jobs runs write fuzz-N.log in the working directory: run from the log directory.
    (cd "$logs" && "$BIN/Fuzz$name" "${limits[@]}" "${extra[@]}" -max_len="$max_len" \
        -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" "$seeds") >"$log" 2>&1 || status=$?
    # libFuzzer's parent copies each finished job's fuzz-N.log into its own output (the run log), so the
    # job files are only removed: appending them again counted every execution twice.
    [ "$jobs" -gt 1 ] && [ "$smoke" -eq 0 ] && rm -f "$logs"/fuzz-*.log
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
    cov=$(grep -o 'cov: [0-9]*' "$log" | awk '{if ($2>m) m=$2} END {print m+0}')
    line="$name: $runs runs, $speed exec/s, cov $cov"
    after=$(ls -1 "$artifacts" | wc -l)
    if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ]; then
        failed+=("$name")
        line="$line, FAILED (exit $status)"
        grep -E "ERROR: libFuzzer|ERROR: AddressSanitizer|Swift runtime failure|fatal error|property violated" "$log" | head -5 || true
        for artifact in $(ls -1t "$artifacts" | head -n $(( after - before > 0 ? after - before : 1 ))); do
            echo "reproducer: $artifacts/$artifact"
            echo "  rerun: scripts/fuzz.sh --no-build --reproduce $name $artifacts/$artifact"
        done
        echo "  full log: $log"
    fi
    echo "$line"
    summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: failed: ${failed[*]}" >&2
    exit 1
fi
