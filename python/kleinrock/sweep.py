"""Sweeps: a grid of runs planned as ``kleinrock compare --sweep`` plans it,
run in batched tasks on local cores or on a Ray cluster, written as one
Parquet dataset (and the comparison report ``kleinrock compare`` writes).

The driver plans (in Rust: every point checked before anything runs) and
numbers the runs; a task is a batch of run numbers and the plan's payload,
which rebuilds its runs on any machine. Tasks are pure, so a task whose
worker died is simply run again, and every row is keyed by its run number
and kept once by the driver: results are the same, row for row, whichever
engine ran them and in whatever order (docs/SWEEPS.md).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.parquet as pq

from . import _native
from ._native import KleinrockError

#: What an ``out`` directory of a sweep holds.
OUT_NAMES = ("metrics.parquet", "series", "report")
SERIES = ("flows", "queues", "pings")


@dataclass
class SweepResult:
    """A sweep's outcome.

    ``metrics``: one row per run, in run order (docs/PYTHON.md's schema).
    ``out``: the directory written, if any; ``report``: its report.html.
    ``text``: the table ``kleinrock compare`` prints (with a report).
    ``tasks``: tasks run to completion; ``reruns``: tasks run again after
    their worker died; ``seconds``: wall time of the runs.
    """

    metrics: pa.Table
    out: Optional[str]
    report: Optional[str]
    text: Optional[str]
    engine: str
    tasks: int
    reruns: int
    batch: int
    seconds: float
    warnings: List[str]


TaskOutput = Tuple[bytes, List[bytes], Dict[str, bytes]]


def _run_task(payload: bytes, ids: List[int], keep: bool, series: bool) -> TaskOutput:
    """One task: the runs numbered ``ids`` (the GIL released while they run)."""
    return _native.run_batch(payload, ids, keep_results=keep, series=series)


class _Progress:
    """A line on stderr: runs done of all, tasks, reruns, time; drawn after a
    second, four times a second, unless quiet."""

    def __init__(self, total: int, quiet: bool, stream: Any = None) -> None:
        self.total, self.quiet = total, quiet
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.done = self.reruns = 0
        self.drawn = False
        self.last = 0.0

    def update(self, done: int, reruns: int, force: bool = False) -> None:
        self.done, self.reruns = done, reruns
        now = time.monotonic()
        if self.quiet or now - self.start < 1.0 or (now - self.last < 0.25 and not force):
            return
        self.last = now
        pct = 100.0 * done / max(self.total, 1)
        extra = ", %d task%s rerun" % (reruns, "" if reruns == 1 else "s") if reruns else ""
        self.stream.write(
            "\rsweep: %d of %d runs (%3.0f%%)%s, %.1f s" % (done, self.total, pct, extra, now - self.start)
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.update(self.done, self.reruns, force=True)
            self.stream.write("\n")
            self.stream.flush()


def _batches(n: int, batch: int) -> List[List[int]]:
    return [list(range(i, min(i + batch, n))) for i in range(0, n, batch)]


def _default_batch(n: int, workers: int) -> int:
    """About 16 tasks per worker (the last tasks' imbalance stays small),
    at most 512 runs each (a lost task costs little to run again)."""
    return max(1, min(512, math.ceil(n / max(1, workers * 16))))


def _claim_out(plan: Any, out: Path, report: bool) -> None:
    """Refuses an ``out`` that holds anything a sweep does not write."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise KleinrockError(
            "cannot write the sweep to %s: it is not a directory; choose a new or empty directory with out=" % out
        )
    if out.is_dir():
        for entry in sorted(out.iterdir()):
            if entry.name not in OUT_NAMES or entry.is_symlink():
                raise KleinrockError(
                    "cannot write the sweep to %s: %s is not something a sweep writes; choose a new or empty directory with out="
                    % (out, entry)
                )
    if report:
        plan.claim_report(os.fspath(out / "report"))


def _local(
    payload: bytes,
    batches: List[List[int]],
    keep: bool,
    series: bool,
    jobs: int,
    on_done: Callable[[int, Any], None],
) -> Tuple[int, int]:
    """Runs the batches on ``jobs`` threads of this process."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_run_task, payload, b, keep, series): i for i, b in enumerate(batches)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                on_done(futures[f], f.result())
    return len(batches), 0


#: Ray's errors that mean a task's worker (or node, or its result) was lost,
#: not that the task failed: the task is run again.
def _lost_errors() -> Tuple[type, ...]:
    import ray.exceptions as rx

    names = [
        "WorkerCrashedError",
        "NodeDiedError",
        "ObjectLostError",
        "OwnerDiedError",
        "LocalRayletDiedError",
        "OutOfMemoryError",
    ]
    return tuple(getattr(rx, n) for n in names if hasattr(rx, n))


def _ray(
    payload: bytes,
    batches: List[List[int]],
    keep: bool,
    series: bool,
    retries: int,
    on_done: Callable[[int, Any], None],
    on_rerun: Callable[[int], None],
) -> Tuple[int, int]:
    """Runs the batches as Ray tasks, one CPU each; a task whose worker died
    is submitted again (up to ``retries`` times), so each batch's rows
    arrive once."""
    import ray
    from ray.exceptions import RayTaskError

    remote = ray.remote(num_cpus=1, max_retries=0)(_run_task)
    ref = ray.put(payload)
    lost = _lost_errors()
    running = {remote.remote(ref, b, keep, series): (i, 0) for i, b in enumerate(batches)}
    reruns = 0
    while running:
        ready, _ = ray.wait(list(running), num_returns=1, timeout=0.25)
        for r in ready:
            i, attempt = running.pop(r)
            try:
                out = ray.get(r)
            except RayTaskError as e:
                cause = getattr(e, "cause", None)
                if isinstance(cause, KleinrockError):
                    raise KleinrockError(str(cause)) from None
                if isinstance(cause, lost):
                    out = None
                else:
                    raise
            except lost:
                out = None
            if out is None:
                if attempt >= retries:
                    raise KleinrockError(
                        "a sweep task (runs %d to %d) lost its worker %d times; see the Ray cluster's logs (ray logs) for why its workers die"
                        % (batches[i][0], batches[i][-1], attempt + 1)
                    )
                reruns += 1
                on_rerun(reruns)
                running[remote.remote(ref, batches[i], keep, series)] = (i, attempt + 1)
                continue
            on_done(i, out)
    return len(batches), reruns


def sweep(
    scenario: Any,
    grid: Optional[Mapping[str, Sequence[Any]]] = None,
    cc: Optional[Sequence[str]] = None,
    seeds: Optional[Sequence[int]] = None,
    *,
    engine: str = "local",
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    report: bool = True,
    series: bool = False,
    batch: Optional[int] = None,
    jobs: Optional[int] = None,
    address: Optional[str] = None,
    retries: int = 3,
    quiet: bool = False,
    name: Optional[str] = None,
    dir: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> SweepResult:
    """Runs every point of ``grid`` with every algorithm of ``cc`` and every
    seed of ``seeds``, as ``kleinrock compare --sweep`` would, and writes
    one Parquet dataset.

    ``grid`` maps a sweepable key (``loss``, ``rtt``, ``queue``, ``hz``...,
    or a dotted scenario key) to its values, the first key varying slowest;
    what is not given comes from the scenario's ``[compare]`` table.
    ``engine="local"`` runs on ``jobs`` threads here (default: every core);
    ``engine="ray"`` runs on the Ray cluster ``ray.init(address=address)``
    reaches (a new local one by default; one already initialised is used
    as it is), one CPU per task. ``batch`` runs go in one task (default:
    about 16 tasks per CPU, at most 512 runs each). A task whose worker
    dies is run again, up to ``retries`` times.

    With ``out``, writes ``out/metrics.parquet`` (one row per run:
    docs/PYTHON.md), with ``series=True`` ``out/series/{flows,queues,pings}/``
    (datasets partitioned by algorithm, each row keyed by ``run_id``), and
    with ``report=True`` (the default) ``out/report/``, the report
    ``kleinrock compare`` writes (which plots at most two swept keys; more
    need ``report=False``). Progress is shown on stderr unless ``quiet``.
    """
    from . import _asked, _warn

    if engine not in ("local", "ray"):
        raise KleinrockError('`%s` is not a sweep engine; give engine="local" or engine="ray"' % engine)
    if batch is not None and batch < 1:
        raise KleinrockError("batch=%d runs no run per task; give a batch of at least 1" % batch)
    keep = bool(report and out is not None)
    plan = _native.SweepPlan(_asked(scenario, name, dir, cc, seeds, None, grid), report=keep)
    warnings = list(plan.warnings)
    _warn(warnings)
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        _claim_out(plan, out_dir, keep)
    n = len(plan)

    started_ray = False
    if engine == "ray":
        import ray

        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            started_ray = True
        workers = int(ray.cluster_resources().get("CPU", 1))
    else:
        workers = jobs or os.cpu_count() or 1
    size = batch or _default_batch(n, workers)
    batches = _batches(n, size)
    payload = plan.payload()

    rows: Dict[int, pa.Table] = {}
    blobs: Dict[int, List[bytes]] = {}
    tables: Dict[int, Dict[str, bytes]] = {}
    progress = _Progress(n, quiet)
    lock = threading.Lock()
    state = {"done": 0, "reruns": 0}

    def on_done(i: int, output: Any) -> None:
        metrics, results, series_ipc = output
        with lock:
            if i in rows:  # a batch's rows are kept once, whoever ran it
                return
            rows[i] = pa.ipc.open_stream(pa.py_buffer(metrics)).read_all()
            if keep:
                blobs[i] = list(results)
            if series:
                tables[i] = dict(series_ipc)
            state["done"] += len(batches[i])
            progress.update(state["done"], state["reruns"])

    def on_rerun(count: int) -> None:
        state["reruns"] = count
        progress.update(state["done"], count)

    t0 = time.monotonic()
    try:
        if engine == "ray":
            ntasks, reruns = _ray(payload, batches, keep, series, retries, on_done, on_rerun)
        else:
            ntasks, reruns = _local(payload, batches, keep, series, workers, on_done)
    finally:
        progress.close()
        if started_ray:
            import ray

            ray.shutdown()
    seconds = time.monotonic() - t0

    metrics = pa.concat_tables([rows[i] for i in range(len(batches))])
    report_path = text = None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        pq.write_table(metrics, out_dir / "metrics.parquet")
        if series:
            _write_series(out_dir / "series", metrics, [tables[i] for i in range(len(batches))])
        if keep:
            ordered = [b for i in range(len(batches)) for b in blobs[i]]
            report_path, text = plan.report(os.fspath(out_dir / "report"), ordered)
    return SweepResult(
        metrics=metrics,
        out=os.fspath(out_dir) if out_dir is not None else None,
        report=report_path,
        text=text,
        engine=engine,
        tasks=ntasks,
        reruns=reruns,
        batch=size,
        seconds=seconds,
        warnings=warnings,
    )


def _write_series(where: Path, metrics: pa.Table, parts: List[Dict[str, bytes]]) -> None:
    """Each series as a dataset partitioned by algorithm, rows in run order."""
    import pyarrow.dataset as ds

    algorithm = dict(zip(metrics.column("run_id").to_pylist(), metrics.column("algorithm").to_pylist()))
    for name in SERIES:
        t = pa.concat_tables([pa.ipc.open_stream(pa.py_buffer(p[name])).read_all() for p in parts])
        algs = pa.array([algorithm[i] for i in t.column("run_id").to_pylist()], pa.string())
        t = t.append_column("algorithm", algs)
        ds.write_dataset(
            t,
            where / name,
            format="parquet",
            partitioning=ds.partitioning(pa.schema([("algorithm", pa.string())]), flavor="hive"),
            existing_data_behavior="delete_matching",
        )
