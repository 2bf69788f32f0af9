"""The spark-tws lanes: what they refuse (with the lane and the reason), the model of Spark's
expiry rules, and two real transformWithState queries run through the lane's ``run_job``
(changelog checkpointing on with spark_ttl, off with spark_timer)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql.streaming import StreamingQueryListener

from backends.spark.slices import write_slices
from backends.spark.tws import WRITE_RESULT, result_hash
from backends.spark.tws_model import Batch, replay
from backends.strategies import parse_strategy
from workloads.lanes.spark_tws import (
    FOREIGN_REASONS,
    SPARK_TWS_LANES,
    SparkTwsLane,
    epoch_ms,
    query_name,
    ttl_run_valid,
)
from workloads.ops import Op
from workloads.run.metrics import METRIC_SCHEMA
from workloads.spec import load_spec, parse_spec

CODES = {op.spec_name: int(op) for op in Op}
LANE, NOCHANGELOG = SPARK_TWS_LANES


def small_churn(events: int = 600, duration_ms: int = 3_000) -> Any:
    """sessions-churn at a pace Spark's Python processor keeps up with here (a few hundred
    events a second), with its 1 s TTL."""
    return load_spec("sessions-churn").with_overrides(events=events,
                                                      rate=events * 1000 // duration_ms)


# ------------------------------------------------------------------------------------------------
# What the lanes refuse
# ------------------------------------------------------------------------------------------------


def test_lanes_are_spark_job_lanes() -> None:
    assert [lane.name for lane in SPARK_TWS_LANES] == ["spark-tws", "spark-tws-nochangelog"]
    assert {lane.engine for lane in SPARK_TWS_LANES} == {"spark"}
    assert not any(lane.runs_tasks for lane in SPARK_TWS_LANES)
    assert (LANE.changelog, NOCHANGELOG.changelog) == (True, False)
    assert LANE.own_strategies == ("spark_no_ttl", "spark_ttl", "spark_timer",
                                   "spark_event_timer")


def test_operator_spec_is_not_applicable(view: Any) -> None:
    reason = LANE.spec_reason(view(load_spec("nexmark-q20-join")))
    assert reason is not None and reason.startswith("spark-tws ")
    assert "[operator]" in reason and "spark-sql" in reason


def test_state_spark_lacks_is_not_applicable(view: Any) -> None:
    spec = parse_spec({
        "name": "agg", "seed": 1, "keys": {"count": 10, "distribution": "uniform"},
        "operations": {"value_update": 0.5, "reducing_add": 0.5},
        "time": {"rate": 1000, "events": 100}, "state": {"ttl_ms": 100}}, source="<agg>")
    reason = NOCHANGELOG.spec_reason(view(spec))
    assert reason is not None and reason.startswith("spark-tws-nochangelog:")
    assert "reducing" in reason and "value, list and map" in reason
    assert LANE.spec_reason(view(small_churn())) is None


def test_unreadable_trace_is_not_applicable(view: Any, tmp_path: Path) -> None:
    bad = tmp_path / "trace.parquet"
    bad.write_text("not parquet")
    spec = parse_spec({"name": "tr", "seed": 1, "source": {"kind": "trace", "path": str(bad)},
                       "state": {"ttl_ms": 100}}, source="<tr>")
    reason = LANE.spec_reason(view(spec))
    assert reason is not None and reason.startswith(f"spark-tws cannot read the trace {bad}")


@pytest.mark.parametrize("strategy", ["none", "full_snapshot", "incremental(5, false)",
                                      "compaction_filter", "timer"])
def test_statebench_strategies_are_not_applicable(view: Any, strategy: str) -> None:
    reason = LANE.strategy_reason(view(small_churn()), strategy)
    name = strategy.split("(")[0]
    assert reason == f"spark-tws: {FOREIGN_REASONS[name]}"


def test_spark_semantics_refuse_what_spark_has_not(view: Any) -> None:
    churn = small_churn()
    run = view(churn)
    assert [LANE.strategy_reason(run, s) for s in run.strategy_labels] == [None, None, None]
    expired = view(churn.with_overrides(state__visibility="ReturnExpiredIfNotCleanedUp"))
    reason = LANE.strategy_reason(expired, "spark_ttl")
    assert reason is not None and "never returns an expired value" in reason
    assert LANE.strategy_reason(expired, "spark_no_ttl") is None  # no TTL, nothing expires
    on_read = view(churn.with_overrides(state__update_type="OnReadAndWrite"))
    reason = LANE.strategy_reason(on_read, "spark_timer")
    assert reason is not None and "on write only" in reason
    no_ttl = view(churn, ttl_override={"spark_ttl": None})
    reason = LANE.strategy_reason(no_ttl, "spark_ttl")
    assert reason is not None and "needs a TTL" in reason
    assert LANE.strategy_reason(run, "spark_watermark") is not None


def test_spark_strategies_parse_without_arguments() -> None:
    assert parse_strategy("spark_ttl").label == "spark_ttl"
    with pytest.raises(ValueError, match="takes no arguments"):
        parse_strategy("spark_timer(100)")


def test_remote_checkpoint_root_is_refused_up_front(view: Any) -> None:
    run = view(small_churn(), checkpoint_root="s3://bucket/ck")
    assert "local folder" in (LANE.check(run) or "")
    assert LANE.check(view(small_churn())) is None


# ------------------------------------------------------------------------------------------------
# The model of Spark's rules
# ------------------------------------------------------------------------------------------------


def test_model_hides_expired_value_then_sweeps_it() -> None:
    events = [(0, 7, CODES["value_update"], 5, 0), (1, 7, CODES["value_get"], 0, 0),
              (2, 7, CODES["value_get"], 0, 0)]
    batch_of = {0: 1_000, 1: 1_999, 2: 2_000}
    batches = [Batch(1_000, 1_100), Batch(1_999, 2_050), Batch(2_000, 2_100)]
    out = replay(events, batch_of, batches, CODES, ttl_ms=1_000, timer_ms=None,
                 spec_ttl_ms=1_000)
    # alive while batch time < write + ttl; expired at write + ttl exactly (StateTTL.isExpired)
    assert out.results == {0: WRITE_RESULT, 1: result_hash(5), 2: result_hash(None)}
    assert out.ttl_removed == 1 and out.expired_returned == 0
    # after batch 1_999's commit (2_050) the unit is held but expired by the spec's clock
    assert [(b.held, b.live) for b in out.batches] == [(1, 1), (1, 0), (0, 0)]


def test_model_timer_is_per_key_and_fires_after_the_data() -> None:
    add, get = CODES["list_add"], CODES["list_get"]
    events = [(0, 1, add, 10, 0), (1, 1, add, 11, 0), (2, 1, get, 0, 0), (3, 1, get, 0, 0)]
    batch_of = {0: 0, 1: 800, 2: 1_500, 3: 1_800}
    batches = [Batch(t, t + 10) for t in (0, 800, 1_500, 1_800)]
    out = replay(events, batch_of, batches, CODES, ttl_ms=None, timer_ms=1_000,
                 spec_ttl_ms=1_000)
    # the write at 800 moved the key's timer to 1_800: at 1_500 the element written at 0 is
    # still there (expired by the spec's TTL: returned anyway); at 1_800 the read runs before
    # the timer clears the key (both elements expired by then: 3 expired units returned)
    assert out.results[2] == result_hash([10, 11]) == out.results[3]
    assert out.expired_returned == 1 + 2 and out.timers_fired == 1
    assert out.batches[-1].held == 0
    ttl = replay(events, batch_of, batches, CODES, ttl_ms=1_000, timer_ms=None,
                 spec_ttl_ms=1_000)
    assert ttl.results[2] == result_hash([11]) and ttl.expired_returned == 0


def test_model_orphaned_map_index_deletes_a_put_again_entry() -> None:
    """Spark's removeKey leaves the entry's $ttl_ index entry (MapStateImplWithTTL): when it
    expires, the sweep deletes the entry put again since, though its own TTL runs on."""
    put, remove, get = CODES["map_put"], CODES["map_remove"], CODES["map_get"]
    events = [(0, 1, put, 10, 0), (1, 1, remove, 0, 0), (2, 1, put, 11, 0), (3, 1, get, 0, 0)]
    batch_of = {0: 0, 1: 100, 2: 500, 3: 1_200}
    batches = [Batch(t, t + 10) for t in (0, 100, 500, 1_000, 1_200)]
    spark = replay(events, batch_of, batches, CODES, ttl_ms=1_000, timer_ms=None,
                   spec_ttl_ms=1_000)
    plain = replay(events, batch_of, batches, CODES, ttl_ms=1_000, timer_ms=None,
                   spec_ttl_ms=1_000, orphan_map_index=False)
    assert plain.results[3] == result_hash(11) and plain.ttl_removed == 0
    # the orphan (expiring at 1_000) took the entry put at 500 in the sweep of batch 1_000
    assert spark.results[3] == result_hash(None) and spark.ttl_removed == 1
    assert [b.removed for b in spark.batches] == [0, 0, 0, 1, 0]


def test_ttl_run_is_valid_only_when_it_keeps_up() -> None:
    assert ttl_run_valid(batch_p50_ms=700, latency_p50_ms=900, expiry_ms=2_000) == 1
    # the default-size run: 16 s batches, 20 s latency against a 1 s TTL
    assert ttl_run_valid(batch_p50_ms=16_000, latency_p50_ms=20_000, expiry_ms=1_000) == 0
    # the docs' old setup: batches under the TTL, latency over it
    assert ttl_run_valid(batch_p50_ms=1_500, latency_p50_ms=2_300, expiry_ms=2_000) == 0
    assert ttl_run_valid(batch_p50_ms=2_000, latency_p50_ms=100, expiry_ms=2_000) == 0  # at


class _Batches:
    """A query's batches as ``_drain`` sees them: one starts at every poll."""

    def __init__(self) -> None:
        self.latest_start_s = 0.0

    def poll(self) -> bool:
        self.latest_start_s = time.time()
        return True


