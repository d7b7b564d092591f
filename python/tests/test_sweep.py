"""kleinrock.sweep: the grid `compare --sweep` plans, its rows the same
whichever engine ran them (local threads, a local Ray cluster of 2 CPUs,
a Ray cluster one of whose workers is killed mid-sweep), written once
each, with the dataset and the report on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional

import pyarrow.parquet as pq
import pytest

import kleinrock
from conftest import SHORT, ray_processes

GRID = {"loss": ["0.1%", "1%", "3%"], "rtt": ["10ms", "40ms"]}
CC = ["cubic", "bbr", "reno"]
SEEDS = [1, 2]
N = 3 * 2 * 3 * 2


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> kleinrock.SweepResult:
    out = tmp_path_factory.mktemp("local")
    return kleinrock.sweep(SHORT, grid=GRID, cc=CC, seeds=SEEDS, engine="local", out=out / "s",
                           series=True, batch=5, quiet=True)


def test_the_local_sweep_is_comparees_grid(local: kleinrock.SweepResult) -> None:
    m = local.metrics
    assert m.num_rows == N and m.column("run_id").to_pylist() == list(range(N))
    assert m.column_names[:5] == ["run_id", "algorithm", "loss", "rtt", "seed"]
    # The same runs, in the same order, as compare --sweep's.
    cmp = kleinrock.compare(SHORT, cc=CC, seeds=SEEDS, grid=GRID)
    assert cmp.metrics.equals(m)
    assert local.tasks == 8 and local.batch == 5 and local.reruns == 0
    # On disk: the dataset, the series keyed by run, and the report.
    out = Path(local.out)
    assert pq.read_table(out / "metrics.parquet").equals(m)
    flows = pq.read_table(out / "series" / "flows").to_pandas()
    assert sorted(flows["run_id"].unique()) == list(range(N))
    assert set(flows["algorithm"]) == set(CC)
    assert (out / "report" / "report.html").is_file()
    assert len((out / "report" / "summary.csv").read_text().splitlines()) == N + 1
    assert local.text and "bbr" in local.text


def test_a_sweep_refuses_what_compare_refuses_and_foreign_directories(tmp_path: Path) -> None:
    with pytest.raises(kleinrock.KleinrockError, match="the sweep of `loss` lists 1% twice"):
        kleinrock.sweep(SHORT, grid={"loss": ["1%", "1%"]}, cc=["cubic"], quiet=True)
    with pytest.raises(kleinrock.KleinrockError, match="too large to plot"):
        kleinrock.sweep(SHORT, grid={"loss": ["1%"], "rtt": ["9ms"], "hz": [100]}, cc=["cubic"], out=tmp_path / "x")
    three = kleinrock.sweep(SHORT, grid={"loss": ["1%"], "rtt": ["9ms"], "hz": [100, 1000]}, cc=["cubic"],
                            out=tmp_path / "y", report=False, quiet=True)
    assert three.metrics.num_rows == 2 and three.report is None
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("precious")
    with pytest.raises(kleinrock.KleinrockError, match="notes.txt is not something a sweep writes"):
        kleinrock.sweep(SHORT, grid={"loss": ["1%"]}, cc=["cubic"], out=tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "precious"
    with pytest.raises(kleinrock.KleinrockError, match="not a sweep engine"):
        kleinrock.sweep(SHORT, cc=["cubic"], engine="spark")


def test_ray_gives_the_local_rows(ray_cluster: str, local: kleinrock.SweepResult, tmp_path: Path) -> None:
    r = kleinrock.sweep(SHORT, grid=GRID, cc=CC, seeds=SEEDS, engine="ray", out=tmp_path / "ray",
                        series=True, batch=5, quiet=True)
    assert r.metrics.equals(local.metrics)
    assert r.reruns == 0 and r.tasks == 8
    assert pq.read_table(tmp_path / "ray" / "metrics.parquet").equals(local.metrics)
    for name in ("flows", "queues", "pings"):
        a = pq.read_table(tmp_path / "ray" / "series" / name).sort_by([("run_id", "ascending"), ("t", "ascending")])
        b = pq.read_table(Path(local.out) / "series" / name).sort_by([("run_id", "ascending"), ("t", "ascending")])
        assert a.equals(b), name
    assert (tmp_path / "ray" / "report" / "summary.csv").read_bytes() == (Path(local.out) / "report" / "summary.csv").read_bytes()


def running_tasks() -> List[int]:
    """Ray workers executing a sweep task now (Ray titles them by task)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if (p / "cmdline").read_bytes().startswith(b"ray::_run_task"):
                    pids.append(int(p.name))
            except OSError:
                pass
    return pids


def test_a_worker_killed_mid_sweep_has_its_task_run_again(ray_cluster: str, local: kleinrock.SweepResult) -> None:
    killed: List[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            for pid in running_tasks():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.005)

    t = threading.Thread(target=killer)
    t.start()
    try:
        r = kleinrock.sweep(SHORT, grid=GRID, cc=CC, seeds=SEEDS, engine="ray", batch=3, quiet=True)
    finally:
        t.join()
    assert len(killed) == 1, "no task was caught running"
    assert r.reruns == 1, "the killed worker's task ran again, once"
    assert r.metrics.equals(local.metrics), "nothing lost, nothing counted twice"


def test_the_console_script(tmp_path: Path) -> None:
    scn = tmp_path / "s.toml"
    scn.write_text(SHORT)
    cmd = [sys.executable, "-m", "kleinrock.cli", str(scn), "--cc", "cubic,bbr", "--seeds", "1",
           "--grid", "loss=0.1%,1%", "--out", str(tmp_path / "o"), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "4 runs in" in done.stdout and (tmp_path / "o" / "report" / "report.html").is_file()
    bad = subprocess.run(cmd[:-3] + ["--grid", "loss", "--out", str(tmp_path / "p")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: `--grid loss` is not KEY=VALUES")
