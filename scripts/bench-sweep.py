#!/usr/bin/env python3
"""A 10,000-run sweep on a local Ray cluster of this machine's cores
against the same sweep run sequentially in one process (docs/PERFORMANCE.md,
"Sweeps on Ray").

The grid: 8 algorithms x 25 loss rates x 25 RTTs x 2 seeds on a short
scenario (10 Mbit/s, a 50-packet FIFO, one bulk flow and a ping, 1 s).
Three measurements, in this order, each with /proc/loadavg and the CPU
time stolen by the hypervisor around it:

1. sequential: every run in this process, one after another, one task
   (the local engine with one thread and one batch): the baseline;
2. ray: the same sweep on `ray.init(num_cpus=N)` (N: the cores), in the
   sweep's default batches; its rows must equal the baseline's;
3. overhead: N x 64 empty tasks on the same cluster (a task of no runs),
   which is the per-task cost of Ray and of the task's wrapping.

Efficiency is the sequential time over N times the Ray time (1.0: the
cores' ideal), and, since a shared host's other load takes wall time from
both unevenly, also the sequential CPU time over the CPU time of the Ray
run (this process, the raylet, the GCS server and the workers: what the
sweep costs beyond the simulations themselves). Needs the package and Ray (pip install './python[ray]').

    python scripts/bench-sweep.py [--runs-scale 1.0] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import kleinrock
from kleinrock import _native

SCENARIO = """\
duration = "1s"
[link]
rate = "10Mbit"
queue = 50
[[flow]]
cc = "cubic"
rtt = "20ms"
[[ping]]
rtt = "20ms"
"""

CC = ["reno", "cubic", "cubic:hystart=hspp", "cubic:friendly=newreno", "bbr", "cdg", "vegas", "htcp"]


def grid(scale: float):
    n = max(2, round(25 * scale))
    loss = ["%.4g%%" % (0.01 * (300 ** (i / (n - 1)))) for i in range(n)]  # 0.01% to 3%
    rtt = ["%dms" % round(5 * (40 ** (i / (n - 1)))) for i in range(n)]  # 5 ms to 200 ms
    return {"loss": loss, "rtt": rtt}


def stolen() -> float:
    """CPU seconds the hypervisor stole so far (all CPUs)."""
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    return int(cpu[8]) / os.sysconf("SC_CLK_TCK")


def ray_cpu() -> float:
    """CPU seconds (user + system) of this process and of the local Ray
    cluster's processes: the raylet, the GCS server and the raylet's
    children (the workers, which live through a sweep)."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % p).read()
            cmd = open("/proc/%s/cmdline" % p, "rb").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        procs[int(p)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, cmd)
    raylets = {pid for pid, (_, _, cmd) in procs.items() if b"raylet" in cmd.split(b"\0")[0]}
    total = 0.0
    for pid, (ppid, cpu, cmd) in procs.items():
        if pid == os.getpid() or pid in raylets or ppid in raylets or b"gcs_server" in cmd.split(b"\0")[0]:
            total += cpu
    return total


def measured(label: str, fn, cpu=lambda: time.process_time()):
    load0, steal0, t0, c0 = open("/proc/loadavg").read().split()[:3], stolen(), time.monotonic(), cpu()
    out = fn()
    dt, c = time.monotonic() - t0, cpu() - c0
    load1, steal1 = open("/proc/loadavg").read().split()[:3], stolen()
    print("%s: %.2f s, %.2f CPU s (loadavg %s -> %s, %.1f s stolen)"
          % (label, dt, c, " ".join(load0), " ".join(load1), steal1 - steal0))
    return out, {"seconds": dt, "cpu_s": c, "load_before": load0, "load_after": load1, "stolen_s": steal1 - steal0}


def start_ray(ray, cores: int, tries: int = 3) -> None:
    """A local cluster; started again if its raylet gave up waiting for
    the dashboard agent, which a loaded host starts slowly (Ray's issue
    65983: a fixed timeout)."""
    for i in range(tries):
        try:
            ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, configure_logging=False)
            return
        except Exception as e:  # Ray raises a bare Exception here
            ray.shutdown()
            if i == tries - 1 or "timed out during startup" not in str(e):
                raise
            print("ray did not start (%s); again" % e)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs-scale", type=float, default=1.0, help="scale the loss and RTT axes (1.0: 25 each)")
    p.add_argument("--json", help="write the figures here")
    a = p.parse_args()
    import ray

    cores = os.cpu_count() or 1
    g = grid(a.runs_scale)
    n = len(CC) * len(g["loss"]) * len(g["rtt"]) * 2
    print("%d runs, %d cores" % (n, cores))
    figures = {"runs": n, "cores": cores}

    seq, figures["sequential"] = measured(
        "sequential, one process",
        lambda: kleinrock.sweep(SCENARIO, grid=g, cc=CC, seeds=[1, 2], engine="local", jobs=1, batch=n, quiet=True),
    )
    start_ray(ray, cores)
    try:
        # Workers start and import the package once, outside the timing.
        ray.get([ray.remote(num_cpus=1)(lambda: 0).remote() for _ in range(cores)])
        par, figures["ray"] = measured(
            "ray, %d CPUs" % cores,
            lambda: kleinrock.sweep(SCENARIO, grid=g, cc=CC, seeds=[1, 2], engine="ray", quiet=True),
            ray_cpu,
        )
        assert par.metrics.equals(seq.metrics), "the engines' rows differ"
        figures["tasks"], figures["batch"] = par.tasks, par.batch

        from kleinrock.sweep import _run_task

        remote = ray.remote(num_cpus=1, max_retries=0)(_run_task)
        from kleinrock import _asked

        plan = _native.SweepPlan(_asked(SCENARIO, None, None, CC, [1, 2], None, g), report=False)
        ref = ray.put(plan.payload())
        k = cores * 64
        _, figures["empty_tasks"] = measured(
            "%d empty tasks" % k, lambda: ray.get([remote.remote(ref, [], False, False) for _ in range(k)]), ray_cpu
        )
    finally:
        ray.shutdown()
    ideal = figures["sequential"]["seconds"] / cores
    figures["efficiency"] = ideal / figures["ray"]["seconds"]
    figures["per_run_ms"] = 1000 * figures["sequential"]["seconds"] / n
    figures["cpu_efficiency"] = figures["sequential"]["cpu_s"] / figures["ray"]["cpu_s"]
    figures["per_task_overhead_ms"] = 1000 * figures["empty_tasks"]["cpu_s"] / k
    print(
        "efficiency %.1f%% of %d cores' ideal (%.2f s) by wall time, %.1f%% by CPU time; %.3f ms per run; "
        "%d tasks of %d runs; an empty task costs %.2f ms of CPU (Ray's processes and the driver)"
        % (100 * figures["efficiency"], cores, ideal, 100 * figures["cpu_efficiency"], figures["per_run_ms"],
           figures["tasks"], figures["batch"], figures["per_task_overhead_ms"])
    )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
