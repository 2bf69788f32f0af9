"""Paced processing time and RocksDB's rows: every strategy of a ProcessingTime scenario on one
wall-driven clock that releases records at their time, the spec's [rocksdb] table applied to
every RocksDB strategy alike (recorded in run.json), and RocksDB's flushes and compactions as
series, so the compaction filter's cleanup is visible."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runner.conftest import small_spec, spark_session, values
from workloads.run.engines.inprocess import data_facts, run_in_process
from workloads.run.keyed_operator import KeyedOperator
from workloads.run.pacing import PacedClock
from workloads.run.plan import RunConfig, Scenario, operator_config, rocksdb_options
from workloads.run.source import keyed_table
from workloads.run.state_setup import make_clock
from workloads.spec import SpecError, load_spec

SPEEDUP = 4.0
#: 2 400 records over 3 logical seconds on a 4x clock: 0.75 real seconds per task.
PACED = dict(events=2_400, state__time_characteristic="ProcessingTime",
             state__time_speedup=SPEEDUP, state__ttl_ms=1_000)
#: Tiny write buffers and an L0 trigger of 2: flushes and compactions inside a short run.
def _table(cfg: RunConfig) -> Any:
    return keyed_table(cfg.spec, cfg.partitions, cfg.parallelism, cfg.max_parallelism,
                       cfg.batch_size)


SMALL_BUFFERS = dict(rocksdb__write_buffer_size=65_536, rocksdb__target_file_size_base=65_536,
                     rocksdb__level0_file_num_compaction_trigger=2)


# ------------------------------------------------------------------------------------ the spec
def test_rocksdb_table_round_trips_and_names_bad_fields() -> None:
    spec = small_spec(**SMALL_BUFFERS, rocksdb__compression="none")
    assert spec.rocksdb.options() == {"write_buffer_size": 65_536,
                                      "target_file_size_base": 65_536,
                                      "level0_file_num_compaction_trigger": 2,
                                      "compression": "none"}
    assert spec.with_overrides(seed=9).rocksdb == spec.rocksdb  # to_dict -> parse keeps it
    with pytest.raises(SpecError, match=r"rocksdb\.write_buffer_size.*65536"):
        small_spec(rocksdb__write_buffer_size=1_000)
    with pytest.raises(SpecError, match=r"rocksdb\.compression.*'gzip'"):
        small_spec(rocksdb__compression="gzip")
    with pytest.raises(SpecError, match=r"rocksdb\.periodic_compaction.*unknown field"):
        small_spec(rocksdb__periodic_compaction=5)
    with pytest.raises(SpecError, match=r"state\.time_speedup"):
        small_spec(state__time_speedup=0)


def test_compaction_filter_puts_every_rocksdb_strategy_in_the_ttl_db_layout() -> None:
    paced = small_spec(**PACED, **SMALL_BUFFERS)
    with_filter = RunConfig(paced, strategies=("none", "compaction_filter", "timer"))
    assert rocksdb_options(with_filter) == {**paced.rocksdb.options(), "state_layout": "ttl_db"}
    described = with_filter.describe()
    assert described["clock"] == "paced" and described["time_speedup"] == SPEEDUP
    assert described["rocksdb"]["state_layout"] == "ttl_db"
    # without a runnable compaction filter (event time: not applicable) the layout stays
    event = RunConfig(small_spec(**SMALL_BUFFERS), strategies=("none", "compaction_filter"))
    assert "state_layout" not in rocksdb_options(event)
    assert event.describe()["clock"] == "event"
    facts = data_facts(_table(with_filter), with_filter)
    for strategy in ("none", "timer"):
        op_cfg = operator_config(with_filter, Scenario("rocksdb", strategy), 0, facts)
        assert dict(op_cfg.rocksdb_options)["state_layout"] == "ttl_db"
    assert operator_config(with_filter, Scenario("heap", "none"), 0, facts).rocksdb_options == ()


# ------------------------------------------------------------------------------- the schedule
def test_every_strategy_of_a_processing_time_scenario_follows_one_schedule(tmp_path: Path
                                                                           ) -> None:
    """Same records, same clock, same schedule: no strategy can get through the run faster than
    its records' time on the clock, and every one releases every record on it."""
    cfg = RunConfig(small_spec(**PACED), parallelism=1, run_id="t",
                    strategies=("none", "timer", "compaction_filter"), local_dir=str(tmp_path))
    table = _table(cfg)
    facts = data_facts(table, cfg)
    span_s = (max(table.column("ts").to_pylist()) - facts.start_ms) / SPEEDUP / 1e3
    scenarios = [Scenario("heap", "none"), Scenario("heap", "timer"),
                 Scenario("rocksdb", "none"), Scenario("rocksdb", "compaction_filter(1000)")]
    for scenario in scenarios:
        op_cfg = operator_config(cfg, scenario, 0, facts)
        op = KeyedOperator(op_cfg, 0)
        clock = op.clock
        assert isinstance(clock, PacedClock) and clock.speedup == SPEEDUP
        started = time.perf_counter()
        for batch in table.to_batches(max_chunksize=500):
            op.process(batch)
        elapsed = time.perf_counter() - started
        assert clock.now() >= max(table.column("ts").to_pylist())
        assert elapsed >= span_s * 0.99, scenario  # released at their time, not replayed
        assert op._pacer is not None and op._pacer.released == table.num_rows
        rows = {r[3]: r[4] for r in op.finish() if r[2] == -1}
        assert {"schedule_lag_p50_ms", "schedule_lag_p99_ms", "schedule_lag_max_ms",
                "late_records_share"} <= rows.keys(), scenario
        assert 0 <= rows["late_records_share"] <= 1
        assert 0 <= rows["schedule_lag_p50_ms"] <= rows["schedule_lag_max_ms"]
    # event time keeps its logical clock (deterministic, not paced)
    event = RunConfig(small_spec(events=2_400), parallelism=1, run_id="t")
    assert not isinstance(make_clock(operator_config(event, Scenario("heap", "none"), 0, facts)),
                          PacedClock)


