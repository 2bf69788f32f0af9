"""The report's first screen: a decision table per workload and backend that names a strategy
only where the evidence separates it, per-engine rankings, and the detail one click down.

The runs are synthetic (tests/report/conftest.py): ycsb-a on a logical clock (counted numbers
exact) with 6 repetitions (enough for the rank test), and the default run (3 repetitions, no
clock in its specs: ProcessingTime), where most cells cannot separate and must say so.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from html import unescape
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workloads.report.decision import (
    BackendDecision,
    cell_text,
    decisions,
    fastest_per_engine,
    repetitions_hint,
    separations,
)
from workloads.report.findings import findings
from workloads.report.load import ScenarioKey, load_run
from workloads.report.metrics import STORED_ENTRIES
from workloads.report.render import report_html

W = "ycsb-a"


def _rows(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "rows.parquet").to_pylist()


def _peak_stored(rows: list[dict], b: str, s: str) -> float:
    """Peak over logical time of live + expired entries, summed over tasks, from parquet."""
    per_step: dict[int, float] = defaultdict(float)
    for r in rows:
        if (r["workload"], r["backend"], r["strategy"]) == (W, b, s) and r["metric"] in (
                "live_entries", "expired_present_entries"):
            per_step[r["step"]] += r["value"]
    return max(per_step.values())


def _throughput(rows: list[dict], b: str, s: str) -> list[float]:
    return [r["value"] for r in rows if (r["workload"], r["backend"], r["strategy"], r["metric"],
                                         r["task"]) == (W, b, s, "records_per_s", -1)]


@pytest.fixture
def logical_run(make_run: Callable[..., Path]) -> Path:
    return make_run("logical", event_time=(W,), reps=6, flink=True)


def _row(run_dir: Path, backend: str) -> BackendDecision:
    rows = decisions(load_run(run_dir), W)
    return next(r for engine in rows.values() for r in engine if r.backend == backend)


def test_the_state_cell_names_the_smallest_exact_peak(logical_run: Path) -> None:
    rows = _rows(logical_run)
    heap = _row(logical_run, "heap")
    strategies = {r["strategy"] for r in rows if (r["workload"], r["backend"]) == (W, "heap")}
    peaks = {s: _peak_stored(rows, "heap", s) for s in strategies}
    smallest = min(peaks, key=peaks.__getitem__)
    assert sorted(peaks.values())[0] < sorted(peaks.values())[1]  # the fixture separates it
    headline, separated, why = cell_text(heap.picks["state"])
    assert separated and why == "exact"
    assert headline.startswith(f"{smallest} (")
    assert heap.picks["state"].metric == STORED_ENTRIES


def test_the_recommendation_says_what_it_costs_against_none(logical_run: Path) -> None:
    rows = _rows(logical_run)
    heap = _row(logical_run, "heap")
    rec = heap.recommended
    assert rec is not None and rec == heap.picks["state"].best  # the sole state leader
    ratio = _peak_stored(rows, "heap", "none") / _peak_stored(rows, "heap", rec.strategy)
    text = heap.tradeoff.text
    assert text.startswith(f"{rec.strategy} keeps {ratio:.3g}\u00d7 fewer stored entries than "
                           "none")
    tp = np.median(_throughput(rows, "heap", rec.strategy)) / np.median(
        _throughput(rows, "heap", "none"))
    assert f"{(1 - tp) * 100:.0f}% lower throughput" in text
    assert text.endswith(".") and ". " not in text  # one sentence


def test_a_fastest_cell_that_the_rank_test_cannot_separate_says_so(
        make_run: Callable[..., Path]) -> None:
    run_dir = make_run("three", event_time=(W,), reps=3)
    heap = _row(run_dir, "heap")
    headline, separated, why = cell_text(heap.picks["fastest"])
    assert not separated
    assert headline.startswith("not separated: ")
    assert "n=3 vs 3: the exact test cannot reach p<0.05" in why
    html = unescape(report_html(load_run(run_dir)))
    cell = re.search(r'<tr data-backend="heap">.*?<td data-cell="fastest" '
                     r'data-separated="(\w+)"><span class="pick">(.*?)</span>', html)
    assert cell is not None and cell.group(1) == "no"
    assert cell.group(2) == headline
    hint = repetitions_hint(load_run(run_dir), W)
    assert hint is not None and "Run --repetitions 4 or more" in hint.text
    assert hint.text in html


def test_enough_repetitions_need_no_hint(logical_run: Path) -> None:
    assert repetitions_hint(load_run(logical_run), W) is None  # 6 repetitions: testable


def test_a_clear_throughput_winner_is_separated_by_the_rank_test(
        make_run: Callable[..., Path]) -> None:
    run_dir = make_run("fast", event_time=(W,), reps=6,
                       throughput_factor={"compaction_filter": 1.6})
    rows = _rows(run_dir)
    for backend in ("heap", "rocksdb"):
        row = _row(run_dir, backend)
        headline, separated, why = cell_text(row.picks["fastest"])
        assert separated, why
        assert headline.startswith("compaction_filter (")
        assert why.startswith("better, p=")
        assert min(_throughput(rows, backend, "compaction_filter")) > max(
            _throughput(rows, backend, "none"))


def test_timing_dependent_single_numbers_are_not_separated_from_one_run(
        make_run: Callable[..., Path]) -> None:
    run_dir = make_run("paced", reps=6)  # no clock in the spec: ProcessingTime
    heap = _row(run_dir, "heap")
    headline, separated, why = cell_text(heap.picks["state"])
    assert not separated and headline.startswith("not separated: ")
    assert "ProcessingTime clock" in why and "one number per run" in why
    assert heap.recommended is None
    assert heap.tradeoff.text.startswith("No recommendation: the evidence does not separate")


def test_equal_exact_numbers_are_a_tie(logical_run: Path) -> None:
    run = load_run(logical_run)
    rows = _rows(logical_run)
    none, full = ScenarioKey(W, "heap", "none"), ScenarioKey(W, "heap", "full_snapshot")
    found = separations(run, [(none, full, STORED_ENTRIES)])[0]
    equal = _peak_stored(rows, "heap", "none") == _peak_stored(rows, "heap", "full_snapshot")
    assert found.separated is not equal
    assert found.why == ("exact: equal" if equal else "exact")


def test_a_strategy_that_returned_expired_values_is_never_recommended(logical_run: Path) -> None:
    heap = _row(logical_run, "heap")
    leader = heap.picks["state"].best
    table = pq.read_table(logical_run / "rows.parquet")
    rows = table.to_pylist()
    for r in rows:
        if (r["metric"], r["workload"], r["backend"], r["strategy"]) == (
                "expired_returned", W, "heap", leader.strategy):
            r["value"] = 3.0
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), logical_run / "rows.parquet")
    heap = _row(logical_run, "heap")
    assert heap.recommended != leader
    assert heap.tradeoff.severity == "warn"


def test_engines_are_ranked_each_against_their_own(logical_run: Path) -> None:
    run = load_run(logical_run)
    text = fastest_per_engine(run, W).text  # type: ignore[union-attr]
    statebench, _, flink = text.partition("for context, on Flink's: ")
    assert statebench.startswith("Fastest on statebench's lanes: ")
    assert "flink-" not in statebench
    assert flink and not re.search(r"\b(heap|rocksdb)/", flink.replace("flink-", "X"))
    rows = _rows(logical_run)
    medians = {(b, s): np.median(_throughput(rows, b, s)) for b in ("heap", "rocksdb")
               for s in ("none", "full_snapshot", "timer", "compaction_filter")}
    fastest = max(medians, key=medians.__getitem__)
    assert statebench.startswith(f"Fastest on statebench's lanes: {fastest[0]}/{fastest[1]} (")
    pareto = [s.text for s in findings(run)[W] if s.text.startswith("Pareto-optimal")]
    assert len(pareto) == 2
    assert "on statebench's lanes: " in pareto[0] and "flink-" not in pareto[0]
    assert "on Flink's lanes (context): flink-" in pareto[1]
    assert not re.search(r"(?<!flink-)\b(heap|rocksdb)/", pareto[1])
    html = report_html(run)
    assert "Fastest overall" not in html
    table = html[html.index('<table class="decision"'):]
    assert table.index('data-engine="statebench"') < table.index('data-engine="flink"')


def test_repeated_sentences_collapse_and_the_detail_is_one_click_down(
        logical_run: Path) -> None:
    run = load_run(logical_run)
    html = report_html(run)
    section = html[html.index('<section id="findings">'):html.index("</section>")]
    assert section.count("no strategy returned an expired value") == len(run.workloads)
    assert "On heap, no strategy returned" not in section
    assert section.count('<table class="decision"') == len(run.workloads)
    # every workload's per-backend sentences are inside a closed <details>, after its table
    for workload in run.workloads:
        part = section[section.index(f'<div class="workload" data-workload="{workload}">'):]
        part = part[:part.index("</div>", part.index("</details>"))]
        assert part.index('<table class="decision"') < part.index("<details")
        assert "<details open" not in part
        details = part[part.index("<details"):]
        assert "has the highest throughput" in details
        assert "has the highest throughput" not in part[:part.index("<details")]


def test_a_backend_with_one_strategy_has_nothing_to_choose(
        make_run: Callable[..., Path]) -> None:
    run = load_run(make_run("single", no_ttl=True))  # "<workload>-no-ttl": strategy none only
    rows = decisions(run, f"{W}-no-ttl")["statebench"]
    assert [r.backend for r in rows] == ["heap", "rocksdb"]
    for row in rows:
        headline, separated, why = cell_text(row.picks["fastest"])
        assert headline.startswith("only none ran (") and not separated
        assert why == "nothing to compare"
        assert row.recommended is None
        assert row.tradeoff.text == "Only none ran on this backend: nothing to choose between."


def _record_rounds(run_dir: Path, reps: int) -> None:
    """Mark the synthetic run as run in paired rounds: run.json lists every round's jobs (the
    runner's ``config.rounds``), every scenario once per round."""
    meta = json.loads((run_dir / "run.json").read_text())
    rows = _rows(run_dir)
    for workload, config in meta["config"]["workloads"].items():
        labels = sorted({f"{r['backend']}/{r['strategy']}" for r in rows
                         if r["workload"] == workload and r["metric"] == "records_per_s"})
        config["rounds"] = {"count": reps, "order_seed": 1, "orders": [labels] * reps}
    (run_dir / "run.json").write_text(json.dumps(meta))


