"""E2 from Python: the HZ x loss table of docs/EXPERIMENTS.md (seed 001,
FreeBSD review D46546), CUBIC's TCP-friendly window on a 1 Gbit/s, 0.5 ms
LAN with random loss, where a coarse kernel clock starves RFC 8312's Eq. 4
estimate and the NewReno-emulated window does not care about the clock.

    python examples/e2_hz_loss.py            # the reduced grid (the test suite's)
    python examples/e2_hz_loss.py --full     # the whole table: 4 HZ x 2 losses, 5 s runs

The reduced grid keeps what shows the effect (HZ 100 and 1000, 1% loss,
CUBIC with each friendly-region estimator, 1 s runs instead of 5 s) and
checks it: at each HZ the NewReno-emulated window delivers more than
Eq. 4, and at HZ=1000 at least 1.5 times as much. It exits non-zero if
the simulator stops showing it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import kleinrock

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "e2-hz-loss-1G-500us.toml"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="the whole table of docs/EXPERIMENTS.md")
    a = p.parse_args()
    if a.full:
        # The scenario's own [compare] table: 4 algorithms, 4 HZ, 2 losses.
        res = kleinrock.sweep(SCENARIO, report=False)
    else:
        text = SCENARIO.read_text().replace('duration = "5s"', 'duration = "1s"')
        res = kleinrock.sweep(
            text,
            name="e2-reduced",
            grid={"hz": [100, 1000]},  # at the scenario's own 1% loss
            cc=["cubic", "cubic:friendly=eq4", "cubic:friendly=newreno"],
            report=False,
        )
    names = res.metrics.column_names
    keys = names[names.index("algorithm") + 1 : names.index("seed")]  # the swept keys
    df = res.metrics.to_pandas()
    df["goodput_mbps"] = df["goodput_bps"] / 1e6
    table = df.pivot_table(index=keys, columns="algorithm", values="goodput_mbps", sort=False)
    print("goodput (Mbit/s), 1 Gbit/s, 0.5 ms, 4-BDP FIFO" + ("" if a.full else ", 1% loss, 1 s"))
    print(table.round(0).to_string())

    failed = []
    for point, row in table.iterrows():
        at = dict(zip(keys, point if isinstance(point, tuple) else (point,)))
        eq4, newreno = row["cubic:friendly=eq4"], row["cubic:friendly=newreno"]
        if not newreno > eq4:
            failed.append("%s: NewReno-emulated %.0f not above Eq. 4 %.0f" % (at, newreno, eq4))
        if at["hz"] == "1000" and not newreno >= 1.5 * eq4:
            failed.append("%s: NewReno-emulated %.0f not 1.5x Eq. 4 %.0f" % (at, newreno, eq4))
    for f in failed:
        print("E2 does not hold: " + f, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
