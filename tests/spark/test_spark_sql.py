"""The spark-sql lane: the [operator] specs as real Spark Structured Streaming queries, their
outputs against the emulated operators' on the same events, the lane's rows, and its refusals.

Small on purpose (the CI budget): 1,500 Nexmark events over 3 s of event time, cut into 1.5 s
micro-batches, so a query runs about six batches (the kinds whose eviction mid-run the q20, q18
and q7 tests already cover run one 3 s batch and the end marker); the package's one
SparkSession.
"""

from __future__ import annotations

import glob
import os
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from backends.keygroups import KeyGroupRange
from backends.spark.sql_queries import (
    END_AHEAD_MS,
    END_MARKER_TYPE,
    QueryReport,
    QuerySettings,
    micro_batches,
    run_query,
)
from workloads.lanes.flink_sql_job import events_in_time_order
from workloads.lanes.spark_sql import (
    STRATEGY,
    SparkSqlLane,
    emulation_agreement,
    keep_last_agreement,
    longest_auction_ms,
    query_settings,
    report_rows,
)
from workloads.operators.input import select
from workloads.operators.results import reference_outputs
from workloads.report.cross_engine import agreement_verdict
from workloads.run.config import DataFacts
from workloads.run.plan import RunConfig, Scenario, operator_config, spec_time_frame
from workloads.spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "workloads" / "specs"
EVENTS, RATE, BATCH_MS = 1500, 500.0, 1500
ONE_BATCH_MS = 3000  # every event in one micro-batch
#: ``spark``: the package's one SparkSession (tests/spark/conftest.py); the lane's
#: ``get_session()`` returns the same one
pytestmark = pytest.mark.spark
ROW_COLUMNS = ("event_type", "ts", "person_id", "auction_id", "price", "category", "expires_ms")


def small_spec(name: str) -> Any:
    """A shipped spec with few events and few auctions in flight (so bids find theirs)."""
    spec = load_spec(SPECS / f"{name}.toml")
    op = replace(spec.operator, nexmark=replace(spec.operator.nexmark, in_flight_auctions=200,
                                                num_active_people=200))
    return replace(spec, time=replace(spec.time, events=EVENTS, rate=RATE), operator=op)


def emulated(spec: Any) -> list[tuple]:
    """The emulated operator's outputs over the same events without TTL, in one task (one
    watermark, as the Spark query's), from workloads.operators directly."""
    events = events_in_time_order(spec).combine_chunks()
    rows, keys = select(spec.operator, events.to_batches()[0])
    cols = [rows.column(c).to_pylist() for c in ROW_COLUMNS]
    inputs = [(keys.tolist(), cols[1], list(zip(*cols)))]
    return reference_outputs(spec.operator, spec.time.max_out_of_orderness_ms, inputs, 128,
                             KeyGroupRange.of_operator(0, 1, 128), spec.time.start_ms)


def scenario(spec: Any, strategy: str = STRATEGY) -> tuple[RunConfig, Any, DataFacts]:
    run = RunConfig(spec, backends=("heap",), parallelism=1)  # one state store per operator
    start, end = spec_time_frame(spec)
    facts = DataFacts(((0, EVENTS),), start, end)
    return run, operator_config(run, Scenario("spark-sql", strategy), 0, facts), facts


def spark_outputs(spark: Any, tmp_path: Path, spec: Any, batch_ms: int = BATCH_MS) -> Counter:
    """One query's outputs over the spec's events (all files at once: outputs only)."""
    _, cfg, _ = scenario(spec)
    settings = query_settings(spec, cfg)
    batches = micro_batches(events_in_time_order(spec), spec.time.start_ms, batch_ms)
    return run_query(spark, settings, batches, tmp_path, tmp_path / "checkpoint",
                     measure=False, parallelism=1).outputs


def by_metric(table: pa.Table) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in table.to_pylist():
        out.setdefault(row["metric"], []).append(row)
    return out


# ------------------------------------------------------------------------------------------------
# No Spark needed
# ------------------------------------------------------------------------------------------------


