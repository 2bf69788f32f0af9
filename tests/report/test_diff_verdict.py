"""`statebench diff` gives verdicts only on evidence: the rank test, the interval, exact metrics,
and the environment banner, on synthetic runs with known effects."""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from workloads.cli import main
from workloads.report.diff import diff_page, environment_changes, summary_lines
from workloads.report.load import Run, Samples, ScenarioKey, load_run
from workloads.report.significance import (
    mann_whitney,
    ratio_of_medians_ci,
    smallest_p,
)
from workloads.report.verdict import ALPHA, Side, adjusted, judge, judge_all

KEY = ScenarioKey("w", "heap", "none")
TIMER = ScenarioKey("ycsb-a", "heap", "timer")
SEEDS = range(400)


def _run(values: dict[str, np.ndarray], kind: str = "summary", clock: str = "EventTime",
         key: ScenarioKey = KEY) -> Run:
    """An in-memory run with one scenario (fast enough for hundreds of seeds)."""
    units = {"records_per_s": "records/s", "live_entries": "entries",
             "physical_bytes": "bytes", "rocksdb_compactions": "count"}
    samples = {
        m: Samples(kind, units[m], np.arange(v.size), np.full(v.size, -1 if kind == "summary"
                                                                   else 0), np.asarray(v, float))
        for m, v in values.items()
    }
    meta = {"spec": {"name": key.workload, "state": {"time_characteristic": clock}}}
    return Run(run_dir=Path("mem"), meta=meta, samples={key: samples})


def _judge(a: np.ndarray, b: np.ndarray, metric: str = "records_per_s"):
    return judge(Side.of("A", _run({metric: a})), Side.of("B", _run({metric: b})), KEY, metric)


# ------------------------------------------------------------------------------------------------
# The statistics themselves
# ------------------------------------------------------------------------------------------------


def _brute_force_p(a: list[float], b: list[float]) -> float:
    """Two-sided permutation p-value of the rank sum, by enumerating every split."""
    pooled = np.array(a + b)
    order = np.argsort(pooled, kind="mergesort")
    ranks = np.empty(pooled.size)
    ranks[order] = np.arange(1, pooled.size + 1)
    for value in np.unique(pooled):  # mid-ranks for ties
        ranks[pooled == value] = ranks[pooled == value].mean()
    observed = ranks[: len(a)].sum()
    sums = np.array([ranks[list(c)].sum()
                     for c in itertools.combinations(range(pooled.size), len(a))])
    lower, upper = np.mean(sums <= observed + 1e-9), np.mean(sums >= observed - 1e-9)
    return min(1.0, 2 * min(lower, upper))


@pytest.mark.parametrize("a,b", [
    ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
    ([3.1, 1.2, 5.5, 2.2, 9.0], [4.4, 0.5, 7.7, 6.1]),
    ([1.0, 2.0, 2.0, 3.0, 3.0], [2.0, 3.0, 3.0, 4.0, 5.0, 5.0]),  # ties
    ([7.0, 7.0, 7.0], [7.0, 7.0, 7.0, 7.0]),  # all tied: no evidence at all
])
def test_exact_p_value_matches_enumerating_every_permutation(a: list[float], b: list[float]):
    result = mann_whitney(a, b)
    assert result.exact
    assert result.p == pytest.approx(_brute_force_p(a, b), abs=1e-12)
    # U counts pairs a > b (ties 1/2).
    assert result.u == sum((x > y) + 0.5 * (x == y) for x in a for y in b)


def test_false_positive_rate_of_the_exact_test_is_at_most_alpha() -> None:
    # Under "no change" every assignment of the 10 ranks to A and B is equally likely, so
    # enumerating them all gives the test's exact rejection rate.
    ranks = list(range(1, 11))
    rejected = total = 0
    for chosen in itertools.combinations(ranks, 5):
        rest = [r for r in ranks if r not in chosen]
        total += 1
        rejected += mann_whitney(list(chosen), rest).p < ALPHA
    assert total == math.comb(10, 5) and 0 < rejected / total <= ALPHA


