#!/usr/bin/env bash
# Compiles the BPF programs of crates/kernel/src/bpf into the objects kept
# in crates/kernel/bpf/ (and their MANIFEST): run it after changing a
# program or a header there, and commit what it writes. A build then needs
# no clang (docs/KERNEL.md, "Building"). crates/kernel/tests/objects.rs
# checks that the objects are current with their sources, and that this
# script, with the clang the MANIFEST names, gives the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --locked -q -p kleinrock-kernel --example bpf_objects
