#!/usr/bin/env bash
# Proves that a change kept every result byte for byte: runs every scenario
# in scenarios/ (seeds 1-3), the fixtures beside this script (every queue
# discipline, loss model, link and flow kind, a hook trace), `algorithms`,
# `model` with its traces, a `replay`, every `select` workload with its
# table, and two `compare` reports, then compares everything with a
# recorded copy.
#
#   scripts/same-results.sh record DIR   # before the change
#   scripts/same-results.sh check DIR    # after it: exit 1 on any difference
#
# KLEINROCK=path/to/kleinrock uses that binary instead of building one.
# Takes a few minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() {
    echo "usage: scripts/same-results.sh record|check DIR" >&2
    exit 2
}
[ $# -eq 2 ] || usage
mode=$1
dir=$2
case $mode in
record)
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
        echo "same-results: $dir exists and is not empty; record into a new directory" >&2
        exit 2
    fi
    ;;
check)
    [ -d "$dir" ] || {
        echo "same-results: $dir is not a recorded directory; run 'record' first" >&2
        exit 2
    }
    ;;
*) usage ;;
esac

if [ -z "${KLEINROCK:-}" ]; then
    cargo build --release --locked -q
    KLEINROCK=$root/target/release/kleinrock
fi
kr() { "$KLEINROCK" "$@"; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
step() { echo "same-results: $*" >&2; }

step "algorithms"
kr algorithms >"$out/algorithms.txt"

step "sim: scenarios/*.toml, seeds 1-3"
sims=()
for f in scenarios/*.toml; do
    case $(basename "$f") in select-*) continue ;; esac
    sims+=("$f")
done
kr sim "${sims[@]}" --seeds 1,2,3 --out "$out/sim" --quiet >"$out/sim.txt"

step "sim: fixtures, seeds 1-3"
for seed in 1 2 3; do
    fx=$out/fixtures-seed$seed
    mkdir -p "$fx/traces"
    cp scripts/same-results/* "$fx/"
    kr sim "$fx"/*.toml --seeds "$seed" --out "$out/sim-fixtures" --quiet >"$out/sim-fixtures-seed$seed.txt"
    rm "$fx"/*.toml "$fx"/cell.up
done

step "model, with traces, and a replay"
specs=cubic,cubic:hystart=hspp,cubic:friendly=eq4,cubic:friendly=newreno,reno,reno:hystart=hspp,bbr,cdg,vegas,htcp,dctcp
kr model --cc "$specs" --hz 100,1000 --rate-mbps 200 --rtt-us 2000 --loss 0.5 \
    --seconds 3 --trace-dir "$out/model" >"$out/model.txt"
first=$out/model/cubic-hz100.csv.gz
kr replay "$first" --cc cubic --hz 100 >"$out/replay.txt"

step "select: every workload, with its table"
for w in scenarios/select-*.toml; do
    name=$(basename "$w" .toml)
    mkdir -p "$out/select"
    kr select "$w" --quiet --out "$out/select/$name" --table "$out/select/$name.table" \
        >"$out/select/$name.txt"
done

step "compare: two reports"
kr compare scenarios/e3-cdg-cubic-10M-40ms-q84-ping.toml --cc cubic,bbr,cdg,reno \
    --seeds 1,2 --out "$out/compare-e3" --quiet >"$out/compare-e3.txt"
kr compare scenarios/e3-cdg-G-sweep.toml --seeds 1 --out "$out/compare-g" --quiet \
    >"$out/compare-g.txt"

# This run's temporary directory is not a result.
for f in "$out"/*.txt "$out"/select/*.txt; do
    sed -i -e "s|$out|OUT|g" "$f"
done

if [ "$mode" = record ]; then
    mkdir -p "$dir"
    cp -a "$out"/. "$dir"/
    step "recorded $(find "$dir" -type f | wc -l) files in $dir"
    exit 0
fi
if diff -r -q "$dir" "$out" >"$out.diff" 2>&1; then
    step "identical: $(find "$dir" -type f | wc -l) files"
    rm -f "$out.diff"
    exit 0
fi
step "DIFFERENT from $dir:"
cat "$out.diff" >&2
rm -f "$out.diff"
exit 1
