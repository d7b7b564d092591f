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
and softirq), and for each the median and interquartile range of the
ratios BPF/native paired within a repetition. Sender and receiver are
pinned to different CPUs.

Then, since a few percent is below this VM's run-to-run noise, it measures
the BPF programs' own cost directly: one more run per port with the
kernel's BPF statistics on (kernel.bpf_stats_enabled), giving nanoseconds
per hook call and the programs' share of the sender's CPU, an upper bound
on what running the algorithm as BPF rather than built in can cost.

Needs root, iperf3, bpftool and cargo (it builds kleinrock --features kernel). Trace mode stays off, as in normal use. Everything it creates
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
    # Receiver on the last CPU, sender on the first: the two do not trade
    # places between runs, which is most of the run-to-run noise here.
    last = str(os.cpu_count() - 1)
    server = subprocess.Popen(
        ["ip", "netns", "exec", NS_RX, "taskset", "-c", last, "iperf3", "-s", "-1", "-p", "5301"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    busy0 = cpu_ticks()
    out = sh(
        "ip", "netns", "exec", NS_TX, "taskset", "-c", "0", "iperf3", "-c", ADDR_RX, "-p", "5301",
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


def bpf_prog_stats(prefix):
    """{prog id: (run_time_ns, run_cnt)} of the struct_ops programs whose
    name starts with `prefix` (kr_cubic_ for any cubic instance)."""
    progs = json.loads(sh("bpftool", "prog", "show", "-j", capture=True))
    return {
        p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0))
        for p in progs
        if p.get("type") == "struct_ops" and p.get("name", "").startswith(prefix)
    }


def hook_cost(name, prefix, seconds):
    """One more run of `name` with the kernel's BPF run-time statistics on:
    nanoseconds per hook call, hook calls per GB, and the programs' share
    of the sender's CPU. Kept out of the A/B runs, since the statistics
    themselves cost two clock reads per call."""
    sh("sysctl", "-qw", "kernel.bpf_stats_enabled=1")
    try:
        before = bpf_prog_stats(prefix)
        r = run_once(name, seconds)
        after = bpf_prog_stats(prefix)
    finally:
        sh("sysctl", "-qw", "kernel.bpf_stats_enabled=0")
    ns = sum(after[i][0] - before.get(i, (0, 0))[0] for i in after)
    calls = sum(after[i][1] - before.get(i, (0, 0))[1] for i in after)
    gb = r["gbps"] * seconds / 8
    return {
        "ns_per_call": ns / calls if calls else 0.0,
        "calls_per_gb": calls / gb,
        "bpf_cpu_s_per_gb": ns / 1e9 / gb,
        "share_of_sender": (ns / 1e9 / gb) / r["sender_cpu_s_per_gb"],
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
        # Each repetition pairs a BPF run with the native run next to it;
        # the median of the paired ratios resists the host's slow phases,
        # the interquartile range says how far to trust it.
        print("| BPF port | native | Gbit/s BPF | Gbit/s native | paired ratio (IQR) "
              "| sender CPU-s/GB BPF | native | paired ratio (IQR) "
              "| host CPU-s/GB BPF | native | paired ratio (IQR) |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for spec, name, native in PAIRS:
            b, n = results[name], results[native]
            row = [f"{name} ({spec})", native]
            for k in ("gbps", "sender_cpu_s_per_gb", "host_cpu_s_per_gb"):
                ratios = sorted(x[k] / y[k] for x, y in zip(b, n))
                q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
                row += [f"{statistics.median(r[k] for r in b):.3f}",
                        f"{statistics.median(r[k] for r in n):.3f}",
                        f"{statistics.median(ratios):.3f} ({q[0]:.3f}-{q[2]:.3f})"]
            print("| " + " | ".join(row) + " |")
        print("\nThe BPF programs' own cost (one more run each, kernel.bpf_stats_enabled=1):\n")
        print("| BPF port | ns per hook call | hook calls per GB | BPF CPU-ms per GB | share of the sender's CPU |")
        print("| --- | --- | --- | --- | --- |")
        for spec, name, _ in PAIRS:
            c = hook_cost(name, f"kr_{spec}_", a.seconds)
            print(f"| {name} ({spec}) | {c['ns_per_call']:.0f} | {c['calls_per_gb']:,.0f} "
                  f"| {c['bpf_cpu_s_per_gb'] * 1e3:.2f} | {c['share_of_sender'] * 100:.2f}% |")
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
