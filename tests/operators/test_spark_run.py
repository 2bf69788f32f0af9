"""An operator workload inside Spark (``local[2,2]``): the same counts as in-process - the
source stage's Nexmark input, its keyBy and each task's operator are the same code - and the
CLI runs a shipped operator spec end to end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.operators.test_runs import OPERATOR_METRICS, small
from tests.runner.conftest import deterministic, spark_session
from workloads import cli
from workloads.run.engines.inprocess import run_in_process
from workloads.run.engines.spark import run_spark
from workloads.run.plan import RunConfig

pytestmark = pytest.mark.spark
MASTER = "local[2,2]"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from spark_session(MASTER)


# A join's state takes the TTL and its results change; a window's contents never do (Flink's
# window operators create their state without TTL: docs/operators.md), so its results stay put.
@pytest.mark.parametrize(("name", "ttl_changes_results"),
                         [("nexmark-q20-join", True), ("nexmark-q7-window", False)])
def test_spark_equals_in_process(spark, tmp_path: Path, name: str,
                                 ttl_changes_results: bool) -> None:
    spec = small(name, ttl_ms=300)

    def config(tag: str) -> RunConfig:
        return RunConfig(spec=spec, backends=("heap", "rocksdb"), strategies=("none", "timer"),
                         measure_latency=False, source_partitions=3,
                         checkpoint_root=str(tmp_path / tag))

    on_spark = run_spark(config("spark"), spark=spark)
    local = run_in_process(config("local"))
    assert deterministic(on_spark.rows, OPERATOR_METRICS) == deterministic(
        local.rows, OPERATOR_METRICS)
    changed = [r["value"] for r in on_spark.rows.to_pylist()
               if r["metric"] == "ttl_changed_results" and r["task"] == -1]
    assert len(changed) == 4
    assert (min(changed) > 0) if ttl_changes_results else (max(changed) == 0)


def test_cli_runs_a_shipped_operator_spec(spark, tmp_path: Path) -> None:
    code = cli.main(["run", "nexmark-q18-dedup", "--events", "10000", "--backend", "rocksdb",
                     "--strategy", "timer", "--results-dir", str(tmp_path), "--no-report"])
    assert code == 0
    rows = pq.read_table(next(tmp_path.glob("*/rows.parquet"))).to_pylist()
    metrics = {r["metric"] for r in rows if r["task"] == -1}
    assert {"ttl_changed_results", "operator_outputs", "live_entries"} <= metrics
