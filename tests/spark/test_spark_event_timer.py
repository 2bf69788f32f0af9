"""spark_event_timer: Spark's event-time timer per key on the spark-tws lane. Where it runs
(EventTime specs, the spark-tws lanes), what its model says (a write's time plus the TTL, fired
at the batch's watermark after its data), and two real queries on the same input giving the
same state, the same timers and an empty store once the watermark passed the last write's time
plus the TTL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backends.cleanup.spark_event_timer import SPARK_EVENT_TIMER
from backends.spark.tws import WRITE_RESULT, result_hash
from backends.spark.tws_model import Batch, replay
from backends.strategies import STRATEGIES, parse_strategy
from workloads.lanes import LANES
from workloads.lanes.cost import JobLoad
from workloads.lanes.spark_tws import (
    EVENT_BATCH_S,
    EVENT_SLICE_MS,
    SPARK_TWS_LANES,
    processor_settings,
)
from workloads.ops import Op
from workloads.spec import load_spec

CODES = {op.spec_name: int(op) for op in Op}
LANE, NOCHANGELOG = SPARK_TWS_LANES
NAME = SPARK_EVENT_TIMER.name


def small_churn(events: int = 600, duration_ms: int = 3_000) -> Any:
    """sessions-churn (EventTime, 1 s TTL, 20 ms out-of-orderness), small."""
    return load_spec("sessions-churn").with_overrides(events=events,
                                                      rate=events * 1000 // duration_ms)


# ------------------------------------------------------------------------------------------------
# Where it runs
# ------------------------------------------------------------------------------------------------


def test_registered_as_sparks_own() -> None:
    assert STRATEGIES[NAME] is SPARK_EVENT_TIMER
    assert parse_strategy(NAME).kind.engine == "spark"
    with pytest.raises(ValueError, match="takes no arguments"):
        parse_strategy(f"{NAME}(100)")
    assert "Spark's own state expiry" in (SPARK_EVENT_TIMER.foreign_reason("statebench") or "")
    assert SPARK_EVENT_TIMER.flink_refused is not None  # no Flink configuration: refused


def test_runs_on_eventtime_specs_only(view: Any) -> None:
    churn = view(small_churn(), strategy_labels=(NAME,))
    assert churn.spec.state.time_characteristic == "EventTime"
    assert LANE.strategy_reason(churn, NAME) is None
    assert NOCHANGELOG.strategy_reason(churn, NAME) is None
    paced = view(load_spec("sessions-paced"), strategy_labels=(NAME,))
    reason = LANE.strategy_reason(paced, NAME)
    assert reason is not None and "\n" not in reason
    assert reason.startswith("spark-tws: spark_event_timer runs on the records' time")
    assert "ProcessingTime" in reason
    no_ttl = view(small_churn(), ttl_override={NAME: None})
    assert "needs a TTL" in (LANE.strategy_reason(no_ttl, NAME) or "")
    # a speed-up never refuses it: its TTL is in the records' time, not the wall clock's
    assert LANE.strategy_reason(view(small_churn(), speedup=5_000.0), NAME) is None


def test_spark_sql_refuses_it_with_a_reason(view: Any) -> None:
    run = view(load_spec("nexmark-q18-dedup"), backends=("spark-sql",))
    reason = LANES["spark-sql"].strategy_reason(run, NAME)
    assert reason is not None and "spark-tws" in reason


def test_processor_timer_is_the_spec_ttl_in_the_records_time(view: Any,
                                                             scenario: Any) -> None:
    run = view(small_churn(), speedup=4.0)
    cfg, _ = scenario(run, "spark-tws", NAME)
    settings = processor_settings(run, cfg)
    assert settings.event_timer_ms == 1_000  # not 1_000 / 4: no wall clock in it
    assert settings.ttl_ms is None and settings.timer_ms is None
    ttl = processor_settings(run, scenario(run, "spark-tws", "spark_ttl")[0])
    assert ttl.event_timer_ms is None and ttl.ttl_ms == 250


def test_job_cost_is_not_paced(view: Any) -> None:
    load = JobLoad(events=10_000, span_ms=600_000, slots=2, value_bytes=100.0)
    slow, fast = view(small_churn()), view(small_churn(), speedup=10.0)
    event = LANE.job_cost(slow, load, NAME)
    assert event.paced_s == 0.0 and LANE.job_cost(slow, load, "spark_ttl").paced_s == 600.0
    # the wall clock's speed-up changes a paced query's cost, not an event-time one's: its
    # batches (one per EVENT_SLICE_MS of the records' time) are what it costs
    assert LANE.job_cost(fast, load, NAME) == event
    assert LANE.job_cost(fast, load, "spark_ttl").paced_s == 60.0
    assert event.wall_s >= 600_000 / EVENT_SLICE_MS * EVENT_BATCH_S


# ------------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------------


def test_model_event_timer_fires_at_the_watermark_after_the_data() -> None:
    update, get = CODES["value_update"], CODES["value_get"]
    # key 1 written at ts 100 (timer 1_100), read at ts 1_150 in a batch whose watermark is
    # 1_050 (< 1_100: not fired yet, the read sees it), fired in the next batch (watermark
    # 1_200), after that batch's read of it; key 2's rewrite at 1_150 moves its timer from
    # 1_900 to 2_150: it never fires here
    events = [(0, 1, update, 5, 0), (1, 2, update, 6, 0), (2, 1, get, 0, 0),
              (3, 2, update, 7, 0), (4, 1, get, 0, 0), (5, 1, get, 0, 0)]
    ts = [100, 900, 1_150, 1_150, 1_250, 1_400]
    batch_of = {0: 10, 1: 20, 2: 30, 3: 40, 4: 40, 5: 50}
    batches = [Batch(10, 11, 0), Batch(20, 21, 80), Batch(30, 31, 1_050),
               Batch(40, 41, 1_200), Batch(50, 51, 1_300)]
    out = replay(events, batch_of, batches, CODES, ttl_ms=None, timer_ms=None,
                 spec_ttl_ms=1_000, event_timer_ms=1_000, event_ts=ts)
    assert out.results[2] == result_hash(5)  # watermark 1_050 < 1_100: still there
    assert out.results[4] == result_hash(5)  # read in the batch its timer fires, before it
    assert out.results[5] == result_hash(None)  # fired at the end of batch 40
    assert out.fired == [(40, 1)] and out.timers_fired == 1
    assert out.results[0] == WRITE_RESULT
    # read at 1_150 of a value written at 100: expired by the spec's TTL on the records'
    # clock only once the watermark passes 1_100 (batch 40's read of it is)
    assert out.expired_returned == 1
    # held after each batch; live by the watermark Spark advanced to at its end
    # (after batch 30 the watermark moved to 1_200: key 1's value, held, is no longer live)
    assert [(b.held, b.live) for b in out.batches] == [(1, 1), (2, 2), (2, 1), (1, 1), (1, 1)]
    # without the watermark there is no clock: an event timer needs each event's time
    with pytest.raises(ValueError, match="event_ts"):
        replay(events, batch_of, batches, CODES, None, None, 1_000, event_timer_ms=1_000)


# ------------------------------------------------------------------------------------------------
# Real queries
# ------------------------------------------------------------------------------------------------


def summary(table: Any) -> dict[str, float]:
    return {r["metric"]: r["value"] for r in table.to_pylist() if r["logical_time_ms"] == -1}


def series(table: Any, metric: str) -> list[tuple[int, float]]:
    return [(r["step"], r["value"]) for r in table.to_pylist()
            if r["metric"] == metric and r["logical_time_ms"] != -1]


@pytest.mark.spark
@pytest.mark.slow
def test_event_timer_is_deterministic_and_empties_the_store(spark: Any, view: Any,
                                                            scenario: Any,
                                                            tmp_path: Path) -> None:
    from workloads.run import run_tempdirs

    spec = small_churn()
    tables = []
    for attempt in range(2):
        run = view(spec, checkpoint_root=str(tmp_path / f"ck{attempt}"),
                   strategy_labels=(NAME,))
        cfg, facts = scenario(run, LANE.name, NAME)
        before = set(run_tempdirs.live())
        tables.append(LANE.run_job(run, cfg, facts))
        assert set(run_tempdirs.live()) == before  # the job's temporary folder is gone
        assert not spark.streams.active
    first, second = (summary(t) for t in tables)
    assert first["records"] == spec.time.events
    assert first["spark_model_mismatches"] == 0  # reads and timers as the model's
    assert first["timers_fired"] > 0 and first["timers_registered"] > 0
    assert first["late_rows_dropped"] == 0
    assert first["ttl_run_valid"] == 1  # not marked invalid by pacing: none
    assert "latency_p50_us" not in first and "ttl_wall_ms" not in first
    assert first["ttl_removed_values"] == 0  # no Spark TTL: the timers cleared the state
    # deterministic: the same batches, state and timers in both runs, whatever their speed
    for metric in ("state_rows", "state_internal_rows", "live_entries", "timers_fired_batch"):
        assert series(tables[0], metric) == series(tables[1], metric), metric
    assert [r["logical_time_ms"] for r in tables[0].to_pylist()
            if r["metric"] == "state_rows"] == [
        r["logical_time_ms"] for r in tables[1].to_pylist() if r["metric"] == "state_rows"]
    for metric in ("timers_fired", "expired_returned", "ttl_changed_outputs"):
        assert first[metric] == second[metric], metric
    # after the last event's time plus the TTL the store is empty, its timers included
    rows = [v for _, v in series(tables[0], "state_rows")]
    assert rows[-1] == 0 < max(rows)
    assert series(tables[0], "state_internal_rows")[-1][1] == 0
    assert series(tables[0], "live_entries")[-1][1] == 0
