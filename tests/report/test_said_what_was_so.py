"""The report and the CLI's summary say only what was so (reliability: "the report and the
summary saying what was not so").

1. Every sentence names a lane's real engine, the lane registry's (``workloads.lanes``), for
   any number of engines: Spark's lanes were "Flink's lanes", and a Spark lane beside
   statebench's was introduced as "statebench's"; Flink SQL's jobs were ranked with Flink's
   keyed backends.
2. What was measured is shown, under its own name: spark-sql's peak state (Spark's state store
   rows) read "not measured", the CLI's checkpoint column "-" for Spark's lanes (they measure
   their checkpoint folder).
3. A recommendation claims only what its cells decided: on spark-tws (no ``none``) the fastest
   of strategies whose state nothing separated "kept the smallest peak state", with a larger
   number than another strategy's; a tied leader "kept fewer entries than none" untested; a
   TTL sweep named "the smallest state" its cell had not separated; equal peaks were one
   strategy's "smallest"; the repetitions hint spoke of throughput for another cell.
4. Repetitions stay apart: a job lane writes its per-batch (Spark) or per-checkpoint (Flink
   SQL) rows in every repetition with the batch or checkpoint id as the step, and the
   summaries averaged the repetitions step by step into one series, so a decision read "one
   number per run" although two repetitions ran, a diff "n=1", and the real engine section's
   "peak checkpoint (repetition 0)" was the peak of an average.

Runs are written from synthetic rows, the lanes named as a run names them; no engine runs.
"""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workloads.cli.display import summary_table
from workloads.lanes import ENGINE_TITLES, ENGINES
from workloads.report.decision import decisions, fastest_per_engine, repetitions_hint
from workloads.report.engines import backend_label, engine_of, is_reference
from workloads.report.findings import findings
from workloads.report.front import decision_table
from workloads.report.load import ScenarioKey, load_run
from workloads.report.real_engine import CHECKPOINT, real_pairs
from workloads.report.stats import stat
from workloads.report.verdict import Side, judge
from workloads.results.summaries import split_repetitions, summaries

W = "w"
UNITS = {"records_per_s": "records/s", "latency_p99_us": "us", "expired_returned": "count",
         "ttl_changed_results": "share",
         "live_entries": "entries", "expired_present_entries": "entries",
         "physical_bytes": "bytes", "state_rows": "rows", "checkpoint_dir_bytes": "bytes",
         "checkpoint_uploaded_bytes": "bytes", "checkpoint_bytes": "bytes"}


class Rows:
    """Metric rows in the order a run writes them (job after job, round after round)."""

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, backend: str, strategy: str, metric: str, step: int, t: int,
            value: float, task: int = -1) -> Rows:
        self.rows.append({"run_id": "x", "scenario": f"{W}/{backend}/{strategy}",
                          "backend": backend, "strategy": strategy, "workload": W,
                          "task": task, "step": step, "logical_time_ms": t, "metric": metric,
                          "value": float(value), "unit": UNITS[metric]})
        return self

    def summary(self, backend: str, strategy: str, metric: str, *values: float) -> Rows:
        """One value per repetition (step = repetition, no time)."""
        for rep, v in enumerate(values):
            self.add(backend, strategy, metric, rep, -1, v)
        return self

    def series(self, backend: str, strategy: str, metric: str, values: list[float],
               first_step: int = 0) -> Rows:
        """One repetition's samples (step = sample or batch id, a time each)."""
        for i, v in enumerate(values):
            self.add(backend, strategy, metric, first_step + i, 100 * (first_step + i), v)
        return self

    def table(self) -> pa.Table:
        return pa.Table.from_pylist(self.rows)

    def write(self, folder: Path, clock: str = "ProcessingTime", meta: dict | None = None,
              **spec_keys: object) -> Path:
        folder.mkdir(parents=True)
        pq.write_table(self.table(), folder / "rows.parquet")
        spec = {"name": W, "state": {"time_characteristic": clock, "ttl_ms": 1000}, **spec_keys}
        doc = {"run_id": "x", "spec": spec, **(meta or {})}
        (folder / "run.json").write_text(json.dumps(doc), "utf-8")
        return folder


