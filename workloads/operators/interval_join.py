"""``interval_join``: Flink SQL's event-time interval join of bids with their auction (Nexmark
q4's ``B.dateTime BETWEEN A.dateTime AND A.expires``, with a fixed upper bound): a bid joins its
auction when ``bid.ts - auction.ts`` is in ``lower_ms .. upper_ms``.

Follows ``RowTimeIntervalJoin`` / ``TimeIntervalJoin`` (inner join, allowed lateness 0): bids
are the left input, auctions the right; ``leftRelativeSize = -lower_ms``,
``rightRelativeSize = upper_ms``, ``minCleanUpInterval`` :data:`MIN_CLEANUP_INTERVAL_MS`
(below); the operator time is the watermark. States:
``IntervalJoinLeftCache`` / ``IntervalJoinRightCache`` (``MapState<Long, List<row>>``: row time
-> the rows of that time, here packed bytes) and ``IntervalJoinLeftTimerState`` /
``IntervalJoinRightTimerState`` (``ValueState<Long>``: the cleanup timer of the other side).
Per record (a bid; an auction mirrors it): if the other cache may hold rows in range
(``rightExpirationTime < t + leftRelativeSize``), recompute that expiration time, read the
other cache (one iteration), emit a ``+I`` for each row in range and remove every entry at or
before the expiration time (one ``remove`` each); then, while the other side's operator time
is below the upper bound, ``get`` + ``put`` this row into its own cache and, when the other
side's timer state is empty, register a cleanup timer at ``t + relative size +
minCleanUpInterval + 1`` and ``update`` the timer state. A timer reads both timer states and,
for the side whose time it is, removes the expired cache entries, then registers the next
cleanup timer for the earliest row left or, with none left, clears the timer state and the
cache. The expiration times are fields of the operator instance, shared by every key, as in
Flink. No state carries a TTL: ``TimeIntervalJoin.open`` creates its four descriptors without
``enableTimeToLive`` and ``StreamExecIntervalJoin`` passes it no retention time (nor does
DataStream's ``IntervalJoinOperator`` apply one): the caches are cleaned by these timers only,
so a TTL cannot change the join's output.

The cleanup interval. ``StreamExecIntervalJoin.translateToPlanInternal`` passes
``RowTimeIntervalJoin`` the ``table.exec.interval-join.min-cleanup-interval`` option
(``ExecutionConfigOptions.TABLE_EXEC_INTERVAL_JOIN_MIN_CLEAN_UP_INTERVAL``), whose default is 0
since Flink 1.18 (before, half the interval: ``(leftRelativeSize + rightRelativeSize) / 2``).
The flink-sql lane leaves it at its default, as a Flink SQL user does, and so does the
emulation: a row's cleanup timer is at ``t + relative size + 1``, so a bid (``leftRelativeSize
= -lower_ms``, 0 in q4's shape) leaves the cache as soon as the watermark passes it, and an
auction ``upper_ms`` later. With half the interval every bid stayed ``(upper_ms - lower_ms) /
2`` longer than in Flink: most of the emulation's state, and of its checkpoints, was bids the
real job had already dropped (docs/operators.md).

Flink's zeros, below every row here. ``TimeIntervalJoin`` starts its expiration times at 0
(``leftExpirationTime`` / ``rightExpirationTime``), ``RowTimeIntervalJoin.updateOperatorTime``
floors the operator time at 0 (``currentWatermark() > 0 ? currentWatermark() : 0``) and
``removeExpiredRows`` takes ``earliestTimestamp > 0`` (from -1) for "a row is left": sentinels
that sit below every row of a job on epoch times, Flink's users' and the flink-sql lane's (its
event time is shifted past 0: ``SqlJob.shift``). statebench's Nexmark time starts at 0, where
they would bite: a bid at time 0 with ``lower_ms = 0`` (``rightQualifiedUpperBound`` 0) would
neither join (``0 < 0`` is false) nor be cached, and a row left at time 0 would be cleared with
its cache. The emulation keeps Flink's logic with the sentinel :data:`BEFORE_ANY_ROW` in their
place, below every row time as Flink's 0 is below every epoch time: on positive times it does
what Flink does, and on Nexmark's first millisecond what the real job does (with the zeros it
lost every pair of time 0 the real job emits; docs/operators.md).

Left out: outer joins (the emitted flags and null padding), processing-time joins, the join
condition's non-equi residue, allowed lateness, and separate watermarks per input.

The flink-sql lane runs it as ``bid JOIN auction ON auction = id AND bid.event_time BETWEEN
auction.event_time + lower_ms AND auction.event_time + upper_ms`` (``SqlJob.query``; the planner
makes it ``IntervalJoin(leftLowerBound=lower_ms, leftUpperBound=upper_ms)``, bids left):
its rows are this emulation's, row for row, and a TTL changes none of them
(``tests/flink/test_sql_kinds.py``).
"""

from __future__ import annotations

from typing import Any

import backends
from workloads.nexmark import BID
from workloads.operators.base import END_OF_INPUT, EmulatedOperator, Row, StateDecl, View
from workloads.operators.rows import AUCTION_ROW, BID_ROW