def test_micro_batches_cut_event_time_spans_and_end_with_the_marker() -> None:
    spec = small_spec("nexmark-q7-window")
    events = events_in_time_order(spec)
    batches = micro_batches(events, 0, 1000)
    assert [end for _, end in batches] == [1000, 2000, 3000, 3000]
    assert sum(t.num_rows for t, _ in batches[:-1]) == events.num_rows
    for table, end in batches[:-1]:
        ts = table.column("ts").to_pylist()
        assert end - 1000 <= min(ts) and max(ts) < end
    marker = batches[-1][0].to_pylist()
    assert marker[0]["event_type"] == END_MARKER_TYPE
    assert marker[0]["ts"] == max(events.column("ts").to_pylist()) + END_AHEAD_MS


def test_refusals_name_the_lane_and_why() -> None:
    lane = SparkSqlLane()
    topn = RunConfig(small_spec("nexmark-q19-topn"), backends=("heap",))
    reason = lane.spec_reason(topn)
    assert reason is not None and "spark-sql" in reason and "Top-N" in reason
    kv = RunConfig(load_spec(SPECS / "ycsb-a.toml"), backends=("heap",))
    assert "no [operator] table" in (lane.spec_reason(kv) or "")
    q20 = RunConfig(small_spec("nexmark-q20-join"), backends=("heap",))
    assert lane.spec_reason(q20) is None
    assert lane.strategy_reason(q20, STRATEGY) is None
    for label in ("none", "timer", "incremental(5, false)"):
        assert "evict by watermark only" in (lane.strategy_reason(q20, label) or "")
    run, cfg, facts = scenario(small_spec("nexmark-q20-join"), strategy="timer")
    with pytest.raises(ValueError, match=r"^spark-sql: 'timer' configures TTL cleanup"):
        lane.run_job(run, cfg, facts)  # before any work: no session is asked for


def test_q4_state_is_labelled_unbounded() -> None:
    """q4's key carries no event time: its state is never evicted, and its rows say so."""
    for name, kind, evicted in (("nexmark-q4-agg", "group_agg", 0),
                                ("nexmark-q7-window", "tumbling_window", 1)):
        _, cfg, _ = scenario(small_spec(name))
        rows = report_rows(cfg, QueryReport(), 0, 0, None, kind=kind).to_batch().to_pylist()
        flags = [r["value"] for r in rows if r["metric"] == "state_evicted_by_watermark"]
        assert flags == [evicted]


def test_spark_watermark_parses_and_takes_no_arguments() -> None:
    from backends.strategies import parse_strategy

    assert parse_strategy("spark_watermark").label == STRATEGY
    with pytest.raises(ValueError, match="takes no arguments"):
        parse_strategy("spark_watermark(1)")


# ------------------------------------------------------------------------------------------------
# Real queries
# ------------------------------------------------------------------------------------------------


def test_q20_join_outputs_rows_and_reference(spark: Any) -> None:
    """The join bounded as a Spark user bounds q20 (a bid within its auction's life, from
    its time to its ``expires``) emits exactly the emulation's matches within it; its
    reference (no bound) exactly the emulation's; the lane's rows say so."""
    spec = small_spec("nexmark-q20-join")
    run, cfg, facts = scenario(spec)
    assert query_settings(spec, cfg).join_bound_ms == longest_auction_ms(spec)
    job = SparkSqlLane(batch_ms=BATCH_MS).run_reports(run, cfg, facts)
    events = events_in_time_order(spec)
    expires = {a: e for a, e, t in zip(events.column("auction_id").to_pylist(),
                                       events.column("expires_ms").to_pylist(),
                                       events.column("event_type").to_pylist()) if t == 1}
    expected = Counter(o[1:] for o in emulated(spec))
    within = Counter({o: n for o, n in expected.items() if o[6] <= o[3] <= expires[o[0]]})
    assert len(within) < len(expected)  # the bound cuts some matches: the test can fail
    assert job.reference is not None and job.reference.outputs == expected
    assert job.reference.digest() == QueryReport(outputs=expected).digest()
    assert job.report.outputs == within
    made = report_rows(cfg, job.report, job.records, job.events, job.reference,
                       kind="regular_join", emulated=job.emulated)
    rows = by_metric(pa.Table.from_batches([made.to_batch()]))
    one = {m: r[0]["value"] for m, r in rows.items() if r[0]["logical_time_ms"] == -1}
    # agreement with the emulation (the cross-engine table's): the reference is its join
    assert one["emulation_changed_outputs"] == 0
    assert one["emulation_compared_outputs"] == expected.total()
    # and the bounded join, compared the same way, differs: the verdict can say "differ"
    assert job.emulated is not None
    changed, compared = emulation_agreement("regular_join", job.report.outputs, job.emulated)
    assert changed == expected.total() - within.total()
    assert agreement_verdict(changed, compared) == "differ"
    assert one["operator_outputs"] == within.total()
    assert one["ttl_changed_outputs"] == expected.total() - within.total()
    assert one["ttl_compared_outputs"] == expected.total()
    assert one["records"] == job.records > 0 and one["rows_dropped_by_watermark"] == 0
    assert one["records_per_s"] > 0 and one["spark_batches"] == len(job.report.batches)
    state = [r["value"] for r in sorted(rows["state_rows"], key=lambda r: r["step"])]
    assert max(state) > 0 and state[-1] == 0  # the end marker's watermark evicts everything
    sizes = [r["value"] for r in rows["checkpoint_dir_bytes"]]
    assert len(sizes) == 3 and all(s > 0 for s in sizes)
    uploaded = [r["value"] for r in rows["checkpoint_uploaded_bytes"]]
    assert uploaded[0] == sizes[0]  # the first batch's state files are all new
    assert all(u > 0 for u in uploaded)  # every batch commits a changelog, however small
    assert one["checkpoint_written_bytes"] == sum(uploaded)
    # Spark's own figures; none constant (memoryUsedBytes) or structurally 0 (SST bytes with
    # the changelog on and no snapshot yet)
    assert "state_memory_bytes" not in rows and "rocksdb_sst_bytes" not in rows
    assert one["rocksdb_puts_total"] > 0 and one["rocksdb_bytes_written_total"] > 0
    assert set(rows) <= set(SparkSqlLane.metric_classes)
    # nothing left behind: the job's folder is gone and no maintenance thread writes into it
    state_store = spark.sparkContext._jvm.org.apache.spark.sql.execution.streaming.state
    assert not state_store.StateStore.isMaintenanceRunning()
    assert not glob.glob(os.path.join(tempfile.gettempdir(),
                                      f"statebench-spark-sql-pid{os.getpid()}.*"))


