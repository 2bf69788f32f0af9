"""Each operator kind's state accesses, timers and outputs, pinned against hand-worked traces.

Every trace is written out by hand from the Flink class the kind follows (see each module of
``workloads.operators``): a few events, then the exact list of state calls, timer
registrations and firings, and the emitted records."""

from __future__ import annotations

import struct
from typing import Any

import pytest

import backends
from workloads.nexmark import AUCTION, BID
from workloads.operators import make_operator
from workloads.operators.results import changed_share, compare_outputs, replay
from workloads.operators.rows import auction_row, bid_row
from workloads.spec import OperatorSpec

T = backends.StateTtlConfig
TIMER = struct.Struct(">qq")


def _ttl(ms: int) -> backends.StateTtlConfig:
    return (T.new_builder(ms).set_ttl_time_characteristic(T.TtlTimeCharacteristic.EventTime)
            .build())


def run(kind: str, events: list[tuple[int, tuple]], ttl_ms: int | None = None,
        bound: int = 0, backend_kind: str = "heap", tmp_path: Any = None,
        **params: Any) -> tuple[list, list]:
    """(trace, outputs) of ``kind`` over ``(key, row)`` events on a fresh backend."""
    spec = OperatorSpec(kind=kind, **params)
    op = make_operator(spec, bound, retention=ttl_ms is not None, ttl_ms=ttl_ms)
    options = {"path": str(tmp_path)} if backend_kind == "rocksdb" else {}
    backend = backends.create_backend(backend_kind, clock=backends.ManualClock(0), **options)
    trace: list = []
    try:
        op.bind(backend, op.descriptors(_ttl(ttl_ms) if ttl_ms else None), trace)
        replay(op, [([k for k, _ in events], [r[1] for _, r in events],
                     [r for _, r in events])], backend.event_clock.set)
    finally:
        backend.close()
    return trace, op.outputs


def bid(ts: int, bidder: int, auction: int, price: int) -> tuple:
    return (BID, ts, bidder, auction, price, -1, -1)


def auction(ts: int, seller: int, auction_id: int, price: int, category: int,
            expires: int) -> tuple:
    return (AUCTION, ts, seller, auction_id, price, category, expires)


# ------------------------------------------------------------------------------------------------
# dedup (RowTimeDeduplicateFunction, keep last row)
# ------------------------------------------------------------------------------------------------

DEDUP_KEY = 7 * 2**32 + 3
DEDUP_EVENTS = [(DEDUP_KEY, bid(10, 7, 3, 100)), (DEDUP_KEY, bid(13, 7, 3, 50)),
                (DEDUP_KEY, bid(30, 7, 3, 70))]


@pytest.mark.parametrize("backend_kind", ["heap", "rocksdb"])
def test_dedup_trace_with_ttl(backend_kind: str, tmp_path) -> None:
    # TTL 5 ms: the row written at 10 is live at 13 (expires at 15); the row written at 13
    # expires at 18, so the bid at 30 finds no previous row
    trace, out = run("dedup", DEDUP_EVENTS, ttl_ms=5, backend_kind=backend_kind,
                     tmp_path=tmp_path)
    s = "deduplicate-state"
    assert trace == [
        (s, "value"), (s, "update", bid_row(3, 7, 100, 10)),
        (s, "value"), (s, "update", bid_row(3, 7, 50, 13)),
        (s, "value"), (s, "update", bid_row(3, 7, 70, 30)),
    ]
    assert out == [("+I", 3, 7, 100, 10), ("-U", 3, 7, 100, 10), ("+U", 3, 7, 50, 13),
                   ("+I", 3, 7, 70, 30)]  # the duplicate the TTL let through


def test_dedup_without_ttl_updates() -> None:
    _, out = run("dedup", DEDUP_EVENTS)
    assert out == [("+I", 3, 7, 100, 10), ("-U", 3, 7, 100, 10), ("+U", 3, 7, 50, 13),
                   ("-U", 3, 7, 50, 13), ("+U", 3, 7, 70, 30)]