def test_a_paired_fastest_cell_names_the_leading_group_and_how_far_ahead_it_is(
        make_run: Callable[..., Path]) -> None:
    """Rounds recorded: the Fastest cell names the strategies the rounds cannot tell from the
    leader, then each of the rest with the leader's lead over it (the geometric mean of the
    per-round ratios, from the parquet rows)."""
    run_dir = make_run("rounds", event_time=(W,), reps=8,
                       throughput_factor={"none": 1.0, "full_snapshot": 1.0, "timer": 0.6,
                                          "compaction_filter": 0.4, "incremental": 0.4})
    _record_rounds(run_dir, 8)
    rows = _rows(run_dir)
    found = _row(run_dir, "rocksdb").picks["fastest"]  # none, full_snapshot, timer, c_f
    assert found is not None and found.decided and not found.separated
    assert {k.strategy for k in found.leaders} == {"none", "full_snapshot"}
    headline, separated, why = cell_text(found)
    assert not separated and "paired rounds" in why

    def lead(slower: str) -> float:
        best = np.array(_throughput(rows, "rocksdb", found.best.strategy))
        other = np.array(_throughput(rows, "rocksdb", slower))
        return float(np.exp(np.mean(np.log(best / other))))

    first, second = (k.strategy for k in found.leaders)
    assert headline.startswith(f"{first} and {second} (lead ")
    assert headline.endswith(f"ahead of timer {lead('timer'):.3g}\u00d7 and compaction_filter "
                             f"{lead('compaction_filter'):.3g}\u00d7")
    html = unescape(report_html(load_run(run_dir)))
    table = html[html.index(f'<table class="decision" data-workload="{W}">'):]
    cell = re.search(r'<tr data-backend="rocksdb">.*?<td data-cell="fastest" '
                     r'data-separated="(\w+)"><span class="pick">(.*?)</span>', table)
    assert cell is not None and cell.groups() == ("group", headline)


def test_a_recommendation_says_how_many_outputs_its_ttl_changed(logical_run: Path) -> None:
    """An operator workload measures ``ttl_changed_results``: the recommended strategy's share
    is in its sentence, never left for the detail."""
    heap = _row(logical_run, "heap")
    rec = heap.recommended
    assert rec is not None and "outputs" not in heap.tradeoff.text
    table = pq.read_table(logical_run / "rows.parquet")
    rows = table.to_pylist()
    extra = [dict(r, metric="ttl_changed_results", value=0.691, unit="share")
             for r in rows if (r["workload"], r["backend"], r["metric"], r["task"]) ==
             (W, "heap", "records_per_s", -1) and r["strategy"] == rec.strategy]
    assert extra
    pq.write_table(pa.Table.from_pylist(rows + extra, schema=table.schema),
                   logical_run / "rows.parquet")
    heap = _row(logical_run, "heap")
    assert heap.recommended == rec
    assert "changes 69.1% of the operator's outputs" in heap.tradeoff.text
    assert heap.tradeoff.text.endswith(".") and ". " not in heap.tradeoff.text
