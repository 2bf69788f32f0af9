"""Flink's incremental cleanup for the heap backend (docs/ttl.md, "Flink's rules").

Each TTL state owns one lazy global iterator over all of its entries. Every state access (and,
with run_cleanup_for_every_record, every `set_current_key`) examines at least `cleanup_size`
entries from where the iterator stopped, wrapping around at the end, and removes what has
expired: a value, the expired elements of a list (the whole list when none is left) or the
expired entries of a map (the whole map when none is left). Timestamps are never refreshed.

Python dicts cannot be iterated while they change, so each lap of the iterator walks a list of
the keys taken when the lap starts (Flink's synchronous-snapshot variant also copied keys: one
reference per key of extra memory); a key deleted meanwhile is skipped without counting as
examined (Flink's iterator never yields it), a key added meanwhile is visited on the next lap.

This runs on every access, so a step is written to cost about what its `cleanup_size` dict
lookups cost: the common step (all of its keys still present, none of their units expired) is
one C-level pass that fetches the containers and takes their oldest timestamp (a deleted key
makes it raise, which sends the step down the general path); containers are fetched again, and
Python loops run, only when something is to be removed or skipped. Maps are the exception,
because Flink's are: its `TtlMapState.getUnexpiredOrNull` builds a new map of every visited map's
unexpired entries whether or not any expired, and the cleanup stores it, so every step copies
the maps it visits (one C-level `dict.copy` each when nothing in them expired, as Java's copy
runs compiled). A map is always replaced by a new dict, never changed in place, so a snapshot
in flight that shares the old one (copy-on-write, backends/storage/heap.py) keeps what it
froze. Expiry is `expiry.is_expired`, compiled inline (`@inline`, backends/ttl/inline.py): no
call per unit.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from operator import itemgetter
from typing import Any

from backends.cleanup.counters import CleanupCounters
from backends.ttl.context import TtlContext
from backends.ttl.expiry import expiry_cutoff, is_expired, live_elements
from backends.ttl.inline import inline


class IncrementalCleanup:
    """The lazy global iterator of one heap TTL state; `step()` is the access callback."""

    __slots__ = ("_clean", "_copies", "_counters", "_get", "_keys", "_now_fn", "_oldest", "_pos",
                 "_size", "_table", "_ttl")

    def __init__(self, raw: Any, ctx: TtlContext, cleanup_size: int) -> None:
        self._table: dict = raw.table
        self._get = raw.table.get
        self._ttl = ctx.ttl
        self._now_fn = ctx.now
        self._counters = ctx.counters
        self._size = cleanup_size
        self._clean: Callable[[dict, list, list, int, CleanupCounters], None] = _CLEANERS[
            raw.spec.shape
        ]
        self._oldest: Callable[[list], int] = _OLDEST[raw.spec.shape](raw.table.get)
        #: whether every visited container is rebuilt, expired units or not (maps, as Flink)
        self._copies = raw.spec.shape in _COPIED
        self._keys: list = []
        self._pos = 0

    @inline(is_expired)
    def step(self) -> None:
        """Examine the next `cleanup_size` entries still present (fewer only if the state has
        fewer), starting a new lap over the current keys at most once per step."""
        pos = self._pos
        end = pos + self._size
        batch = self._keys[pos:end]
        if len(batch) == self._size:
            try:
                oldest = self._oldest(batch)
            except (TypeError, ValueError):  # a key deleted since the lap started; no units
                pass
            else:  # the common case: the lap has cleanup_size present keys left
                self._pos = end
                cutoff = expiry_cutoff(self._now_fn(), self._ttl)
                if not self._copies and not is_expired(oldest, cutoff):
                    return  # nothing expired among them: the step is one C-level pass
                self._clean(self._table, batch, list(map(self._get, batch)), cutoff,
                            self._counters)
                return
        batch = self._refill(batch, list(map(self._get, batch)), end)
        if not batch:
            return
        cutoff = expiry_cutoff(self._now_fn(), self._ttl)
        self._clean(self._table, batch, list(map(self._get, batch)), cutoff, self._counters)

    def _refill(self, batch: list, containers: list, end: int) -> list:
        """The step's keys when the lap runs out or some keys went away: the present ones,
        then further keys of the lap, then (once) of a new lap over the current keys."""
        table, size, keys = self._table, self._size, self._keys
        batch = [k for k, c in zip(batch, containers) if c is not None]
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
        return batch


@inline(is_expired)
def _clean_values(
    table: dict, keys: list, containers: list, cutoff: int, counters: CleanupCounters
) -> None:
    removed = 0
    for key, stored in zip(keys, containers):
        if is_expired(stored[1], cutoff):
            del table[key]
            removed += 1
            counters.lags["incremental"].record(cutoff - stored[1])
    if removed:
        counters.incremental += removed


@inline(is_expired)
def _clean_lists(
    table: dict, keys: list, containers: list, cutoff: int, counters: CleanupCounters
) -> None:
    removed = 0
    for key, elements in zip(keys, containers):
        if not elements or not is_expired(min(map(_TS, elements)), cutoff):
            continue  # nothing expired (a C-level pass, no list built)
        kept = live_elements(elements, cutoff)
        removed += len(elements) - len(kept)
        counters.lags["incremental"].record_many(
            cutoff - ts for _, ts in elements if is_expired(ts, cutoff))
        if kept:
            table[key] = kept
        else:
            del table[key]
    counters.incremental += removed


@inline(is_expired)
def _clean_maps(
    table: dict, keys: list, containers: list, cutoff: int, counters: CleanupCounters
) -> None:
    """Flink's `TtlMapState.getUnexpiredOrNull` (Flink 2.3's bytecode): every visited map,
    expired entries or not, becomes a new map of its unexpired entries, and the cleanup stores
    it. Flink also copies each entry's TtlValue with its serializer; the (value, timestamp)
    tuples here are immutable, so the new map shares them, as a copy would equal them."""
    removed = 0
    for key, entries in zip(keys, containers):
        if not entries:
            continue  # Flink returns an empty map as it is
        if not is_expired(min(map(_TS, entries.values())), cutoff):
            table[key] = entries.copy()
            continue
        kept = {uk: s for uk, s in entries.items() if not is_expired(s[1], cutoff)}
        removed += len(entries) - len(kept)
        counters.lags["incremental"].record_many(
            cutoff - s[1] for s in entries.values() if is_expired(s[1], cutoff))
        if kept:
            table[key] = kept
        else:
            del table[key]
    counters.incremental += removed


_TS = itemgetter(1)  # a stored unit's last-access timestamp
_CLEANERS = {"value": _clean_values, "list": _clean_lists, "map": _clean_maps}
#: The shapes whose visited containers Flink rebuilds on every visit: a map
#: (`TtlMapState.getUnexpiredOrNull` always returns a new map); a list only when an element
#: expired (`TtlListState`), a value never.
_COPIED = frozenset({"map"})


def _oldest_value(get: Callable[[Any], Any]) -> Callable[[list], int]:
    return lambda keys: min(map(_TS, map(get, keys)))


def _oldest_element(get: Callable[[Any], Any]) -> Callable[[list], int]:
    return lambda keys: min(map(_TS, chain.from_iterable(map(get, keys))))


def _oldest_entry(get: Callable[[Any], Any]) -> Callable[[list], int]:
    values = dict.values
    return lambda keys: min(map(_TS, chain.from_iterable(map(values, map(get, keys)))))


#: Per shape, the oldest unit timestamp among some keys' containers, in one C-level pass:
#: TypeError when a key is gone (None), ValueError when they hold no unit at all.
_OLDEST = {"value": _oldest_value, "list": _oldest_element, "map": _oldest_entry}