def test_q18_dedup_keeps_the_first_row_and_eviction_lets_duplicates_through(
        spark: Any) -> None:
    spec = small_spec("nexmark-q18-dedup")
    spec = replace(spec, state=replace(spec.state, ttl_ms=300))  # evicts within the 3 s
    run, cfg, facts = scenario(spec)
    # the dedup window is the spec's TTL, not the out-of-orderness
    assert query_settings(spec, cfg).delay_ms == 300 > spec.time.max_out_of_orderness_ms
    job = SparkSqlLane(batch_ms=BATCH_MS).run_reports(run, cfg, facts)
    outputs = emulated(spec)
    first = Counter(o[1:] for o in outputs if o[0] == "+I")
    assert len(first) < len(outputs)  # keep-last retracts: -U/+U pairs keep-first has not
    assert job.reference is not None and job.reference.outputs == first
    # a key's state goes once the watermark passes its first bid + the TTL, so later bids of
    # the key come through again
    assert job.report.outputs.total() > first.total()
    assert set(first) <= set(job.report.outputs)
    # keep-last (max_by, update mode) beside it: each key's latest bid is the emulation's
    # (Flink's rn = 1 over ts DESC without TTL), within 5 % of the keys; keep-first is not,
    # the reachable "differ"
    assert job.keep_last is not None
    differ, keys = keep_last_agreement(job.keep_last.outputs.elements(), outputs)
    assert keys == len(first) and differ <= 0.05 * keys
    differ_first, _ = keep_last_agreement(job.report.outputs.elements(), outputs)
    assert differ_first > 0.05 * keys
    made = report_rows(cfg, job.report, job.records, job.events, job.reference, job.keep_last,
                       kind="dedup")
    one = {r["metric"]: r["value"] for r in made.to_batch().to_pylist()
           if r["logical_time_ms"] == -1}
    assert one["keep_last_keys"] == keys and one["state_evicted_by_watermark"] == 1


def test_q7_tumbling_window_equals_the_emulation(spark: Any, tmp_path: Path) -> None:
    spec = small_spec("nexmark-q7-window")
    expected = Counter(o[1:] for o in emulated(spec))
    assert expected.total() > 0
    assert spark_outputs(spark, tmp_path, spec) == expected


