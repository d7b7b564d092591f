"""``kleinrock-sweep``: a sweep from the command line (docs/SWEEPS.md).

    kleinrock-sweep SCENARIO.toml --cc cubic,bbr --seeds 1,2 \\
        --grid loss=0.1%,1% --grid rtt=20ms,80ms --engine ray --address auto --out out/sweep

The options are ``kleinrock compare``'s where they mean the same
(``--cc``, ``--seeds``, ``--grid`` as ``--sweep``), and
:func:`kleinrock.sweep`'s otherwise. Errors print ``error: SENTENCE`` and
exit with status 2, as the CLI's do.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence, Tuple

from . import KleinrockError
from .sweep import sweep


def _grid(values: Sequence[str]) -> List[Tuple[str, List[object]]]:
    """``KEY=V1,V2`` as the CLI's --sweep reads it: integers stay integers,
    booleans booleans, anything else is a string."""
    out: List[Tuple[str, List[object]]] = []
    for arg in values:
        key, sep, rest = arg.partition("=")
        if not sep:
            raise KleinrockError(
                "`--grid %s` is not KEY=VALUES; write e.g. `--grid loss=0.1%%,1%%,10%%`" % arg
            )
        vals: List[object] = []
        for v in (x.strip() for x in rest.split(",")):
            if not v:
                continue
            if v in ("true", "false"):
                vals.append(v == "true")
                continue
            try:
                vals.append(int(v))
            except ValueError:
                vals.append(v)
        out.append((key.strip(), vals))
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="kleinrock-sweep",
        description="Run a sweep (a grid of runs) locally or on Ray; write a Parquet dataset and the comparison report.",
    )
    p.add_argument("scenario", help="the scenario file (TOML, docs/SCENARIOS.md)")
    p.add_argument("--cc", help="algorithm specs, comma-separated (default: [compare]'s cc)")
    p.add_argument("--seeds", help="seeds, comma-separated (default: [compare]'s, else the scenario's)")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a swept key and its values; repeat for a grid (default: [compare]'s sweeps)")
    p.add_argument("--engine", choices=("local", "ray"), default="local")
    p.add_argument("--address", help="the Ray cluster to join (ray.init's address; default: a new local one)")
    p.add_argument("--out", required=True, help="the directory to write (new, empty, or a sweep's)")
    p.add_argument("--batch", type=int, help="runs per task (default: about 16 tasks per CPU)")
    p.add_argument("--jobs", type=int, help="threads of the local engine (default: one per core)")
    p.add_argument("--series", action="store_true", help="write the runs' time series too")
    p.add_argument("--no-report", action="store_true", help="write no report (needed past two swept keys)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    a = p.parse_args(argv)
    try:
        grid = dict(_grid(a.grid)) if a.grid else None
        seeds = [int(s) for s in a.seeds.split(",") if s.strip()] if a.seeds else None
        r = sweep(
            a.scenario,
            grid=grid,
            cc=[c for c in a.cc.split(",") if c.strip()] if a.cc else None,
            seeds=seeds,
            engine=a.engine,
            address=a.address,
            out=a.out,
            report=not a.no_report,
            series=a.series,
            batch=a.batch,
            jobs=a.jobs,
            quiet=a.quiet,
        )
    except KleinrockError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    except ValueError as e:
        print("error: --seeds takes integers: %s" % e, file=sys.stderr)
        return 2
    if r.text:
        print(r.text, end="")
    print(
        "%d runs in %d tasks of up to %d on %s, %.1f s%s"
        % (r.metrics.num_rows, r.tasks, r.batch, r.engine, r.seconds,
           ", %d rerun after its worker died" % r.reruns if r.reruns else "")
    )
    print("dataset: %s/metrics.parquet" % r.out)
    if r.report:
        print("report: %s" % r.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
