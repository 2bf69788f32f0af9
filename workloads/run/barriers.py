"""Logical-time barriers of a task: checkpoints and metric samples, fired before the first
record at or after their time (every task operator, statebench's and Flink's lanes alike, fires
the same schedule, so their checkpoints and samples line up)."""

import math
from dataclasses import dataclass

from workloads.run.config import OperatorConfig

CHECKPOINT, SAMPLE = 0, 1
INFINITY = 1 << 62  # "no barrier left" / "before any record"


@dataclass(frozen=True, order=True)
class Barrier:
    time_ms: int
    kind: int  # CHECKPOINT before SAMPLE at the same time
    index: int


def barrier_schedule(cfg: OperatorConfig) -> list[Barrier]:
    """Checkpoint and sample barriers of a run, in firing order."""
    out: list[Barrier] = []
    start, end = cfg.start_ms, cfg.end_ms
    if end <= start:
        return out
    if cfg.checkpoint_interval_ms > 0 and cfg.checkpoint_root is not None:
        k = 1
        while start + k * cfg.checkpoint_interval_ms < end:
            out.append(Barrier(start + k * cfg.checkpoint_interval_ms, CHECKPOINT, k))
            k += 1
    if cfg.emit_series:
        si = cfg.sample_interval_ms
        for k in range(1, math.ceil((end - start) / si) + 1):
            out.append(Barrier(start + k * si, SAMPLE, k))
    return sorted(out)