def test_changed_results_by_hand() -> None:
    _, with_ttl = run("dedup", DEDUP_EVENTS, ttl_ms=5)
    _, without = run("dedup", DEDUP_EVENTS)
    # TTL run only: +I(70); reference only: -U(50), +U(70); union: 4 common-or-not + 2 = 6
    assert compare_outputs(with_ttl, without) == (3, 6)
    assert changed_share(3, 6) == 0.5
    _, long_ttl = run("dedup", DEDUP_EVENTS, ttl_ms=1000)
    assert compare_outputs(long_ttl, without) == (0, 5)
    assert compare_outputs([], []) == (0, 0) and changed_share(0, 0) == 0.0


# ------------------------------------------------------------------------------------------------
# regular_join (StreamingJoinOperator, InputSideHasNoUniqueKey on both sides)
# ------------------------------------------------------------------------------------------------


def test_regular_join_trace() -> None:
    a = auction(100, 9, 5, 1000, 10, 500)
    b = bid(110, 7, 5, 1200)
    trace, out = run("regular_join", [(5, a), (5, b), (5, b)], ttl_ms=1000)
    A, B = auction_row(5, 9, 1000, 10, 500, 100), bid_row(5, 7, 1200, 110)
    L, R = "left-records", "right-records"
    assert trace == [
        (L, "items"), (R, "get", A), (R, "put", A, 1),          # auction: no bids yet, stored
        (R, "items"), (L, "get", B), (L, "put", B, 1),          # bid: joins, stored
        (R, "items"), (L, "get", B), (L, "put", B, 2),          # the same bid: count 2
    ]
    joined = ("+I", 5, 7, 1200, 110, 9, 10, 100)
    assert out == [joined, joined]


def test_regular_join_loses_matches_after_ttl() -> None:
    a = auction(100, 9, 5, 1000, 10, 500)
    events = [(5, a), (5, bid(110, 7, 5, 1200)), (5, bid(400, 8, 5, 1300))]
    _, out = run("regular_join", events, ttl_ms=200)  # the auction expires at 300
    assert out == [("+I", 5, 7, 1200, 110, 9, 10, 100)]
    # an auction after its bids joins every stored bid (count times)
    _, out = run("regular_join", [(5, bid(1, 7, 5, 10)), (5, bid(2, 8, 5, 20)), (5, a)])
    assert out == [("+I", 5, 7, 10, 1, 9, 10, 100), ("+I", 5, 8, 20, 2, 9, 10, 100)]


# ------------------------------------------------------------------------------------------------
# tumbling_window (WindowOperator + EventTimeTrigger, incremental max)
# ------------------------------------------------------------------------------------------------


def test_tumbling_window_trace() -> None:
    events = [(5, bid(3, 7, 5, 7)), (5, bid(8, 7, 5, 4)), (5, bid(12, 7, 5, 6))]
    trace, out = run("tumbling_window", events, window_ms=10, agg="max")
    W, TM = "window-contents", "event-timers"
    assert trace == [
        # ts 3 -> window [0, 10): accumulate, trigger timer at 9, cleanup timer 9 (a no-op)
        (W, "get", 10), (W, "put", 10, 7), (TM, "put", TIMER.pack(9, 10), True),
        ("timer", "exists", 9, 10),
        # ts 8: same window, max stays 7, both timers exist
        (W, "get", 10), (W, "put", 10, 7), ("timer", "exists", 9, 10),
        ("timer", "exists", 9, 10),
        # ts 12: watermark 11 fires timer 9 first: emit, clear the window
        (TM, "remove", TIMER.pack(9, 10)), ("timer", "fire", 9, 10), (W, "get", 10),
        (W, "remove", 10),
        (W, "get", 20), (W, "put", 20, 6), (TM, "put", TIMER.pack(19, 20), True),
        ("timer", "exists", 19, 20),
        # end of input: the final watermark fires the last window
        (TM, "remove", TIMER.pack(19, 20)), ("timer", "fire", 19, 20), (W, "get", 20),
        (W, "remove", 20),
    ]
    assert out == [("+I", 5, 10, 7), ("+I", 5, 20, 6)]


