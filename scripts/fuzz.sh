#!/usr/bin/env bash
# Kleinrock's fuzzing campaign (docs/FUZZING.md), not part of CI: every
# fuzz target of crates/fuzz-targets under libFuzzer (cargo-fuzz, nightly),
# one after the other, each for FUZZ_RUNS executions (default 10^6), then
# one line per target: executions, time, libFuzzer's coverage (cov: edges,
# ft: features) and findings (crash, timeout, oom and leak inputs, left in
# fuzz/artifacts/<target>/). The whole campaign takes about two hours of one
# core (docs/FUZZING.md has the figures); hook_trace alone about 40 minutes.
#
#   scripts/fuzz.sh                  # every target, 10^6 executions each
#   scripts/fuzz.sh hooks spec       # some targets
#   FUZZ_RUNS=100000 scripts/fuzz.sh # shorter
#
# Installs what it needs: a C++ compiler (libFuzzer is built from source),
# the nightly toolchain (rustup) and cargo-fuzz. Each input may take at
# most FUZZ_TIMEOUT seconds (default 10: a hang) and the process at most
# FUZZ_RSS_MB of memory (default 2048). The corpus grows in
# fuzz/corpus/<target>/ (not committed); a finding, once fixed, is copied
# to fuzz/regressions/<target>/, which the suite's smoke test replays.
# Runs niced: the machine is shared.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
runs=${FUZZ_RUNS:-1000000}
timeout=${FUZZ_TIMEOUT:-10}
rss=${FUZZ_RSS_MB:-2048}

if ! command -v c++ >/dev/null; then
    echo "fuzz.sh: installing a C++ compiler (build-essential) with apt-get" >&2
    if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq build-essential >/dev/null
fi
if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz.sh: installing the nightly toolchain (cargo-fuzz needs it)" >&2
    rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

# Seeds, and each target's longest input (stable toolchain, main workspace;
# the test profile, which `cargo test` has built).
seeds=target/fuzz-seeds
mkdir -p "$seeds"
table=$(nice -n 10 cargo run -q --profile test -p kleinrock-fuzz-targets --bin fuzz-seeds -- "$seeds")
all=$(awk '{ print $1 }' <<<"$table")
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets <<<"$all"; fi
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$all" || { echo "fuzz.sh: no target named $t (targets: $(echo $all))" >&2; exit 2; }
done

# No sanitizer: the code is safe Rust, so what AddressSanitizer adds is
# time; overflow checks (-a, debug assertions) turn wrapping arithmetic
# into a finding, as in the test profile.
build=(--sanitizer none --debug-assertions)
echo "fuzz.sh: building the targets (nightly, release)" >&2
(cd fuzz && nice -n 10 cargo +nightly fuzz build "${build[@]}")

logs=target/fuzz-logs
mkdir -p "$logs"
summary=()
status=0
for t in "${targets[@]}"; do
    max_len=$(awk -v t="$t" '$1 == t { print $2 }' <<<"$table")
    mkdir -p "fuzz/corpus/$t" "fuzz/regressions/$t" "fuzz/artifacts/$t"
    before=$(find "fuzz/artifacts/$t" -type f | wc -l)
    echo "fuzz.sh: $t: $runs executions (max_len $max_len, log $logs/$t.log)" >&2
    start=$(date +%s)
    (cd fuzz && nice -n 10 cargo +nightly fuzz run "${build[@]}" "$t" \
        "corpus/$t" "../$seeds/$t" "regressions/$t" -- \
        -runs="$runs" -timeout="$timeout" -rss_limit_mb="$rss" -max_len="$max_len" \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/") >"$logs/$t.log" 2>&1 || true
    # libFuzzer's own time for the runs (the wall time includes a rebuild).
    secs=$(sed -nE 's/^Done [0-9]+ runs in ([0-9]+) second.*/\1/p' "$logs/$t.log")
    secs=${secs:-$(( $(date +%s) - start ))}
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$logs/$t.log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$logs/$t.log" | tail -1)
    found=$(( $(find "fuzz/artifacts/$t" -type f | wc -l) - before ))
    if [ "$found" -gt 0 ] || ! grep -q '^Done [0-9]* runs' "$logs/$t.log"; then
        status=1
        what=$(grep -m1 -E '^==[0-9]+== ERROR: libFuzzer|^thread .* panicked|deadly signal|ALARM' "$logs/$t.log" || true)
        line="$t: ${execs:-?} executions in ${secs}s, ${cov:-no coverage figure}, FINDING ($found new in fuzz/artifacts/$t/): ${what:-see $logs/$t.log}"
    else
        line="$t: $execs executions in ${secs}s, $cov, no findings"
    fi
    echo "$line" >&2
    summary+=("$line")
done
echo "== fuzz.sh summary (FUZZ_RUNS=$runs, timeout ${timeout}s, rss ${rss} MB)"
printf '%s\n' "${summary[@]}"
exit "$status"
