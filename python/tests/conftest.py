"""What the Python tests share: the repository's paths, the CLI binary to
compare messages and tables with, and one small local Ray cluster."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"

#: A short scenario: 10 Mbit/s, 20 ms, a ping; 2 s simulated.
SHORT = """\
duration = "2s"
seed = 3
[link]
rate = "10Mbit"
queue = 30
loss = "0.5%"
[[flow]]
cc = "cubic"
rtt = "20ms"
[[ping]]
rtt = "20ms"
"""


def kleinrock_bin() -> Path:
    """The `kleinrock` binary the suite built (KLEINROCK_BIN, or target/)."""
    given = os.environ.get("KLEINROCK_BIN")
    candidates: List[Path] = [Path(given).resolve()] if given else []
    candidates += [ROOT / "target" / "debug" / "kleinrock", ROOT / "target" / "release" / "kleinrock"]
    for c in candidates:
        if c.is_file():
            return c
    if os.environ.get("KLEINROCK_REQUIRE"):
        pytest.fail("no kleinrock binary: build it with `cargo build -p kleinrock` (scripts/test.sh does)")
    pytest.skip("no kleinrock binary to compare with (cargo build -p kleinrock)")


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(kleinrock_bin()), *args], cwd=cwd, capture_output=True, text=True)


def ray_processes(session_dir: str) -> List[int]:
    """Processes of the Ray cluster whose files are under `session_dir`."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if session_dir in cmd:
            pids.append(int(p.name))
    return pids


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """A local Ray cluster of 2 CPUs for the session, shut down after it; no
    process of it may outlive the tests."""
    # scripts/test.sh installs Ray: there, a missing Ray is a failure.
    if os.environ.get("KLEINROCK_REQUIRE"):
        import ray
    else:
        ray = pytest.importorskip("ray")
    temp = "/tmp/krray-%d" % os.getpid()
    for attempt in range(3):
        try:
            ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp, log_to_driver=False,
                     configure_logging=False)
            break
        except Exception as e:  # Ray raises a bare Exception here
            # A loaded host starts the dashboard agent slowly, and the
            # raylet gives up on it after a fixed time (Ray's issue 65983).
            ray.shutdown()
            if attempt == 2 or "timed out during startup" not in str(e):
                raise
    try:
        yield temp
    finally:
        ray.shutdown()
        deadline = time.monotonic() + 20
        while ray_processes(temp) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = ray_processes(temp)
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, "Ray processes outlived ray.shutdown(): %s" % left
