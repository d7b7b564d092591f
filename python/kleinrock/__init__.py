"""Kleinrock from Python: the packet-level simulator, comparisons and sweeps.

Every call runs Kleinrock's Rust code (the same functions as the
``kleinrock`` binary), with the GIL released while it simulates, and hands
back pyarrow tables; ``.to_pandas()`` turns any of them into a DataFrame.

A scenario is given as a path to a scenario file (``str`` or
``os.PathLike``), as its TOML text (a ``str`` holding a newline or an
``=``), or as a ``dict`` of the same keys (docs/SCENARIOS.md)::

    import kleinrock
    r = kleinrock.sim("scenarios/e3-cdg-cubic-10M-40ms-q84-ping.toml", seed=2, loss="0.1%")
    r.summary.to_pandas()
    cmp = kleinrock.compare("scenarios/e3-cdg-cubic-10M-40ms-q84-ping.toml",
                            cc=["cubic", "bbr"], seeds=[1, 2])
    cmp.metrics.to_pandas()

Bad input raises :class:`KleinrockError` with the one sentence the CLI
prints. docs/PYTHON.md documents every table's columns.
"""

from __future__ import annotations

import os
import warnings as _warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import pyarrow as pa

from . import _native
from ._native import KleinrockError

__all__ = [
    "KleinrockError",
    "Scenario",
    "Results",
    "Comparison",
    "Algorithm",
    "Replay",
    "SweepResult",
    "sim",
    "compare",
    "algorithms",
    "replay",
    "sweep",
]

#: What names a scenario: a file's path, its TOML text, or a dict of its keys.
Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]

#: A value a scenario key takes (``"1%"``, ``40``, ``True``, ...).
Value = Union[str, int, float, bool]


def _source(scenario: Scenario) -> Tuple[str, Any]:
    """The kind of scenario given and its value, as the native module takes them."""
    if isinstance(scenario, Mapping):
        return "dict", dict(scenario)
    if isinstance(scenario, os.PathLike):
        return "path", os.fspath(scenario)
    if isinstance(scenario, str):
        if "\n" in scenario or "=" in scenario:
            return "text", scenario
        return "path", scenario
    raise TypeError(
        "a scenario is a path, TOML text or a dict, not %s" % type(scenario).__name__
    )


def _table(ipc: bytes) -> pa.Table:
    """An Arrow IPC stream from the native module as a pyarrow table."""
    return pa.ipc.open_stream(pa.py_buffer(ipc)).read_all()


def _warn(messages: Sequence[str]) -> None:
    for m in messages:
        _warnings.warn(m, stacklevel=3)