def _row(run_dir: Path, backend: str):
    rows = decisions(load_run(run_dir), W)
    return next(r for engine in rows.values() for r in engine if r.backend == backend)


# ------------------------------------------------------------------ 1. the lane's real engine
def _lanes_run(folder: Path, backends: tuple[str, ...]) -> Path:
    rows = Rows()
    strategies = {"heap": ("none", "timer"), "flink-rocksdb": ("none", "compaction_filter"),
                  "flink-sql": ("none",), "spark-tws": ("spark_ttl", "spark_timer"),
                  "spark-sql": ("spark_watermark",)}
    rate = {"heap": 1000.0, "flink-rocksdb": 5000.0, "flink-sql": 9000.0, "spark-tws": 300.0,
            "spark-sql": 200.0}
    for backend in backends:
        for i, strategy in enumerate(strategies[backend]):
            rows.summary(backend, strategy, "records_per_s", rate[backend] * (1 + i / 10))
            rows.series(backend, strategy, "physical_bytes", [100.0, 200.0 * (i + 1)])
    return rows.write(folder)


def test_each_engine_is_named_as_the_lane_registry_names_it(tmp_path: Path) -> None:
    both = load_run(_lanes_run(tmp_path / "heap-spark", ("heap", "spark-sql")))
    text = fastest_per_engine(both, W).text  # type: ignore[union-attr]
    assert text.startswith("Fastest on statebench's lanes: heap/")
    assert "for context, on Spark's: spark-sql/spark_watermark" in text
    assert "on statebench's: spark" not in text and "Python and JVM" not in text
    assert "statebench's Python lanes and Spark's Structured Streaming queries differ" in text

    only_spark = load_run(_lanes_run(tmp_path / "spark", ("spark-tws",)))
    text = fastest_per_engine(only_spark, W).text  # type: ignore[union-attr]
    assert text.startswith("Fastest on Spark's lanes: spark-tws/") and "Flink" not in text

    # any number of engines: Flink SQL's jobs are not ranked with Flink's keyed backends
    every = load_run(_lanes_run(tmp_path / "all",
                                ("heap", "flink-rocksdb", "flink-sql", "spark-tws")))
    text = fastest_per_engine(every, W).text  # type: ignore[union-attr]
    assert "for context, on Flink's: flink-rocksdb/" in text
    assert "for context, on Flink SQL's: flink-sql/none" in text
    assert "for context, on Spark's: spark-tws/" in text
    assert list(decisions(every, W)) == ["statebench", "flink", "flink-sql", "spark"]
    table = decision_table(every, W)
    groups = [table.index(f'data-engine="{e}"') for e in ("statebench", "flink", "flink-sql",
                                                           "spark")]
    assert groups == sorted(groups) and "Spark (Structured Streaming queries)" in unescape(table)
    pareto = [s.text for s in findings(every)[W] if s.text.startswith("Pareto-optimal")]
    assert [p.split(" on ", 1)[1].split(":")[0] for p in pareto] == [
        "statebench's lanes", "Flink's lanes (context)", "Flink SQL's lanes (context)",
        "Spark's lanes (context)"]
    assert "spark-tws" not in " ".join(pareto[:3]) and "spark-tws/" in pareto[3]


def test_engines_come_from_the_registry_not_from_names() -> None:
    assert set(ENGINE_TITLES) == set(ENGINES)  # every engine has its name in the registry
    assert [engine_of(b) for b in ("heap", "flink-forst-async", "flink-sql-heap",
                                   "spark-tws-nochangelog", "spark-sql")] == [
        "statebench", "flink", "flink-sql", "spark", "spark"]
    assert backend_label("spark-tws") == "spark-tws · Spark (reference)"
    assert backend_label("flink-sql") == "flink-sql · Flink SQL (reference)"
    # a backend no lane has is nobody's: not statebench's, not a reference of any engine
    assert engine_of("spark-unknown") == "unregistered" and not is_reference("spark-unknown")
    assert backend_label("flink-old") == "flink-old"