def test_window_waits_for_the_out_of_orderness_bound() -> None:
    events = [(5, bid(3, 7, 5, 7)), (5, bid(12, 7, 5, 6)), (5, bid(15, 7, 5, 9))]
    trace, out = run("tumbling_window", events, bound=5, window_ms=10, agg="count")
    fired = [e for e in trace if e[:2] == ("timer", "fire")]
    assert fired == [("timer", "fire", 9, 10), ("timer", "fire", 19, 20)]
    # ts 12 gives watermark 6 (< 9): window [0, 10) fires only at ts 15 (watermark 9)
    first_fire = trace.index(("timer", "fire", 9, 10))
    assert trace[first_fire - 4] == ("window-contents", "put", 20, 1)
    assert out == [("+I", 5, 10, 1), ("+I", 5, 20, 2)]


def test_window_contents_ignore_a_short_ttl() -> None:
    # Flink's windows apply no state TTL (workloads/operators/tumbling_window.py): the 50
    # written at 1 outlives a 5 ms TTL and the window keeps its MAX
    events = [(5, bid(1, 7, 5, 50)), (5, bid(8, 7, 5, 4))]
    _, out = run("tumbling_window", events, ttl_ms=5, window_ms=10, agg="max")
    assert out == [("+I", 5, 10, 50)]


# ------------------------------------------------------------------------------------------------
# group_agg (GroupAggFunction)
# ------------------------------------------------------------------------------------------------


def test_group_agg_trace_and_retention_rule() -> None:
    events = [(5, bid(1, 7, 5, 10)), (5, bid(2, 7, 5, 5)), (5, bid(3, 7, 5, 20))]
    trace, out = run("group_agg", events, ttl_ms=1000, agg="max")
    S = "accState"
    assert trace == [(S, "value"), (S, "update", 10), (S, "value"), (S, "update", 10),
                     (S, "value"), (S, "update", 20)]
    # with state retention an unchanged aggregate is emitted again (keeps downstream alive)
    assert out == [("+I", 5, 10), ("-U", 5, 10), ("+U", 5, 10), ("-U", 5, 10), ("+U", 5, 20)]
    _, out = run("group_agg", events, agg="max")
    assert out == [("+I", 5, 10), ("-U", 5, 10), ("+U", 5, 20)]


def test_group_agg_restarts_after_ttl() -> None:
    events = [(5, bid(1, 7, 5, 10)), (5, bid(2, 7, 5, 5)), (5, bid(30, 7, 5, 1))]
    _, out = run("group_agg", events, ttl_ms=10, agg="sum")
    assert out == [("+I", 5, 10), ("-U", 5, 10), ("+U", 5, 15), ("+I", 5, 1)]


def test_sliding_window_trace() -> None:
    # size 10, slide 5: ts 7 is in [5, 15) and [0, 10), the latest start first
    trace, out = run("sliding_window", [(5, bid(7, 7, 5, 3))], window_ms=10, slide_ms=5,
                     agg="sum")
    W, TM = "window-contents", "event-timers"
    assert trace == [
        (W, "get", 15), (W, "put", 15, 3), (TM, "put", TIMER.pack(14, 15), True),
        ("timer", "exists", 14, 15),
        (W, "get", 10), (W, "put", 10, 3), (TM, "put", TIMER.pack(9, 10), True),
        ("timer", "exists", 9, 10),
        (TM, "remove", TIMER.pack(9, 10)), ("timer", "fire", 9, 10), (W, "get", 10),
        (W, "remove", 10),
        (TM, "remove", TIMER.pack(14, 15)), ("timer", "fire", 14, 15), (W, "get", 15),
        (W, "remove", 15),
    ]
    assert out == [("+I", 5, 10, 3), ("+I", 5, 15, 3)]