def test_drain_waits_for_a_batch_past_the_last_write_plus_the_ttl() -> None:
    from backends.spark.tws import ProcessorSettings, QuerySettings, _drain

    ttl = ProcessorSettings(("value",), "long", (), ttl_ms=300)
    batches = _Batches()
    last_write_ms = int(time.time() * 1000)
    _drain(batches, QuerySettings(ttl, drain_s=0.0, timeout_s=10), last_write_ms)
    # the drain ended with a batch that started after every unit written had expired
    assert batches.latest_start_s * 1000 >= last_write_ms + 300
    started = time.time()
    _drain(_Batches(), QuerySettings(ProcessorSettings(("value",), "long", ()), drain_s=0.2),
           last_write_ms)  # nothing expires: two triggers' time
    assert time.time() - started >= 0.2


def test_slices_follow_release_time(tmp_path: Path) -> None:
    table = pa.table({"ord": pa.array(range(6), pa.int64())})
    slices = write_slices(table, np.array([0, 50, 99, 100, 350, 351]), 100, tmp_path)
    assert [due for due, _ in slices] == [100, 200, 400]
    import pyarrow.parquet as pq

    assert [pq.read_table(p).num_rows for _, p in slices] == [3, 1, 2]


# ------------------------------------------------------------------------------------------------
# Real queries
# ------------------------------------------------------------------------------------------------


