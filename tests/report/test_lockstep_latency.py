"""A Flink SQL job's latency under event time is lockstep latency: the job holds each record
until its keyed tasks took the one before (``SqlJob.Lockstep``), so a job that cannot keep up
falls further behind and its percentiles measure that, not the engine (docs/operators.md,
"What it costs"). The report marks those numbers, with how far the job fell behind, and
compares them with no other number; the same numbers under ProcessingTime read as before.

The runs are synthetic: an ``[operator]`` workload on ``flink-sql`` (the real job) beside
``flink-rocksdb`` (the emulation), strategies ``none`` and ``compaction_filter``, the spec's
clock EventTime or ProcessingTime.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workloads.lanes import register_lane, unregister_lane
from workloads.lanes.base import Lane
from workloads.report.decision import decide
from workloads.report.findings import findings
from workloads.report.load import Run, ScenarioKey, load_run
from workloads.report.metrics import LOCKSTEP, PER_RECORD_LATENCY, lockstep_latency
from workloads.report.render import report_html
from workloads.report.tables import scenario_cell, summary_tables

W = "q20"
EVENT, PROCESSING = "EventTime", "ProcessingTime"
#: Per lane and strategy, summary metrics per repetition.
LATENCY = {"latency_p50_us": 900_000.0, "latency_p99_us": 2_500_000.0,
           "latency_p999_us": 2_700_000.0, "latency_max_us": 2_800_000.0}
UNITS = {"records_per_s": "records/s", "late_records_share": "share",
         "schedule_lag_max_ms": "ms", "estimated_entries": "entries",
         "live_entries": "entries", "ttl_run_valid": "flag", **dict.fromkeys(LATENCY, "us")}


def _summary(scale: float, late: bool) -> dict[str, list[float]]:
    """Three repetitions of one scenario's numbers; ``scale`` slows it (more latency)."""
    out = {"records_per_s": [5000.0 / scale, 5100.0 / scale, 4900.0 / scale],
           **{m: [v * scale, v * scale * 1.01, v * scale * 0.99] for m, v in LATENCY.items()}}
    if late:  # the real job's own numbers of how far it fell behind
        out |= {"late_records_share": [0.98, 0.97, 0.99],
                "schedule_lag_max_ms": [2800.0 * scale, 2790.0 * scale, 2810.0 * scale]}
    return out


#: backend -> strategy -> (summary metrics, peak state metric and its peak).
LANES_RUN = {
    "flink-sql": {"none": (_summary(1.0, True), "estimated_entries", 9000.0),
                  "compaction_filter": (_summary(1.3, True), "estimated_entries", 3000.0)},
    "flink-rocksdb": {"none": (_summary(1.0, False), "live_entries", 9000.0),
                      "compaction_filter": (_summary(1.3, False), "live_entries", 3000.0)},
}


def _write(folder: Path, clock: str, lanes: dict = LANES_RUN, sweep: bool = False,
           invalid: tuple[str, str] | None = None) -> Path:
    """rows.parquet and run.json of one run under ``clock``; ``invalid``: a (backend,
    strategy) whose lane marked its TTL run invalid (``ttl_run_valid`` 0)."""
    rows = []

    def add(b: str, s: str, step: int, t: int, metric: str, value: float) -> None:
        rows.append({"workload": W, "backend": b, "strategy": s, "task": -1, "step": step,
                     "logical_time_ms": t, "metric": metric, "value": value,
                     "unit": UNITS[metric]})

    for backend, by_strategy in lanes.items():
        for strategy, (summary, state, peak) in by_strategy.items():
            for metric, values in summary.items():
                for rep, v in enumerate(values):
                    add(backend, strategy, rep, -1, metric, v)
            for step, share in enumerate((0.2, 1.0, 0.6)):  # a series: its peak is ``peak``
                add(backend, strategy, step, 1000 * step, state, round(peak * share))
            if (backend, strategy) == invalid:
                add(backend, strategy, 0, -1, "ttl_run_valid", 0.0)
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "rows.parquet")
    spec = {"name": W, "operator": {"kind": "regular_join"},
            "state": {"time_characteristic": clock, "ttl_ms": 2000},
            "checkpoints": {"mode": "full"}}
    meta: dict = {"run_id": folder.name, "spec": spec,
                  "config": {"backends": list(lanes), "repetitions": 3,
                             "strategies": ["none", "compaction_filter"]}}
    if sweep:
        meta["sweep"] = {"strategy": "compaction_filter", "knob": "x", "values": [1, 2],
                         "labels": ["none", "compaction_filter"]}
    (folder / "run.json").write_text(json.dumps(meta), "utf-8")
    return folder


