#!/usr/bin/env bash
# The test suite under AddressSanitizer and/or ThreadSanitizer. Each sanitizer builds in a scratch path of
# its own (.build/asan, .build/tsan), so the ordinary .build is never disturbed; tests that start `wsload`,
# `wsload-runtime-probe` or other built programs find them beside the test bundle, i.e. the sanitized ones.
#   scripts/sanitize.sh address          build and run the suite under ASan (and LeakSanitizer's exit check off)
#   scripts/sanitize.sh thread           the same under TSan
#   scripts/sanitize.sh both             ASan, then TSan
#   scripts/sanitize.sh thread -- --filter RuntimeTests   arguments after -- go to `swift test`
# Every sanitized process (the test bundle and each child) writes its reports to LOGS/report.PID instead of
# stderr, so a report in a child cannot be swallowed by a test reading that child's output. The script
# exits 1 when the suite failed or any report was written, and prints where the logs are.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode="${1:-}"
shift || true
extra=()
if [[ "${1:-}" == "--" ]]; then shift; extra=("$@"); fi
case "$mode" in
    address) sanitizers=(address) ;;
    thread) sanitizers=(thread) ;;
    both) sanitizers=(address thread) ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "sanitize.sh: say address, thread or both (see --help)" >&2; exit 64 ;;
esac

# Suites left out under a sanitizer, each with its reason (a `swift test --skip` regular expression).
# Add a test here only with the reason beside it.
declare -A excluded=(
    [address]=""
    # RunExitCodeTests' file-size-limit case runs wsload under `prlimit --fsize=4096`; under TSan that child dies
    # with "ThreadSanitizer: BUS on unknown address" (a read fault in the sanitizer's own mappings, it seems) before
    # wsload's EFBIG handling runs. Not diagnosed; the case passes in the plain and the ASan suite.
    [thread]="fileSizeLimit"
)

status=0
for sanitizer in "${sanitizers[@]}"; do
    short=$([[ $sanitizer == address ]] && echo asan || echo tsan)
    scratch="$root/.build/$short"
    logs="$scratch/sanitizer-logs"
    rm -rf "$logs"
    mkdir -p "$logs"
    echo "== $sanitizer: building in $scratch (log: $logs/build.log)"
    start=$SECONDS
    if ! swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" >"$logs/build.log" 2>&1; then
        echo "sanitize.sh: the $sanitizer build failed; see $logs/build.log" >&2
        grep -E 'error:' "$logs/build.log" | head -n 20 >&2
        status=1
        continue
    fi
    echo "   built in $((SECONDS - start)) s"

    # ASan: reports to files; halt at the first error (the default; recovering needs -fsanitize-recover).
    # Leak checking at exit is off: the Swift runtime's metadata caches, the loop-thread key and
    # deliberately immortal objects read as leaks at exit and would turn every child's exit status to 23.
    export ASAN_OPTIONS="log_path=$logs/report:detect_leaks=0:suppressions=$root/scripts/sanitizers/asan.supp"
    # TSan: reports to files, keep running after a report so one run finds all of them.
    export TSAN_OPTIONS="log_path=$logs/report:halt_on_error=0:second_deadlock_stack=1:history_size=4"
    skip=()
    [[ -n "${excluded[$sanitizer]}" ]] && skip=(--skip "${excluded[$sanitizer]}")
    echo "== $sanitizer: running the suite (log: $logs/test.log)"
    start=$SECONDS
    # One test at a time: sanitized code runs several times slower, and with every suite in parallel on two
    # cores a test's time limit measures its wait for the pool (a whole run timed out that way), not its work.
    timeout --foreground 180m swift test --skip-build --no-parallel --sanitize="$sanitizer" --scratch-path "$scratch" \
        "${skip[@]}" "${extra[@]}" >"$logs/test.log" 2>&1
    tests=$?
    unset ASAN_OPTIONS TSAN_OPTIONS
    echo "   ran in $((SECONDS - start)) s, exit $tests: $(grep -E '^(✔|✘) Test run with' "$logs/test.log" | tail -n 1)"
    reports=()
    for report in "$logs"/report.*; do
        [[ -s "$report" ]] && reports+=("$report")
    done
    # A process that could not open its log file (or ran without these options) reports on stderr.
    if grep -qE '^(==[0-9]+==ERROR: AddressSanitizer|WARNING: ThreadSanitizer)' "$logs/test.log"; then
        reports+=("$logs/test.log")
    fi
    if ((${#reports[@]})); then
        echo "   ${#reports[@]} sanitizer report file(s):"
        for report in "${reports[@]}"; do
            echo "     $report: $(grep -m1 -E 'ERROR: AddressSanitizer|WARNING: ThreadSanitizer|SUMMARY' "$report")"
        done
        status=1
    fi
    if ((tests != 0)); then
        echo "   failures:"
        grep -E '^✘ |error: .*failed' "$logs/test.log" | head -n 20
        status=1
    fi
    echo "   logs: $logs"
done
exit $status
