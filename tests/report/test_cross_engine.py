"""Flink SQL beside Spark (issue 30 item 4): a workload with both a flink-sql and a spark-sql
scenario gets a table and one figure, each cell the engine's own metric with its name, and
nothing when either engine is missing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from workloads.report.cross_engine import MEASURES, cross_engine_html
from workloads.report.load import load_run

SUMMARY = {"records_per_s": "records/s", "operator_outputs": "count",
           "ttl_changed_results": "share", "latency_p99_us": "us",
           "batch_duration_p50_ms": "ms"}
SERIES = {"estimated_entries": "entries", "state_rows": "rows", "checkpoint_bytes": "bytes",
          "checkpoint_dir_bytes": "bytes"}


def _run(folder: Path, lanes: dict[str, dict[str, list[float]]]) -> Path:
    rows = []
    for backend, metrics in lanes.items():
        for metric, values in metrics.items():
            for step, v in enumerate(values):
                summary = metric in SUMMARY
                rows.append({"workload": "w", "backend": backend, "strategy": "s", "task": -1,
                             "step": step, "logical_time_ms": -1 if summary else 100 * step,
                             "metric": metric, "value": v,
                             "unit": SUMMARY.get(metric) or SERIES[metric]})
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "rows.parquet")
    spec = {"name": "w", "operator": {"kind": "regular_join"},
            "state": {"time_characteristic": "EventTime", "ttl_ms": 1000},
            "checkpoints": {"mode": "full"}}
    (folder / "run.json").write_text(json.dumps({"run_id": "x", "spec": spec}), "utf-8")
    return folder


FLINK = {"records_per_s": [5000.0, 5200.0], "operator_outputs": [900.0, 900.0],
         "ttl_changed_results": [0.18, 0.18], "latency_p99_us": [2500.0, 2600.0],
         "estimated_entries": [100.0, 400.0, 300.0], "checkpoint_bytes": [1000.0, 7000.0]}
SPARK = {"records_per_s": [1500.0, 1400.0], "operator_outputs": [700.0, 700.0],
         "ttl_changed_results": [0.25, 0.25], "batch_duration_p50_ms": [800.0, 900.0],
         "state_rows": [50.0, 250.0, 90.0], "checkpoint_dir_bytes": [20000.0, 90000.0]}


def _cells(html: str, backend: str) -> dict[str, str]:
    row = re.search(rf'<tr data-backend="{backend}".*?</tr>', html, re.S)
    assert row is not None, backend
    return dict(re.findall(r'data-metric="([a-z_0-9]+)"[^>]*>(.*?)</td>', row.group(0), re.S))


def test_each_engine_shows_its_own_metric_side_by_side(tmp_path: Path) -> None:
    run = load_run(_run(tmp_path / "r", {"flink-sql": FLINK, "spark-sql": SPARK}))
    html = cross_engine_html(run)
    assert html is not None and 'data-group="cross_engine"' in html
    flink, spark = _cells(html, "flink-sql"), _cells(html, "spark-sql")
    assert set(flink) == {m.flink for m in MEASURES if m.flink}  # Spark-only columns: none
    assert set(spark) == {m.spark for m in MEASURES}
    # the peaks over time, each engine's own (400 entries against 250 rows), never a ratio
    assert "400" in flink["estimated_entries"] and "250" in spark["state_rows"]
    # checkpoints: the median over checkpoints (4 kB of 1 and 7; 55 kB of 20 and 90)
    assert ">4.00 kB<" in flink["checkpoint_bytes"] and ">55.0 kB<" in spark["checkpoint_dir_bytes"]
    assert "spark-sql · Spark (reference)" in html and "cross-engine-w" in html


def test_nothing_without_both_engines(tmp_path: Path) -> None:
    only_flink = load_run(_run(tmp_path / "f", {"flink-sql": FLINK, "rocksdb": FLINK}))
    assert cross_engine_html(only_flink) is None
    only_spark = load_run(_run(tmp_path / "s", {"spark-sql": SPARK}))
    assert cross_engine_html(only_spark) is None