def summary(table: pa.Table) -> dict[str, float]:
    return {r["metric"]: r["value"] for r in table.to_pylist() if r["logical_time_ms"] == -1}


def series(table: pa.Table, metric: str) -> list[float]:
    return [r["value"] for r in table.to_pylist()
            if r["metric"] == metric and r["logical_time_ms"] != -1]


def checkpoint_folder(lane: SparkTwsLane, cfg: Any, root: str) -> Path:
    """Where the lane put the query's checkpoint (``SparkTwsLane.checkpoint_dir``'s layout;
    calling it would empty the folder)."""
    from workloads.run.checkpoints import round_folder, slug

    return (Path(root) / slug(cfg.run_id) / slug(cfg.scenario.label)
            / round_folder(cfg.repetition) / lane.name)


def state_files(folder: Path) -> list[str]:
    return [p.name for p in (folder / "state").rglob("*") if p.is_file()]


class OwnListener(StreamingQueryListener):
    """The test's own record of every batch Spark reports (not the lane's listener): each
    progress event's JSON, and the termination events."""

    def __init__(self) -> None:
        super().__init__()
        self.progress: list[dict[str, Any]] = []
        self.terminated = threading.Event()

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        self.progress.append(json.loads(event.progress.json))

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        self.terminated.set()


def run_lane(lane: SparkTwsLane, strategy: str, spark: Any, view: Any, scenario: Any,
             tmp_path: Path) -> tuple[pa.Table, Path, int, int]:
    from workloads.lanes.spark_tws import lane_events
    from workloads.run import run_tempdirs

    spec = small_churn()
    run = view(spec, checkpoint_root=str(tmp_path / "ck"), speedup=0.5)
    cfg, facts = scenario(run, lane.name, strategy)
    before = set(run_tempdirs.live())
    table = lane.run_job(run, cfg, facts)
    assert set(run_tempdirs.live()) == before  # the job's temporary folder is gone
    assert not spark.streams.active  # the query was stopped
    folder = checkpoint_folder(lane, cfg, run.checkpoint_root)
    return table, folder, spec.time.events, lane_events(run, cfg, facts)[2]


