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


def checkpoint_times(start_ms: int, end_ms: int, interval_ms: int) -> list[int]:
    """The times a run's checkpoints are taken at (each before the first record at or after
    it): every interval from the start, before the end. The Flink SQL job places its own
    checkpoints at these under the event clock, so both sides checkpoint the same records."""
    if interval_ms <= 0:
        return []
    return list(range(start_ms + interval_ms, end_ms, interval_ms))


def sample_times(start_ms: int, end_ms: int, interval_ms: int) -> list[int]:
    """The times a run's metric samples are taken at (each before the first record at or
    after it, the ones past the last record once every record is in): every interval from
    the start, the last at or past the end. The Flink SQL job samples its RocksDB measures at
    these under the event clock."""
    if interval_ms <= 0 or end_ms <= start_ms:
        return []
    return [start_ms + k * interval_ms
            for k in range(1, math.ceil((end_ms - start_ms) / interval_ms) + 1)]


def barrier_schedule(cfg: OperatorConfig) -> list[Barrier]:
    """Checkpoint and sample barriers of a run, in firing order."""
    out: list[Barrier] = []
    start, end = cfg.start_ms, cfg.end_ms
    if end <= start:
        return out
    if cfg.checkpoint_root is not None:
        out += [Barrier(t, CHECKPOINT, k + 1)
                for k, t in enumerate(checkpoint_times(start, end, cfg.checkpoint_interval_ms))]
    if cfg.emit_series:
        out += [Barrier(t, SAMPLE, k + 1)
                for k, t in enumerate(sample_times(start, end, cfg.sample_interval_ms))]
    return sorted(out)
