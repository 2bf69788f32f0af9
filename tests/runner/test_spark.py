"""The Spark runner on a real local Spark (``local[2,2]``: two cores, a failed task is retried
once): the same numbers as in-process, exact partitioning, retries that do not double-count,
and the CLI end to end."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from backends import parse_strategy
from tests.runner.conftest import deterministic, mixed_spec, small_spec, spark_session, values
from workloads import cli
from workloads.lanes.statebench import statebench_cleanup_reason
from workloads.report.render import render_report
from workloads.run.engines.inprocess import run_in_process
from workloads.run.engines.spark import keyed_events, partition_keys, run_spark, spark_hash_long
from workloads.run.engines.spark_progress import completed_share, tracked
from workloads.run.plan import RunConfig

pytestmark = pytest.mark.spark
MASTER = "local[2,2]"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from spark_session(MASTER)


def test_hash_port_equals_sparks_hash(spark) -> None:
    from pyspark.sql import functions as F

    ids = [*range(-300, 300), 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 1234567890123]
    df = spark.createDataFrame([(i,) for i in ids], "id bigint")
    got = {r["id"]: r["h"] for r in df.select("id", F.hash("id").alias("h")).collect()}
    assert all(spark_hash_long(i) == got[i] for i in ids)


def test_each_spark_partition_holds_exactly_its_task(spark) -> None:
    from pyspark.sql import functions as F

    cfg = RunConfig(small_spec(events=4_000), parallelism=3, source_partitions=2, run_id="p")
    assert len(set(partition_keys(3))) == 3
    rows = (keyed_events(spark, cfg)
            .groupBy(F.spark_partition_id().alias("p"))
            .agg(F.collect_set("task").alias("tasks"), F.count("*").alias("n")).collect())
    assert sorted((r["p"], sorted(r["tasks"])) for r in rows) == [(0, [0]), (1, [1]), (2, [2])]
    assert sum(r["n"] for r in rows) == 4_000


def test_spark_and_in_process_give_identical_metrics(spark, tmp_path: Path) -> None:
    spec = mixed_spec()
    cfg = RunConfig(spec, backends=("heap", "rocksdb"),
                    strategies=("none", "incremental(3, true)", "timer"),
                    checkpoint_root=str(tmp_path / "ckpt"), run_id="same", batch_size=5_000)
    local = run_in_process(cfg)
    on_spark = run_spark(cfg, spark)
    assert deterministic(on_spark.rows) == deterministic(local.rows)
    assert on_spark.engine == MASTER and on_spark.retried_attempts == {}
    assert {(n.backend, n.strategy) for n in on_spark.not_applicable} == {
        ("rocksdb", "incremental(3, true)")}
    assert values(on_spark.rows, "records", "mixed/rocksdb/timer")[0] == 12_000
    assert values(on_spark.rows, "records_per_s", "mixed/heap/none")[0] > 0
    assert values(on_spark.rows, "job_records_per_s", "mixed/heap/none")[0] > 0


def test_a_failed_task_is_retried_and_not_counted_twice(spark, tmp_path: Path) -> None:
    spec = small_spec("ycsb-a", events=20_000)
    base = {"backends": ("heap",), "strategies": ("none", "timer"), "batch_size": 2_000}
    clean = run_spark(RunConfig(spec, checkpoint_root=str(tmp_path / "a"), run_id="r", **base),
                      spark)
    failing = run_spark(RunConfig(spec, checkpoint_root=str(tmp_path / "b"), run_id="r",
                                  fail_task_once=0, **base), spark)
    assert failing.retried_attempts == {"ycsb-a/heap/none": 1, "ycsb-a/heap/timer": 1}
    assert deterministic(failing.rows) == deterministic(clean.rows)
    assert values(failing.rows, "records", "ycsb-a/heap/none")[0] == 20_000
    # the retried task left exactly one attempt's checkpoints behind
    for task_dir in (tmp_path / "b" / "r").glob("*/rep-0/task-*"):
        assert len(list(task_dir.iterdir())) == 1, task_dir


def test_cli_spark_run_writes_a_renderable_run(spark, tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    status = cli.main(["run", "ycsb-a", "--events", "20000", "--master", MASTER,
                       "--backend", "heap,rocksdb", "--strategy", "none,incremental(5, false)",
                       "--results-dir", str(results)])
    assert status == 0
    (run_dir,) = list(results.iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["spark_master"] == MASTER and meta["config"]["in_process"] is False
    reason = statebench_cleanup_reason("rocksdb", parse_strategy("incremental(5, false)"), False)
    assert reason and "incremental" in reason  # the strategy's own words, not an empty string
    assert meta["not_applicable"] == [{
        "backend": "rocksdb", "strategy": "incremental(5, false)", "reason": reason}]
    rows = pq.read_table(run_dir / "rows.parquet")
    assert values(rows, "records", "ycsb-a/rocksdb/none")[0] == 20_000
    assert (run_dir / "report.html").exists()  # rendered by the run
    assert render_report(run_dir).stat().st_size > 10_000
    assert "ycsb-a: 20000 events, local[2,2]" in capsys.readouterr().out


def test_the_driver_listens_on_loopback_only(spark) -> None:
    import psutil

    jvm = psutil.Process(spark.sparkContext._gateway.proc.pid)
    listening = {c.laddr.ip for p in [jvm, *jvm.children(recursive=True)]
                 for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    assert listening and listening <= {"127.0.0.1", "::ffff:127.0.0.1"}, listening


# --- progress inside a job (issue 31): the status tracker's completed tasks as records read --
def _slow_partitions(seconds: float) -> Any:
    def slow(rows: Iterator[Any]) -> Iterator[int]:
        time.sleep(seconds)
        yield sum(1 for _ in rows)
    return slow


def test_a_running_job_reports_its_completed_share_as_records(spark: Any) -> None:
    context = spark.sparkContext
    reports: list[tuple[int, int]] = []
    records = 8_000
    rdd = context.parallelize(range(records), 8).mapPartitions(_slow_partitions(0.6))
    with tracked(context, records, lambda done, of: reports.append((done, of))):
        counted = sum(rdd.collect())
    assert counted == records
    assert reports, "no progress while an 8-task job of ~2.4 s ran"
    dones = [done for done, _ in reports]
    assert all(of == records for _, of in reports)
    assert dones == sorted(dones) and dones[0] >= 0 and dones[-1] <= records
    assert any(0 < done < records for done in dones)  # seen mid-job, not only at its end


def test_the_share_is_read_per_job_group(spark: Any) -> None:
    context = spark.sparkContext
    tracker = context.statusTracker()
    assert completed_share(tracker, "statebench-no-such-group") is None
    with tracked(context, 10, lambda done, of: None):
        context.parallelize(range(10), 2).count()
    group = context.getLocalProperty("spark.jobGroup.id")
    assert group is not None and completed_share(tracker, group) == 1.0


def test_nothing_is_tracked_without_a_listener(spark: Any) -> None:
    context = spark.sparkContext
    before = context.getLocalProperty("spark.jobGroup.id")
    with tracked(context, 10, None):
        context.parallelize(range(10), 2).count()
    assert context.getLocalProperty("spark.jobGroup.id") == before
