"""The examples run as scripts, as a user runs them: each checks its own
claim and exits non-zero if it does not hold."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_e2_hz_loss_reproduces_the_seeds_direction() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "e2_hz_loss.py")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cubic:friendly=newreno" in done.stdout
