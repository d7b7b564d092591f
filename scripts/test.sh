#!/usr/bin/env bash
# Kleinrock's whole test suite, runnable on a fresh machine: installs what
# is missing (a C linker, the Rust toolchain, rustfmt and clippy, Python's
# venv and, in target/flent-venv, flent 2.3 from PyPI; clang, libelf, zlib,
# pkg-config, bpftool, iperf3, iproute2 and iptables for the BPF ports;
# iproute2, iptables and ping for the live lab), then checks
# formatting, lints with warnings as errors, and runs every test.
# Exits non-zero on the first failure. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
    echo "test.sh: installing $* with apt-get" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

missing=()
command -v cc >/dev/null || missing+=(build-essential)
command -v cargo >/dev/null || missing+=(cargo rustc)
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
# The BPF ports (crates/kernel): clang compiles them, libbpf-sys builds
# libbpf against libelf and zlib found through pkg-config; bpftool inspects
# what is loaded and iperf3 drives traffic through it in the root-only test.
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

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
# One closing line for the whole suite (cargo ends on its doc-test binaries,
# which hold no tests).
awk '/^test result:/ { for (i = 1; i <= NF; i++) {
        if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i;
        if ($(i+1) ~ /^ignored/) s += $i } }
     END { printf "summary: %d passed, %d failed, %d skipped\n", p, f, s; if (p == 0) exit 1 }' "$log"