_FLAG = b"\x00"  # Tuple2<RowData, Boolean>: the row and "emitted" (false: inner join)
LEFT_CACHE, RIGHT_CACHE = "IntervalJoinLeftCache", "IntervalJoinRightCache"
LEFT_TIMER, RIGHT_TIMER = "IntervalJoinLeftTimerState", "IntervalJoinRightTimerState"
#: ``table.exec.interval-join.min-cleanup-interval``'s default (Flink >= 1.18), the ms a cache
#: entry is kept past its expiry before its cleanup timer removes it (module docstring).
MIN_CLEANUP_INTERVAL_MS = 0
#: Flink's 0 where ``TimeIntervalJoin`` means "before every row" (the expiration times' start,
#: the operator time before a positive watermark): below every row time here, as Flink's 0 is
#: below every epoch time (module docstring). Far from Long's ends, so the Java twin's
#: ``time - size - 1`` cannot overflow.
BEFORE_ANY_ROW = -(1 << 62)


class IntervalJoin(EmulatedOperator):
    STATES = (
        StateDecl(LEFT_CACHE, "map", backends.Types.BYTES(), backends.Types.LONG(),
                  ttl=False),
        StateDecl(RIGHT_CACHE, "map", backends.Types.BYTES(), backends.Types.LONG(),
                  ttl=False),
        StateDecl(LEFT_TIMER, "value", backends.Types.LONG(), ttl=False),
        StateDecl(RIGHT_TIMER, "value", backends.Types.LONG(), ttl=False),
    )
    USES_TIMERS = True

    def __init__(self, params: Any, out_of_orderness_ms: int, retention: bool) -> None:
        super().__init__(params, out_of_orderness_ms, retention)
        self.left_size = -params.lower_ms
        self.right_size = params.upper_ms
        self.min_cleanup = MIN_CLEANUP_INTERVAL_MS
        self.left_expiration = BEFORE_ANY_ROW
        self.right_expiration = BEFORE_ANY_ROW

    def bind_views(self, views: dict[str, View]) -> None:
        self.lcache, self.rcache = views[LEFT_CACHE], views[RIGHT_CACHE]
        self.ltimer, self.rtimer = views[LEFT_TIMER], views[RIGHT_TIMER]

    def operator_time(self) -> int:
        """The watermark, floored where Flink floors it at 0 (module docstring)."""
        return self.watermark if self.watermark > BEFORE_ANY_ROW else BEFORE_ANY_ROW

    def expiration(self, relative_size: int) -> int:
        now = self.operator_time()
        return now - relative_size - 1 if now < END_OF_INPUT else END_OF_INPUT

    def process(self, row: Row) -> None:
        kind, t, person, auction, price, category, expires = row
        if kind == BID:
            record = BID_ROW.pack(auction, person, price, t)
            lo, hi = t - self.right_size, t + self.left_size
            if self.right_expiration < hi:
                self.right_expiration = self.expiration(self.right_size)
                self._join(self.rcache, lo, hi, self.right_expiration, record, left=True)
            if self.operator_time() < hi:
                self._cache(self.lcache, t, record)
                if self.rtimer.value() is None:
                    self._register_cleanup(t, left=True)
        else:
            record = AUCTION_ROW.pack(auction, person, price, category, expires, t)
            lo, hi = t - self.left_size, t + self.right_size
            if self.left_expiration < hi:
                self.left_expiration = self.expiration(self.left_size)
                self._join(self.lcache, lo, hi, self.left_expiration, record, left=False)
            if self.operator_time() < hi:
                self._cache(self.rcache, t, record)
                if self.ltimer.value() is None:
                    self._register_cleanup(t, left=False)

    def _join(self, other: View, lo: int, hi: int, expiration: int, record: bytes,
              left: bool) -> None:
        for time, packed in other.items():
            if lo <= time <= hi:
                for row in _rows(packed, AUCTION_ROW.size if left else BID_ROW.size):
                    bid, auc = (record, row) if left else (row, record)
                    self._emit_joined(bid, auc)
            if time <= expiration:
                other.remove(time)  # eager remove while joining

    def _emit_joined(self, bid: bytes, auc: bytes) -> None:
        auction, bidder, price, bid_ts = BID_ROW.unpack(bid)
        a = AUCTION_ROW.unpack(auc)
        self.emit("+I", auction, bidder, price, bid_ts, a[1], a[5])

    def _cache(self, cache: View, t: int, record: bytes) -> None:
        rows = cache.get(t)
        cache.put(t, (rows or b"") + record + _FLAG)

    def _register_cleanup(self, row_time: int, left: bool) -> None:
        assert self.timers is not None
        size = self.left_size if left else self.right_size
        cleanup = row_time + size + self.min_cleanup + 1
        self.timers.register(self.key, cleanup, 0)
        (self.rtimer if left else self.ltimer).update(cleanup)

    def on_timer(self, ts: int, key: Any, ns: int) -> None:
        left_cleanup = self.ltimer.value()
        if left_cleanup is not None and ts == left_cleanup:
            self.right_expiration = self.expiration(self.right_size)
            self._remove_expired(self.right_expiration, self.rcache, self.ltimer, left=False)
        right_cleanup = self.rtimer.value()
        if right_cleanup is not None and ts == right_cleanup:
            self.left_expiration = self.expiration(self.left_size)
            self._remove_expired(self.left_expiration, self.lcache, self.rtimer, left=True)

    def _remove_expired(self, expiration: int, cache: View, timer_state: View,
                        left: bool) -> None:
        earliest: int | None = None  # Flink's -1, tested "> 0": no row left
        for time, _ in cache.items():
            if time <= expiration:
                cache.remove(time)
            elif earliest is None or time < earliest:
                earliest = time
        if earliest is not None:
            self._register_cleanup(earliest, left)
        else:
            timer_state.clear()
            cache.clear()


def _rows(packed: bytes, size: int) -> list[bytes]:
    """The rows of a cache entry (each followed by its one-byte flag)."""
    step = size + 1
    return [packed[i:i + size] for i in range(0, len(packed), step)]
