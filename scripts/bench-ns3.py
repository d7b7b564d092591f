#!/usr/bin/env python3
"""Kleinrock's simulator against ns-3, side by side, on the anchor cases.

Runs the ns-3 dumbbell (ns-3.44, ../shared/anchors/ns3, built with its
build.sh) and `kleinrock sim SCENARIO` on the same cases,
alternating ns-3 and Kleinrock in one session, and prints per case: the
median wall times of the whole processes, their ratio, bottleneck packets
per wall second and the ratio of those (each simulator's speed on the
traffic it actually carried: where the two TCPs deliver different
goodputs, as in C1, the wall ratio also compares the TCPs), and both
goodputs; then the same from each program's
fastest repetition. On a shared host every delay the host adds lengthens
a run and none shortens it, so the minimum estimates a program's own cost
and the median what a user of that host would wait (Chen and Revels,
"Robust benchmarking in noisy environments", 2016); both programs are
measured alternately, so both see the same host.

    scripts/bench-ns3.py [--reps 3] [--cases A,B,C1,C2,D,E,F,F0] [--ns3 PATH]
                         [--link static|static-glibc|dynamic|both] [--cpu N|none] [--inner 5]
                         [--write-results]

(ns-3 takes minutes on C2; `--cases A,B,C1,D,E,F,F0` leaves it out.)

The ns-3 binary is found at $NS3_BIN, else built once into
~/.cache/kleinrock/ns3 from the anchor (needs python3-venv and g++; the
PyPI package `ns3` is downloaded). Kleinrock is built in release mode
(into $CARGO_TARGET_DIR if set), statically linked against musl
(`--target ARCH-unknown-linux-musl`, installed with rustup if missing;
the binary a release would ship: no dynamic loader, and none of glibc's
start-up probing, about 1 ms less per process here than the dynamic
build) and, with `--link both` (the default), also as `cargo build
--release` links it; `--link static-glibc` measures glibc's static
build (`-C target-feature=+crt-static`) instead;
each repetition runs ns-3, then the static, then the dynamic binary, and
the table gives both.

Both programs run pinned to one CPU (`--cpu`, default the last one), as
the targets are per core. On a virtual machine an idle vCPU halts, and a
process started on it waits for the hypervisor to wake it (up to
milliseconds on a busy host, see docs/LAB.md): a cost of the host that
lands on every short process, ns-3's and Kleinrock's alike, but that
only a run of a few milliseconds notices. On one CPU the parent's CPU is
awake when the child starts and when the parent is woken at its end.
Each repetition runs Kleinrock `--inner` times (default 5) for every
ns-3 run: its runs take milliseconds, so its median comes from more
samples at no cost to the session's length.

Each program prints a summary (ns-3's RESULT line, Kleinrock's table)
and writes nothing else; `--write-results` has Kleinrock also write its
time series and summaries (`--out`, ~200 KB per run), work the ns-3
dumbbell does not do. The last two columns give the share of the CPU's
time the hypervisor stole during each program's runs (/proc/stat): what
a figure measured on a busy host is worth.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ANCHOR = os.path.join(ROOT, "..", "shared", "anchors", "ns3")

# case: (ns-3 arguments, Kleinrock scenario)
A = dict(rate="100Mbps", rttMs=40, queue=0, loss=0, time=30, tcp="ns3::TcpCubic")
CASES = {
    "A": (A, "ns3-A-cubic-100M-40ms.toml"),
    "B": (dict(A, tcp="ns3::TcpBbr"), "ns3-B-bbr-100M-40ms.toml"),
    "C1": (dict(A, loss=0.01), "ns3-C1-cubic-100M-40ms-loss1.toml"),
    "C2": (dict(A, loss=0.01, tcp="ns3::TcpBbr"), "ns3-C2-bbr-100M-40ms-loss1.toml"),
    "D": (dict(rate="10Mbps", rttMs=40, queue=84, loss=0, time=60, tcp="ns3::TcpCubic"), "ns3-D-cubic-10M-40ms-q84.toml"),
    "E": (dict(rate="1Gbps", rttMs=10, queue=0, loss=0, time=10, tcp="ns3::TcpCubic"), "ns3-E-cubic-1G-10ms.toml"),
    "F": (dict(A, flows=10, stagger=0.1), "ns3-F-10cubic-100M-40ms-stagger.toml"),
    "F0": (dict(A, flows=10, stagger=0), "ns3-F0-10cubic-100M-40ms.toml"),
}


def ns3_binary(explicit):
    path = explicit or os.environ.get("NS3_BIN")
    if path:
        return path
    cache = os.path.expanduser("~/.cache/kleinrock/ns3")
    binary = os.path.join(cache, "dumbbell")
    if not os.path.exists(binary):
        os.makedirs(cache, exist_ok=True)
        print(f"building ns-3's dumbbell into {cache} (one time, a few minutes)", file=sys.stderr)
        env = dict(os.environ, NS3_VENV=os.path.join(cache, "venv"), NS3_BIN=binary)
        subprocess.run(["bash", os.path.join(ANCHOR, "build.sh")], check=True, env=env)
    return binary


def cpu_ticks(cpu):
    """(steal, total) ticks of `cpu` (or of all CPUs: None) from
    /proc/stat; 0, 0 where there is no such file."""
    name = "cpu" if cpu is None else f"cpu{cpu}"
    try:
        with open("/proc/stat") as f:
            for line in f:
                fields = line.split()
                if fields[0] == name:
                    ticks = [int(x) for x in fields[1:9]]
                    return ticks[7], sum(ticks)
    except OSError:
        pass
    return 0, 0


class Steal:
    """The share of a CPU's time the hypervisor gave to other guests
    while one program ran, over all of that program's runs (a single run
    of a few milliseconds is shorter than a tick)."""

    def __init__(self, cpu):
        self.cpu, self.steal, self.total = cpu, 0, 0

    def around(self, run):
        s0, t0 = cpu_ticks(self.cpu)
        result = run()
        s1, t1 = cpu_ticks(self.cpu)
        self.steal += s1 - s0
        self.total += t1 - t0
        return result

    def share(self):
        return self.steal / self.total if self.total else 0.0


def timed(args, stdout_path):
    """Runs `args` with its output to `stdout_path` and returns the wall
    time from spawn to reaped exit: `posix_spawn` and `waitpid`, the least
    a launcher adds, the same for both programs."""
    fd = os.open(stdout_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t0 = time.perf_counter()
        pid = os.posix_spawn(args[0], args, os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1), (os.POSIX_SPAWN_DUP2, fd, 2)])
        _, status = os.waitpid(pid, 0)
        wall = time.perf_counter() - t0
    finally:
        os.close(fd)
    if os.waitstatus_to_exitcode(status) != 0:
        with open(stdout_path) as f:
            tail = f.read()[-2000:]
        sys.exit(f"{' '.join(args)} failed (exit {os.waitstatus_to_exitcode(status)}):\n{tail}")
    return wall


def run_ns3(binary, params, rep, tmp):
    args = [binary] + [f"--{k}={v}" for k, v in params.items()] + [f"--run={rep}"]
    log = os.path.join(tmp, "ns3.out")
    wall = timed(args, log)
    with open(log) as f:
        out = f.read()
    line = [l for l in out.splitlines() if l.startswith("RESULT ")][-1]
    rec = dict(kv.split("=", 1) for kv in line.split()[1:])
    return wall, float(rec["goodputMbps"]), int(rec["bnTxPkts"])


def run_kleinrock(binary, scenario, tmp, write_results):
    """One run; its goodput and bottleneck packets come from the summary
    it prints, as ns-3's do from its RESULT line, or with
    `write_results` from the results.json it also writes."""
    args = [binary, "sim", scenario, "--quiet"]
    if write_results:
        args += ["--out", tmp]
    log = os.path.join(tmp, "kleinrock.out")
    wall = timed(args, log)
    if write_results:
        name = os.path.splitext(os.path.basename(scenario))[0]
        with open(os.path.join(tmp, name, "results.json")) as f:
            r = json.load(f)
        return wall, sum(fl["goodput_bps"] for fl in r["flows"]) / 1e6, r["links"]["up"]["tx_packets"]
    with open(log) as f:
        out = f.read()
    goodput = sum(float(m) for m in re.findall(r" (\d+\.\d+) Mb/s ", out))
    packets = re.search(r"^bottleneck up: (\d+) packets sent", out, re.M)
    if packets is None:
        sys.exit(f"no 'bottleneck up' line in kleinrock's summary of {scenario}:\n{out[-2000:]}")
    return wall, goodput, int(packets.group(1))


def host_triple():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(l.split()[1] for l in out.splitlines() if l.startswith("host:"))


def build_kleinrock(link):
    """Builds kleinrock; returns the binary's path."""
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    if link == "dynamic":
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
        return os.path.join(target, "release", "kleinrock")
    host = host_triple()
    if not host.endswith("-linux-gnu"):
        sys.exit(f"--link {link} builds for Linux on a *-linux-gnu host, not {host}; use --link dynamic")
    if link == "static":
        # musl, whose static start-up is half glibc's here (no cache
        # probing by cpuid, each an exit to the hypervisor on a VM).
        triple = host.replace("-linux-gnu", "-linux-musl")
        have = subprocess.run(["rustup", "target", "list", "--installed"], capture_output=True, text=True)
        if have.returncode != 0 or triple not in have.stdout.split():
            add = subprocess.run(["rustup", "target", "add", triple])
            if add.returncode != 0:
                sys.exit(f"--link static needs Rust's {triple} target: install it with "
                         f"`rustup target add {triple}`, or measure --link static-glibc")
        env = dict(os.environ)
    else:
        # glibc, linked statically. An explicit --target keeps the flag off
        # build scripts and proc macros, which cannot be linked statically.
        triple = host
        env = dict(os.environ, RUSTFLAGS="-C target-feature=+crt-static")
    subprocess.run(["cargo", "build", "--release", "-q", "--target", triple], cwd=ROOT, check=True, env=env)
    return os.path.join(target, triple, "release", "kleinrock")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--ns3", help="path to the ns-3 dumbbell binary")
    ap.add_argument("--link", choices=["static", "static-glibc", "dynamic", "both"], default="both",
                    help="which kleinrock build(s) to measure: static (musl), static-glibc, dynamic, "
                         "or both (static and dynamic, the default)")
    ap.add_argument("--cpu", default=str(os.cpu_count() - 1),
                    help="CPU to run both programs on, or 'none' (default the last CPU)")
    ap.add_argument("--write-results", action="store_true",
                    help="Kleinrock also writes its results files (--out), which ns-3's dumbbell does not")
    ap.add_argument("--inner", type=int, default=5,
                    help="Kleinrock runs per ns-3 run (default 5)")
    a = ap.parse_args()
    if a.reps < 1 or a.inner < 1:
        sys.exit("--reps and --inner must be at least 1")
    if a.cpu != "none":
        if not a.cpu.isdigit() or int(a.cpu) not in os.sched_getaffinity(0):
            sys.exit(f"--cpu {a.cpu} is not a CPU this process may use; "
                     f"give one of {sorted(os.sched_getaffinity(0))} or 'none'")
        # Children inherit the mask: both programs run on this CPU.
        os.sched_setaffinity(0, {int(a.cpu)})
    cpu = None if a.cpu == "none" else int(a.cpu)
    cases = a.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        sys.exit(f"unknown case {unknown[0]}; valid cases are {', '.join(CASES)}")
    links = ["static", "dynamic"] if a.link == "both" else [a.link]
    krs = {link: build_kleinrock(link) for link in links}
    ns3 = ns3_binary(a.ns3)
    rows, fastest = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            params, scenario = CASES[c]
            scenario = os.path.join(ROOT, "scenarios", scenario)
            n, k = [], {link: [] for link in links}
            ns3_steal, kr_steal = Steal(cpu), Steal(cpu)
            for rep in range(1, a.reps + 1):
                n.append(ns3_steal.around(lambda: run_ns3(ns3, params, rep, tmp)))
                for _ in range(a.inner):
                    for link in links:
                        k[link].append(kr_steal.around(
                            lambda: run_kleinrock(krs[link], scenario, tmp, a.write_results)))
                times = ", ".join(f"kleinrock {link} {k[link][-1][0]:.4f} s" for link in links)
                print(f"  {c} rep {rep}: ns-3 {n[-1][0]:.2f} s, {times}", file=sys.stderr)
            nw = statistics.median(x[0] for x in n)
            kw = {link: statistics.median(x[0] for x in k[link]) for link in links}
            first = k[links[0]]
            # Packets per wall second run by run: ns-3's repetitions
            # differ in their loss draws, and so in the traffic they carry.
            npps = statistics.median(x[2] / x[0] for x in n)
            kpps = statistics.median(x[2] / x[0] for x in first)
            rows.append((c, nw, kw, npps, kpps, statistics.median(x[1] for x in n), first[0][1],
                         ns3_steal.share(), kr_steal.share()))
            nf, kf = min(n), min(first)  # (wall, goodput, packets) of the fastest
            fastest.append((c, nf[0], kf[0], nf[2], kf[2]))
    head = "| case | ns-3 wall s |"
    for link in links:
        head += f" Kleinrock ({link}) wall s | ratio ({link}) |"
    print(head + f" ns-3 bn pkts/s | Kleinrock ({links[0]}) bn pkts/s | pkts/s ratio | ns-3 goodput Mbit/s"
          " | Kleinrock goodput Mbit/s | host steal, ns-3 | host steal, Kleinrock |")
    print("|---" * (2 + 2 * len(links) + 7) + "|")
    for c, nw, kw, npps, kpps, ng, kg, ns, ks in rows:
        line = f"| {c} | {nw:.2f} |"
        for link in links:
            line += f" {kw[link]:.4f} | {nw / kw[link]:.0f}x |"
        print(line + f" {npps:,.0f} | {kpps:,.0f} | {kpps / npps:.0f}x | {ng:.2f} | {kg:.2f}"
              f" | {100 * ns:.0f}% | {100 * ks:.0f}% |")
    print()
    print(f"Fastest of {a.reps} repetitions (ns-3) and {a.reps * a.inner} (Kleinrock):")
    print()
    print(f"| case | ns-3 wall s | Kleinrock ({links[0]}) wall s | ratio | ns-3 bn pkts/s | Kleinrock bn pkts/s"
          " | pkts/s ratio |")
    print("|---" * 7 + "|")
    for c, nw, kw, npk, kpk in fastest:
        print(f"| {c} | {nw:.2f} | {kw:.4f} | {nw / kw:.0f}x | {npk / nw:,.0f} | {kpk / kw:,.0f}"
              f" | {(kpk / kw) / (npk / nw):.0f}x |")


if __name__ == "__main__":
    main()