# ------------------------------------------------------------------ 2. measured, under its name
def _spark_sql_run(folder: Path) -> Path:
    rows = Rows().summary("spark-sql", "spark_watermark", "records_per_s", 150.0)
    rows.series("spark-sql", "spark_watermark", "state_rows", [50.0, 487.0, 90.0])
    rows.series("spark-sql", "spark_watermark", "checkpoint_dir_bytes", [2e4, 9e4, 6e4])
    rows.series("spark-sql", "spark_watermark", "checkpoint_uploaded_bytes", [2e4, 7e4, 0.0])
    return rows.write(folder)


def test_spark_sqls_state_rows_are_its_peak_state_named_as_rows(tmp_path: Path) -> None:
    run_dir = _spark_sql_run(tmp_path / "r")
    row = _row(run_dir, "spark-sql")
    state = row.picks["state"]
    assert state is not None and state.metric == "state_rows"  # was None: "not measured"
    html = unescape(decision_table(load_run(run_dir), W))
    assert "only spark_watermark ran (487 state store rows)" in html
    assert "not measured" not in html
    said = [s.text for s in findings(load_run(run_dir))[W]]
    assert any("spark_watermark keeps the smallest peak state (487 state store rows)" in t
               for t in said)


def _outcome(rows: Rows, backends: tuple[str, ...], strategies: tuple[str, ...]):
    spec = SimpleNamespace(name=W, operator=None)
    config = SimpleNamespace(spec=spec, backends=backends, strategy_labels=strategies,
                             parallelism=2)
    return SimpleNamespace(rows=rows.table(), config=config, not_applicable=[],
                           facts=SimpleNamespace(events=1000), engine="in-process")


def test_the_cli_summary_shows_what_spark_measured_under_its_own_name() -> None:
    rows = Rows()
    rows.summary("heap", "none", "records_per_s", 1000.0)
    rows.summary("heap", "none", "latency_p99_us", 250.0)
    rows.series("heap", "none", "live_entries", [10.0, 40.0])
    rows.series("heap", "none", "expired_present_entries", [0.0, 5.0])
    rows.series("heap", "none", "checkpoint_bytes", [3000.0, 5000.0], first_step=1)
    rows.summary("spark-tws", "spark_ttl", "records_per_s", 120.0)
    rows.series("spark-tws", "spark_ttl", "checkpoint_dir_bytes", [1e4, 3e4, 2e4])
    rows.summary("spark-sql", "spark_watermark", "records_per_s", 150.0)
    rows.series("spark-sql", "spark_watermark", "state_rows", [50.0, 487.0, 90.0])
    rows.series("spark-sql", "spark_watermark", "checkpoint_dir_bytes", [2e4, 9e4, 6e4])
    text = summary_table(_outcome(rows, ("heap", "spark-tws", "spark-sql"),
                                  ("none", "spark_ttl", "spark_watermark")))
    lines = {line.split()[0]: line for line in text.splitlines()[3:] if line.split()}
    assert "45" in lines["heap"] and "4.00 kB" in lines["heap"]  # statebench's, unnamed
    assert "20.0 kB folder" in lines["spark-tws"]  # the folder's median, named
    assert "487 state rows" in lines["spark-sql"] and "60.0 kB folder" in lines["spark-sql"]
    assert lines["spark-sql"].split()[3] == "-"  # no per-record latency: not measured
    assert "state rows: Spark's state store rows" in text
    assert "folder: the state store's files in Spark's checkpoint (state/**" in text


# ------------------------------------------------------------------ 3. no claim without evidence
def test_no_recommendation_claims_a_smallest_state_its_cell_did_not_decide(
        tmp_path: Path) -> None:
    rows = Rows()
    peaks = {"spark_no_ttl": 2.0, "spark_ttl": 2.0, "spark_timer": 1.0}
    rates = {"spark_no_ttl": 200.0, "spark_ttl": 120.0, "spark_timer": 150.0}
    for strategy, peak in peaks.items():
        rows.summary("spark-tws", strategy, "records_per_s", rates[strategy])
        rows.summary("spark-tws", strategy, "expired_returned",
                     3.0 if strategy == "spark_timer" else 0.0)
        rows.series("spark-tws", strategy, "live_entries", [0.0, peak, 0.0])
        rows.series("spark-tws", strategy, "expired_present_entries", [0.0, 0.0, 0.0])
    row = _row(rows.write(tmp_path / "r"), "spark-tws")
    state = row.picks["state"]
    assert state is not None and not state.decided  # one number per run: not separated
    assert row.recommended is None
    text = row.tradeoff.text
    assert text.startswith("No recommendation: the evidence does not separate the strategies' "
                           "peak state") and "smallest" not in text


