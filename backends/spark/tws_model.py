"""Spark's transformWithState expiry rules, replayed in Python on the batch timestamps a real
query ran with: what each read returned, what the store held after each batch and how much of
it the spec's TTL says is live.

WHY a model: Spark reports how many rows its store holds (``numRowsTotal``) and how many TTL
removed, not which of them the spec's TTL would still call live, nor what each read would have
returned with nothing expiring. Given every event's batch timestamp (the query's output) the
rules are deterministic (``backends.spark.tws`` has them with their sources):

* per batch, in batch order: the batch's events in ``ord`` order (reads hide units whose
  ``write + ttl <= batch time`` under Spark's TTL); then the timers due at the batch time fire
  (spark_timer: they clear the key); then TTL cleanup removes every unit with
  ``write + ttl <= batch time``; then the store commits;
* a unit is a value, a list element or a map entry, with the batch time of its last write
  (update on write only);
* ``MapStateImplWithTTL.removeKey`` deletes the entry's row but leaves its ``$ttl_`` index
  entry; when that orphan expires, the sweep (``OneToOneTTLState
  .clearExpiredStateForAllKeys``) deletes whatever row the map key has then - an entry put
  again since, live by its own TTL, included - and counts one value removed either way.
  Replayed with the orphans, the model's removals equalled Spark's
  ``numValuesRemovedDueToTTLExpiry`` batch for batch (36 and 11, where the model without
  them gave 34 and 11).

The lane checks the model against Spark's own results read for read
(``spark_model_mismatches``), so a count derived from it is one Spark's rules gave.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from backends.spark.tws import WRITE_RESULT, result_hash

#: Operations after which spark_timer re-registers the key's timer (``SpecProcessor``).
WRITES = frozenset({"value_update", "value_rmw", "list_add", "map_put"})


@dataclass(frozen=True)
class Batch:
    """One micro-batch: its TTL clock (epoch ms), when its state was committed (epoch ms) and,
    in an event-time query, its eviction watermark (the records' time its timers fire at)."""

    time_ms: int
    commit_ms: int
    watermark_ms: int | None = None


@dataclass
class BatchCounts:
    """Units after one batch's commit: held by the store, and live by the spec's TTL."""

    time_ms: int
    commit_ms: int
    held: int
    live: int
    #: units this batch's TTL sweep removed
    removed: int = 0

    @property
    def expired_present(self) -> int:
        return self.held - self.live


@dataclass
class Replay:
    """What the model gives for one run."""

    #: ord -> result hash (reads), WRITE_RESULT for writes
    results: dict[int, int] = field(default_factory=dict)
    #: units returned by reads although the spec's TTL had expired them
    expired_returned: int = 0
    #: units the TTL sweeps removed, and timers that fired (spark_timer)
    ttl_removed: int = 0
    timers_fired: int = 0
    batches: list[BatchCounts] = field(default_factory=list)
    #: (batch time, key) of every event-time timer that fired (spark_event_timer)
    fired: list[tuple[int, int]] = field(default_factory=list)


class _Key:
    __slots__ = ("lst", "map", "timer", "value")

    def __init__(self) -> None:
        self.value: tuple[Any, int] | None = None
        self.lst: list[tuple[Any, int]] = []
        self.map: dict[int, tuple[Any, int]] = {}
        self.timer: int | None = None

    def units(self) -> Iterable[int]:
        if self.value is not None:
            yield self.value[1]
        for _, w in self.lst:
            yield w
        for _, w in self.map.values():
            yield w

    def empty(self) -> bool:
        return self.value is None and not self.lst and not self.map


def replay(events: Sequence[tuple[int, int, int, Any, int]], batch_of: dict[int, int],
           batches: Sequence[Batch], op_codes: dict[str, int], ttl_ms: int | None,
           timer_ms: int | None, spec_ttl_ms: int | None,
           orphan_map_index: bool = True, event_timer_ms: int | None = None,
           event_ts: Sequence[int] | None = None) -> Replay:
    """Replay ``events`` (``(ord, key, op, v, mk)`` in ord order) under Spark's rules.

    ``batch_of``: ord -> batch time of the event; ``batches``: every batch in order (data and
    no-data ones; a batch time of an event missing there is added); ``ttl_ms``: Spark's TTL
    (None: none); ``timer_ms``: spark_timer's delay (None: no timers); ``spec_ttl_ms``: the
    TTL that says what is live and which reads returned expired units (None: all live);
    ``orphan_map_index``: Spark's ``removeKey`` (module docstring); False: the rule without
    it, as Flink's and statebench's map state have it.

    ``event_timer_ms`` (spark_event_timer, with ``event_ts``: each event's time by ord, and
    every batch's ``watermark_ms``): the records' time is the clock. A unit is stamped with its
    write's time; a write sets the key's timer to its time plus ``event_timer_ms``; after a
    batch's data the timers at or below its watermark fire and clear their keys
    (``TimerStateImpl.getExpiredTimers``); reads are judged against the batch's watermark and
    what is held after a batch against the watermark Spark advanced to at its end (the next
    batch's)."""
    name = {code: n for n, code in op_codes.items()}
    by_batch: dict[int, list[tuple[int, int, int, Any, int]]] = {}
    for ev in events:
        by_batch.setdefault(batch_of[ev[0]], []).append(ev)
    known = {b.time_ms for b in batches}
    order = sorted([*batches, *(Batch(t, t) for t in by_batch if t not in known)],
                   key=lambda b: b.time_ms)
    keys: dict[int, _Key] = {}
    out = Replay()
    orphans: list[tuple[int, int, int]] = []  # (expiry, key, map key) map_remove left

    def alive(w: int, now: int) -> bool:
        return ttl_ms is None or w + ttl_ms > now

    def stale(w: int, now: int) -> bool:
        return spec_ttl_ms is not None and w + spec_ttl_ms <= now

    event_mode = event_timer_ms is not None
    if event_mode and event_ts is None:
        raise ValueError("replay: event_timer_ms needs event_ts, each event's time")
    marks: list[int] = []  # event mode: each batch's watermark, the one before where unknown
    for b in order:
        marks.append(b.watermark_ms if b.watermark_ms is not None
                     else (marks[-1] if marks else 0))

    for index, batch in enumerate(order):
        now = batch.time_ms
        clock = marks[index] if event_mode else now  # the spec's TTL's clock for reads
        for ordinal, key, op, v, mk in by_batch.get(now, ()):
            stamp = int(event_ts[ordinal]) if event_ts is not None and event_mode else now
            st = keys.get(key)
            if st is None:
                st = keys[key] = _Key()
            what = name[op]
            result = WRITE_RESULT
            if what in ("value_get", "value_rmw"):
                got = st.value if st.value is not None and alive(st.value[1], now) else None
                out.expired_returned += got is not None and stale(got[1], clock)
                result = result_hash(None if got is None else got[0])
                if what == "value_rmw":
                    st.value = (v, stamp)
            elif what == "value_update":
                st.value = (v, stamp)
            elif what == "value_clear":
                st.value = None
            elif what == "list_add":
                st.lst.append((v, stamp))
            elif what == "list_get":
                got_list = [(x, w) for x, w in st.lst if alive(w, now)]
                out.expired_returned += sum(stale(w, clock) for _, w in got_list)
                result = result_hash([x for x, _ in got_list])
            elif what == "map_put":
                st.map[mk] = (v, stamp)
            elif what == "map_get":
                got = st.map.get(mk)
                got = got if got is not None and alive(got[1], now) else None
                out.expired_returned += got is not None and stale(got[1], clock)
                result = result_hash(None if got is None else got[0])
            elif what == "map_iterate":
                items = sorted((k, x) for k, (x, w) in st.map.items() if alive(w, now))
                out.expired_returned += sum(stale(w, clock) for x, w in st.map.values()
                                            if alive(w, now))
                result = result_hash(items)
            elif what == "map_remove":
                gone = st.map.pop(mk, None)
                if orphan_map_index and ttl_ms is not None and gone is not None:
                    orphans.append((gone[1] + ttl_ms, key, mk))
            else:
                raise ValueError(f"op {what} has no transformWithState operation")
            out.results[ordinal] = result
            if timer_ms is not None and what in WRITES:
                st.timer = now + timer_ms
            elif event_timer_ms is not None and what in WRITES:
                st.timer = stamp + event_timer_ms
        if timer_ms is not None:  # after the batch's data, as Spark's operator
            for st in keys.values():
                if st.timer is not None and st.timer <= now:
                    st.value, st.lst, st.map, st.timer = None, [], {}, None
                    out.timers_fired += 1
        if event_mode:  # after the batch's data, at its eviction watermark
            for key, st in keys.items():
                if st.timer is not None and st.timer <= clock:
                    st.value, st.lst, st.map, st.timer = None, [], {}, None
                    out.timers_fired += 1
                    out.fired.append((now, key))
        swept = out.ttl_removed
        if ttl_ms is not None:  # doTtlCleanup, before the commit
            for st in keys.values():
                before = sum(1 for _ in st.units())
                if st.value is not None and not alive(st.value[1], now):
                    st.value = None
                st.lst = [(x, w) for x, w in st.lst if alive(w, now)]
                st.map = {k: (x, w) for k, (x, w) in st.map.items() if alive(w, now)}
                out.ttl_removed += before - sum(1 for _ in st.units())
            due = [e for e in orphans if e[0] <= now]
            for e in due:  # counted, and whatever entry is there now deleted
                orphans.remove(e)
                out.ttl_removed += 1
                owner = keys.get(e[1])
                hit = None if owner is None else owner.map.pop(e[2], None)
                if hit is not None and hit[1] + ttl_ms > now:  # its own index entry: orphaned
                    orphans.append((hit[1] + ttl_ms, e[1], e[2]))
        held = live = 0
        after = (marks[min(index + 1, len(marks) - 1)] if event_mode  # the records' clock
                 else batch.commit_ms)
        for st in keys.values():
            for w in st.units():
                held += 1
                live += not stale(w, after)
        out.batches.append(BatchCounts(now, batch.commit_ms, held, live,
                                       out.ttl_removed - swept))
        if len(keys) > 4 * (held + 1):  # forget emptied keys now and then
            keys = {k: st for k, st in keys.items() if not st.empty() or st.timer is not None}
    return out
