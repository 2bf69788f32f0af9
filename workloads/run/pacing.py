"""Paced processing time: records released at their timestamp on one wall-driven clock.

Why: under ProcessingTime the TTL clock is the wall clock, and RocksDB's native TTL (the
compaction filter) reads the real wall clock whatever statebench does. If a task replayed its
records as fast as it could while its TTL clock followed the records' timestamps, the two clocks
would drift apart (a task gets through 4 logical seconds much faster than in 4 real seconds), so
the compaction-filter scenario could not be compared with the others. Paced, every strategy of a
ProcessingTime scenario runs on a :class:`PacedClock` (a ``ScaledClock(speedup)``) whose time is
the run's ``start_ms`` when the task starts, and each record is released to the operator once
``clock.now() >= ts``, as a real source produces at the spec's rate. The records' time, the TTL
clock and RocksDB's TTL (``ttl / speedup`` real seconds) then agree for every strategy.

A task that cannot keep up processes records late; :class:`Pacer` measures by how much
(schedule lag = ``clock.now() - ts`` when a record is released, in clock ms). Records are
released in chunks of at most :data:`CHUNK` records, all due at the chunk's start, so a record's
lag is measured at the start of its chunk: it may be low by the processing time of the records
before it in the chunk (at most :data:`CHUNK` records, ~1 ms of real time here). A record is
*late* when its lag exceeds one real millisecond (``speedup`` clock ms): the clock's own
resolution plus the sleep's overshoot stay below that. Waiting is not busy time: records/s
stays the task's capacity, and latency stays per record.
"""

from __future__ import annotations

import time

import numpy as np

import backends
from workloads.run.metrics import LatencyBuckets

#: Most records released at once (their lag is measured at the chunk's start).
CHUNK = 256
#: Longest single sleep while waiting for a record's time (real seconds); short enough that a
#: wait ends within ~1 ms of the record being due.
_MAX_SLEEP_S = 0.05


class PacedClock(backends.ScaledClock):
    """A ``ScaledClock`` with sub-millisecond resolution that can be re-aligned once the task
    starts (``align``), so that clock time is the run's start when the first record is due."""

    def __init__(self, speedup: float, start_ms: int) -> None:
        super().__init__(speedup, start_ms=start_ms)
        self._start_ms = int(start_ms)
        self._origin_ns = time.perf_counter_ns()

    def align(self) -> None:
        """From now on, clock time starts at ``start_ms`` (the task starts now)."""
        self._origin_ns = time.perf_counter_ns()

    def now(self) -> int:
        elapsed_ms = (time.perf_counter_ns() - self._origin_ns) / 1e6
        return self._start_ms + int(elapsed_ms * self.speedup)

    def wait_until(self, ts: int) -> None:
        """Sleep until ``now() >= ts`` (returns at once when it already is)."""
        while True:
            ahead_ms = ts - self.now()
            if ahead_ms <= 0:
                return
            time.sleep(min(ahead_ms / self.speedup / 1e3, _MAX_SLEEP_S))

    def __repr__(self) -> str:
        return f"PacedClock({self.speedup}, start_ms={self._start_ms})"


class Pacer:
    """Releases a task's records on its :class:`PacedClock` and keeps the schedule lag."""

    def __init__(self, clock: PacedClock) -> None:
        self.clock = clock
        self.started = False
        self.lag = LatencyBuckets()  # lag in clock ms, stored as ms * 1e6 ("ns" buckets)
        self.late = 0
        self.released = 0
        self._late_ms = clock.speedup  # one real ms, in clock ms

    def start(self) -> None:
        """The task starts: align the clock to the run's start (once)."""
        if not self.started:
            self.clock.align()
            self.started = True

    def release(self, ts: np.ndarray, lo: int, hi: int) -> int:
        """Wait until ``ts[lo]`` is due, then return the end of the chunk released now: records
        ``lo..end-1`` (``ts`` sorted) are all due, at most :data:`CHUNK` of them. Their lag is
        recorded."""
        self.start()
        self.clock.wait_until(int(ts[lo]))
        now = self.clock.now()
        limit = min(hi, lo + CHUNK)
        end = max(lo + 1, lo + int(np.searchsorted(ts[lo:limit], now, "right")))
        lag = now - ts[lo:end].astype(np.int64)
        self.lag.add(lag * 1_000_000)
        self.late += int(np.count_nonzero(lag > self._late_ms))
        self.released += end - lo
        return end

    def summary(self) -> dict[str, float]:
        """``schedule_lag_p50_ms``/``_p99_ms``/``_max_ms`` (clock ms) and ``late_records_share``."""
        if not self.released:
            return {}
        us = self.lag.percentiles_us()
        return {
            "schedule_lag_p50_ms": us["latency_p50_us"] / 1e3,
            "schedule_lag_p99_ms": us["latency_p99_us"] / 1e3,
            "schedule_lag_max_ms": us["latency_max_us"] / 1e3,
            "late_records_share": self.late / self.released,
        }