def test_large_samples_use_the_normal_approximation() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(0, 1, 40), rng.normal(0.8, 1, 45)
    result = mann_whitney(a, b)
    assert not result.exact and result.p < 0.01
    assert mann_whitney(a, a.copy()).p > 0.9


def test_three_against_three_cannot_reach_five_percent() -> None:
    assert smallest_p(3, 3) == pytest.approx(0.1)
    assert smallest_p(5, 5) < ALPHA
    assert mann_whitney([1, 2, 3], [4, 5, 6]).p == pytest.approx(0.1)


def test_bootstrap_interval_is_seeded_and_covers_the_shift() -> None:
    rng = np.random.default_rng(3)
    a = 100 * rng.lognormal(0, 0.05, 7)
    b = 130 * rng.lognormal(0, 0.05, 7)
    ci = ratio_of_medians_ci(a, b)
    assert ci == ratio_of_medians_ci(a, b), "the same data must give the same interval"
    assert ci is not None and ci[0] < 1.3 < ci[1] and ci[0] > 1
    assert ratio_of_medians_ci([0.0, 0.0, 1.0], b) is None, "a median of 0 has no ratio"


# ------------------------------------------------------------------------------------------------
# Verdicts on timings
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [5, 6, 7])
def test_a_true_1_3x_shift_is_flagged(n: int) -> None:
    flagged = 0
    for seed in range(50):
        rng = np.random.default_rng(seed)
        a = 1e5 * rng.lognormal(0, 0.08, n)
        b = 1.3e5 * rng.lognormal(0, 0.08, n)
        v = _judge(a, b)
        flagged += v.css == "better"
        assert v.css in ("better", "grey") and v.css != "worse"
    assert flagged >= 45, f"a 1.3x shift at n={n} was flagged in only {flagged}/50 seeds"


@pytest.mark.parametrize("n", [1, 5])
def test_identical_distributions_are_flagged_at_most_at_rate_alpha(n: int) -> None:
    coloured = 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        # Run-to-run swings as on a busy machine: lognormal with sigma 0.4 (2x is common).
        a, b = 1e5 * rng.lognormal(0, 0.4, n), 1e5 * rng.lognormal(0, 0.4, n)
        coloured += _judge(a, b).coloured
    if n == 1:
        assert coloured == 0
    assert coloured / len(SEEDS) <= ALPHA


