#!/usr/bin/env bash
# The break-one-behaviour probe: applies each deliberate break in Tests/Mutations/*.patch to a scratch worktree,
# rebuilds, runs the tests that should catch it, and reports whether they did. A break that passes the tests
# ("survived") is a promise nothing protects.
#   scripts/mutants.sh                 every mutation, each against the tests its header names
#   scripts/mutants.sh --full          every mutation against the whole suite
#   scripts/mutants.sh 03 07           only the mutations whose file names start with these prefixes
# Each patch starts with a header, then a `git diff` of Sources:
#   Mutation: what the break does
#   Caught-by: a `swift test --filter` regular expression naming the tests that must fail
# Exit status: 0 when every mutation was caught, 1 when one survived, 2 when one no longer applies.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
full=0
prefixes=()
for argument in "$@"; do
    case "$argument" in
        --full) full=1 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) prefixes+=("$argument") ;;
    esac
done

scratch="$root/.build/mutants/tree"
if [[ ! -d "$scratch" ]]; then
    mkdir -p "$(dirname "$scratch")"
    git worktree add --detach "$scratch" HEAD >/dev/null 2>&1 || { echo "mutants: cannot create $scratch" >&2; exit 2; }
fi
logs="$root/.build/mutants/logs"
mkdir -p "$logs"

# The scratch tree gets the working tree's Sources and Tests as they are (committed or not).
sync_tree() {
    git -C "$scratch" checkout -q --detach HEAD 2>/dev/null
    rsync -a --delete --exclude .build --exclude .git "$root/" "$scratch/"
}

caught=0; survived=0; broken=0; survivors=()
for patch in "$root"/Tests/Mutations/*.patch; do
    name=$(basename "$patch" .patch)
    if ((${#prefixes[@]})); then
        match=0
        for prefix in "${prefixes[@]}"; do [[ "$name" == "$prefix"* ]] && match=1; done
        ((match)) || continue
    fi
    what=$(sed -n 's/^Mutation: //p' "$patch" | head -n 1)
    filter=$(sed -n 's/^Caught-by: //p' "$patch" | head -n 1)
    sync_tree
    if ! git -C "$scratch" apply --whitespace=nowarn "$patch" 2>"$logs/$name.apply"; then
        echo "BROKEN   $name: no longer applies ($(head -n 1 "$logs/$name.apply"))"
        broken=$((broken + 1)); continue
    fi
    if ! (cd "$scratch" && swift build --build-tests >"$logs/$name.build" 2>&1); then
        echo "BROKEN   $name: does not build (see $logs/$name.build)"
        broken=$((broken + 1)); continue
    fi
    arguments=(--skip-build)
    ((full)) || [[ -z "$filter" ]] || arguments+=(--filter "$filter")
    start=$SECONDS
    if (cd "$scratch" && timeout 900 swift test "${arguments[@]}" >"$logs/$name.test" 2>&1); then
        echo "SURVIVED $name: $what ($((SECONDS - start)) s)"
        survived=$((survived + 1)); survivors+=("$name")
    else
        failing=$(grep -E '^✘ Test .* (failed|recorded an issue)' "$logs/$name.test" | sed -E 's/^✘ Test ("[^"]*"|[^ ]*).*/\1/' \
            | sort -u | head -n 3 | paste -sd ';' -)
        echo "caught   $name: $what ($((SECONDS - start)) s; ${failing:-see $logs/$name.test})"
        caught=$((caught + 1))
    fi
done
# Leave the scratch tree clean for the next probe.
sync_tree
echo "$caught caught, $survived survived, $broken broken"
((broken == 0)) || exit 2
((survived == 0)) || { echo "survivors: ${survivors[*]}"; exit 1; }
exit 0