def test_compaction_filter_removes_entries_in_a_paced_run_with_small_write_buffers(
    tmp_path: Path,
) -> None:
    # 6 logical seconds on a 2x clock (3 real s); a 2 s TTL is 1 s of RocksDB's native TTL
    spec = load_spec("ycsb-a").with_overrides(
        **{**PACED, "events": 24_000, "state__time_speedup": 2.0, "state__ttl_ms": 2_000},
        rate=4_000, **SMALL_BUFFERS)
    out = run_in_process(RunConfig(spec, run_id="t", backends=("rocksdb",), parallelism=1,
                                   strategies=("none", "compaction_filter"),
                                   checkpoint_root=str(tmp_path / "ckpt")))
    cf, none = "ycsb-a/rocksdb/compaction_filter(1000)", "ycsb-a/rocksdb/none"
    assert values(out.rows, "cleanup_removed_compaction_filter", cf)[0] > 0
    assert values(out.rows, "cleanup_removed_compaction_filter", none)[0] == 0
    compactions = values(out.rows, "rocksdb_compactions", cf)
    assert compactions and max(compactions.values()) > 0
    flushes = list(values(out.rows, "rocksdb_flushes", cf).values())
    assert flushes == sorted(flushes) and flushes[-1] > 0  # cumulative
    for metric in ("rocksdb_sst_files", "rocksdb_sst_bytes", "rocksdb_memtable_bytes",
                   "rocksdb_compaction_read_bytes", "rocksdb_compaction_write_bytes",
                   "rocksdb_write_amp", "expired_present_bytes"):
        assert values(out.rows, metric, cf), metric
    assert max(values(out.rows, "expired_present_bytes", none).values()) > 0
    for metric in ("checkpoint_sync_ms", "checkpoint_async_ms", "checkpoint_upload_ms",
                   "checkpoint_total_ms"):
        assert values(out.rows, metric, cf), metric
    total, sync, asyn = (values(out.rows, m, cf) for m in
                         ("checkpoint_total_ms", "checkpoint_sync_ms", "checkpoint_async_ms"))
    for step in total:
        assert sync[step] + asyn[step] == pytest.approx(total[step], rel=1e-6, abs=1e-6)
    assert values(out.rows, "late_records_share", cf)


def test_shipped_rocksdb_options_reach_the_backend(tmp_path: Path) -> None:
    spec = small_spec(events=3_000, rocksdb__write_buffer_size=65_536)
    cfg = RunConfig(spec, parallelism=1, run_id="t", backends=("rocksdb",),
                    strategies=("none",), local_dir=str(tmp_path))
    facts = data_facts(_table(cfg), cfg)
    op = KeyedOperator(operator_config(cfg, Scenario("rocksdb", "none"), 0, facts), 0)
    try:
        assert op.backend.rocksdb_options.write_buffer_size == 65_536
    finally:
        op.close()
    assert load_spec("ycsb-a").rocksdb.options() == {}


# ---------------------------------------------------------------------------------- on Spark
@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from spark_session("local[2]")


@pytest.mark.spark
def test_paced_schedule_on_spark(spark, tmp_path: Path) -> None:
    from workloads.run.engines.spark import run_spark

    spec = small_spec(**PACED)
    cfg = RunConfig(spec, run_id="t", backends=("heap", "rocksdb"),
                    strategies=("none", "compaction_filter"),
                    checkpoint_root=str(tmp_path / "ckpt"))
    out = run_spark(cfg, spark)
    span_s = (out.facts.end_ms - out.facts.start_ms) / SPEEDUP / 1e3
    ran = ["ycsb-a/heap/none", "ycsb-a/rocksdb/none", "ycsb-a/rocksdb/compaction_filter(1000)"]
    for scenario in ran:
        assert values(out.rows, "records", scenario)[0] == 2_400
        for task in (0, 1):
            assert values(out.rows, "late_records_share", scenario, task=task), (scenario, task)
        # both tasks paced on their clocks: the job lasts at least the records' span
        assert min(out.job_seconds[scenario]) >= span_s * 0.9, scenario
    assert out.config.describe()["clock"] == "paced"
