"""Timer (expiry-index) cleanup, for both backends: what Flink evaluated but never built, and
what Spark's transformWithState does with its TTL timers.

Every write of a unit registers `(expiration time, reference)` in a bucketed index. When the TTL
clock passes a bucket's time (checked on every `set_current_key` and by `fire_timers()`), each
referenced unit is re-read and removed if it really expired (a unit rewritten since has a later
registration, so a stale one is skipped); the backend reads each TTL clock once per record for
all of its indexes (`KeyedStateBackend._install_timer_check`). With `granularity_ms` g > 0
expirations round up to a multiple of g: one bucket per g ms, removal at most g ms late, never
early.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from backends.storage.base import ABSENT
from backends.ttl.context import TtlContext
from backends.ttl.expiry import effective_now, expiry_cutoff, is_expired, live_elements
from backends.ttl.inline import inline
from backends.types import INT64_MAX


class ExpiryIndex:
    """Buckets of references keyed by expiration time, drained in time order."""

    def __init__(self, raw: Any, ctx: TtlContext, granularity_ms: int) -> None:
        self._raw = raw
        self._ttl = ctx.ttl
        self._now_fn = ctx.now
        self._counters = ctx.counters
        self._granularity = granularity_ms
        self._shape = raw.spec.shape
        self._buckets: dict[int, list] = {}
        self._times: list[int] = []
        self.next_due: float = math.inf  # the earliest bucket's time; inf when none
        self.registered = 0

    def __len__(self) -> int:
        """References waiting in the index (a unit rewritten n times may appear n times)."""
        return sum(len(b) for b in self._buckets.values())

    def register(self, expiration: int, ref: Any, user_key: Any = ABSENT) -> None:
        g = self._granularity
        # rounded up to the bucket, but never past INT64_MAX: the backend's per-record check
        # compares the raw clock with `next_due`, and a clock at INT64_MAX must reach every bucket
        due = expiration if g <= 1 else min(-(-expiration // g) * g, INT64_MAX)
        bucket = self._buckets.get(due)
        if bucket is None:
            self._buckets[due] = bucket = []
            heapq.heappush(self._times, due)
            if due < self.next_due:
                self.next_due = due
        bucket.append(ref if user_key is ABSENT else (ref, user_key))
        self.registered += 1

    @inline(is_expired)
    def fire(self) -> int:
        """Remove every unit whose expiration passed; returns the number of units removed."""
        now = self._now_fn()
        due_by, cutoff = effective_now(now), expiry_cutoff(now, self._ttl)
        removed = 0
        times, buckets = self._times, self._buckets
        while times and is_expired(times[0], due_by):  # a bucket's time is an expiration
            due = heapq.heappop(times)
            for item in buckets.pop(due):
                removed += self._expire(item, cutoff)
        self.next_due = times[0] if times else math.inf
        self._counters.timer += removed
        return removed

    @inline(is_expired)
    def _expire(self, item: Any, cutoff: int) -> int:
        """Re-read one registered unit and remove it if it really expired (a unit rewritten
        since its registration is not): the units removed."""
        raw = self._raw
        if self._shape == "value":
            stored = raw.ref_get(item)
            if stored is not None and is_expired(stored[1], cutoff):
                raw.ref_delete(item)
                self._counters.lags["timer"].record(cutoff - stored[1])
                return 1
            return 0
        if self._shape == "list":
            stored = raw.ref_get(item)
            if not stored:
                return 0
            kept = live_elements(stored, cutoff)
            if len(kept) == len(stored):
                return 0
            raw.ref_put(item, kept)
            lags = (cutoff - ts for _, ts in stored if is_expired(ts, cutoff))
            self._counters.lags["timer"].record_many(lags)
            return len(stored) - len(kept)
        ref, user_key = item
        stored = raw.ref_get_entry(ref, user_key)
        if stored is ABSENT or not is_expired(stored[1], cutoff):
            return 0
        raw.ref_remove_entries(ref, (user_key,))
        self._counters.lags["timer"].record(cutoff - stored[1])
        return 1