def test_a_decided_cell_names_its_leader_and_what_it_is_ahead_of(tmp_path: Path) -> None:
    rows = Rows()  # exact counts (spark-sql's state rows): every difference separates
    for strategy, peak in (("spark_watermark", 300.0), ("spark_watermark(x=2)", 900.0)):
        rows.summary("spark-sql", strategy, "records_per_s", 100.0)
        rows.series("spark-sql", strategy, "state_rows", [10.0, peak])
    row = _row(rows.write(tmp_path / "r", clock="EventTime"), "spark-sql")
    assert row.recommended is not None and row.recommended.strategy == "spark_watermark"
    assert ("keeps the smallest peak state (300 state store rows), ahead of "
            "spark_watermark(x=2) 3\u00d7 (exact)") in row.tradeoff.text  # the cell's words


def test_a_ttl_sweep_names_no_smallest_state_its_cell_did_not_separate(
        tmp_path: Path) -> None:
    """A paced TTL sweep: its peak state is one timing-dependent number per run, so the state
    cell separates no TTL, and the trade-off names none as "the smallest state"."""
    rows = Rows()
    labels = ("ttl(ms=100)", "ttl(ms=4000)")
    for strategy, peak, changed in (("none", 50.0, None), (labels[0], 10.0, 0.2),
                                    (labels[1], 30.0, 0.0)):
        rows.summary("heap", strategy, "records_per_s", 100.0)
        rows.series("heap", strategy, "live_entries", [1.0, peak])
        rows.series("heap", strategy, "expired_present_entries", [0.0, 0.0])
        if changed is not None:
            rows.summary("heap", strategy, "ttl_changed_results", changed)
    sweep = {"strategy": "ttl", "knob": "ms", "values": [100, 4000], "labels": list(labels)}
    row = _row(rows.write(tmp_path / "r", meta={"sweep": sweep}), "heap")
    assert row.picks["state"] is not None and not row.picks["state"].decided
    assert row.recommended is None
    text = row.tradeoff.text
    assert text.startswith("State against results: ")  # the trade-off is still stated
    assert "The smallest state that changes no output" not in text
    assert "no smallest state to recommend" in text


# ------------------------------------------------------------------ 4. repetitions kept apart
def _spark_tws_two_rounds(folder: Path) -> Path:
    """spark-tws in two rounds: each strategy's per-batch checkpoint rows with the batch id as
    their step in both (16 batches, then 16 from batch 1: 32 rows on 17 steps)."""
    rows = Rows()
    first = {"spark_ttl": np.full(16, 1000.0), "spark_timer": np.full(16, 4000.0)}
    second = {"spark_ttl": np.full(16, 3000.0), "spark_timer": np.full(16, 8000.0)}
    for rnd, uploads in enumerate((first, second)):
        for strategy in ("spark_ttl", "spark_timer")[:: 1 if rnd == 0 else -1]:
            rows.add("spark-tws", strategy, "records_per_s", rnd, -1, 100.0 + rnd)
            rows.series("spark-tws", strategy, "checkpoint_uploaded_bytes",
                        list(uploads[strategy]), first_step=rnd)
    return rows.write(folder)