@pytest.mark.spark
def test_spark_ttl_with_changelog(spark: Any, view: Any, scenario: Any,
                                  tmp_path: Path) -> None:
    listener = OwnListener()
    spark.streams.addListener(listener)
    try:
        table, folder, events, reads = run_lane(LANE, "spark_ttl", spark, view, scenario,
                                                tmp_path)
        assert listener.terminated.wait(30)
    finally:
        spark.streams.removeListener(listener)
    assert table.schema == METRIC_SCHEMA
    got = summary(table)
    assert got["records"] == events
    assert got["spark_model_mismatches"] == 0  # Spark's reads are its rules' reads
    assert got["expired_returned"] == 0  # Spark never returns an expired value
    assert got["ttl_compared_outputs"] == reads > 0  # every read compared, writes not
    assert got["timers_registered"] == 0 and got["spark_batches"] >= 1
    assert got["checkpoint_dir_final_bytes"] > 0 and got["checkpoint_written_bytes"] > 0
    assert len(series(table, "checkpoint_dir_bytes")) == got["spark_batches"]
    assert series(table, "state_rows") and series(table, "live_entries")
    # the whole query: it ran on past its last event until what it kept expired and was swept
    # (it stopped at its last output, and the last sweep was not in its numbers)
    assert series(table, "live_entries")[-1] == 0
    assert series(table, "state_rows")[-1] == 0 < max(series(table, "state_rows"))
    assert got["ttl_removed_values"] > 0
    assert len(series(table, "state_internal_rows")) == len(series(table, "state_rows"))
    # the whole query, as Spark reported it to a listener of the test's own: every batch's
    # TTL removals are in the lane's sum, and the last batch swept the store empty (its
    # index and list counts too)
    spark_batches = [p for p in listener.progress if p["name"] == query_name(0)]
    removed = sum(p["stateOperators"][0]["customMetrics"]["numValuesRemovedDueToTTLExpiry"]
                  for p in spark_batches)
    assert got["ttl_removed_values"] == removed
    last = spark_batches[-1]["stateOperators"][0]
    assert last["numRowsTotal"] == 0
    assert last["customMetrics"]["rocksdbNumInternalColFamiliesKeys"] == 0
    assert sum(series(table, "ttl_removed_values_batch")) == removed  # the warm-up's: none
    # it ran on to a batch that started a TTL (2 wall s) after the last batch that wrote
    starts = [epoch_ms(p["timestamp"]) for p in spark_batches]
    wrote = [t for t, p in zip(starts, spark_batches)
             if p["stateOperators"][0]["numRowsUpdated"] > 0]
    assert max(starts) >= max(wrote) + 2_000
    # Spark's own figures, named; none constant or structurally 0
    assert "state_memory_bytes" not in {r["metric"] for r in table.to_pylist()}
    assert got["rocksdb_puts_total"] > 0 and got["rocksdb_bytes_written_total"] > 0
    assert got["state_updates_total_ms"] > 0
    assert got["spark_min_deltas_for_snapshot"] == 10
    # valid when it kept up with its TTL (2 wall s; on a loaded machine it may not), with
    # the figures that decide it beside the flag
    assert got["ttl_wall_ms"] == 2_000
    assert got["ttl_run_valid"] == int(got["data_batch_duration_p50_ms"] < 2_000
                                       and got["latency_p50_us"] < 2_000_000)
    # checkpoint bytes are the state store's files only, the warm-up's left out
    state_now = sum(p.stat().st_size for p in (folder / "state").rglob("*") if p.is_file())
    assert got["checkpoint_dir_final_bytes"] == state_now
    assert got["checkpoint_written_bytes"] == sum(series(table, "checkpoint_uploaded_bytes"))
    # the knob: a changelog checkpoint per batch
    assert any(name.endswith(".changelog") for name in state_files(folder))


@pytest.mark.spark
def test_spark_timer_without_changelog(spark: Any, view: Any, scenario: Any,
                                       tmp_path: Path) -> None:
    table, folder, events, _ = run_lane(NOCHANGELOG, "spark_timer", spark, view, scenario,
                                        tmp_path)
    got = summary(table)
    assert got["records"] == events
    assert got["spark_model_mismatches"] == 0
    assert got["timers_registered"] > 0 and got["ttl_removed_values"] == 0
    names = state_files(folder)
    assert not any(name.endswith(".changelog") for name in names)
    assert any(name.endswith(".zip") for name in names)  # every commit uploads a snapshot
