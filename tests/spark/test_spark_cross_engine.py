"""The cross-engine table's agreement column: spark-sql's outputs against the emulation's,
"agree" within the band and "differ" beyond it, from the lane's rows (no Spark needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from workloads.report.cross_engine import AGREEMENT_BAND, agreement_verdict, cross_engine_html
from workloads.report.load import load_run

UNITS = {"operator_outputs": "count", "emulation_changed_outputs": "count",
         "emulation_compared_outputs": "count", "emulation_changed_share": "share"}


def _run(folder: Path, spark: dict[str, float]) -> Path:
    lanes = {"flink-sql": {"operator_outputs": 900.0}, "spark-sql": spark}
    rows = [{"workload": "w", "backend": backend, "strategy": "s", "task": -1, "step": 0,
             "logical_time_ms": -1, "metric": metric, "value": value, "unit": UNITS[metric]}
            for backend, metrics in lanes.items() for metric, value in metrics.items()]
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "rows.parquet")
    spec = {"name": "w", "operator": {"kind": "regular_join"},
            "state": {"time_characteristic": "EventTime", "ttl_ms": 1000},
            "checkpoints": {"mode": "full"}}
    (folder / "run.json").write_text(json.dumps({"run_id": "x", "spec": spec}), "utf-8")
    return folder


def _verdict(html: str, backend: str) -> str | None:
    row = re.search(rf'<tr data-backend="{backend}".*?</tr>', html, re.S)
    assert row is not None
    found = re.search(r'data-verdict="(agree|differ)"', row.group(0))
    return None if found is None else found.group(1)


def test_agreement_verdict_has_a_band_and_a_reachable_differ() -> None:
    assert agreement_verdict(0, 100) == "agree"
    assert agreement_verdict(AGREEMENT_BAND * 100, 100) == "agree"
    assert agreement_verdict(AGREEMENT_BAND * 100 + 1, 100) == "differ"
    assert agreement_verdict(0, 0) == "agree"  # both emitted nothing


def test_table_says_agree_or_differ_for_spark_only(tmp_path: Path) -> None:
    for name, changed, verdict in (("a", 3.0, "agree"), ("d", 30.0, "differ")):
        run = load_run(_run(tmp_path / name, {
            "operator_outputs": 700.0, "emulation_changed_outputs": changed,
            "emulation_compared_outputs": 100.0, "emulation_changed_share": changed / 100}))
        html = cross_engine_html(run)
        assert html is not None
        assert _verdict(html, "spark-sql") == verdict
        assert _verdict(html, "flink-sql") is None  # Flink SQL's has no such number