class Results:
    """One run's results: its series and summaries as pyarrow tables.

    Attributes (each a :class:`pyarrow.Table`, built when first read):
    ``flows`` (each flow's series: cwnd, RTT, goodput... per sample),
    ``queues`` (the bottleneck queues' series), ``pings`` (each ping's RTT
    samples), ``summary`` (one row per flow), ``ping_summary``, ``udp`` and
    ``links`` (the two bottleneck links' counters). ``seed``,
    ``duration_s`` and ``events`` describe the run.
    """

    TABLES = ("flows", "queues", "pings", "summary", "ping_summary", "udp", "links")

    def __init__(self, native: Any) -> None:
        self._native = native
        self._tables: Dict[str, pa.Table] = {}

    def table(self, name: str) -> pa.Table:
        """The table ``name`` (one of :attr:`TABLES`)."""
        if name not in self._tables:
            self._tables[name] = _table(self._native.table(name))
        return self._tables[name]

    flows = property(lambda self: self.table("flows"), doc="Each flow's series.")
    queues = property(lambda self: self.table("queues"), doc="The queues' series.")
    pings = property(lambda self: self.table("pings"), doc="Each ping's RTT samples.")
    summary = property(lambda self: self.table("summary"), doc="One row per flow.")
    ping_summary = property(lambda self: self.table("ping_summary"), doc="One row per ping.")
    udp = property(lambda self: self.table("udp"), doc="One row per UDP flow.")
    links = property(lambda self: self.table("links"), doc="The links' counters.")

    @property
    def seed(self) -> int:
        return int(self._native.seed)

    @property
    def duration_s(self) -> float:
        return float(self._native.duration_s)

    @property
    def events(self) -> int:
        return int(self._native.events)

    def summary_text(self) -> str:
        """The table ``kleinrock sim`` prints for this run."""
        return str(self._native.summary_text())

    def to_json(self) -> str:
        """The run as ``results.json`` holds it."""
        return str(self._native.json())

    def write(self, directory: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the files of ``kleinrock sim --out`` (results.json and CSV) into ``directory``."""
        self._native.write(os.fspath(directory))

    def __repr__(self) -> str:
        return "<kleinrock.Results seed=%d, %.1f s simulated>" % (self.seed, self.duration_s)


def sim(
    scenario: Scenario,
    seed: Optional[int] = None,
    *,
    name: Optional[str] = None,
    dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    **overrides: Value,
) -> Results:
    """Runs a scenario once in the simulator, as ``kleinrock sim`` does.

    ``seed`` replaces the scenario's seed. Each keyword of ``overrides``
    sets a scenario key as ``kleinrock compare --sweep`` does: the short
    names ``loss``, ``rate``, ``queue``/``buffer``, ``delay``, ``rtt``
    (every flow's, ping's and UDP flow's), ``hz``, ``mss``, ``cc`` (every
    flow's algorithm), or a dotted key passed as ``**{"link.up.loss": "1%"}``.
    ``name`` labels TOML text or a dict in messages; ``dir`` is where their
    relative paths (traces) resolve (default: the current directory).
    """
    kind, value = _source(scenario)
    native = _native.sim(
        kind,
        value,
        label=name,
        dir=os.fspath(dir) if dir is not None else None,
        seed=seed,
        overrides=list(overrides.items()),
    )
    _warn(native.warnings)
    return Results(native)


@dataclass(frozen=True)
class Comparison:
    """A comparison's outcome.

    ``metrics``: one row per run (algorithm, swept values, seed, and every
    metric of the report's summary.csv at full precision; docs/PYTHON.md).
    ``text``: the table ``kleinrock compare`` prints (medians over seeds).
    ``report``: the path of report.html when ``out`` was given.
    """

    metrics: pa.Table
    text: str
    warnings: List[str]
    report: Optional[str]

    def __str__(self) -> str:
        return self.text


def _asked(
    scenario: Scenario,
    name: Optional[str],
    dir: Optional[Union[str, "os.PathLike[str]"]],
    cc: Optional[Sequence[str]],
    seeds: Optional[Sequence[int]],
    sweep: Union[None, str, Sequence[str]],
    grid: Optional[Mapping[str, Sequence[Value]]],
) -> Dict[str, Any]:
    """What a comparison or a sweep asks, as the native module takes it."""
    kind, value = _source(scenario)
    return {
        "kind": kind,
        "value": value,
        "label": name if kind != "path" else None,
        "dir": os.fspath(dir) if dir is not None else None,
        "name": name,
        "cc": list(cc or []),
        "seeds": list(seeds or []),
        "sweep": [sweep] if isinstance(sweep, str) else (list(sweep) if sweep is not None else None),
        "grid": [(k, list(v)) for k, v in grid.items()] if grid is not None else None,
    }


def compare(
    scenario: Scenario,
    cc: Optional[Sequence[str]] = None,
    seeds: Optional[Sequence[int]] = None,
    sweep: Union[None, str, Sequence[str]] = None,
    *,
    grid: Optional[Mapping[str, Sequence[Value]]] = None,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    jobs: Optional[int] = None,
    flent_test: Optional[str] = None,
    engine: Optional[str] = None,
    name: Optional[str] = None,
    dir: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Comparison:
    """Compares algorithms on a scenario, as ``kleinrock compare`` does.

    The options are the CLI's: ``cc`` (``--cc``), ``seeds`` (``--seeds``),
    ``sweep`` (``--sweep KEY=V1,V2``, one string or a list; or ``grid``, a
    dict of key to values), ``out`` (``--out``: the report directory; no
    report is written without it), ``jobs`` (``--jobs``), ``flent_test``
    and ``engine`` (only ``"sim"``: the lab needs the CLI, as root). What
    is not given comes from the scenario's ``[compare]`` table. Runs on
    every core.
    """
    ipc, text, warnings, report = _native.compare(
        _asked(scenario, name, dir, cc, seeds, sweep, grid),
        flent_test=flent_test,
        engine=engine,
        jobs=jobs,
        out=os.fspath(out) if out is not None else None,
    )
    _warn(warnings)
    return Comparison(metrics=_table(ipc), text=text, warnings=list(warnings), report=report)


@dataclass(frozen=True)
class Algorithm:
    """An algorithm as ``kleinrock algorithms`` lists it.

    ``params`` holds (key, values, help) for each parameter of a spec
    (``cubic:hystart=hspp``).
    """

    name: str
    aliases: Tuple[str, ...]
    summary: str
    params: Tuple[Tuple[str, str, str], ...]


def algorithms() -> List[Algorithm]:
    """Every algorithm and its parameters (``kleinrock algorithms``)."""
    return [
        Algorithm(n, tuple(a), s, tuple(tuple(p) for p in ps))  # type: ignore[misc]
        for n, a, s, ps in _native.algorithms()
    ]


@dataclass(frozen=True)
class Replay:
    """A replay's outcome: whether every row's outputs agreed, the rows
    replayed, and the report ``kleinrock replay`` prints."""

    agrees: bool
    rows: int
    text: str

    def __bool__(self) -> bool:
        return self.agrees

    def __str__(self) -> str:
        return self.text


def replay(trace: Union[str, "os.PathLike[str]"], cc: str, hz: int) -> Replay:
    """Replays a hook trace into the algorithm ``cc`` on a ``hz`` jiffies
    clock, as ``kleinrock replay TRACE --cc CC --hz HZ`` does
    (docs/TRACE_FORMAT.md)."""
    agrees, rows, text = _native.replay(os.fspath(trace), cc, int(hz))
    return Replay(bool(agrees), int(rows), str(text))


from .sweep import SweepResult, sweep  # noqa: E402  (uses the above)