def test_interval_join_trace() -> None:
    # bid.ts - auction.ts in 0..10: leftRelativeSize 0, rightRelativeSize 10, min cleanup 0
    # (table.exec.interval-join.min-cleanup-interval's default)
    a = auction(100, 9, 5, 1000, 10, 500)
    b1, b2 = bid(105, 7, 5, 1200), bid(120, 8, 5, 1300)
    trace, out = run("interval_join", [(5, a), (5, b1), (5, b2)], lower_ms=0, upper_ms=10)
    A, B1, B2 = (auction_row(5, 9, 1000, 10, 500, 100) + b"\0", bid_row(5, 7, 1200, 105) + b"\0",
                 bid_row(5, 8, 1300, 120) + b"\0")
    LC, RC = "IntervalJoinLeftCache", "IntervalJoinRightCache"
    LT, RT, TM = "IntervalJoinLeftTimerState", "IntervalJoinRightTimerState", "event-timers"
    assert trace == [
        # auction at 100 (watermark 99): no bids cached; cache it, cleanup timer 100+10+0+1
        (LC, "items"), (RC, "get", 100), (RC, "put", 100, A), (LT, "value"),
        (TM, "put", TIMER.pack(111, 0), True), (LT, "update", 111),
        # bid at 105: joins the auction (100 in 95..105); cached, timer 105+0+0+1
        (RC, "items"), (LC, "get", 105), (LC, "put", 105, B1), (RT, "value"),
        (TM, "put", TIMER.pack(106, 0), True), (RT, "update", 106),
        # bid at 120 (watermark 119): timer 106 expires the bids up to 118, timer 111 the
        # auctions up to 108; both caches empty, their timer states cleared
        (TM, "remove", TIMER.pack(106, 0)), ("timer", "fire", 106, 0),
        (LT, "value"), (RT, "value"), (LC, "items"), (LC, "remove", 105), (RT, "clear"),
        (LC, "clear"),
        (TM, "remove", TIMER.pack(111, 0)), ("timer", "fire", 111, 0),
        (LT, "value"), (RC, "items"), (RC, "remove", 100), (LT, "clear"), (RC, "clear"),
        (RT, "value"),
        (RC, "items"), (LC, "get", 120), (LC, "put", 120, B2), (RT, "value"),
        (TM, "put", TIMER.pack(121, 0), True), (RT, "update", 121),
        # end of input: the last cleanup timer empties the bid cache
        (TM, "remove", TIMER.pack(121, 0)), ("timer", "fire", 121, 0),
        (LT, "value"), (RT, "value"), (LC, "items"), (LC, "remove", 120), (RT, "clear"),
        (LC, "clear"),
    ]
    assert out == [("+I", 5, 7, 1200, 105, 9, 100)]


# ------------------------------------------------------------------------------------------------
# topn (AppendOnlyTopNFunction, without rank number)
# ------------------------------------------------------------------------------------------------


def test_topn_trace() -> None:
    events = [(5, bid(1, 1, 5, 10)), (5, bid(2, 2, 5, 30)), (5, bid(3, 3, 5, 5)),
              (5, bid(4, 4, 5, 20)), (5, bid(5, 6, 5, 20))]
    trace, out = run("topn", events, top_n=2)
    D = "data-state-with-append"
    r1, r2, r4 = bid_row(5, 1, 10, 1), bid_row(5, 2, 30, 2), bid_row(5, 4, 20, 4)
    assert trace == [
        (D, "items"),                  # first bid of the key: the buffer loaded from state
        (D, "put", 10, r1),            # 10 enters the empty top 2
        (D, "put", 30, r2),            # 30 enters (cache hit: no read)
        # 5 ranks after a full top 2: nothing at all
        (D, "put", 20, r4), (D, "remove", 10),  # 20 enters, 10 drops out
        # the second 20 ties the worst of a full top 2: nothing
    ]
    assert out == [("+I", 5, 1, 10, 1), ("+I", 5, 2, 30, 2), ("-D", 5, 1, 10, 1),
                   ("+I", 5, 4, 20, 4)]


