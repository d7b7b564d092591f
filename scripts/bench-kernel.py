#!/usr/bin/env python3
"""The cost of running congestion control as BPF: our ports against the
kernel's native algorithms on the same veth path, in one session.

Two network namespaces joined by a veth pair (no rate limit: the path is
CPU-bound, so any per-ACK cost of the BPF programs shows in throughput and
in CPU per gigabyte). iperf3 sends for --seconds per run; runs alternate
between the BPF port and the native algorithm, the order flipping every
repetition, so drift in the machine's speed hits both alike. Per pair it
prints the median throughput, the sender's CPU seconds per GB (iperf3's
own accounting) and the whole machine's (from /proc/stat: sender, receiver
and softirq), the ratio BPF/native of each, and the spread of the
per-repetition ratios.

Needs root, iperf3 and cargo (it builds kleinrock --features kernel). Trace mode stays off, as in normal use. Everything it creates
(namespaces, loaded algorithms) is removed on exit, also on Ctrl-C.

    sudo scripts/bench-kernel.py --reps 5 --seconds 5
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NS_TX, NS_RX = "krbench-tx", "krbench-rx"
ADDR_TX, ADDR_RX = "10.251.0.1", "10.251.0.2"
# (BPF spec, name to load it under, native algorithm)
PAIRS = [("cubic", "krb_cubic", "cubic"), ("reno", "krb_reno", "reno")]


def sh(*args, check=True, capture=False):
    r = subprocess.run(args, check=False, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"bench-kernel: `{' '.join(args)}` failed: {r.stderr.strip()}")
    return r.stdout if capture else r


def kleinrock():
    # Only the loader runs in userspace, so a debug build measures the same.
    exe = os.path.join(ROOT, "target/debug/kleinrock")
    print("building kleinrock --features kernel", file=sys.stderr)
    subprocess.run(["cargo", "build", "--features", "kernel", "-q"], cwd=ROOT, check=True)
    return exe


def setup():
    teardown()
    sh("ip", "netns", "add", NS_TX)
    sh("ip", "netns", "add", NS_RX)
    sh("ip", "link", "add", "krb0", "netns", NS_TX, "type", "veth", "peer", "krb1", "netns", NS_RX)
    for ns, dev, addr in [(NS_TX, "krb0", ADDR_TX), (NS_RX, "krb1", ADDR_RX)]:
        sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def teardown():
    for ns in (NS_TX, NS_RX):
        sh("ip", "netns", "del", ns, check=False)


def cpu_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    busy = sum(int(x) for i, x in enumerate(fields) if i not in (3, 4))  # less idle, iowait
    return busy / os.sysconf("SC_CLK_TCK")


def run_once(cc, seconds):
    server = subprocess.Popen(
        ["ip", "netns", "exec", NS_RX, "iperf3", "-s", "-1", "-p", "5301"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    busy0 = cpu_ticks()
    out = sh(
        "ip", "netns", "exec", NS_TX, "iperf3", "-c", ADDR_RX, "-p", "5301",
        "-t", str(seconds), "-C", cc, "-J", capture=True,
    )
    busy1 = cpu_ticks()
    server.wait(timeout=10)
    j = json.loads(out)
    sent = j["end"]["sum_sent"]
    gb = sent["bytes"] / 1e9
    cpu_pct = j["end"]["cpu_utilization_percent"]["host_total"]
    used = j["end"]["sum_sent"]["seconds"]
    if j["end"].get("sender_tcp_congestion", cc) != cc:
        sys.exit(f"bench-kernel: iperf3 ran {j['end']['sender_tcp_congestion']}, not {cc}")
    return {
        "gbps": sent["bits_per_second"] / 1e9,
        "sender_cpu_s_per_gb": cpu_pct / 100 * used / gb,
        "host_cpu_s_per_gb": (busy1 - busy0) / gb,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions per algorithm (default 5)")
    ap.add_argument("--seconds", type=int, default=5, help="seconds per run (default 5)")
    a = ap.parse_args()
    if a.reps < 1 or a.seconds < 1:
        sys.exit("bench-kernel: --reps and --seconds must be at least 1")
    if os.geteuid() != 0:
        sys.exit("bench-kernel: loading struct_ops and creating namespaces need root; run it with sudo")
    exe = kleinrock()
    for _, name, _ in PAIRS:
        sh(exe, "kernel", "unload", name, check=False)
    try:
        setup()
        for spec, name, _ in PAIRS:
            sh(exe, "kernel", "load", spec, "--name", name)
        results = {}
        for spec, name, native in PAIRS:
            for rep in range(a.reps):
                order = [name, native] if rep % 2 == 0 else [native, name]
                for cc in order:
                    r = run_once(cc, a.seconds)
                    results.setdefault(cc, []).append(r)
                    print(
                        f"  {cc:<10} rep {rep + 1}: {r['gbps']:6.2f} Gbit/s, "
                        f"sender {r['sender_cpu_s_per_gb']:.3f} CPU-s/GB, "
                        f"host {r['host_cpu_s_per_gb']:.3f} CPU-s/GB",
                        file=sys.stderr,
                    )
        print(f"\n{a.reps} alternating runs of {a.seconds} s each, veth between two namespaces, "
              f"kernel {os.uname().release}, {os.cpu_count()} CPUs\n")
        print("| BPF port | native | Gbit/s BPF | Gbit/s native | ratio | ratio spread "
              "| sender CPU-s/GB BPF | native | ratio | host CPU-s/GB BPF | native | ratio |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for spec, name, native in PAIRS:
            b, n = results[name], results[native]
            med = lambda rs, k: statistics.median(r[k] for r in rs)
            ratios = [x["gbps"] / y["gbps"] for x, y in zip(b, n)]
            row = [f"{name} ({spec})", native,
                   f"{med(b, 'gbps'):.2f}", f"{med(n, 'gbps'):.2f}",
                   f"{med(b, 'gbps') / med(n, 'gbps'):.3f}",
                   f"{min(ratios):.3f}-{max(ratios):.3f}"]
            for k in ("sender_cpu_s_per_gb", "host_cpu_s_per_gb"):
                row += [f"{med(b, k):.3f}", f"{med(n, k):.3f}", f"{med(b, k) / med(n, k):.3f}"]
            print("| " + " | ".join(row) + " |")
    finally:
        for _, name, _ in PAIRS:
            sh(exe, "kernel", "unload", name, check=False)
        teardown()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        teardown()
        sys.exit("bench-kernel: interrupted; namespaces removed")
