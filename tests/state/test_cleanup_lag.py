"""Cleanup lag (issue 9): a histogram per mechanism, over values, list elements and map entries.

Lag = now - expiration when a unit goes. Small lags (< 32 ms) have a bucket each, so the
tests below can demand exact numbers; larger ones are checked against numpy within the
bucket error.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.cleanup.counters import (
    LagHistogram,
    bucket_floor,
    bucket_percentiles,
    merge_buckets,
)
from backends.types import INT64_MAX
from tests.state.helpers import ORW, list_desc, map_desc, ttl, value_desc
from workloads.run.metrics import lag_stats


def _lags(backend, mechanism: str) -> dict[int, int]:
    """The backend's lag buckets of one mechanism (floor ms -> units); {} when none."""
    hist = backend.cleanup_lags().get(mechanism)
    return {} if hist is None else hist.buckets


# ------------------------------------------------------------------------------------------------
# The histogram
# ------------------------------------------------------------------------------------------------


def test_percentiles_match_numpy_within_the_bucket_error() -> None:
    rng = np.random.default_rng(3)
    lags = rng.lognormal(mean=7.0, sigma=1.5, size=100_000).astype(np.int64)
    hist = LagHistogram()
    for chunk in np.array_split(lags, 9):
        hist.record_many(chunk.tolist())
    stats = lag_stats(hist.snapshot(), hist.max)
    assert stats["max"] == lags.max()  # exact
    for name, q in (("p50", 50), ("p99", 99)):
        # nearest rank, as HdrHistogram (numpy's "higher" method), within the bucket's 3%
        assert stats[name] == pytest.approx(np.percentile(lags, q, method="higher"), rel=0.035)
    assert hist.count == len(lags)


def test_buckets_are_exact_below_32_ms_and_within_6_percent_above() -> None:
    v = np.concatenate([np.arange(0, 5_000), np.geomspace(5e3, 1e15, 3_000).astype(np.int64)])
    floors = bucket_floor(v)
    assert (floors[v < 32] == v[v < 32]).all()
    assert (floors <= v).all() and ((v - floors) <= v / 16).all()
    assert (np.diff(floors) >= 0).all()


def test_pending_lags_are_folded_in_batches_so_memory_stays_bounded() -> None:
    hist = LagHistogram()
    for i in range(200_000):
        hist.record(i % 1000)
    assert len(hist.pending) < 1 << 16
    assert hist.count == 200_000 and hist.max == 999


def test_a_clock_at_the_end_of_time_is_clamped_not_an_error() -> None:
    hist = LagHistogram()
    hist.record_many([5, (1 << 80) - 100])  # expiry_cutoff at an INT64_MAX clock
    assert hist.snapshot() and hist.max == INT64_MAX


def test_merged_buckets_give_the_percentiles_of_all_units() -> None:
    a, b = LagHistogram(), LagHistogram()
    a.record_many([1, 1, 1])
    b.record_many([20, 30])
    merged = merge_buckets([a.snapshot(), b.snapshot()])
    assert bucket_percentiles(merged, {"p50": 0.5, "p99": 0.99}) == {"p50": 1.0, "p99": 30.0}
    assert bucket_percentiles({}, {"p50": 0.5}) == {}


# ------------------------------------------------------------------------------------------------
# Each mechanism records every unit it removes, of every shape
# ------------------------------------------------------------------------------------------------


def test_incremental_records_values_list_elements_and_map_entries(make_backend, clock) -> None:
    backend = make_backend("heap", clock)
    value = backend.get_state(value_desc(ttl(100, incremental=(10, False))))
    lst = backend.get_list_state(list_desc(ttl(100, incremental=(10, False))))
    mp = backend.get_map_state(map_desc(ttl(100, incremental=(10, False))))
    backend.set_current_key("k")
    value.update(1)  # t = 0
    lst.add(1)
    mp.put("a", 1)
    clock.set(10)
    lst.add(2)  # t = 10
    mp.put("b", 2)
    clock.set(120)  # expired 20 ms (t=0) and 10 ms (t=10) ago
    backend.set_current_key("other")
    for state in (value, lst, mp):
        state.clear()  # an access each: one incremental step per state
    assert backend.physical_entries("v") == backend.physical_entries("l") == 0
    assert _lags(backend, "incremental") == {20: 3, 10: 2}
    assert backend.cleanup_counts()["l"]["incremental"] == 2
    assert backend.cleanup_counts()["m"]["incremental"] == 2


def test_timers_record_values_list_elements_and_map_entries(backend, clock) -> None:
    value = backend.get_state(value_desc(ttl(100, timers=0)))
    lst = backend.get_list_state(list_desc(ttl(100, timers=0)))
    mp = backend.get_map_state(map_desc(ttl(100, timers=0)))
    backend.set_current_key("k")
    value.update(1)
    lst.add(1)
    mp.put("a", 1)
    clock.set(50)
    lst.add(2)  # keeps the list alive past the first expiry
    clock.set(107)  # the t=0 units expired 7 ms ago
    assert backend.fire_timers() == 3
    assert _lags(backend, "timer") == {7: 3}
    clock.set(150)  # the t=50 element: 0 ms late
    backend.fire_timers()
    assert _lags(backend, "timer") == {7: 3, 0: 1}


def test_read_time_removals_record_their_lag(backend, clock) -> None:
    value = backend.get_state(value_desc(ttl(100)))
    lst = backend.get_list_state(list_desc(ttl(100, update=ORW)))
    mp = backend.get_map_state(map_desc(ttl(100)))
    backend.set_current_key("k")
    value.update(1)
    mp.put("a", 1)
    lst.add(1)
    clock.set(30)
    lst.add(2)
    clock.set(125)  # value, entry and first element expired 25 ms ago
    assert value.value() is None
    assert mp.get("a") is None
    assert list(lst.get()) == [2]  # OnReadAndWrite rewrites the list without element 1
    assert _lags(backend, "read") == {25: 3}
    clock.set(400)  # the refreshed element (stamped 125) expired at 225: 175 ms ago
    assert list(lst.get()) == []  # a fully expired list is cleared whole
    assert _lags(backend, "read") == {25: 3, int(bucket_floor(np.array([175]))[0]): 1}


def test_full_snapshot_records_what_each_snapshot_leaves_out(kind, make_backend, clock,
                                                             tmp_path) -> None:
    backend = make_backend(kind, clock)
    value = backend.get_state(value_desc(ttl(100, full_snapshot=True)))
    mp = backend.get_map_state(map_desc(ttl(100, full_snapshot=True)))
    backend.set_current_key("k")
    value.update(1)
    mp.put("a", 1)
    clock.set(112)
    backend.snapshot(1, tmp_path / "c1")
    assert _lags(backend, "full_snapshot") == {12: 2}
    clock.set(115)
    backend.snapshot(2, tmp_path / "c2")  # still present locally: left out again, 15 ms on
    assert _lags(backend, "full_snapshot") == {12: 2, 15: 2}


def test_no_removal_no_lag(backend, clock) -> None:
    value = backend.get_state(value_desc(ttl(100, timers=0)))
    backend.set_current_key("k")
    value.update(1)
    clock.set(50)
    assert value.value() == 1
    assert backend.cleanup_lags() == {}