@pytest.fixture(params=[EVENT, PROCESSING])
def clock(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _cells(html: str, group: str, backend: str) -> dict[str, str]:
    """metric -> the cell (its attributes and text) of ``backend``'s first row in the table
    of ``group``."""
    table = re.search(rf'data-group="{group}".*?</table>', html, re.S)
    assert table is not None, group
    row = re.search(rf'<tr data-backend="{backend}".*?</tr>', table.group(0), re.S)
    assert row is not None, backend
    return dict(re.findall(r'data-metric="([a-z_0-9]+)"([^>]*>.*?)</td>', row.group(0), re.S))


def _findings_text(run: Run) -> str:
    return " ".join(unescape(s.text) for s in findings(run)[W])


# ------------------------------------------------------------------------ the lane's own fact


def test_the_lane_says_its_event_time_latency_is_lockstep() -> None:
    for lane in ("flink-sql", "flink-sql-heap"):
        assert all(lockstep_latency(m, lane, EVENT) for m in PER_RECORD_LATENCY)
        assert not any(lockstep_latency(m, lane, PROCESSING) for m in PER_RECORD_LATENCY)
        assert not lockstep_latency("records_per_s", lane, EVENT)  # only the latency rows
    for lane in ("flink-rocksdb", "heap", "spark-tws", "an-older-runs-lane"):
        assert not lockstep_latency("latency_p99_us", lane, EVENT)


def test_it_is_asked_of_the_lane_not_of_its_name() -> None:
    """A lane under any name that says it runs in lockstep is marked; one that does not,
    even of the flink-sql engine, is not."""
    class Throwaway(Lane):
        name, engine, event_time_lockstep = "a-lockstep-lane", "flink-sql", True

    class Free(Lane):
        name, engine = "flink-sql-not-lockstep", "flink-sql"

    for lane in (Throwaway(), Free()):
        register_lane(lane)
    try:
        assert lockstep_latency("latency_p50_us", "a-lockstep-lane", EVENT)
        assert not lockstep_latency("latency_p50_us", "flink-sql-not-lockstep", EVENT)
    finally:
        unregister_lane("a-lockstep-lane")
        unregister_lane("flink-sql-not-lockstep")


# ------------------------------------------------------------------------------- the tables


def test_event_time_latency_cells_say_what_they_measure(tmp_path: Path) -> None:
    run = load_run(_write(tmp_path / "r", EVENT))
    html = summary_tables(run, W)
    real = _cells(html, "latency", "flink-sql")
    emulated = _cells(html, "latency", "flink-rocksdb")
    assert set(real) >= set(LATENCY)
    for metric in LATENCY:
        assert 'data-lockstep="true"' in real[metric]
        # the run's own figures of how far it fell behind: 98% late, up to 2.8 s
        assert f"{LOCKSTEP} (98.0% of records late, up to 2.80 s behind)" in unescape(real[metric])
        assert "data-lockstep" not in emulated[metric] and "lockstep" not in emulated[metric]
    throughput = _cells(html, "throughput", "flink-sql")["records_per_s"]
    assert "data-lockstep" not in throughput  # throughput is the engine's
    # one line under the latency table: what it is and that nothing ranks it
    note = re.search(r'data-group="latency".*?</table></div>(<p class="lockstep-note".*?</p>)',
                     html, re.S)
    assert note is not None
    text = unescape(note.group(1))
    assert "flink-sql · Flink SQL (reference)" in text and "flink-rocksdb" not in text
    assert "ranks it against no other lane's latency" in text
    assert html.count('class="lockstep-note"') == 1  # the latency table's only


def test_processing_time_latency_cells_are_as_before(tmp_path: Path) -> None:
    run = load_run(_write(tmp_path / "r", PROCESSING))
    html = summary_tables(run, W)
    real = _cells(html, "latency", "flink-sql")
    assert set(real) >= set(LATENCY)
    assert "lockstep" not in html
    assert ">2.50 s<" in real["latency_p99_us"]  # the number itself, shown as before


def test_the_marked_cell_is_every_tables_cell(tmp_path: Path) -> None:
    """scenario_cell is the cell any table of scenarios shows (the cross-engine table can take
    it): marked under EventTime only."""
    key = ScenarioKey(W, "flink-sql", "none")
    for clock, marked in ((EVENT, True), (PROCESSING, False)):
        run = load_run(_write(tmp_path / clock, clock))
        assert ("data-lockstep" in scenario_cell(run, key, "latency_p99_us")) is marked
        assert "data-lockstep" not in scenario_cell(run, key, "records_per_s")


def test_the_rendered_page_marks_it(tmp_path: Path) -> None:
    event = report_html(load_run(_write(tmp_path / "e", EVENT)))
    processing = report_html(load_run(_write(tmp_path / "p", PROCESSING)))
    assert 'class="lockstep-note"' in event and LOCKSTEP in unescape(event)
    assert 'class="lockstep-note"' not in processing and LOCKSTEP not in unescape(processing)


# ----------------------------------------------------------------------- findings, decision


def test_findings_compare_no_lockstep_latency(tmp_path: Path) -> None:
    """The state finding's cost against ``none`` leaves the real job's p99 latency out under
    EventTime, and says so; the emulated lane's latency is compared as before."""
    text = _findings_text(load_run(_write(tmp_path / "r", EVENT)))
    real = next(s for s in text.split("On ") if s.startswith("flink-sql") and "peak state" in s)
    emulated = next(s for s in text.split("On ") if s.startswith("flink-rocksdb")
                    and "peak state" in s)
    assert f"p99 latency not compared ({LOCKSTEP})" in real
    assert "higher p99 latency" not in real and "the p99 latency" not in real
    assert "throughput" in real  # the rest of the cost stays
    assert "p99 latency" in emulated and "not compared" not in emulated


def test_findings_under_processing_time_compare_it_as_before(tmp_path: Path) -> None:
    text = _findings_text(load_run(_write(tmp_path / "r", PROCESSING)))
    real = next(s for s in text.split("On ") if s.startswith("flink-sql") and "peak state" in s)
    assert "not compared" not in real and "30% higher p99 latency" in real


def test_a_sweep_finding_leaves_it_out(tmp_path: Path) -> None:
    for clock, marked in ((EVENT, True), (PROCESSING, False)):
        text = _findings_text(load_run(_write(tmp_path / clock, clock, sweep=True)))
        raising = next(s for s in text.split("On ") if s.startswith("flink-sql")
                       and "raising" in s)
        assert ("not compared" in raising) is marked
        assert ("higher p99 latency" in raising) is not marked


def test_an_invalid_runs_latency_figure_is_marked(tmp_path: Path) -> None:
    """The decision's line naming a run left out of the ranking shows its p50 latency; a
    lockstep job's says what it is."""
    for clock, marked in ((EVENT, True), (PROCESSING, False)):
        run = load_run(_write(tmp_path / clock, clock, invalid=("flink-sql", "none")))
        row = decide(run, W, "flink-sql")
        assert row is not None
        line = row.tradeoff.text
        assert "Not ranked" in line and "p50 latency 900 ms" in line
        assert (LOCKSTEP in line) is marked
