"""Types of the native module (python/src): the engine of the `kleinrock`
package. Use the package's functions; these are what they call."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

class KleinrockError(Exception): ...

class RunResults:
    seed: int
    duration_s: float
    events: int
    warnings: List[str]
    def table(self, name: str) -> bytes: ...
    def summary_text(self) -> str: ...
    def json(self) -> str: ...
    def write(self, dir: str) -> None: ...

class SweepPlan:
    keys: List[str]
    name: str
    algorithms: List[str]
    seeds: List[int]
    warnings: List[str]
    def __init__(
        self,
        kind: str,
        value: Any,
        label: Optional[str] = ...,
        dir: Optional[str] = ...,
        name: Optional[str] = ...,
        cc: Sequence[str] = ...,
        seeds: Sequence[int] = ...,
        sweep: Optional[Sequence[str]] = ...,
        grid: Optional[Sequence[Tuple[str, Sequence[Any]]]] = ...,
        report: bool = ...,
    ) -> None: ...
    def __len__(self) -> int: ...
    def payload(self) -> bytes: ...
    def claim_report(self, out: str) -> None: ...
    def report(self, out: str, blobs: Sequence[bytes]) -> Tuple[str, str]: ...

def sim(
    kind: str,
    value: Any,
    label: Optional[str] = ...,
    dir: Optional[str] = ...,
    seed: Optional[int] = ...,
    overrides: Sequence[Tuple[str, Any]] = ...,
) -> RunResults: ...
def compare(
    kind: str,
    value: Any,
    label: Optional[str] = ...,
    dir: Optional[str] = ...,
    name: Optional[str] = ...,
    cc: Sequence[str] = ...,
    seeds: Sequence[int] = ...,
    sweep: Optional[Sequence[str]] = ...,
    grid: Optional[Sequence[Tuple[str, Sequence[Any]]]] = ...,
    flent_test: Optional[str] = ...,
    engine: Optional[str] = ...,
    jobs: Optional[int] = ...,
    out: Optional[str] = ...,
) -> Tuple[bytes, str, List[str], Optional[str]]: ...
def algorithms() -> List[Tuple[str, List[str], str, List[Tuple[str, str, str]]]]: ...
def replay(trace: str, cc: str, hz: int) -> Tuple[bool, int, str]: ...
def run_batch(
    payload: bytes, ids: Sequence[int], keep_results: bool = ..., series: bool = ...
) -> Tuple[bytes, List[bytes], Dict[str, bytes]]: ...
