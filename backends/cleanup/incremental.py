"""Flink's incremental cleanup for the heap backend (flink-ttl-facts §2.2).

Each TTL state owns one lazy global iterator over all of its entries across key groups. Every
state access (and, with run_cleanup_for_every_record, every `set_current_key`) examines at least
`cleanup_size` entries from where the iterator stopped, wrapping around at the end, and removes
what has expired: a value, the expired elements of a list (the whole list when none is left) or
the expired entries of a map (the whole map when none is left). Timestamps are never refreshed.

Python dicts cannot be iterated while they change, so the iterator walks a list of one key
group's keys taken when it enters that key group (Flink's synchronous-snapshot variant also
copied keys); a key deleted meanwhile is simply skipped.
"""

from __future__ import annotations

from typing import Any

from backends.ttl.context import TtlContext
from backends.ttl.expiry import INT64_MAX, NOW_INFINITY


class IncrementalCleanup:
    """The lazy global iterator of one heap TTL state; `step()` is the access callback."""

    def __init__(self, raw: Any, ctx: TtlContext, cleanup_size: int, key_groups: list[int]):
        self._raw = raw
        self._ttl = ctx.ttl
        self._now_fn = ctx.now
        self._counters = ctx.counters
        self._size = cleanup_size
        self._key_groups = list(key_groups)
        self._shape = raw.spec.shape
        self._kg_index = -1
        self._table: dict = {}
        self._keys: list = []
        self._pos = 0

    def _next_key_group(self) -> bool:
        """Move to the next non-empty key group; False after a full lap found nothing."""
        for _ in range(len(self._key_groups)):
            self._kg_index = (self._kg_index + 1) % len(self._key_groups)
            table = self._raw.table(self._key_groups[self._kg_index])
            if table:
                self._table, self._keys, self._pos = table, list(table), 0
                return True
        self._keys, self._pos = [], 0
        return False

    def step(self) -> None:
        now = self._now_fn()
        if now >= INT64_MAX:
            now = NOW_INFINITY
        ttl, examined, size = self._ttl, 0, self._size
        laps_without_keys = 0
        while examined < size:
            if self._pos >= len(self._keys):
                if not self._next_key_group():
                    return
                laps_without_keys += 1
                if laps_without_keys > len(self._key_groups):
                    return
            end = min(len(self._keys), self._pos + size - examined)
            batch = self._keys[self._pos:end]
            self._pos = end
            examined += len(batch)
            self._clean(batch, now, ttl)

    def _clean(self, keys: list, now: int, ttl: int) -> None:
        table, counters, shape = self._table, self._counters, self._shape
        removed = 0
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
                kept = [e for e in container if e[1] + ttl > now]
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