def test_topn_forgets_expired_rows_on_reload() -> None:
    events = [(5, bid(1, 1, 5, 10)), (5, bid(7, 2, 5, 30)), (5, bid(8, 4, 5, 20))]
    trace, out = run("topn", events, ttl_ms=5, top_n=2)
    # the buffer cached at 1 expires at 6: reloaded at 7 from state, where 10 expired too
    assert [e for e in trace if e[1] == "items"] == [("data-state-with-append", "items")] * 2
    assert out == [("+I", 5, 1, 10, 1), ("+I", 5, 2, 30, 7), ("+I", 5, 4, 20, 8)]
    _, reference = run("topn", events, top_n=2)
    assert reference == [("+I", 5, 1, 10, 1), ("+I", 5, 2, 30, 7), ("-D", 5, 1, 10, 1),
                         ("+I", 5, 4, 20, 8)]


# ------------------------------------------------------------------------------------------------
# session_window (WindowOperator + EventTimeSessionWindows, merging)
# ------------------------------------------------------------------------------------------------


def test_session_window_trace() -> None:
    events = [(7, bid(0, 7, 5, 1)), (7, bid(5, 7, 5, 1)), (7, bid(30, 7, 5, 1))]
    trace, out = run("session_window", events, gap_ms=10, agg="count")
    C, S, TM = "window-contents", "merging-window-set", "event-timers"
    W0, W30 = TIMER.pack(0, 10), TIMER.pack(30, 40)  # a state window: (start, end)
    assert trace == [
        # ts 0: a new session [0, 10), its own state window; timer at 9; the set persisted
        (S, "value"), (C, "get", W0), (C, "put", W0, 1), (TM, "put", TIMER.pack(9, 0), True),
        ("timer", "exists", 9, 0), (S, "update", struct.pack(">qqqq", 0, 10, 0, 10)),
        # ts 5: [5, 15) merges into [0, 15): onMerge registers 14, the old timer 9 is deleted,
        # the state window stays [0, 10)
        (S, "value"), (TM, "put", TIMER.pack(14, 0), True), (TM, "remove", TIMER.pack(9, 0)),
        (C, "get", W0), (C, "put", W0, 2), ("timer", "exists", 14, 0),
        ("timer", "exists", 14, 0), (S, "update", struct.pack(">qqqq", 0, 15, 0, 10)),
        # ts 30: watermark 29 fires the session [0, 15): emit, clear, retire (the set empties)
        (TM, "remove", TIMER.pack(14, 0)), ("timer", "fire", 14, 0), (S, "value"),
        (C, "get", W0), (C, "remove", W0), (S, "clear"),
        (S, "value"), (C, "get", W30), (C, "put", W30, 1), (TM, "put", TIMER.pack(39, 30), True),
        ("timer", "exists", 39, 30), (S, "update", struct.pack(">qqqq", 30, 40, 30, 40)),
        # end of input
        (TM, "remove", TIMER.pack(39, 30)), ("timer", "fire", 39, 30), (S, "value"),
        (C, "get", W30), (C, "remove", W30), (S, "clear"),
    ]
    assert out == [("+I", 7, 0, 15, 2), ("+I", 7, 30, 40, 1)]


def test_session_merge_groups_follow_time_window_merge() -> None:
    from workloads.operators.session_window import merge_groups as groups

    assert groups([(0, 10), (20, 30), (10, 12)]) == [[(0, 10), (10, 12)]]  # bounds inclusive
    assert groups([(0, 10), (20, 30), (5, 25)]) == [[(0, 10), (5, 25), (20, 30)]]
    assert groups([(0, 10), (11, 20)]) == []
    assert groups([(0, 10), (0, 10)]) == []  # the same window again: no merge


def test_session_same_timestamp_twice() -> None:
    events = [(7, bid(0, 7, 5, 1)), (7, bid(0, 7, 5, 1))]
    _, out = run("session_window", events, gap_ms=10, agg="count")
    assert out == [("+I", 7, 0, 10, 2)]
