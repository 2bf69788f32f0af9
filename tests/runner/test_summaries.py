"""One summary definition (workloads/results/summaries.py) behind the runner's job totals, the
CLI's summary table, asv's numbers and the report: each gives the same number for one run."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from bench.bench_scenarios import _summarise
from tests.runner.conftest import small_spec
from workloads.cli.run import summarize
from workloads.report.load import load_run
from workloads.report.stats import stat
from workloads.results.store import write_run
from workloads.results.summaries import (
    STORED_ENTRIES,
    Samples,
    ScenarioKey,
    collapse,
    combine_tasks,
    summaries,
)
from workloads.results.summaries import (
    summarize as summarize_samples,
)
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import RunConfig


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory):
    ckpt = tmp_path_factory.mktemp("ckpt")
    cfg = RunConfig(small_spec(events=12_000), backends=("heap",), strategies=("none", "timer"),
                    repetitions=3, checkpoint_root=str(ckpt), run_id="sum")
    return run_in_process(cfg)


def test_tasks_add_up_for_amounts_and_take_the_slowest_for_durations() -> None:
    assert combine_tasks("entries", [1.0, 2.0, 3.5]) == 6.5
    assert combine_tasks("records/s", [0.1] * 10) == 1.0  # fsum: exact
    assert combine_tasks("ms", [4.0, 9.0, 2.0]) == 9.0
    assert combine_tasks("us", [4.0, 9.0]) == 9.0


def test_the_runners_totals_follow_the_same_rule_as_readers_without_totals(outcome) -> None:
    rows = outcome.rows.to_pylist()
    per_task: dict[tuple, list] = {}
    totals = {}
    for r in rows:
        key = (r["scenario"], r["metric"], r["step"])
        if r["task"] == -1:
            totals[key] = r["value"]
        else:
            per_task.setdefault(key, []).append(
                (r["task"], r["step"], r["logical_time_ms"], r["value"]))
    units = {r["metric"]: r["unit"] for r in rows}
    checked = set()
    for key, task_rows in per_task.items():
        metric = key[1]
        if metric.startswith("latency_") or (
                metric.startswith("cleanup_lag_") and not metric.endswith("_max_ms")):
            continue  # merged histograms need the internal rows
        _, _, values = collapse(units[metric], task_rows)
        assert values.tolist() == [totals[key]], key
        checked.add(metric)
    assert {"records", "records_per_s", "live_entries", "checkpoint_total_ms"} <= checked


def test_series_peak_summaries_median_and_steady_state() -> None:
    series = Samples("series", "entries", np.arange(6), np.arange(6) * 100,
                     np.array([1.0, 5.0, 3.0, 4.0, math.nan, 2.0]))
    s = summarize_samples(series)
    assert (s.center, s.lo, s.hi, s.last, s.n) == (5.0, 1.0, 5.0, 2.0, 5)
    assert s.steady == statistics.median([3.0, 4.0, 2.0])  # the later half of the finite values
    reps = Samples("summary", "records/s", np.arange(3), np.full(3, -1), np.array([3.0, 1.0, 2.0]))
    r = summarize_samples(reps)
    assert (r.center, r.last, r.steady, r.basis) == (2.0, None, None, "median of repetitions")


def test_cli_asv_and_report_show_the_same_numbers(outcome, tmp_path: Path) -> None:
    key = ScenarioKey(outcome.config.spec.name, "heap", "timer")
    stats = summaries(outcome.rows)[key]
    reps = [r["value"] for r in outcome.rows.to_pylist()
            if r["scenario"] == key.label and r["metric"] == "records_per_s" and r["task"] == -1]
    assert len(reps) == 3 and stats["records_per_s"].center == statistics.median(reps)
    cli_row = next(r for r in summarize(outcome) if r["strategy"] == "timer")
    asv = _summarise(outcome.rows)[(key.workload, key.backend, key.strategy)]
    run = load_run(write_run(outcome, tmp_path))
    for metric in ("records_per_s", "latency_p99_us", STORED_ENTRIES, "checkpoint_bytes"):
        expected = stats[metric].center
        assert cli_row[metric] == expected, metric
        assert asv[metric] == expected, metric
        assert stat(run, key, metric).center == expected, metric
    assert asv["peak_logical_bytes"] == stats["logical_bytes"].hi
    assert asv["steady_logical_bytes"] == stats["logical_bytes"].steady
