"""The interval join's emulation against the query it stands for, on statebench's time origin.

``TimeIntervalJoin`` uses 0 for "before every row" (its expiration times start at 0,
``RowTimeIntervalJoin`` floors its operator time at 0, ``removeExpiredRows`` reads
``earliestTimestamp > 0`` as "a row is left"): below every epoch time, where Flink's users and
the flink-sql lane (its event time is shifted past 0, ``SqlJob.shift``) have their rows.
statebench's Nexmark time starts at 0, so the emulation puts those sentinels below every row
time instead (``workloads/operators/interval_join.py``). These tests pin what that buys: the
emulation emits every pair the query defines from the first millisecond on, and moving the
time origin (as the real job's shift does) changes none of its rows. With Flink's zeros taken
literally, the pairs of time 0 were lost: the flink-sql lane emitted them and the emulation
did not, 1.06% of the shipped spec's rows at 100 k events (docs/operators.md).
"""

from __future__ import annotations

from collections import Counter

import backends
from tests.operators.job_input import operator_input
from tests.operators.test_traces import auction, bid, run
from workloads.nexmark import BID
from workloads.operators import make_operator
from workloads.operators.base import Output
from workloads.operators.results import replay
from workloads.spec import WorkloadSpec, load_spec

#: Events of the shipped spec (lower_ms 0, upper_ms 10 s): Nexmark's first 0.15 s, whose
#: first millisecond holds bids and auctions at time 0 (the generator's out-of-order times
#: are clamped there).
EVENTS = 3_000
#: A time origin far past 0, as the real job's shifted event time (any shift will do).
SHIFT_MS = 1_000_000


def shipped_spec() -> WorkloadSpec:
    return load_spec("nexmark-interval-join").with_overrides(events=EVENTS)


def input_rows(spec: WorkloadSpec, shift_ms: int = 0) -> tuple[list[int], list[tuple]]:
    """The spec's operator input in the order the emulated task and the real job read it (by
    time, then arrival), keyed by auction, every time (and expiry) moved by ``shift_ms``."""
    keys, rows = operator_input(spec)
    data = [(kind, ts + shift_ms, person, auction_id, price, category, expires + shift_ms)
            for kind, ts, person, auction_id, price, category, expires in rows]
    return keys.tolist(), data


def emulated(spec: WorkloadSpec, shift_ms: int = 0) -> list[Output]:
    assert spec.operator is not None and spec.time is not None
    keys, data = input_rows(spec, shift_ms)
    op = make_operator(spec.operator, spec.time.max_out_of_orderness_ms, retention=True)
    backend = backends.create_backend("heap", clock=backends.ManualClock(0))
    try:
        op.bind(backend, op.descriptors(None))
        replay(op, [(keys, [r[1] for r in data], data)])
    finally:
        backend.close()
    return op.outputs


def query_pairs(spec: WorkloadSpec) -> Counter[tuple]:
    """What the query defines, by brute force: every (bid, auction) of one auction with
    ``bid.ts - auction.ts`` in ``lower_ms .. upper_ms``, as the emulation's ``+I`` rows."""
    op = spec.operator
    assert op is not None
    _, data = input_rows(spec)
    auctions: dict[int, list[tuple]] = {}
    for row in data:
        if row[0] != BID:
            auctions.setdefault(row[3], []).append(row)
    pairs: Counter[tuple] = Counter()
    for kind, ts, bidder, auction_id, price, _, _ in data:
        if kind != BID:
            continue
        for a in auctions.get(auction_id, []):
            if op.lower_ms <= ts - a[1] <= op.upper_ms:
                pairs[("+I", auction_id, bidder, price, ts, a[2], a[1])] += 1
    return pairs


def test_the_emulation_joins_every_pair_the_query_defines_from_time_zero() -> None:
    """The shipped spec's bounds (a bid joins an auction of its own time or up to 10 s
    older) over input from time 0: every pair, those of time 0 included."""
    spec = shipped_spec()
    expected = query_pairs(spec)
    at_zero = sum(n for row, n in expected.items() if row[4] == 0)
    assert at_zero > 0 and sum(expected.values()) > at_zero  # the case is in the input
    assert Counter(emulated(spec)) == expected


def test_moving_the_time_origin_changes_no_row() -> None:
    """The real job reads the same rows on a shifted time axis: the emulation's rows over the
    shifted input are its rows over the input, every time shifted."""
    spec = shipped_spec()
    shifted = Counter(emulated(spec, SHIFT_MS))
    moved = Counter((kind, a, b, p, ts + SHIFT_MS, s, ats + SHIFT_MS)
                    for kind, a, b, p, ts, s, ats in emulated(spec))
    assert sum(moved.values()) > 0
    assert shifted == moved


def test_a_bid_and_its_auction_at_time_zero_join_and_are_cleaned() -> None:
    """Time 0 is a row time like any other: an auction and a bid at 0 (lower_ms 0) join, the
    bid is cached (Flink's ``0 < 0`` would have refused both), and the cleanup timers then
    empty both caches (Flink's ``earliestTimestamp > 0`` would have cleared a row left at 0
    with its cache)."""
    a = auction(0, 9, 5, 1000, 10, 500)
    b0, b1 = bid(0, 7, 5, 1200), bid(3, 8, 5, 1300)
    trace, out = run("interval_join", [(5, a), (5, b0), (5, b1)], lower_ms=0, upper_ms=10)
    assert out == [("+I", 5, 7, 1200, 0, 9, 0), ("+I", 5, 8, 1300, 3, 9, 0)]
    assert ("IntervalJoinLeftCache", "get", 0) in trace  # the bid at 0 was cached
    # the auction's cleanup timer (0 + 10 + 0 + 1) fires at the end and removes it
    assert ("IntervalJoinRightCache", "remove", 0) in trace
