#!/usr/bin/env bash
# Kleinrock's whole test suite, runnable on a fresh machine: installs what
# is missing (a C linker, the Rust toolchain, rustfmt and clippy, Python's
# venv and, in target/flent-venv, flent 2.3 from PyPI; in
# target/python-venv maturin, pyarrow, pandas, Ray and pytest for the
# Python package's tests; clang, libelf, zlib,
# pkg-config, bpftool, iperf3, iproute2 and iptables for the BPF ports;
# iproute2, iptables and ping for the live lab; tshark, which reads both
# engines' packet captures), then checks
# formatting, lints with warnings as errors, and runs every test.
#
# A test that needs what this machine lacks skips (kleinrock-testkit), and
# this script says which capabilities must not be missing: as root on
# Linux, all of them (KLEINROCK_REQUIRE=all: a kernel or lab test that
# cannot run fails with its reason); otherwise those of the tools it
# installs itself. The closing line counts passed, failed and skipped
# truly (skips are recorded in KLEINROCK_SKIP_LOG, since libtest counts a
# skipped test as passed) and the script exits non-zero if any test
# failed, anything skipped that was required, or no timing measurement
# was judged (docs/TESTING.md). CI runs exactly this (.ci/run), as root.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
    echo "test.sh: installing $* with apt-get" >&2
    as_root apt-get update -qq
    # wireshark-common asks whether non-root users may capture; tshark here
    # only reads files, so the answer is no, given before it is asked.
    echo "wireshark-common wireshark-common/install-setuid boolean false" |
        as_root debconf-set-selections 2>/dev/null || true
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

missing=()
command -v cc >/dev/null || missing+=(build-essential)
command -v cargo >/dev/null || missing+=(cargo rustc)
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
# The BPF ports (crates/kernel): their objects are kept compiled, and clang
# (the one that compiled them) checks that they reproduce; libbpf-sys
# builds libbpf against libelf and zlib found through pkg-config; bpftool
# inspects what is loaded and iperf3 drives traffic through it in the
# root-only test.
command -v clang >/dev/null || missing+=(clang)
command -v pkg-config >/dev/null || missing+=(pkg-config)
if ! command -v pkg-config >/dev/null || ! pkg-config --exists libelf; then missing+=(libelf-dev); fi
if ! command -v pkg-config >/dev/null || ! pkg-config --exists zlib; then missing+=(zlib1g-dev); fi
command -v bpftool >/dev/null || [ -x /usr/sbin/bpftool ] || missing+=(bpftool)
command -v iperf3 >/dev/null || missing+=(iperf3)
# The ports' root-only tests build their paths in network namespaces: ip
# and tc (loopback up, a tbf bottleneck, congctl routes) and iptables
# (random loss).
command -v ip >/dev/null || [ -x /usr/sbin/ip ] || missing+=(iproute2)
command -v tc >/dev/null || [ -x /usr/sbin/tc ] || missing+=(iproute2)
command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || missing+=(iptables)
# The live lab (crates/lab) needs the same ip, tc and iptables(-restore);
# its tests measure it with ping.
command -v ping >/dev/null || missing+=(iputils-ping)
# tshark reads the simulator's and the lab's captures and checks its TCP
# analysis against our counters (crates/sim/tests/capture.rs,
# crates/cli/tests/capture.rs).
command -v tshark >/dev/null || missing+=(tshark)
if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}"
fi

if command -v rustup >/dev/null; then
    for component in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$component" ||
            rustup component add "$component"
    done
else
    command -v cargo-fmt >/dev/null || apt_install rustfmt
    command -v cargo-clippy >/dev/null || apt_install rust-clippy
fi

# flent renders our .flent.gz files in crates/cli/tests/compare.rs.
venv=target/flent-venv
if [ ! -x "$venv/bin/flent" ]; then
    echo "test.sh: installing flent 2.3 and matplotlib into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check 'flent==2.3.0' 'matplotlib>=3.6,<4'
fi
export KLEINROCK_FLENT="$PWD/$venv/bin/flent"

# The Python package (python/, docs/PYTHON.md) is tested with pytest after
# the cargo tests: what it needs goes in a venv of its own.
pyvenv=target/python-venv
python_deps=('maturin>=1.9,<2' 'pyarrow>=14' 'pandas>=1.5' 'ray>=2.9' 'pytest>=7')
if [ ! -x "$pyvenv/bin/pytest" ] || ! "$pyvenv/bin/python" -c 'import ray, pyarrow, pandas' 2>/dev/null; then
    echo "test.sh: installing ${python_deps[*]} into $pyvenv" >&2
    python3 -m venv "$pyvenv"
    "$pyvenv/bin/pip" install -q --disable-pip-version-check "${python_deps[@]}"
fi

