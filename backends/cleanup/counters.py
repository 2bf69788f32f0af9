"""Per-state counts of what each cleanup mechanism removed, and how late it removed it."""

from __future__ import annotations

MECHANISMS = ("read", "incremental", "timer", "compaction_filter", "full_snapshot")


class CleanupCounters:
    """Units (values, list elements, map entries) removed per mechanism, plus cleanup lag.

    Lag is `now - expiration` at removal: how long an expired unit lingered physically. Only
    two mechanisms measure it, and only for some units: incremental cleanup for values (not
    list elements or map entries), timer cleanup for values and map entries (not list
    elements). Read-time cleanup does not (reads are the hot path), nor do the compaction
    filter (RocksDB removes entries itself) and the full-snapshot filter.
    """

    __slots__ = ("compaction_filter", "full_snapshot", "incremental", "lag_count", "lag_max",
                 "lag_sum", "read", "timer")

    def __init__(self) -> None:
        self.read = 0
        self.incremental = 0
        self.timer = 0
        self.compaction_filter = 0
        self.full_snapshot = 0
        self.lag_sum = 0
        self.lag_count = 0
        self.lag_max = 0

    def add_lag(self, lag_ms: int, units: int = 1) -> None:
        self.lag_sum += lag_ms * units
        self.lag_count += units
        if lag_ms > self.lag_max:
            self.lag_max = lag_ms

    def as_dict(self) -> dict[str, int | float]:
        out: dict[str, int | float] = {m: getattr(self, m) for m in MECHANISMS}
        out["lag_mean_ms"] = self.lag_sum / self.lag_count if self.lag_count else 0.0
        out["lag_max_ms"] = self.lag_max
        return out
