"""Per-state counts of what each cleanup mechanism removed, and how late it removed it.

Cleanup lag is ``now - expiration`` when a unit (value, list element, map entry) leaves: how
long an expired unit lingered. Users ask for its distribution (p50/p99/max per mechanism), so
each mechanism keeps a histogram of its own:

* read-time cleanup, incremental cleanup and timer cleanup record every unit they delete, of
  all three shapes;
* the full-snapshot filter records every unit it leaves out of a snapshot, at snapshot time
  (the local copy stays until something else removes it, so a unit left out of several
  snapshots counts once per snapshot, as in its removal count);
* the RocksDB compaction filter records nothing: RocksDB drops entries inside its compactions and
  reports only how many (the report says the lag is not measurable there).

Recording sits on the paths that delete, never on the path of an unexpired unit, and costs one
``list.append`` per unit: the raw lags are folded into log-linear buckets (exact below 32 ms,
then 16 per power of two, whose middles are within 3% of every lag they hold) in batches, so the
mechanism being measured is not made dearer by its measurement.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from backends.types import INT64_MAX

MECHANISMS = ("read", "incremental", "timer", "compaction_filter", "full_snapshot")

#: Mechanisms whose removals carry a lag (the compaction filter's removals cannot).
LAG_MECHANISMS = ("read", "incremental", "timer", "full_snapshot")

_FOLD_AT = 1 << 16  # raw lags kept before folding into buckets (bounded memory)
_EXACT = 32  # lags below this many ms get a bucket each; above, 16 buckets per power of two


def bucket_floor(lags: np.ndarray) -> np.ndarray:
    """The lower bound of each lag's bucket: the lag itself below 32 ms, else the lag with all
    but its 5 leading bits cleared (at most 1/16 = 6% below it, 3% below the bucket's middle)."""
    _, exponent = np.frexp(lags.astype(np.float64))  # exponent = bit length (exact < 2**53)
    shift = np.maximum(exponent.astype(np.int64) - 5, 0)
    return (lags >> shift) << shift


def bucket_middle(floor: int) -> float:
    """The value a bucket stands for in percentiles: its middle (exact below 32 ms)."""
    if floor < _EXACT:
        return float(floor)
    width = 1 << max(floor.bit_length() - 5, 0)
    return floor + (width - 1) / 2


class LagHistogram:
    """Removal lags (ms) of one mechanism: raw on the hot path, bucketed in batches."""

    __slots__ = ("buckets", "max", "pending")

    def __init__(self) -> None:
        self.pending: list[int] = []  # raw lags not folded into the buckets yet
        self.buckets: dict[int, int] = {}
        self.max = 0

    def record(self, lag_ms: int) -> None:
        """Record one unit's lag."""
        self.pending.append(lag_ms)
        if len(self.pending) >= _FOLD_AT:
            self.fold()

    def record_many(self, lags: Iterable[int]) -> None:
        """Record several lags at once (the expired elements of a list, entries of a map)."""
        self.pending.extend(lags)
        if len(self.pending) >= _FOLD_AT:
            self.fold()

    def fold(self) -> None:
        """Move the pending lags into the buckets."""
        if not self.pending:
            return
        try:
            lags = np.array(self.pending, dtype=np.int64)
        except OverflowError:  # a clock at INT64_MAX ("after everything"): clamp
            lags = np.array([min(v, INT64_MAX) for v in self.pending], dtype=np.int64)
        self.pending.clear()
        self.max = max(self.max, int(lags.max()))
        floors, counts = np.unique(bucket_floor(np.maximum(lags, 0)), return_counts=True)
        buckets = self.buckets
        for floor, count in zip(floors.tolist(), counts.tolist()):
            buckets[floor] = buckets.get(floor, 0) + count

    @property
    def count(self) -> int:
        return len(self.pending) + sum(self.buckets.values())

    def snapshot(self) -> dict[int, int]:
        """The buckets (floor ms -> units) with everything recorded so far folded in."""
        self.fold()
        return dict(self.buckets)


def merge_buckets(parts: Iterable[dict[int, int]]) -> dict[int, int]:
    """The buckets of several histograms added up (tasks, states)."""
    out: dict[int, int] = {}
    for part in parts:
        for floor, count in part.items():
            out[floor] = out.get(floor, 0) + count
    return out


def bucket_percentiles(buckets: dict[int, int], quantiles: dict[str, float]) -> dict[str, float]:
    """Each quantile (name -> q in (0, 1]) of a bucketed histogram, as its bucket's middle; {}
    for an empty one. Nearest rank, as HdrHistogram: the smallest bucket holding q of units."""
    total = sum(buckets.values())
    if not total:
        return {}
    ordered = sorted(buckets.items())
    out: dict[str, float] = {}
    for name, q in quantiles.items():
        rank, seen = max(1, int(np.ceil(q * total))), 0
        for floor, count in ordered:
            seen += count
            if seen >= rank:
                out[name] = bucket_middle(floor)
                break
    return out


class CleanupCounters:
    """Units (values, list elements, map entries) removed per mechanism, plus cleanup lag."""

    __slots__ = ("compaction_filter", "full_snapshot", "incremental", "lags", "read", "timer")

    def __init__(self) -> None:
        self.read = 0
        self.incremental = 0
        self.timer = 0
        self.compaction_filter = 0
        self.full_snapshot = 0
        self.lags = {m: LagHistogram() for m in LAG_MECHANISMS}

    def as_dict(self) -> dict[str, int]:
        return {m: getattr(self, m) for m in MECHANISMS}