# What must not be skipped: everything as root on Linux (CI); elsewhere
# what this script installed (a BPF build needs the clang it installs; the
# tools matter only to tests that need root first).
if [ "$(id -u)" = 0 ] && [ "$(uname -s)" = Linux ]; then
    export KLEINROCK_REQUIRE=all
else
    export KLEINROCK_REQUIRE=bpf,flent,iperf3,bpftool,ip,tc,iptables,tshark
fi
export KLEINROCK_SKIP_LOG="$PWD/target/test-skips.tsv"
export KLEINROCK_TIMING_LOG="$PWD/target/test-timing.tsv"
mkdir -p target
: >"$KLEINROCK_SKIP_LOG"
: >"$KLEINROCK_TIMING_LOG"
echo "test.sh: KLEINROCK_REQUIRE=$KLEINROCK_REQUIRE" >&2

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log" || status=$?
# Parquet is a feature the workspace's tests build without (the CLI's is
# off by default): its files are tested here.
cargo test -p kleinrock-columns --features parquet --locked 2>&1 | tee -a "$log" || status=1

# The Python package, installed as a user installs it (pip install
# ./python) but built with the `pytest` profile (release without its fat
# LTO, which would add minutes of linking here), then its tests; their
# counts join cargo's in the closing line as one more `test result:`.
echo "== python: pip install ./python, pytest" >&2
export KLEINROCK_BIN="$PWD/target/debug/kleinrock"
pytest_xml=target/pytest.xml
rm -f "$pytest_xml"
if PATH="$PWD/$pyvenv/bin:$PATH" "$pyvenv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps --no-build-isolation \
        --config-settings=build-args='--profile pytest --locked' ./python; then
    (cd python/tests && "../../$pyvenv/bin/python" -m pytest -q -p no:cacheprovider \
        --junitxml="../../$pytest_xml") 2>&1 | tee -a "$log" || status=1
else
    echo "test.sh: the Python package did not build" >&2
    status=1
fi
if [ -s "$pytest_xml" ]; then
    "$pyvenv/bin/python" - "$pytest_xml" >>"$log" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
s = root if root.tag == "testsuite" else root.find("testsuite")
n, f, e, k = (int(s.get(x, 0)) for x in ("tests", "failures", "errors", "skipped"))
print("test result: %s. %d passed; %d failed; %d ignored; 0 measured; 0 filtered out (pytest)"
      % ("ok" if f + e == 0 else "FAILED", n - f - e - k, f + e, k))
PY
fi

# Timing measurements: each gated test says whether the host was quiet
# enough to judge its accuracy. One noisy test is not a failure; a suite in
# which none was judged proves nothing about timing.
awk -F '\t' '{ n++; if ($3 == "judged") j++; else { u++; list = list "\n  " $1 ": " $2 } }
     END { if (n > 0) printf "timing: %d of %d measurements judged (host quiet)%s\n",
                             j, n, (u > 0 ? ", not judged (host noisy):" list : "") }' \
    "$KLEINROCK_TIMING_LOG" >&2
if [ -s "$KLEINROCK_TIMING_LOG" ] && ! grep -q "	judged$" "$KLEINROCK_TIMING_LOG"; then
    echo "test.sh: no timing measurement was judged: the host stole too much CPU time in every one" >&2
    status=1
fi

# Skips: the recorded ones (libtest counted them as passed) and the ignored.
ignored=$(sed -nE 's/^test (.+) \.\.\. ignored.*/  \1: #[ignore]/p' "$log")
if [ -s "$KLEINROCK_SKIP_LOG" ] || [ -n "$ignored" ]; then
    echo "skipped:" >&2
    awk -F '\t' '{ printf "  %s: %s (%s)\n", $1, $3, $2 }' "$KLEINROCK_SKIP_LOG" >&2
    [ -z "$ignored" ] || echo "$ignored" >&2
fi
# A skip of a required capability cannot be recorded (the test panics
# instead); checked again here so that no path around the helper passes.
required=$(awk -F '\t' -v req=",$KLEINROCK_REQUIRE," \
    'req ~ /,all,/ || index(req, "," $2 ",") { n++ } END { print n + 0 }' "$KLEINROCK_SKIP_LOG")
if [ "$required" -gt 0 ]; then
    echo "test.sh: $required test(s) skipped what KLEINROCK_REQUIRE=$KLEINROCK_REQUIRE requires" >&2
    status=1
fi

# One closing line for the whole suite (cargo ends on its doc-test binaries,
# which hold no tests).
awk -v skips="$(wc -l <"$KLEINROCK_SKIP_LOG")" '/^test result:/ { for (i = 1; i <= NF; i++) {
        if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i;
        if ($(i+1) ~ /^ignored/) s += $i } }
     END { printf "summary: %d passed, %d failed, %d skipped\n", p - skips, f, s + skips;
           if (p - skips <= 0) exit 1 }' "$log" || status=1
exit "$status"