def test_q_values_follow_benjamini_hochberg() -> None:
    assert adjusted([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    assert adjusted([]) == []


def test_a_page_of_identical_distributions_is_coloured_at_most_at_rate_alpha() -> None:
    # Twelve scenarios, five repetitions each: per test ~5% would colour about half the pages.
    keys = [ScenarioKey("w", "heap", f"s{i}") for i in range(12)]
    coloured_pages = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        sides = []
        for label in ("A", "B"):
            run = _run({"records_per_s": np.ones(5)})
            run.samples = {k: {"records_per_s": Samples("summary", "records/s", np.arange(5),
                                                         np.full(5, -1),
                                                         1e5 * rng.lognormal(0, 0.3, 5))}
                           for k in keys}
            sides.append(Side.of(label, run))
        verdicts = judge_all(sides[0], sides[1], [(k, "records_per_s") for k in keys])
        coloured_pages += any(v.coloured for v in verdicts.values())
    assert coloured_pages / 200 <= ALPHA


def test_reasons_for_grey() -> None:
    one = _judge(np.array([100.0]), np.array([164.0]))
    assert (one.css, one.note) == ("grey", "n=1: no spread") and one.ratio == pytest.approx(1.64)
    three = _judge(np.array([100.0, 101, 102]), np.array([150.0, 151, 152]))
    assert three.css == "grey" and "cannot reach p<0.05" in three.note
    same = _judge(np.array([100.0, 90, 110, 105, 95]), np.array([101.0, 91, 111, 104, 96]))
    assert same.css == "grey" and re.match(r"not significant, p=0\.\d+", same.note)


def test_lower_is_better_metrics_are_red_when_they_grow() -> None:
    rng = np.random.default_rng(1)
    a, b = 10 * rng.lognormal(0, 0.02, 6), 14 * rng.lognormal(0, 0.02, 6)
    runs = [_run({"records_per_s": x}) for x in (a, b)]
    for run in runs:  # reuse the sample arrays as a latency metric
        run.samples[KEY]["latency_p99_us"] = Samples("summary", "us", np.arange(6),
                                                    np.full(6, -1), run.samples[KEY]
                                                    ["records_per_s"].values)
    v = judge(Side.of("A", runs[0]), Side.of("B", runs[1]), KEY, "latency_p99_us")
    assert v.css == "worse" and v.p is not None and v.p < ALPHA


# ------------------------------------------------------------------------------------------------
# Exact metrics
# ------------------------------------------------------------------------------------------------


def test_exact_metrics_compare_equal_or_different_without_a_test() -> None:
    series = np.array([10.0, 20.0, 30.0])
    a = _run({"live_entries": series}, kind="series")
    same = judge(Side.of("A", a), Side.of("B", _run({"live_entries": series.copy()},
                                                    kind="series")), KEY, "live_entries")
    assert (same.css, same.kind, same.note) == ("equal", "exact", "equal (exact)")
    more = judge(Side.of("A", a), Side.of("B", _run({"live_entries": series + np.array([0, 0, 3])},
                                                    kind="series")), KEY, "live_entries")
    assert more.css == "different" and more.p is None and "+3" in more.note and "10.0%" in more.note
    # Same peak, different trajectory: still different, and it says where.
    path = judge(Side.of("A", a), Side.of("B", _run({"live_entries": series + np.array([1, 0, 0])},
                                                    kind="series")), KEY, "live_entries")
    assert path.css == "different" and "1 of 3 samples differ" in path.note


def test_counts_are_not_exact_under_a_wall_clock_or_in_rocksdb_files() -> None:
    series = np.array([10.0, 20.0, 30.0])
    pt = [_run({"live_entries": series + d}, kind="series", clock="ProcessingTime")
          for d in (0, 5)]
    v = judge(Side.of("A", pt[0]), Side.of("B", pt[1]), KEY, "live_entries")
    assert v.kind == "sampled" and v.css == "grey" and v.note.endswith("; n=1: no spread")
    assert v.cls == "timing-dependent" and "ProcessingTime clock" in v.note
    rocks = ScenarioKey("w", "rocksdb", "none")
    files = [_run({"physical_bytes": series + d}, kind="series", key=rocks) for d in (0, 5)]
    v = judge(Side.of("A", files[0]), Side.of("B", files[1]), rocks, "physical_bytes")
    assert v.kind == "sampled" and v.css == "grey"
    counters = [_run({"rocksdb_compactions": series + d}, kind="series", key=rocks)
                for d in (0, 5)]
    v = judge(Side.of("A", counters[0]), Side.of("B", counters[1]), rocks, "rocksdb_compactions")
    assert v.kind == "sampled" and v.css == "grey"


# ------------------------------------------------------------------------------------------------
# Whole pages from synthetic run folders
# ------------------------------------------------------------------------------------------------


def _event_time(run_dir: Path) -> Path:
    """Mark the synthetic run's workloads as EventTime (a logical clock: counts are exact)."""
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    for spec in meta["spec"]:
        spec["state"] = {"time_characteristic": "EventTime"}
    (run_dir / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    return run_dir


def _ratio_classes(html: str) -> list[str]:
    return re.findall(r'<td class="num ratio ([a-z]*)"', html)


@pytest.mark.parametrize("reps", [1, 5])
def test_diffing_two_identical_runs_never_shows_a_coloured_verdict(
    make_run: Callable[..., Path], tmp_path: Path, reps: int
) -> None:
    a = _event_time(make_run("a", reps=reps))
    b = tmp_path / "b"
    shutil.copytree(a, b)
    html = diff_page(Side.of("A", load_run(a)), Side.of("B", load_run(b)))
    classes = _ratio_classes(html)
    assert classes and not {"better", "worse", "different"} & set(classes)
    assert "equal" in classes and "grey" in classes
    assert 'data-banner="environment"' in html and 'class="warn"' not in html


def test_noisy_rerun_of_the_same_code_is_not_a_verdict(
    make_run: Callable[..., Path]
) -> None:
    # Same configuration, another seed: every timing differs by noise; nothing is coloured.
    a = load_run(make_run("a", reps=5, seed=11))
    b = load_run(make_run("b", reps=5, seed=12))
    html = diff_page(Side.of("A", a), Side.of("B", b))
    assert not {"better", "worse"} & set(_ratio_classes(html))


def test_an_injected_slowdown_is_flagged_with_its_interval(
    make_run: Callable[..., Path]
) -> None:
    a = load_run(make_run("a", reps=6, seed=1))
    b = load_run(make_run("b", reps=6, seed=2, throughput_factor={"timer": 0.86 / 1.3}))
    sa, sb = Side.of("A", a), Side.of("B", b)
    v = judge(sa, sb, TIMER, "records_per_s")
    assert v.css == "worse" and v.ratio == pytest.approx(1 / 1.3, rel=0.03)
    assert v.ci is not None and v.ci[0] < 1 / 1.3 < v.ci[1] and v.ci[1] < 1
    html = diff_page(sa, sb)
    worse = re.findall(r'<td class="why worse" data-metric="records_per_s"[^>]*>([^<]*)<', html)
    assert len(worse) == 4 and all("95% CI" in note and "p=" in note for note in worse)
    lines = summary_lines(sa, sb)
    assert any("ycsb-a/heap/timer" in line and "worse" in line for line in lines)


def test_deterministic_mismatches_are_always_shown(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    a = _event_time(make_run("a", reps=1))
    b = tmp_path / "b"
    shutil.copytree(a, b)
    rows = pq.read_table(b / "rows.parquet")
    hit = pc.and_(pc.equal(rows["metric"], "cleanup_removed_timer"),
                  pc.equal(rows["strategy"], "timer"))
    bumped = pc.if_else(hit, pc.add(rows["value"], 7.0), rows["value"])
    pq.write_table(rows.set_column(rows.schema.get_field_index("value"), "value", bumped),
                   b / "rows.parquet")
    run_a, run_b = load_run(a), load_run(b)
    v = judge(Side.of("A", run_a), Side.of("B", run_b), TIMER, "cleanup_removed_timer")
    assert v.css == "different" and "+14" in v.note  # two tasks, +7 each
    html = diff_page(Side.of("A", run_a), Side.of("B", run_b))
    assert _ratio_classes(html).count("different") == 4  # timer x 2 backends x 2 workloads


def test_different_environments_get_a_banner_and_timings_stay_grey(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    a = _event_time(make_run("a", reps=6, seed=1))
    b = _event_time(make_run("b", reps=6, seed=2, throughput_factor={"timer": 0.86 * 1.5}))
    meta = json.loads((b / "run.json").read_text(encoding="utf-8"))
    meta["machine"]["cores"] = 16
    meta["versions"]["pyspark"] = "3.5.0"
    meta["versions"]["statebench"] = "0.2.0"  # the thing compared, not the environment
    (b / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    sa, sb = Side.of("A", load_run(a)), Side.of("B", load_run(b))
    assert [c[0] for c in environment_changes(sa, sb)] == ["machine.cores", "pyspark"]
    html = diff_page(sa, sb)
    assert re.search(r'<li class="warn" data-banner="environment"><strong>Different '
                     r"environments</strong>: machine\.cores 2 → 16; pyspark 4\.0\.1 → 3\.5\.0",
                     html)
    classes = set(_ratio_classes(html))
    assert not {"better", "worse"} & classes and "equal" in classes
    v = judge(sa, sb, TIMER, "records_per_s", caveat="environments differ")
    assert v.css == "grey" and v.note.startswith("environments differ; changed, p=")


def test_diff_command_writes_the_page_and_prints_verdicts(
    make_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = make_run("a", reps=1), make_run("b", reps=1, seed=5)
    assert main(["diff", str(a), str(b), "--alpha", "0.01"]) == 0
    out = capsys.readouterr().out
    assert str(b / "diff.html") in out and "n=1: no spread" in out
    assert "alpha=0.01" in (b / "diff.html").read_text(encoding="utf-8")
    assert main(["diff", str(a), str(tmp_path / "nope")]) == 2
    assert "not a statebench run folder" in capsys.readouterr().err

