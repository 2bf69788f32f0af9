"""The "Fidelity: statebench vs Flink" section: each strategy's cost relative to ``none`` on
statebench's heap/RocksDB beside Flink's, numbers recomputed here from the raw rows, a finding
exactly where the two sides are more than 1.5x apart, and Flink lanes labelled as references.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from html import unescape
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.report import test_browser as tb
from workloads.report.fidelity import (
    CAUSES,
    DISAGREE,
    INCREMENTAL_HEAP_REASON,
    TTL_ROW,
    Comparison,
    Cost,
    cause_shares,
    comparisons,
    factor_interval,
    fidelity_charts,
    fidelity_findings,
    has_reference_lanes,
)
from workloads.report.figures import charts
from workloads.report.fmt import TIMES, fmt_ratio, fmt_value
from workloads.report.load import ScenarioKey, backend_label, load_run, with_references
from workloads.report.render import render_report, report_html
from workloads.report.stats import stat
from workloads.results.band import log_ratio_interval

PAIRS = (("heap", "flink-heap"), ("rocksdb", "flink-rocksdb"))


def _raw(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "rows.parquet").to_pylist()


def throughput(rows: list[dict], w: str, b: str, s: str) -> float:
    """Median over repetitions of the job-wide (task=-1) records/s."""
    return float(np.median([r["value"] for r in rows if (r["workload"], r["backend"],
                            r["strategy"], r["metric"], r["task"]) == (w, b, s, "records_per_s",
                                                                        -1)]))


def peak(rows: list[dict], w: str, b: str, s: str, metrics: tuple[str, ...]) -> float:
    """Peak over samples of the per-task values of ``metrics`` summed (tasks and metrics)."""
    by_step: dict[int, float] = defaultdict(float)
    for r in rows:
        if (r["workload"], r["backend"], r["strategy"]) == (w, b, s) and r["metric"] in metrics:
            by_step[r["step"]] += r["value"]
    return max(by_step.values())


def stored(rows: list[dict], w: str, b: str, s: str) -> float:
    return peak(rows, w, b, s, ("live_entries", "expired_present_entries"))


def ratio_of(rows: list[dict], metric: str, w: str, b: str, s: str, base_w: str | None = None,
             base_s: str = "none") -> float:
    f = throughput if metric == "records_per_s" else stored
    return f(rows, w, b, s) / f(rows, base_w or w, b, base_s)


def _fidelity_section(html: str) -> str:
    match = re.search(r'<section id="fidelity">(.*?)</section>', html, re.S)
    assert match, "no fidelity section"
    return match.group(1)


def _text(fragment: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", fragment))


def test_no_flink_lanes_no_section_and_labels_unchanged(synthetic_run_dir: Path) -> None:
    run = load_run(synthetic_run_dir)
    assert not has_reference_lanes(run)
    html = report_html(run)
    assert 'id="fidelity"' not in html and "Flink (reference)" not in html
    assert run.backends == ["heap", "rocksdb"]


def test_ratios_match_the_raw_rows(make_run: Callable[..., Path]) -> None:
    run_dir = make_run("flink", flink=True)
    rows, run = _raw(run_dir), load_run(run_dir)
    assert has_reference_lanes(run)
    checked = 0
    for w in run.workloads:
        found = comparisons(run, w)
        assert found and all(c.strategy != TTL_ROW for c in found)  # the run has no no-TTL twin
        for c in found:
            for backend, cost in ((c.ours, c.mine), (c.flink, c.theirs)):
                base = c.strategy.split("(", 1)[0]
                if (backend, base) in {("flink-heap", "compaction_filter"),
                                       ("flink-heap", "timer"), ("flink-rocksdb", "timer"),
                                       ("flink-rocksdb", "incremental"),
                                       ("rocksdb", "incremental")}:
                    assert cost is None, (backend, c.strategy)
                    continue
                assert cost is not None
                assert cost.ratio == pytest.approx(ratio_of(rows, c.metric, w, backend,
                                                            c.strategy), rel=1e-9)
                checked += 1
    # workloads x measures x sides measured: full_snapshot 4, incremental 2 (heap pair),
    # compaction_filter 3 (not on flink-heap), timer 2 (statebench only)
    assert checked == 2 * 2 * (4 + 2 + 3 + 2)
    # the same numbers are in the page's table
    section = _fidelity_section(report_html(run))
    expected = ratio_of(rows, "records_per_s", "ycsb-a", "flink-heap", "incremental")
    table = re.search(r'<table class="stats fidelity" data-workload="ycsb-a".*?</table>',
                      section, re.S)
    assert table is not None
    row = re.search(r'<tr data-strategy="incremental" data-metric="records_per_s">(.*?)</tr>',
                    table.group(0), re.S)
    assert row is not None
    shown = [float(x) for x in re.findall(r'data-ratio="([^"]+)"', row.group(1))]
    assert shown[1] == pytest.approx(expected, rel=1e-9)


def test_same_model_on_both_sides_agrees(make_run: Callable[..., Path]) -> None:
    run = load_run(make_run("agree", flink=True))
    for w in run.workloads:
        assert not any(c.disagrees for c in comparisons(run, w))
        assert all(s.severity == "info" and "they agree" in s.text
                   for s in fidelity_findings(run, w))
    section = _fidelity_section(report_html(run))
    assert 'data-verdict="disagree"' not in section and 'data-verdict="agree"' in section


def test_injected_throughput_disagreement_is_found(make_run: Callable[..., Path]) -> None:
    run_dir = make_run("slow-flink", flink=True,
                       lane_throughput={("flink-heap", "incremental"): 0.3})
    rows, run = _raw(run_dir), load_run(run_dir)
    for w in run.workloads:
        ours = ratio_of(rows, "records_per_s", w, "heap", "incremental")
        flink = ratio_of(rows, "records_per_s", w, "flink-heap", "incremental")
        assert ours / flink > DISAGREE
        warns = [s.text for s in fidelity_findings(run, w) if s.severity == "warn"]
        assert warns == [
            f"On heap, incremental costs statebench {fmt_ratio(ours)} of none's throughput and "
            f"Flink {fmt_ratio(flink)}: they disagree by {fmt_ratio(ours / flink)}."
        ]
    section = _fidelity_section(report_html(run))
    assert section.count('data-verdict="disagree"') == 2  # one row per workload, heap pair only


def test_just_under_the_threshold_is_no_disagreement(make_run: Callable[..., Path]) -> None:
    # 0.78 / 0.6 = 1.3x apart: within 1.5x, so no warning
    run = load_run(make_run("close", flink=True,
                            lane_throughput={("flink-heap", "incremental"): 0.6}))
    for w in run.workloads:
        c = next(c for c in comparisons(run, w)
                 if (c.strategy, c.metric, c.ours) == ("incremental", "records_per_s", "heap"))
        assert c.fold is not None and 1.2 < c.fold < DISAGREE
        assert not [s for s in fidelity_findings(run, w) if s.severity == "warn"]


def test_incremental_on_heap_state_disagreement_gives_flinks_reason(
    make_run: Callable[..., Path],
) -> None:
    run_dir = make_run("sparse", flink=True, lane_retained={("flink-heap", "incremental"): 1.0})
    rows, run = _raw(run_dir), load_run(run_dir)
    w = "ycsb-a"
    warns = [s.text for s in fidelity_findings(run, w) if s.severity == "warn"]
    assert len(warns) == 1
    ours = ratio_of(rows, "stored_entries", w, "heap", "incremental")
    flink = ratio_of(rows, "stored_entries", w, "flink-heap", "incremental")
    exp_ours = peak(rows, w, "heap", "incremental", ("expired_present_entries",))
    exp_flink = peak(rows, w, "flink-heap", "incremental", ("expired_present_entries",))
    assert exp_flink / exp_ours > 2
    assert warns[0].startswith(
        f"On heap, incremental keeps peak stored entries at {fmt_ratio(ours)} of none's on "
        f"statebench and {fmt_ratio(flink)} on Flink: they disagree by {fmt_ratio(flink / ours)}."
    )
    assert warns[0].endswith(
        f"On statebench it leaves {exp_flink / exp_ours:.3g}{TIMES} fewer expired entries than "
        f"Flink ({fmt_value(exp_ours, 'entries')} vs {fmt_value(exp_flink, 'entries')}, peak): "
        f"{INCREMENTAL_HEAP_REASON}.")


def test_other_state_disagreements_give_numbers_without_a_cause(
    make_run: Callable[..., Path],
) -> None:
    # Flink's full-snapshot lane made to shed expired entries from memory, which it does not
    run_dir = make_run("rocks", flink=True,
                       lane_retained={("flink-rocksdb", "full_snapshot"): 0.05})
    rows, run = _raw(run_dir), load_run(run_dir)
    w = "sessions-churn"
    warns = [s.text for s in fidelity_findings(run, w) if s.severity == "warn"]
    assert len(warns) == 1
    ours = ratio_of(rows, "stored_entries", w, "rocksdb", "full_snapshot")
    flink = ratio_of(rows, "stored_entries", w, "flink-rocksdb", "full_snapshot")
    exp_ours = peak(rows, w, "rocksdb", "full_snapshot", ("expired_present_entries",))
    exp_flink = peak(rows, w, "flink-rocksdb", "full_snapshot", ("expired_present_entries",))
    assert warns[0] == (
        f"On RocksDB, full_snapshot keeps peak stored entries at {fmt_ratio(ours)} of none's on "
        f"statebench and {fmt_ratio(flink)} on Flink: they disagree by "
        f"{fmt_ratio(ours / flink)}. On statebench it leaves {exp_ours / exp_flink:.3g}{TIMES} "
        f"the expired entries of Flink ({fmt_value(exp_ours, 'entries')} vs "
        f"{fmt_value(exp_flink, 'entries')}, peak).")
    assert INCREMENTAL_HEAP_REASON not in warns[0]


def test_ttl_vs_no_ttl_rows(make_run: Callable[..., Path]) -> None:
    run_dir = make_run("ttl", flink=True, no_ttl=True, no_ttl_speedup={"flink-rocksdb": 3.0})
    rows, run = _raw(run_dir), load_run(run_dir)
    assert [w for w in run.workloads if w.endswith("-no-ttl")]
    for w in ("sessions-churn", "ycsb-a"):
        ttl = [c for c in comparisons(run, w) if c.strategy == TTL_ROW]
        assert len(ttl) == 4  # 2 measures x 2 pairs
        for c in ttl:
            assert c.mine is not None and c.theirs is not None
            for backend, cost in ((c.ours, c.mine), (c.flink, c.theirs)):
                assert cost.ratio == pytest.approx(ratio_of(
                    rows, c.metric, w, backend, "none", base_w=f"{w}-no-ttl"), rel=1e-9)
        slow = {(c.metric, c.ours): c.disagrees for c in ttl}
        assert slow == {("records_per_s", "heap"): False, ("records_per_s", "rocksdb"): True,
                        ("stored_entries", "heap"): False, ("stored_entries", "rocksdb"): False}
        warns = [s.text for s in fidelity_findings(run, w) if s.severity == "warn"]
        assert len(warns) == 1 and warns[0].startswith("On RocksDB, TTL (none vs the same")
        assert "of the no-TTL run's throughput" in warns[0]
    html = report_html(run)
    section = _fidelity_section(html)
    assert "no-ttl</h3>" not in section  # the no-TTL twin has no strategies to compare


def test_flink_lanes_are_ordered_and_labelled_as_references(
    make_run: Callable[..., Path],
) -> None:
    assert with_references(["heap", "rocksdb", "flink-heap", "flink-rocksdb"]) == [
        "heap", "flink-heap", "rocksdb", "flink-rocksdb"]
    assert with_references(["flink-rocksdb", "rocksdb"]) == ["rocksdb", "flink-rocksdb"]
    run = load_run(make_run("labels", flink=True))
    assert run.backends == ["heap", "flink-heap", "rocksdb", "flink-rocksdb"]
    html = report_html(run)
    label = backend_label("flink-heap")
    assert label != "flink-heap" and "Flink (reference)" in label
    row = re.search(r'<tr data-backend="flink-heap" data-strategy="none"><td>(.*?)</td>', html)
    assert row is not None and _text(row.group(1)) == label
    perf = next(c for c in charts(run)["perf"] if c.fig_id == "fig-perf-ycsb-a")
    # a row of panels per engine (issue 41: no axis sets a Python lane beside a JVM lane),
    # each tick the backend's label on two lines
    drawn = {tuple(x.replace("<br>", " \u00b7 ") for x in t.x) for t in perf.figure.data}
    assert drawn == {("heap", "rocksdb"),
                     tuple(backend_label(b) for b in run.backends if b.startswith("flink-"))}


@pytest.mark.browser
def test_fidelity_section_renders_in_chromium(browser: object,
                                              make_run: Callable[..., Path]) -> None:
    run_dir = make_run("browser", flink=True, no_ttl=True,
                       lane_throughput={("flink-heap", "incremental"): 0.3})
    report = render_report(run_dir)
    run = load_run(run_dir)
    fid = fidelity_charts(run)
    assert len(fid) == 2

    tb.check_in_browser(browser, report, set(run.strategies),
                        charts_expected=tb.expected_charts(report))
    page = browser.new_page(viewport=tb.VIEWPORT)  # type: ignore[attr-defined]
    page.goto(report.as_uri(), wait_until="load")
    page.wait_for_function(
        "() => document.querySelector('#fig-fidelity-ycsb-a-plot .main-svg')", timeout=15_000)
    traces = page.evaluate(
        """() => document.getElementById('fig-fidelity-ycsb-a-plot').data.map(
            t => ({name: t.name, x: t.x, y: t.y}))""")
    page.close()
    rows = _raw(run_dir)
    inc = next(t for t in traces if t["name"] == "incremental")  # first panel: throughput
    at = inc["x"].index(backend_label("flink-heap"))
    assert inc["y"][at] == pytest.approx(
        ratio_of(rows, "records_per_s", "ycsb-a", "flink-heap", "incremental"), rel=1e-9)
    assert TTL_ROW in {t["name"] for t in traces}


def _add_causes(run_dir: Path, values: dict[tuple[str, str], dict[str, float]]) -> None:
    """Adds job-total summary rows (one per repetition, as records_per_s's) of the checkpoint
    model's causes to a synthetic run: {(backend, strategy): {metric: value}}."""
    table = pq.read_table(run_dir / "rows.parquet")
    rows = table.to_pylist()
    units = {m: u for m, _, u in CAUSES} | {"records": "count"}
    extra = [
        dict(r, metric=metric, value=value, unit=units[metric])
        for r in rows if r["metric"] == "records_per_s" and r["task"] == -1
        for metric, value in values.get((r["backend"], r["strategy"]), {}).items()]
    assert extra
    pq.write_table(pa.Table.from_pylist(rows + extra, schema=table.schema),
                   run_dir / "rows.parquet")


def test_a_throughput_disagreement_is_put_down_to_a_measured_cause(
    make_run: Callable[..., Path],
) -> None:
    """Flink's none made slower than its full_snapshot: the finding gives each side's measured
    causes (none vs the strategy, share of task time) and names the one that differs most."""
    run_dir = make_run("causes", flink=True,
                       lane_throughput={("flink-heap", "full_snapshot"): 3.0})
    _add_causes(run_dir, {
        ("flink-heap", "none"): {"checkpoint_sync_share": 0.2, "jvm_gc_ms": 50.0,
                                 "checkpoint_async_cpu_s": 0.4, "records": 1e6},
        ("flink-heap", "full_snapshot"): {"checkpoint_sync_share": 0.15, "jvm_gc_ms": 0.0,
                                          "checkpoint_async_cpu_s": 0.1, "records": 1e6},
        ("heap", "none"): {"checkpoint_sync_share": 0.3},
        ("heap", "full_snapshot"): {"checkpoint_sync_share": 0.3},
    })
    rows, run = _raw(run_dir), load_run(run_dir)
    w = "sessions-churn"
    key = ScenarioKey(w, "flink-heap", "none")
    busy_s = stat(run, key, "records").center / stat(run, key, "records_per_s").center
    shares = cause_shares(run, key)
    assert shares["checkpoint_sync_share"] == 0.2
    assert shares["jvm_gc_ms"] == pytest.approx(0.05 / busy_s)
    assert shares["checkpoint_async_cpu_s"] == pytest.approx(0.4 / busy_s)
    # CPU seconds are summed over the job's tasks, so they count against every task's time
    two = load_run(run_dir)
    two.meta["config"] = dict(two.meta.get("config") or {}, parallelism=2)
    assert cause_shares(two, key)["checkpoint_async_cpu_s"] == pytest.approx(0.2 / busy_s)
    assert cause_shares(two, key)["jvm_gc_ms"] == shares["jvm_gc_ms"]
    warns = [s.text for s in fidelity_findings(run, w) if s.severity == "warn"
             and "full_snapshot costs" in s.text]
    assert len(warns) == 1
    ours = ratio_of(rows, "records_per_s", w, "heap", "full_snapshot")
    flink = ratio_of(rows, "records_per_s", w, "flink-heap", "full_snapshot")
    assert flink / ours > DISAGREE
    assert ("Measured on statebench (none vs full_snapshot, share of task time): sync phases "
            "and barrier waits 30.0% vs 30.0%; the largest difference is sync phases and "
            "barrier waits (+0.0 points).") in warns[0]
    # the checkpoint thread's CPU differs most on Flink's side
    full = cause_shares(run, ScenarioKey(w, "flink-heap", "full_snapshot"))
    deltas = {m: shares[m] - full[m] for m in shares}
    assert max(deltas, key=lambda m: abs(deltas[m])) == "checkpoint_async_cpu_s"
    assert warns[0].endswith(
        f"Measured on Flink (none vs full_snapshot, share of task time): sync phases and "
        f"barrier waits 20.0% vs 15.0%, JVM garbage collection {shares['jvm_gc_ms']:.1%} vs "
        f"0.0%, checkpoint-thread CPU {shares['checkpoint_async_cpu_s']:.1%} vs "
        f"{full['checkpoint_async_cpu_s']:.1%}; the largest difference is checkpoint-thread "
        f"CPU ({deltas['checkpoint_async_cpu_s'] * 100:+.1f} points).")


@pytest.mark.parametrize(("mine", "theirs", "verdict"), [
    ((1.0, 1.05, 0.95), (1.1, 1.0, 1.2), "agree"),
    ((0.3, 0.32, 0.28), (0.9, 1.0, 0.95), "disagree"),
    ((0.9, 0.83, 1.05), (1.92, 1.33, 1.07), "undecided"),  # a default comparison's, 2026-11-26
])
def test_a_timed_verdict_needs_every_repetition(mine: tuple[float, ...],
                                                theirs: tuple[float, ...], verdict: str) -> None:
    """With repetitions on both sides, agree or disagree only where the factor's 95% interval
    says so; the medians alone would have said agree (1.35x apart) for the third, whose
    interval (0.30x-1.46x) crosses the band's lower edge."""
    def cost(reps: tuple[float, ...]) -> Cost:
        return Cost(statistics.median(reps), 1.0, reps)

    c = Comparison("w", "heap", "flink-heap", "full_snapshot", "records_per_s", "throughput",
                   "records/s", cost(mine), cost(theirs))
    assert c.agreement == verdict and c.disagrees == (verdict == "disagree")
    lo, hi = c.factor_interval
    assert lo <= c.factor <= hi
    # the t interval on log-ratios (95%), not every pairing's range (about 90% with three)
    assert (lo, hi) == pytest.approx(log_ratio_interval(mine, theirs))
    # without repetitions the medians decide, as for a peak over logical time
    medians = Comparison("w", "heap", "flink-heap", "full_snapshot", "records_per_s",
                         "throughput", "records/s", Cost(c.mine.value, 1.0),
                         Cost(c.theirs.value, 1.0))
    assert medians.factor_interval is None
    assert medians.agreement == ("disagree" if c.fold > DISAGREE else "agree")


def test_an_undecided_row_says_so_in_the_table_and_the_findings(
        make_run: Callable[..., Path]) -> None:
    """Flink's repetitions of incremental spread across the band (0.3x to 1.0x of its none's):
    the heap row is undecided, in a finding and in its cell, never agree or disagree."""
    run_dir = make_run("spread", flink=True)
    path = run_dir / "rows.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    scale = {0: 0.3, 1: 1.0, 2: 0.6}
    for r in rows:
        if (r["backend"], r["strategy"], r["metric"]) == ("flink-heap", "incremental",
                                                          "records_per_s"):
            r["value"] *= scale[r["step"]] / 0.78  # the model's incremental factor
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    run = load_run(run_dir)
    for w in run.workloads:
        (c,) = [c for c in comparisons(run, w) if (c.strategy, c.metric, c.ours)
                == ("incremental", "records_per_s", "heap")]
        assert c.agreement == "undecided"
        found = [s.text for s in fidelity_findings(run, w) if "undecided" in s.text]
        assert len(found) == 1 and found[0].startswith("On heap, incremental costs statebench")
    section = _fidelity_section(report_html(run))
    assert section.count('data-verdict="undecided"') == len(run.workloads)


def test_the_interval_narrows_with_more_repetitions() -> None:
    """A slow repetition among three spans the band's edge; among nine, whose spread pins the
    mean, it no longer does: more repetitions settle a verdict."""
    mine = (1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0, 0.8)
    theirs = (1.1, 1.08, 1.12, 1.09, 1.11, 1.1, 1.07, 1.13, 1.1)
    lo3, hi3 = factor_interval(mine[-3:], theirs[-3:])
    assert lo3 < 1 / DISAGREE < hi3
    lo, hi = factor_interval(mine, theirs)
    assert 1 / DISAGREE < lo <= hi < DISAGREE
    assert hi - lo < (hi3 - lo3) / 2
