"""The cross-engine table's agreement columns on spark-sql's rows, from the lanes' rows (no
Spark needed): outputs against the emulation's ("agree" within the band, "differ" beyond), the
eviction-changed share against the emulation's TTL-changed share, and state rows against the
emulation's entries where they are one unit ("not comparable", with the reason, where not)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from workloads.report.cross_engine import (
    AGREEMENT_BAND,
    NEVER_EVICTED,
    NO_EMULATION,
    STATE_UNITS_DIFFER,
    agreement_verdict,
    cross_engine_html,
    eviction_verdict,
    state_verdict,
)
from workloads.report.load import load_run

UNITS = {"operator_outputs": "count", "emulation_changed_outputs": "count",
         "emulation_compared_outputs": "count", "emulation_changed_share": "share",
         "ttl_changed_results": "share", "state_evicted_by_watermark": "flag",
         "state_rows": "rows", "live_entries": "entries"}
#: Per-batch (series) metrics: written at logical times, the rest as summaries.
SERIES = {"state_rows": (0, 1_000, 2_000), "live_entries": (0, 1_000, 2_000)}


def _rows(backend: str, strategy: str, metrics: dict[str, object]) -> list[dict]:
    rows = []
    for metric, value in metrics.items():
        if metric in SERIES:
            assert isinstance(value, list)
            rows += [{"workload": "w", "backend": backend, "strategy": strategy, "task": -1,
                      "step": i, "logical_time_ms": t, "metric": metric, "value": float(v),
                      "unit": UNITS[metric]} for i, (t, v) in enumerate(zip(SERIES[metric],
                                                                             value))]
        else:
            rows.append({"workload": "w", "backend": backend, "strategy": strategy,
                         "task": -1, "step": 0, "logical_time_ms": -1, "metric": metric,
                         "value": value, "unit": UNITS[metric]})
    return rows


def _run(folder: Path, spark: dict[str, object], kind: str = "regular_join",
         emulation: dict[str, object] | None = None) -> Path:
    rows = _rows("flink-sql", "s", {"operator_outputs": 900.0}) + _rows("spark-sql", "s", spark)
    if emulation is not None:
        rows += _rows("heap", "none", emulation)
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "rows.parquet")
    spec = {"name": "w", "operator": {"kind": kind},
            "state": {"time_characteristic": "EventTime", "ttl_ms": 1000},
            "checkpoints": {"mode": "full"}}
    (folder / "run.json").write_text(json.dumps({"run_id": "x", "spec": spec}), "utf-8")
    return folder


def _verdicts(html: str, backend: str) -> list[str]:
    """Every verdict in the lane's row, in column order (outputs, eviction, state)."""
    row = re.search(rf'<tr data-backend="{backend}".*?</tr>', html, re.S)
    assert row is not None
    return re.findall(r'data-verdict="([^"]+)"', row.group(0))


def _html(folder: Path, spark: dict[str, object], kind: str = "regular_join",
          emulation: dict[str, object] | None = None) -> str:
    html = cross_engine_html(load_run(_run(folder, spark, kind, emulation)))
    assert html is not None
    return html


def test_agreement_verdict_has_a_band_and_a_reachable_differ() -> None:
    assert agreement_verdict(0, 100) == "agree"
    assert agreement_verdict(AGREEMENT_BAND * 100, 100) == "agree"
    assert agreement_verdict(AGREEMENT_BAND * 100 + 1, 100) == "differ"
    assert agreement_verdict(0, 0) == "agree"  # both emitted nothing


def test_table_says_agree_or_differ_for_spark_only(tmp_path: Path) -> None:
    for name, changed, verdict in (("a", 3.0, "agree"), ("d", 30.0, "differ")):
        html = _html(tmp_path / name, {
            "operator_outputs": 700.0, "emulation_changed_outputs": changed,
            "emulation_compared_outputs": 100.0, "emulation_changed_share": changed / 100})
        assert _verdicts(html, "spark-sql") == [verdict]
        assert _verdicts(html, "flink-sql") == []  # Flink SQL's has no such number


def test_eviction_and_state_verdicts_have_a_band_and_a_reachable_differ() -> None:
    assert eviction_verdict(0.02, 0.02 + AGREEMENT_BAND) == "agree"  # share points
    assert eviction_verdict(0.02, 0.03 + AGREEMENT_BAND) == "differ"
    assert state_verdict(105, 100) == "agree" and state_verdict(106, 100) == "differ"
    assert state_verdict(0, 0) == "agree"


def test_eviction_share_against_the_emulations(tmp_path: Path) -> None:
    spark = {"operator_outputs": 700.0, "ttl_changed_results": 0.02,
             "state_evicted_by_watermark": 1.0}
    close = _html(tmp_path / "a", spark, emulation={"ttl_changed_results": 0.04})
    assert _verdicts(close, "spark-sql")[0] == "agree"
    assert "Spark 2.0%, emulation 4.0%" in close
    far = _html(tmp_path / "d", spark, emulation={"ttl_changed_results": 0.30})
    assert _verdicts(far, "spark-sql")[0] == "differ"
    # without the emulation in the run: said, not judged
    alone = _html(tmp_path / "n", spark)
    assert _verdicts(alone, "spark-sql")[0] == "not measured"
    assert NO_EMULATION in alone.replace("&#x27;", "'")
    # a query whose state Spark never evicts (group_agg) has no eviction-changed share
    never = _html(tmp_path / "g", {"operator_outputs": 700.0,
                                   "state_evicted_by_watermark": 0.0}, kind="group_agg",
                  emulation={"ttl_changed_results": 0.1})
    assert _verdicts(never, "spark-sql") == ["not comparable"]
    assert NEVER_EVICTED in never.replace("&#x27;", "'")


def test_state_rows_against_the_emulations_only_in_one_unit(tmp_path: Path) -> None:
    spark = {"operator_outputs": 700.0, "state_rows": [10.0, 100.0, 40.0]}
    same = _html(tmp_path / "a", spark, kind="dedup",
                 emulation={"live_entries": [20.0, 97.0, 30.0]})
    assert _verdicts(same, "spark-sql") == ["agree"]  # peaks: 100 rows, 97 entries
    more = _html(tmp_path / "d", spark, kind="dedup",
                 emulation={"live_entries": [20.0, 60.0, 30.0]})
    assert _verdicts(more, "spark-sql") == ["differ"]
    # a join's rows and the emulation's entries are different units: not comparable, why
    join = _html(tmp_path / "j", spark, kind="regular_join",
                 emulation={"live_entries": [20.0, 100.0, 30.0]})
    assert _verdicts(join, "spark-sql") == ["not comparable"]
    assert STATE_UNITS_DIFFER in join.replace("&#x27;", "'")
