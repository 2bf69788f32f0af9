"""Every metric in its honest class (issue 15 item 3): exact numbers compare exactly, numbers
that move with background compactions get their spread and the significance test, never
"different"; two identical RocksDB runs diff with no coloured and no "different" cell."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workloads.report.diff import diff_page
from workloads.report.load import ScenarioKey, load_run
from workloads.report.metrics import (
    CATALOGUE,
    CLASSES,
    EXACT,
    TIMED,
    TIMING_DEPENDENT,
    class_of,
)
from workloads.report.render import report_html
from workloads.report.verdict import Side, judge
from workloads.run.metrics import CHECKPOINT_ASYNC_METRICS, CHECKPOINT_SUMMARY_METRICS

E, TD, T = EXACT, TIMING_DEPENDENT, TIMED


@pytest.mark.parametrize("metric,backend,strategy,clock,mode,expected", [
    # exact under the logical clock
    ("live_entries", "rocksdb", "none", "EventTime", "incremental", E),
    ("logical_bytes", "flink-rocksdb", "none", "EventTime", "incremental", E),
    ("physical_bytes", "flink-heap", "none", "EventTime", "full", E),  # serialized sizes
    ("checkpoint_bytes", "heap", "none", "EventTime", "incremental", E),  # heap: always full
    ("checkpoint_bytes", "rocksdb", "none", "EventTime", "full", E),  # canonical snapshot
    ("checkpoint_uploaded_bytes", "flink-heap", "none", "EventTime", "full", E),
    ("cleanup_removed_timer", "rocksdb", "timer", "EventTime", "incremental", E),
    ("cleanup_lag_timer_p99_ms", "heap", "timer", "EventTime", "full", E),  # logical ms
    ("expired_returned", "rocksdb", "none", "ProcessingTime", "incremental", E),
    ("records", "rocksdb", "none", "ProcessingTime", "incremental", E),
    # timing-dependent physical numbers
    ("physical_bytes", "rocksdb", "none", "EventTime", "full", TD),
    # the heap's footprint moves with copy-on-write while asynchronous snapshots run
    ("physical_bytes", "heap", "none", "EventTime", "full", TD),
    ("physical_bytes", "flink-rocksdb", "none", "EventTime", "full", TD),
    ("checkpoint_bytes", "rocksdb", "none", "EventTime", "incremental", TD),
    ("checkpoint_uploaded_bytes", "rocksdb", "timer", "EventTime", "incremental", TD),
    ("checkpoint_bytes", "flink-rocksdb", "none", "EventTime", "incremental", TD),
    ("checkpoint_bytes", "flink-rocksdb", "full_snapshot", "EventTime", "full", TD),
    # ForSt behind the State V2 API keeps ForSt's files: the same as flink-forst
    ("physical_bytes", "flink-forst", "none", "EventTime", "full", TD),
    ("physical_bytes", "flink-forst-async", "none", "EventTime", "full", TD),
    ("checkpoint_bytes", "flink-forst-async", "none", "EventTime", "full", TD),
    ("rocksdb_compactions", "rocksdb", "none", "EventTime", "full", TD),
    ("rocksdb_write_amp", "flink-rocksdb", "none", "EventTime", "full", TD),
    ("rocksdb_memtable_bytes", "rocksdb", "none", "EventTime", "full", TD),
    ("expired_present_entries", "flink-rocksdb", "compaction_filter(1000)", "EventTime",
     "full", TD),
    ("live_entries", "heap", "none", "ProcessingTime", "full", TD),  # paced: the wall decides
    ("checkpoint_bytes", "heap", "none", "ProcessingTime", "full", TD),
    # timed
    ("records_per_s", "heap", "none", "EventTime", "full", T),
    ("latency_p99_us", "rocksdb", "none", "EventTime", "full", T),
    ("checkpoint_sync_ms", "rocksdb", "none", "EventTime", "full", T),
    ("checkpoint_sync_share", "flink-heap", "none", "EventTime", "full", T),
    ("checkpoint_async_cpu_s", "heap", "none", "EventTime", "full", T),
    ("jvm_gc_ms", "flink-heap", "none", "EventTime", "full", T),
    ("jvm_gc_count", "flink-heap", "none", "EventTime", "full", T),
    ("a_metric_nobody_catalogued", "heap", "none", "EventTime", "full", T),
])
def test_class_of(metric: str, backend: str, strategy: str, clock: str, mode: str,
                  expected: str) -> None:
    got = class_of(metric, backend, strategy, clock=clock, checkpoint_mode=mode)
    assert got.cls == expected, got.reason
    assert (got.reason == "") == (expected == EXACT)


def test_every_catalogued_metric_has_a_class_including_the_checkpoint_model() -> None:
    assert all(spec.cls in CLASSES for spec in CATALOGUE.values())
    model = [*CHECKPOINT_ASYNC_METRICS, *(m for m, _ in CHECKPOINT_SUMMARY_METRICS),
             "jvm_gc_ms", "jvm_gc_count"]
    for metric in model:
        assert CATALOGUE[metric].cls == TIMED, metric
    units = dict(CHECKPOINT_SUMMARY_METRICS)
    assert all(CATALOGUE[m].unit == u for m, u in units.items())


# ------------------------------------------------------------------------------------------------
# diff: a synthetic pair of RocksDB runs whose incremental checkpoints differ (as compaction
# timing makes them) while their counts agree
# ------------------------------------------------------------------------------------------------


def _write_run(run_dir: Path, checkpoint_bytes: list[float], mode: str = "incremental",
               backend: str = "rocksdb") -> Path:
    run_dir.mkdir(parents=True)
    base = {"run_id": run_dir.name, "scenario": f"w/{backend}/none", "workload": "w",
            "backend": backend, "strategy": "none", "task": -1}
    rows = []
    for step, value in enumerate(checkpoint_bytes, start=1):
        for metric in ("checkpoint_bytes", "checkpoint_uploaded_bytes"):
            rows.append({**base, "step": step, "logical_time_ms": 1500 * step, "metric": metric,
                         "value": value, "unit": "bytes"})
    for step, live in enumerate((10.0, 20.0, 30.0)):
        rows.append({**base, "step": step, "logical_time_ms": 1000 * step,
                     "metric": "live_entries", "value": live, "unit": "entries"})
    for rep, rate in enumerate((1.0e5, 1.1e5, 0.9e5)):
        rows.append({**base, "step": rep, "logical_time_ms": -1, "metric": "records_per_s",
                     "value": rate, "unit": "records/s"})
        rows.append({**base, "step": rep, "logical_time_ms": -1,
                     "metric": "checkpoint_sync_share", "value": 0.25 + rep / 100,
                     "unit": "share"})
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "rows.parquet")
    meta = {"run_id": run_dir.name,
            "spec": {"name": "w", "state": {"time_characteristic": "EventTime"},
                     "checkpoints": {"interval_ms": 1500, "mode": mode}},
            "config": {"backends": [backend], "strategies": ["none"]}}
    (run_dir / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    return run_dir


def _verdict_classes(html: str) -> list[str]:
    return re.findall(r'<td class="num ratio ([a-z]*)"', html)


def test_incremental_rocksdb_checkpoint_sizes_are_never_different(tmp_path: Path) -> None:
    a = load_run(_write_run(tmp_path / "a", [370e3, 880e3, 1.54e6]))
    b = load_run(_write_run(tmp_path / "b", [370e3, 878e3, 1.38e6]))
    key = ScenarioKey("w", "rocksdb", "none")
    for metric in ("checkpoint_bytes", "checkpoint_uploaded_bytes"):
        v = judge(Side.of("A", a), Side.of("B", b), key, metric)
        assert v.css == "grey" and v.cls == TIMING_DEPENDENT, v.note
        assert v.note.startswith("timing-dependent (incremental checkpoints")
    # the counts beside them are still exact, and equal
    assert judge(Side.of("A", a), Side.of("B", b), key, "live_entries").css == "equal"
    html = diff_page(Side.of("A", a), Side.of("B", b))
    assert "different" not in _verdict_classes(html)


def test_full_snapshot_sizes_stay_exact(tmp_path: Path) -> None:
    a = load_run(_write_run(tmp_path / "a", [370e3, 880e3], mode="full"))
    b = load_run(_write_run(tmp_path / "b", [370e3, 878e3], mode="full"))
    v = judge(Side.of("A", a), Side.of("B", b), ScenarioKey("w", "rocksdb", "none"),
              "checkpoint_bytes")
    assert v.css == "different" and v.cls == EXACT


def test_timing_dependent_numbers_are_coloured_only_on_evidence(tmp_path: Path) -> None:
    """Several runs per side (rounds): a clear shift of a timing-dependent number is coloured
    like a timed one (the test and the interval), never called "different"."""
    key = ScenarioKey("w", "rocksdb", "none")
    rng = np.random.default_rng(5)
    a = [load_run(_write_run(tmp_path / f"a{i}", list(1e6 * rng.uniform(0.98, 1.02, 3))))
         for i in range(6)]
    b = [load_run(_write_run(tmp_path / f"b{i}", list(2e6 * rng.uniform(0.98, 1.02, 3))))
         for i in range(6)]
    v = judge(Side.of("A", a), Side.of("B", b), key, "checkpoint_bytes")
    assert v.cls == TIMING_DEPENDENT and v.css == "worse" and v.p is not None and v.p < 0.05
    same = judge(Side.of("A", a), Side.of("B", a), key, "checkpoint_bytes")
    assert same.css == "grey"


def test_report_shows_sync_share_and_marks_timing_dependent_cells(tmp_path: Path) -> None:
    run = load_run(_write_run(tmp_path / "a", [370e3, 880e3, 1.54e6]))
    html = report_html(run)
    table = re.search(r'<table class="stats" data-workload="w" data-group="checkpoint_model".*?'
                      r"</table>", html, re.S)
    assert table is not None
    cell = re.search(r'data-metric="checkpoint_sync_share" data-class="timed"[^>]*>'
                     r'<span class="v">([^<]*)<', table.group(0))
    assert cell is not None and cell.group(1) == "26.0%"
    ckpt = re.search(r'<td class="num" data-metric="checkpoint_bytes" '
                     r'data-class="timing-dependent".*?</td>', html, re.S)
    assert ckpt is not None and "timing-dependent" in ckpt.group(0).split("spread")[1]
    assert re.search(r'data-metric="live_entries" data-class="exact"', html)


# ------------------------------------------------------------------------------------------------
# The acceptance: two identical in-process runs of sessions-churn on RocksDB
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_identical_rocksdb_runs_diff_with_nothing_coloured_or_different(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workloads.cli import main

    dirs = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert main(["run", "sessions-churn", "--backend", "rocksdb", "--in-process",
                     "--strategy", "none,full_snapshot,timer", "--repetitions", "1",
                     "--results-dir", str(out), "--no-report"]) == 0
        (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
        dirs.append(run_dir)
    page = tmp_path / "diff.html"
    assert main(["diff", str(dirs[0]), str(dirs[1]), "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    verdicts = _verdict_classes(html)
    assert verdicts and "equal" in verdicts
    assert not {"different", "better", "worse"} & set(verdicts), [
        re.sub(r"<[^>]+>", " ", row)[:200] for row in re.findall(r"<tr>.*?</tr>", html)
        if re.search(r'ratio (different|better|worse)', row)]


def test_findings_do_not_pick_a_checkpoint_winner_inside_compaction_noise(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workloads.report import checkpoint_noise
    from workloads.report.findings import findings

    # identical runs of w moved its RocksDB checkpoint sizes by up to 10% (a calibration)
    calibration = tmp_path / "noise.json"
    calibration.write_text(json.dumps({"noise": {"w/rocksdb": {"spread": 0.10, "runs": 3}}}))
    monkeypatch.setattr(checkpoint_noise, "CALIBRATION", calibration)

    rows = []
    for strategy, size in (("none", 1.00e6), ("timer", 0.97e6), ("full_snapshot", 0.5e6)):
        base = {"run_id": "r", "scenario": f"w/rocksdb/{strategy}", "workload": "w",
                "backend": "rocksdb", "strategy": strategy, "task": -1}
        rows += [{**base, "step": 1, "logical_time_ms": 1500, "metric": m, "value": size,
                  "unit": "bytes"} for m in ("checkpoint_bytes", "checkpoint_uploaded_bytes")]
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "rows.parquet")
    meta = {"spec": {"name": "w", "state": {"time_characteristic": "EventTime"},
                     "checkpoints": {"mode": "incremental"}}}
    (run_dir / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    texts = [s.text for s in findings(load_run(run_dir))["w"]]
    # full_snapshot is 50% smaller: a finding; were it timer (3%), no difference to act on
    (ckpt,) = [t for t in texts if "writes the least per checkpoint" in t]
    assert ckpt.startswith("On rocksdb, full_snapshot") and "no difference" not in ckpt
    rows = [r for r in rows if r["strategy"] != "full_snapshot"]
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "rows.parquet")
    texts = [s.text for s in findings(load_run(run_dir))["w"]]
    (ckpt,) = [t for t in texts if "writes the least per checkpoint" in t]
    assert ckpt.startswith("On rocksdb, timer") and "no difference to act on" in ckpt


def test_findings_give_each_scenarios_share_of_task_time_in_sync_checkpoint_phases(
        tmp_path: Path) -> None:
    from workloads.report.findings import findings

    rows = []
    for strategy, share in (("none", [0.30, 0.40, 0.35]), ("full_snapshot", [0.05, 0.04, 0.06])):
        base = {"run_id": "r", "scenario": f"w/heap/{strategy}", "workload": "w",
                "backend": "heap", "strategy": strategy, "task": -1, "logical_time_ms": -1}
        rows += [{**base, "step": rep, "metric": "checkpoint_sync_share", "value": v,
                  "unit": "share"} for rep, v in enumerate(share)]
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "rows.parquet")
    (run_dir / "run.json").write_text(json.dumps({"spec": {"name": "w"}}), encoding="utf-8")
    found = [s for s in findings(load_run(run_dir))["w"] if "hold the task" in s.text]
    assert [s.text for s in found] == [
        "On heap, checkpoints hold the task (synchronous phases and barrier waits) for 35.0% of "
        "its time (none), 5.00% (full_snapshot): at 10% or more, checkpoints weigh on these "
        "throughputs, as they would not between checkpoints minutes apart."]
    assert found[0].severity == "warn"