def test_q7_window_drops_late_input_as_the_emulation_does(spark: Any, tmp_path: Path) -> None:
    """Out-of-order input the watermark drops: the bids of the first 500 ms arrive with the
    last micro-batch, after the watermark passed their window's end. Spark drops them
    (``numRowsDroppedByWatermark``) and the emulation, fed the same arrival order, drops them
    too (Flink's late-element rule): the same outputs, which are not the in-order ones."""
    spec = small_spec("nexmark-q7-window")
    _, cfg, _ = scenario(spec)
    settings = query_settings(spec, cfg)
    events = events_in_time_order(spec).combine_chunks()
    batches = micro_batches(events, spec.time.start_ms, 500)
    first, *middle, last, marker = batches
    late = first[0].filter(pc.equal(first[0].column("event_type"), 2))  # its bids
    early = first[0].filter(pc.not_equal(first[0].column("event_type"), 2))
    arrival = [(early, first[1]), *middle, (pa.concat_tables([last[0], late]), last[1]), marker]
    report = run_query(spark, settings, arrival, tmp_path, tmp_path / "checkpoint",
                       parallelism=1)
    # counted at the state operator's input, after the partial aggregation: (window, key)
    # groups of late bids, not bids
    dropped = sum(b.rows_dropped_by_watermark for b in report.batches)
    assert 0 < dropped <= late.num_rows
    # the emulation over the same arrival order (one task, one watermark): the first 500 ms'
    # bids moved to the end, after the last batch's events
    ts = np.asarray(events.column("ts").to_pylist())
    moved = ((ts - spec.time.start_ms) // 500 == 0) & (
        np.asarray(events.column("event_type").to_pylist()) == 2)
    order = np.concatenate([np.flatnonzero(~moved), np.flatnonzero(moved)])
    rows, keys = select(spec.operator, events.take(order).to_batches()[0])
    cols = [rows.column(c).to_pylist() for c in ROW_COLUMNS]
    out_of_order = reference_outputs(
        spec.operator, spec.time.max_out_of_orderness_ms,
        [(keys.tolist(), cols[1], list(zip(*cols)))], 128, KeyGroupRange.of_operator(0, 1, 128),
        spec.time.start_ms)
    expected = Counter(o[1:] for o in out_of_order)
    assert report.outputs == expected
    assert expected != Counter(o[1:] for o in emulated(spec))  # the late bids mattered


@pytest.mark.parametrize("name", ["nexmark-q5-sliding", "nexmark-q11-session"])
def test_sliding_and_session_windows_equal_the_emulation(spark: Any, tmp_path: Path,
                                                         name: str) -> None:
    spec = small_spec(name)
    expected = Counter(o[1:] for o in emulated(spec))
    assert expected.total() > 0
    assert spark_outputs(spark, tmp_path, spec, batch_ms=ONE_BATCH_MS) == expected


def test_interval_join_matches_the_emulation_from_time_zero(spark: Any,
                                                             tmp_path: Path) -> None:
    """Flink's RowTimeIntervalJoin's 0 means "before every row" (on epoch times it is; the
    emulation keeps that meaning on Nexmark's times from 0), so the bids at ts <= lower_ms join
    as Spark joins them: the same matches, time zero's included."""
    spec = small_spec("nexmark-interval-join")
    expected = Counter(o[1:] for o in emulated(spec))
    got = spark_outputs(spark, tmp_path, spec, batch_ms=ONE_BATCH_MS)
    assert expected.total() > 0 and got == expected
    assert any(o[3] <= spec.operator.lower_ms for o in expected)  # time zero's pairs are in


def test_q4_group_agg_updates_end_at_the_emulations_final_values(spark: Any,
                                                                 tmp_path: Path) -> None:
    """Update mode emits a key's value once per batch that changed it, not per record: the
    last (largest: max of positive prices only grows) value per key is the emulation's."""
    spec = small_spec("nexmark-q4-agg")
    final: dict[int, int] = {}
    outputs = emulated(spec)
    for kind, key, value in outputs:
        if kind in ("+I", "+U"):
            final[key] = value
    got = spark_outputs(spark, tmp_path, spec, batch_ms=ONE_BATCH_MS)
    last: dict[int, int] = {}
    for key, value in got:
        last[key] = max(value, last.get(key, value))
    assert last == final
    assert got.total() < len(outputs)


def test_settings_are_restored_after_a_query(spark: Any) -> None:
    """The shared session keeps its own state store and shuffle settings (the module's
    queries set theirs only while starting)."""
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass", None) in (
        None, "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider")
    assert QuerySettings(kind="dedup", delay_ms=1).output_mode == "append"
