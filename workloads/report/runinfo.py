"""What run.json says about a workload that changes how its numbers must be read.

run.json has two shapes: a ``statebench run`` folder keeps one workload's configuration in
``config`` (and one spec), a ``statebench compare`` folder keeps them per workload under
``config.workloads``. Figures, tables and findings ask the same three questions of either shape
(which clock drove a workload, which RocksDB options it ran with, which knob a comparison swept),
so the answers live here once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from workloads.report.load import Run

PACED = "paced"
EVENT = "event"
#: RocksDB's like-for-like layout: every state in a TTL-mode database of its own.
TTL_DB = "ttl_db"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def workload_config(run: Run, workload: str) -> dict[str, Any]:
    """The configuration one workload ran with ({} when run.json does not say)."""
    config = _dict(run.meta.get("config"))
    per_workload = _dict(config.get("workloads"))
    if workload in per_workload:
        return _dict(per_workload[workload])
    spec = run.meta.get("spec")
    if isinstance(spec, dict) and spec.get("name") in (workload, None):
        return config  # a single-workload run: its config is the workload's
    return {}


def clock(run: Run, workload: str) -> str:
    """"paced" (ProcessingTime on one wall-driven clock), "event", or "" if not recorded."""
    value = workload_config(run, workload).get("clock")
    return str(value) if isinstance(value, str) else ""


def is_paced(run: Run, workload: str) -> bool:
    """True when the workload's state sizes and timings follow the wall clock."""
    return clock(run, workload) == PACED


def time_speedup(run: Run, workload: str) -> float | None:
    """How many clock ms pass per real ms on a paced workload's clock (None if not recorded)."""
    value = workload_config(run, workload).get("time_speedup")
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def repetitions(run: Run, workload: str) -> int | None:
    """Repetitions per scenario, from the workload's or the run's configuration."""
    for config in (workload_config(run, workload), _dict(run.meta.get("config"))):
        value = config.get("repetitions")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def rocksdb_options(run: Run, workload: str) -> dict[str, Any]:
    """The effective RocksDB options the workload's RocksDB strategies ran with ({} if none)."""
    return _dict(workload_config(run, workload).get("rocksdb"))


def paced_note(run: Run, workload: str) -> str:
    """One sentence telling a reader which numbers of a paced workload vary from run to run."""
    speed = time_speedup(run, workload)
    speed_text = f" at {speed:g}{chr(0xD7)} speed" if speed else ""
    reps = repetitions(run, workload)
    spread = (
        f"tables give the spread over {reps} repetitions"
        if reps and reps > 1
        else "a single repetition gives no spread, so compare them with care"
    )
    return (
        f"Wall-clock driven: {workload} runs on a paced processing-time clock{speed_text}, so "
        f"its state sizes, cleanup counts and timings differ from run to run; {spread}, and "
        "the plots over time show repetition 0."
    )


@dataclass(frozen=True)
class Sweep:
    """A knob swept across a comparison: strategy labels in knob order with their values."""

    strategy: str
    knob: str
    values: tuple[float, ...]
    labels: tuple[str, ...]

    @property
    def log_axis(self) -> bool:
        """Log x when the values are positive and span more than 10x."""
        lo, hi = min(self.values), max(self.values)
        return lo > 0 and hi / lo > 10


def sweep(run: Run) -> Sweep | None:
    """The comparison's knob sweep, or None when it has none (or run.json's entry is unusable).

    ``labels`` must pair one to one with numeric ``values``; anything else is ignored rather than
    drawn wrongly."""
    raw = run.meta.get("sweep")
    if raw is None:
        raw = _dict(run.meta.get("config")).get("sweep")
    raw = _dict(raw)
    values, labels = raw.get("values"), raw.get("labels")
    if not isinstance(values, list) or not isinstance(labels, list):
        return None
    if not values or len(values) != len(labels):
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    return Sweep(
        strategy=str(raw.get("strategy", "")),
        knob=str(raw.get("knob", "")),
        values=tuple(float(v) for v in values),
        labels=tuple(str(label) for label in labels),
    )
