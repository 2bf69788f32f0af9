"""Latency buckets, HDR percentiles, state scans and the driver's task=-1 totals."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import backends as B
from workloads.run.metrics import (
    LAG_BUCKET,
    LATENCY_BUCKET,
    METRIC_SCHEMA,
    LatencyBuckets,
    ScenarioId,
    bucket_index,
    bucket_value,
    finalize_rows,
    not_applicable_rows,
    rows_to_batch,
    scan_states,
)

SCEN = ScenarioId("w", "heap", "none", run_id="run")


def test_buckets_are_monotone_and_within_two_percent() -> None:
    v = np.concatenate([np.arange(0, 200_000), np.geomspace(2e5, 1e13, 5_000).astype(np.int64)])
    idx = bucket_index(v)
    assert (np.diff(idx) >= 0).all()
    rep = bucket_value(idx)
    rel = np.abs(rep - v) / np.maximum(v, 1)
    assert rel.max() < 0.02
    assert (rep[v < 64] == v[v < 64]).all()  # exact below 64 ns


def test_percentiles_match_numpy_within_bucket_error() -> None:
    rng = np.random.default_rng(1)
    ns = rng.lognormal(mean=7.5, sigma=0.8, size=200_000).astype(np.int64)
    buckets = LatencyBuckets()
    for chunk in np.array_split(ns, 7):
        buckets.add(chunk)
    assert buckets.total == len(ns)
    p = buckets.percentiles_us()
    for name, q in (("latency_p50_us", 50), ("latency_p99_us", 99), ("latency_p999_us", 99.9)):
        assert p[name] == pytest.approx(np.percentile(ns, q) / 1e3, rel=0.03)
    assert p["latency_max_us"] == pytest.approx(ns.max() / 1e3, rel=0.03)
    assert LatencyBuckets().percentiles_us() == {}


def test_merged_buckets_equal_one_histogram() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.integers(100, 10_000, 5_000), rng.integers(5_000, 90_000, 3_000)
    one, two, both = LatencyBuckets(), LatencyBuckets(), LatencyBuckets()
    one.add(a)
    two.add(b)
    both.add(np.concatenate([a, b]))
    one.merge(two)
    assert one.percentiles_us() == both.percentiles_us()


def _table(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_batches([rows_to_batch(SCEN, rows)])


def test_finalize_adds_totals_and_drops_internal_rows() -> None:
    lat0, lat1 = LatencyBuckets(), LatencyBuckets()
    lat0.add(np.full(100, 1_000))
    lat1.add(np.full(100, 3_000))
    rows = [
        (0, 0, -1, "records_per_s", 100.0, "records/s"),
        (1, 0, -1, "records_per_s", 50.0, "records/s"),
        (0, 1, 1000, "checkpoint_bytes", 10.0, "bytes"),
        (1, 1, 1000, "checkpoint_bytes", 5.0, "bytes"),
        (0, 1, 1000, "checkpoint_total_ms", 3.0, "ms"),
        (1, 1, 1000, "checkpoint_total_ms", 7.0, "ms"),
        (0, 2, 500, "live_entries", 4.0, "entries"),
        (1, 2, 500, "live_entries", 6.0, "entries"),
        # task 0 removed 3 units 10 ms after expiry, task 1 one unit 40 ms after and one 55
        (0, 0, -1, "cleanup_lag_timer_p50_ms", 10.0, "ms"),
        (1, 0, -1, "cleanup_lag_timer_p50_ms", 40.0, "ms"),
        (0, 0, -1, "cleanup_lag_timer_max_ms", 10.0, "ms"),
        (1, 0, -1, "cleanup_lag_timer_max_ms", 55.0, "ms"),
        (0, 10, 0, LAG_BUCKET + "timer", 3.0, "count"),
        (1, 40, 0, LAG_BUCKET + "timer", 1.0, "count"),
        (1, 54, 0, LAG_BUCKET + "timer", 1.0, "count"),  # 55 ms: the bucket [54, 56)
        (0, 0, -1, "_attempt", 0.0, "count"),
        *[(0, i, 0, LATENCY_BUCKET, float(c), "count") for i, c in lat0.nonzero()],
        *[(1, i, 0, LATENCY_BUCKET, float(c), "count") for i, c in lat1.nonzero()],
    ]
    out = finalize_rows(_table(rows))
    assert out.schema == METRIC_SCHEMA
    assert not any(m.startswith("_") for m in out.column("metric").to_pylist())
    totals = {(r["metric"], r["step"]): r for r in out.to_pylist() if r["task"] == -1}
    assert totals[("records_per_s", 0)]["value"] == 150.0
    assert totals[("checkpoint_bytes", 1)]["value"] == 15.0
    assert totals[("checkpoint_bytes", 1)]["logical_time_ms"] == 1000
    assert totals[("checkpoint_total_ms", 1)]["value"] == 7.0  # durations: the slowest task
    assert totals[("live_entries", 2)]["value"] == 10.0
    # lag: p50 of the merged histogram (10 ms: 3 of 5 units), not a task's; max the slowest
    assert totals[("cleanup_lag_timer_p50_ms", 0)]["value"] == 10.0
    assert totals[("cleanup_lag_timer_p99_ms", 0)]["value"] == 54.5  # [54, 56)'s middle
    assert totals[("cleanup_lag_timer_max_ms", 0)]["value"] == 55.0
    # the merged histogram: half the records at 1 us, half at 3 us
    assert totals[("latency_p50_us", 0)]["value"] == pytest.approx(1.0, rel=0.02)
    assert totals[("latency_p99_us", 0)]["value"] == pytest.approx(3.0, rel=0.02)
    assert totals[("latency_p50_us", 0)]["unit"] == "us"
    # per-task rows stay
    assert len([r for r in out.to_pylist() if r["task"] >= 0]) == 12


def test_not_applicable_rows_are_flags() -> None:
    t = not_applicable_rows("r", "w", [("rocksdb", "incremental(5, false)")])
    (row,) = t.to_pylist()
    assert row["metric"] == "not_applicable" and row["value"] == 1.0 and row["unit"] == "flag"
    assert row["scenario"] == "w/rocksdb/incremental(5, false)" and row["task"] == -1


@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
def test_scan_classifies_units_and_counts_bytes(kind: str, make_backend) -> None:
    cfg = (B.StateTtlConfig.new_builder(100)
           .set_ttl_time_characteristic(B.StateTtlConfig.TtlTimeCharacteristic.EventTime)
           .disable_cleanup_in_background().build())
    b = make_backend(kind, B.ManualClock(0))
    descs = {
        "value": B.ValueStateDescriptor("value", B.Types.BYTES()),
        "list": B.ListStateDescriptor("list", B.Types.BYTES()),
        "map": B.MapStateDescriptor("map", B.Types.INT(), B.Types.BYTES()),
    }
    for d in descs.values():
        d.enable_time_to_live(cfg)
    v, lst, m = (b.get_state(descs["value"]), b.get_list_state(descs["list"]),
                 b.get_map_state(descs["map"]))
    for ts, key in ((0, 1), (50, 2), (150, 3)):
        b.set_event_time(ts)
        b.set_current_key(key)
        v.update(b"x" * 10)
        lst.add(b"y" * 3)
        m.put(7, b"z" * 5)
    s = scan_states(b, descs, ttl_ms=100, now_ms=120)
    # ts 0 expired at 100; ts 50 and 150 live at 120 -> per state 1 expired, 2 live
    assert (s.live, s.expired) == (6, 3)
    # key 8 + ts 8 + payload per unit; map units add a 4-byte user key
    assert s.logical_bytes == 3 * ((16 + 10) + (8 + 8 + 3) + (8 + 8 + 4 + 5))