def test_per_batch_rows_of_two_repetitions_are_two_repetitions(tmp_path: Path) -> None:
    run_dir = _spark_tws_two_rounds(tmp_path / "r")
    run = load_run(run_dir)
    key = ScenarioKey(W, "spark-tws", "spark_ttl")
    samples = run.get(key, "checkpoint_uploaded_bytes")
    assert samples is not None and len(samples.repetitions) == 2
    assert [r.values.tolist() for r in samples.repetitions] == [[1000.0] * 16, [3000.0] * 16]
    assert [r.steps.tolist() for r in samples.repetitions] == [list(range(16)),
                                                                list(range(1, 17))]
    assert samples.values.tolist() == [1000.0] * 16  # what the plots show: the first
    found = stat(run, key, "checkpoint_uploaded_bytes")
    assert found is not None and found.n == 2 and found.per_repetition
    assert (found.lo, found.center, found.hi) == (1000.0, 2000.0, 3000.0)
    assert found.basis == "median over checkpoints, median of 2 repetitions"
    # the CLI's summaries are the same numbers
    cli = summaries(pq.read_table(run_dir / "rows.parquet"))[key]["checkpoint_uploaded_bytes"]
    assert (cli.n, cli.center) == (2, 2000.0)
    # the decision has one number per repetition: it says how many, never "one per run"
    cell = _row(run_dir, "spark-tws").picks["checkpoint"]
    assert cell is not None and "one number per run" not in cell.why
    assert "n=2 vs 2" in cell.why


def test_flink_sqls_checkpoints_of_each_repetition_stay_apart() -> None:
    rows = Rows()
    for size in (1000.0, 2000.0, 6000.0):  # every job's checkpoint ids are 1..4
        rows.series("flink-sql", "none", "checkpoint_bytes", [size] * 4, first_step=1)
    found = summaries(rows.table())[ScenarioKey(W, "flink-sql", "none")]["checkpoint_bytes"]
    assert (found.n, found.center, found.lo, found.hi) == (3, 2000.0, 1000.0, 6000.0)


def test_the_real_jobs_peak_checkpoint_is_each_repetitions_peak(tmp_path: Path) -> None:
    """The real engine section's peak checkpoint: the Flink SQL job writes its checkpoints (ids
    1..3) in both repetitions; its peak is the median of the two repetitions' peaks, with
    their range, not the peak of the two averaged step by step."""
    rows = Rows()
    for sizes in ([100.0, 900.0, 200.0], [700.0, 100.0, 500.0]):
        rows.series("flink-sql", "s", "checkpoint_bytes", sizes, first_step=1)
    rows.series("flink-rocksdb", "s", "checkpoint_bytes", [300.0, 600.0], first_step=1)
    run = load_run(rows.write(tmp_path / "r", "EventTime",
                              operator={"kind": "regular_join"}))
    (pair,) = real_pairs(run, W, bands={})
    ckpt = next(m for m in pair.measures if m.name == CHECKPOINT)
    assert ckpt.real is not None and ckpt.emulated is not None
    # peaks 900 and 700: median 800 over 2 repetitions (averaged steps gave 500)
    assert (ckpt.real.value, ckpt.real.lo, ckpt.real.hi, ckpt.real.reps) == (
        800.0, 700.0, 900.0, 2)
    assert ckpt.emulated.value == 600.0


def test_a_diff_of_one_run_each_tests_the_repetitions(tmp_path: Path) -> None:
    def run(name: str, sizes: tuple[float, ...]) -> Path:
        rows = Rows()
        for size in sizes:
            rows.series("spark-tws", "spark_ttl", "checkpoint_uploaded_bytes", [size] * 5,
                        first_step=1)
        return rows.write(tmp_path / name)

    a = load_run(run("a", (1000.0, 1100.0, 1050.0)))
    b = load_run(run("b", (5000.0, 5200.0, 5100.0)))
    verdict = judge(Side.of("A", a), Side.of("B", b), ScenarioKey(W, "spark-tws", "spark_ttl"),
                    "checkpoint_uploaded_bytes")
    assert "n=1" not in verdict.note and "n=3 vs 3" in verdict.note


@pytest.mark.parametrize(("rows", "parts"), [
    # one repetition, two tasks: each task's steps restart, nothing repeats on one task
    ([(0, 0, 0, 1.0), (0, 1, 1, 1.0), (1, 0, 0, 1.0), (1, 1, 1, 1.0)], [4]),
    # two repetitions of one task, the second longer
    ([(-1, 0, 0, 1.0), (-1, 1, 1, 1.0), (-1, 0, 0, 2.0), (-1, 1, 1, 2.0), (-1, 2, 2, 2.0)],
     [2, 3]),
    # the second starts after the first's first step (32 rows on 17 steps, as reported)
    ([(-1, s, s, 1.0) for s in range(16)] + [(-1, s, s, 2.0) for s in range(1, 17)], [16, 16]),
])
def test_split_repetitions(rows: list[tuple[int, int, int, float]], parts: list[int]) -> None:
    assert [len(p) for p in split_repetitions(rows)] == parts


