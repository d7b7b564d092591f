#!/usr/bin/env bash
# Instructions per run of the ns-3 anchor cases, counted by callgrind
# (deterministic where wall time is not): the speed check for refactors.
#
#   scripts/instructions.sh [CASE...]     # default: A C1
#
# KLEINROCK=path/to/kleinrock counts that binary instead of building one.
# Prints one line per case: its name and millions of instructions.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || {
    echo "instructions: valgrind is not installed; apt-get install valgrind" >&2
    exit 2
}
if [ -z "${KLEINROCK:-}" ]; then
    cargo build --release --locked -q
    KLEINROCK=$PWD/target/release/kleinrock
fi
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(A C1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "${cases[@]}"; do
    f=$(ls scenarios/ns3-"$c"-*.toml 2>/dev/null | head -1)
    [ -n "$f" ] || {
        echo "instructions: no scenarios/ns3-$c-*.toml; cases are A B C1 C2 D E F F0" >&2
        exit 2
    }
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
        "$KLEINROCK" sim "$f" --quiet >/dev/null 2>"$tmp/log"
    ir=$(grep -E '^summary:|^totals:' "$tmp/cg.out" | head -1 | awk '{print $2}')
    awk -v c="$c" -v ir="$ir" 'BEGIN { printf "%-3s %10.3f M instructions\n", c, ir / 1e6 }'
done
