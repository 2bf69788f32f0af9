"""Time sources for TTL.

Flink's TtlTimeProvider is the wall clock in production and a hand-set mock in tests. statebench
needs both plus a compressed wall clock (ScaledClock) so that RocksDB's own wall-clock TTL
compaction can be exercised in seconds, and an event-time clock (the timestamp of the record being
processed), which Flink does not have. Every clock answers `now()` in integer milliseconds.

`wall_clock_driven` tells whether time advances by itself with the wall clock; RocksDB's native
TTL compaction (the compaction-filter strategy) can only be driven by such a clock, and
`wall_ms_per_ms` says how many real milliseconds one clock millisecond lasts.
"""

from __future__ import annotations

import time


class ManualClock:
    """A clock that moves only when told to: deterministic tests and simulated processing time."""

    wall_clock_driven = False

    __slots__ = ("_now",)

    def __init__(self, start_ms: int = 0) -> None:
        self._now = int(start_ms)

    def now(self) -> int:
        return self._now

    def set(self, ms: int) -> None:
        self._now = int(ms)

    def advance(self, ms: int) -> None:
        self._now += int(ms)

    def __repr__(self) -> str:
        return f"ManualClock({self._now})"


class SystemClock:
    """Wall-clock processing time, as Flink's default TtlTimeProvider."""

    wall_clock_driven = True
    speedup = 1.0

    def now(self) -> int:
        return time.time_ns() // 1_000_000

    def __repr__(self) -> str:
        return "SystemClock()"


class ScaledClock:
    """The wall clock sped up `speedup` times from the moment of creation.

    One real second is `speedup` clock seconds, so an hour of TTL behaviour plays out in
    3600/speedup real seconds. RocksDB's TTL compaction sees real seconds, so a TTL of `t` clock
    ms corresponds to t / speedup real ms there.
    """

    wall_clock_driven = True

    def __init__(self, speedup: float, start_ms: int | None = None) -> None:
        if not speedup > 0:
            raise ValueError(f"ScaledClock speedup must be positive, got {speedup!r}")
        self.speedup = float(speedup)
        self._origin_wall = time.time_ns() // 1_000_000
        self._origin = self._origin_wall if start_ms is None else int(start_ms)

    def now(self) -> int:
        elapsed = time.time_ns() // 1_000_000 - self._origin_wall
        return self._origin + int(elapsed * self.speedup)

    def __repr__(self) -> str:
        return f"ScaledClock({self.speedup})"


class EventTimeClock(ManualClock):
    """The timestamp of the record being processed, set by the caller for each record.

    Used by states whose TTL time characteristic is EventTime: a day of traffic replays in
    seconds and expiry is a pure function of the input, hence deterministic. It is a manual
    clock that the backend sets from `set_event_time(ts)`.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"EventTimeClock({self._now})"
