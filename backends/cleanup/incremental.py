"""Flink's incremental cleanup for the heap backend (flink-ttl-facts §2.2).

Each TTL state owns one lazy global iterator over all of its entries. Every state access (and,
with run_cleanup_for_every_record, every `set_current_key`) examines at least `cleanup_size`
entries from where the iterator stopped, wrapping around at the end, and removes what has
expired: a value, the expired elements of a list (the whole list when none is left) or the
expired entries of a map (the whole map when none is left). Timestamps are never refreshed.

Python dicts cannot be iterated while they change, so each lap of the iterator walks a list of
the keys taken when the lap starts (Flink's synchronous-snapshot variant also copied keys: one
reference per key of extra memory); a key deleted meanwhile is skipped without counting as
examined (Flink's iterator never yields it), a key added meanwhile is visited on the next lap.
"""

from __future__ import annotations

from typing import Any

from backends.ttl.context import TtlContext
from backends.ttl.expiry import INT64_MAX, NOW_INFINITY, filter_list


class IncrementalCleanup:
    """The lazy global iterator of one heap TTL state; `step()` is the access callback."""

    def __init__(self, raw: Any, ctx: TtlContext, cleanup_size: int) -> None:
        self._table: dict = raw.table
        self._ttl = ctx.ttl
        self._now_fn = ctx.now
        self._counters = ctx.counters
        self._size = cleanup_size
        self._shape = raw.spec.shape
        self._keys: list = []
        self._pos = 0

    def step(self) -> None:
        """Examine the next `cleanup_size` entries still present (fewer only if the state has
        fewer), starting a new lap over the current keys at most once per step."""
        pos, size, keys, table = self._pos, self._size, self._keys, self._table
        end = pos + size
        batch = keys[pos:end]
        if len(batch) == size and all(k in table for k in batch):
            self._pos = end  # the common case: the lap has cleanup_size live keys left
        else:
            batch = [k for k in batch if k in table]
            pos = min(end, len(keys))
            lapped, seen = False, set(batch)
            while len(batch) < size:
                if pos >= len(keys):
                    if lapped or not table:
                        break
                    keys, pos, lapped = list(table), 0, True
                    self._keys = keys
                key = keys[pos]
                pos += 1
                if key in table and key not in seen:
                    batch.append(key)
                    seen.add(key)
            self._pos = pos
            if not batch:
                return
        now = self._now_fn()
        self._clean(batch, NOW_INFINITY if now >= INT64_MAX else now)

    def _clean(self, keys: list, now: int) -> None:
        table, counters, shape, ttl = self._table, self._counters, self._shape, self._ttl
        removed = 0
        if shape == "value":
            for key in keys:
                container = table.get(key)
                if container is not None and container[1] + ttl <= now:
                    del table[key]
                    removed += 1
                    counters.add_lag(now - container[1] - ttl)
            if removed:
                counters.incremental += removed
            return
        for key in keys:
            container = table.get(key)
            if container is None:
                continue
            if shape == "value":
                if container[1] + ttl <= now:
                    del table[key]
                    removed += 1
                    counters.add_lag(now - container[1] - ttl)
            elif shape == "list":
                kept = filter_list(container, ttl, now, prefix_only=False)
                if len(kept) != len(container):
                    removed += len(container) - len(kept)
                    if kept:
                        table[key] = kept
                    else:
                        del table[key]
            else:
                expired = [uk for uk, s in container.items() if s[1] + ttl <= now]
                if expired:
                    removed += len(expired)
                    if len(expired) == len(container):
                        del table[key]
                    else:
                        for uk in expired:
                            del container[uk]
        counters.incremental += removed