def test_a_tied_leader_is_not_said_to_keep_less_than_none_unless_told_from_it(
        tmp_path: Path) -> None:
    """Peak state of six repetitions each (a lane that writes its series in every repetition;
    ProcessingTime: timing-dependent, so tested): ``a`` is ahead of ``none``; ``b`` is tied
    with ``a`` and faster, so recommended, but its own state is not told from none's: the
    sentence gives the group's lead over none (the state cell's words and fold), never b's
    own, and no second test of b against none (issue 41: one answer per question)."""
    rows = Rows()
    peaks = {"none": [40.0, 41.0] * 3, "a": [10.0, 11.0] * 3, "b": [10.0, 60.0] * 3}
    rates = {"none": 100.0, "a": 100.0, "b": 300.0}
    for rep in range(6):
        for strategy in ("none", "a", "b"):
            rows.add("heap", strategy, "records_per_s", rep, -1, rates[strategy])
            rows.series("heap", strategy, "live_entries", [1.0, peaks[strategy][rep]])
            rows.series("heap", strategy, "expired_present_entries", [0.0, 0.0])
    row = _row(rows.write(tmp_path / "r"), "heap")
    state = row.picks["state"]
    assert state is not None and state.best.strategy == "a"
    assert [k.strategy for k in state.tied] == ["b"] and [k.strategy for k, _ in state.behind] \
        == ["none"]
    assert row.recommended is not None and row.recommended.strategy == "b"
    text = row.tradeoff.text
    assert "fewer stored entries than none" not in text
    assert text.startswith("b (the fastest of a, b, whose peak state the evidence does not "
                           "separate) is in the group with the smallest peak state, led by a "
                           "(10.5), ahead of none 3.86\u00d7")
    assert text.endswith("; the fastest.")  # b alone leads its Fastest cell


def test_equal_peaks_are_not_one_strategys_smallest(tmp_path: Path) -> None:
    rows = Rows()
    for strategy, peak in (("none", 80.0), ("timer", 50.0), ("incremental", 50.0)):
        rows.summary("heap", strategy, "records_per_s", 100.0)
        rows.series("heap", strategy, "live_entries", [1.0, peak])
        rows.series("heap", strategy, "expired_present_entries", [0.0, 0.0])
    said = [s.text for s in findings(load_run(rows.write(tmp_path / "r", "EventTime")))[W]]
    state = next(t for t in said if "smallest peak state" in t)
    assert state.startswith("On heap, incremental and timer keep the same smallest peak state")


def test_the_repetitions_hint_speaks_of_throughput_only_when_throughput_needs_it(
        tmp_path: Path) -> None:
    """Four repetitions separate throughput (the rank test's smallest p 0.029); one job wrote
    no checkpoint rows, so that cell compares 3 against 4 repetitions and cannot reach p<0.05.
    No line then tells the reader that throughput needs more repetitions (a guard of the
    per-repetition checkpoints above: the old code had no such cell)."""
    rows = Rows()
    for rep in range(4):
        for strategy, rate, size in (("spark_ttl", 100.0, 1000.0), ("spark_timer", 200.0,
                                                                     5000.0)):
            rows.add("spark-tws", strategy, "records_per_s", rep, -1, rate + rep)
            if not (strategy == "spark_ttl" and rep == 3):
                rows.series("spark-tws", strategy, "checkpoint_uploaded_bytes",
                            [size + rep] * 3, first_step=1)
    run_dir = rows.write(tmp_path / "r")
    row = _row(run_dir, "spark-tws")
    assert row.picks["fastest"] is not None and row.picks["fastest"].separated
    cell = row.picks["checkpoint"]
    assert cell is not None and "cannot reach p<" in cell.why and "n=4 vs 3" in cell.why
    assert repetitions_hint(load_run(run_dir), W) is None
