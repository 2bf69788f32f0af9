"""The throughput mode (``workloads.spark_throughput``, ``backends.spark.throughput``): the fit
recovers planted per-row and per-batch costs and its intervals cover at their stated rate
(pure Python), bad input is refused in one line before any work, and real queries on the
package's Spark session count every event in the batch the plan put it in."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from backends import tempdirs
from backends.spark.throughput import BatchFigure, QueryFigures, batch_figures, batch_plan
from workloads.spark_throughput import (
    Measured,
    bootstrap_interval,
    derived,
    fit_line,
    main,
)

SIZES = (1000, 4000, 16000)


def synthetic(per_batch_ms: float, per_row_ms: float, noise_ms: float, rounds: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    rows = np.array(SIZES * rounds, dtype=np.float64)
    return rows, per_batch_ms + per_row_ms * rows + rng.normal(0, noise_ms, len(rows))


# ------------------------------------------------------------------------------------------------
# The fit (pure Python)
# ------------------------------------------------------------------------------------------------


def test_fit_recovers_planted_costs_exactly_without_noise() -> None:
    rows = [1000, 4000, 16000, 4000, 1000]
    fit = fit_line(rows, [700 + 0.12 * r for r in rows])
    assert fit.per_batch_ms == pytest.approx(700, abs=1e-6)
    assert fit.per_row_ms == pytest.approx(0.12, abs=1e-9)
    assert fit.per_row_ci[0] == pytest.approx(0.12, abs=1e-6)  # no spread, no width
    assert fit.rows_per_s == pytest.approx(1000 / 0.12)


def test_fit_recovers_planted_costs_within_its_intervals() -> None:
    rng = np.random.default_rng(7)
    rows, durations = synthetic(900.0, 0.1, 60.0, rounds=5, rng=rng)
    fit = fit_line(rows, durations)
    assert fit.batches == 15
    assert fit.per_batch_ci[0] < 900 < fit.per_batch_ci[1]
    assert fit.per_row_ci[0] < 0.1 < fit.per_row_ci[1]
    assert abs(fit.per_row_ms - 0.1) < 0.01 and abs(fit.per_batch_ms - 900) < 80
    assert fit.residual_sd_ms == pytest.approx(60, rel=0.5)
    # a planted cost it must not find: its interval excludes twice the per-row cost
    assert not fit.per_row_ci[0] < 0.2 < fit.per_row_ci[1]


@pytest.mark.parametrize("rounds", [2, 4])
def test_intervals_cover_at_their_stated_rate(rounds: int) -> None:
    rng = np.random.default_rng(11 + rounds)
    trials = 2000
    rows_in = batch_in = 0
    for _ in range(trials):
        rows, durations = synthetic(800.0, 0.15, 250.0, rounds=rounds, rng=rng)
        fit = fit_line(rows, durations)
        rows_in += fit.per_row_ci[0] <= 0.15 <= fit.per_row_ci[1]
        batch_in += fit.per_batch_ci[0] <= 800 <= fit.per_batch_ci[1]
    # 95% stated; the binomial spread of 2000 trials is 0.005: within three of it
    for covered in (rows_in / trials, batch_in / trials):
        assert 0.935 <= covered <= 0.965, covered


def test_a_90_percent_interval_is_narrower_and_covers_less() -> None:
    rng = np.random.default_rng(3)
    inside, trials = 0, 1500
    for _ in range(trials):
        rows, durations = synthetic(800.0, 0.15, 250.0, rounds=3, rng=rng)
        wide, narrow = fit_line(rows, durations), fit_line(rows, durations, confidence=0.9)
        assert narrow.per_row_ci[1] - narrow.per_row_ci[0] < wide.per_row_ci[1] - wide.per_row_ci[0]
        inside += narrow.per_row_ci[0] <= 0.15 <= narrow.per_row_ci[1]
    assert 0.88 <= inside / trials <= 0.92


@pytest.mark.parametrize(("rows", "durations", "says"), [
    ([1000, 4000], [1.0, 2.0], "at least 3 batches"),
    ([4000, 4000, 4000], [1.0, 2.0, 3.0], "two different batch sizes"),
    ([1000, 4000, 16000], [1.0, 2.0], "one length"),
])
def test_fit_refuses_what_has_no_line(rows: list[int], durations: list[float],
                                      says: str) -> None:
    with pytest.raises(ValueError, match=says):
        fit_line(rows, durations)


def test_bootstrap_interval_of_a_share_covers_the_planted_share() -> None:
    rng = np.random.default_rng(5)
    slow = synthetic(900.0, 0.10, 40.0, rounds=4, rng=rng)
    fast = synthetic(700.0, 0.03, 40.0, rounds=4, rng=rng)
    lo, hi = bootstrap_interval([slow, fast], lambda s: 1 - s[1] / s[0], draws=500)
    assert lo < 0.7 < hi and hi - lo < 0.2
    # and one that excludes a planted share it should not find
    assert not lo < 0.4 < hi


def _figures(variant: str, per_row_ms: float, rng: np.random.Generator) -> Measured:
    rows, durations = synthetic(800.0, per_row_ms, 30.0, rounds=4, rng=rng)
    batches = [BatchFigure(i, int(r), int(r), float(d), float(d) * 0.8, 50.0, False)
               for i, (r, d) in enumerate(zip(rows, durations))]
    figures = QueryFigures(variant, "spark_no_ttl", batches, int(rows.sum()), int(rows.sum()))
    return Measured(figures, fit_line(rows, durations), fit_line(rows, durations * 0.8))


def test_derived_shares_name_what_the_variants_planted() -> None:
    rng = np.random.default_rng(9)
    measured = [_figures("python", 0.10, rng), _figures("python-nostate", 0.04, rng),
                _figures("python-reads", 0.14, rng), _figures("jvm", 0.02, rng)]
    shares = {s.name: s for s in derived(measured, extra_reads=2)}
    assert set(shares) == {"python_worker_share", "state_calls_share", "python_state_call_us"}
    assert shares["python_worker_share"].value == pytest.approx(0.8, abs=0.03)
    assert shares["state_calls_share"].value == pytest.approx(0.6, abs=0.05)
    assert shares["python_state_call_us"].value == pytest.approx(20, abs=3)
    for share in shares.values():
        assert share.ci[0] <= share.value <= share.ci[1]


def test_plan_drops_warm_up_then_rounds_of_every_size() -> None:
    plan = batch_plan(SIZES, batches=3, warm_up=4, seed=1)
    assert plan[:4] == [16000, 4000, 1000, 16000]
    rounds = [sorted(plan[4 + 3 * i: 7 + 3 * i]) for i in range(3)]
    assert rounds == [sorted(SIZES)] * 3
    assert batch_plan(SIZES, 3, 4, seed=1) == plan  # seeded


def test_batch_figures_refuse_sink_rows_that_are_not_the_plan() -> None:
    plan = [3, 2]
    progress = {i: {"batchId": i, "numInputRows": n, "durationMs": {"triggerExecution": 10,
                                                                   "addBatch": 5}}
                for i, n in enumerate(plan)}
    good = pa.table({"ord": [0, 1, 2, 3, 4], "t": [10, 10, 10, 20, 20], "r": [0] * 5})
    figures = batch_figures(progress, good, plan, warm_up=1)
    assert [(f.rows, f.warm_up) for f in figures] == [(3, True), (2, False)]
    # event 2 in the second batch: file 0's rows split over two batches
    bad = pa.table({"ord": [0, 1, 2, 3, 4], "t": [10, 10, 20, 20, 20], "r": [0] * 5})
    with pytest.raises(Exception, match="batch 0 output 2 rows"):
        batch_figures(progress, bad, plan, warm_up=1)
    with pytest.raises(Exception, match="3 batch timestamps"):
        batch_figures(progress, pa.table({"ord": [0, 1, 2, 3, 4], "t": [1, 2, 3, 3, 3],
                                          "r": [0] * 5}), plan, warm_up=0)


# ------------------------------------------------------------------------------------------------
# The command's refusals
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "says"), [
    (["sessions-churn", "--batch-rows", "1000"], "at least two different sizes"),
    (["sessions-churn", "--batch-rows", "1000,x"], "comma-separated whole numbers"),
    (["sessions-churn", "--batch-rows", "0,100"], "positive whole numbers"),
    (["sessions-churn", "--batches", "1"], "--batches must be at least 2"),
    (["sessions-churn", "--warm-up", "-1"], "--warm-up must be 0 or more"),
    (["sessions-churn", "--strategies", "spark_timer"], "--strategies spark_timer: known"),
    (["sessions-churn", "--variants", "python,rust"], "--variants rust: known"),
    (["sessions-churn", "--extra-reads", "0"], "--extra-reads must be at least 1"),
    (["sessions-churn", "--ttl-ms", "0"], "--ttl-ms must be at least 1"),
    (["sessions-churn", "--json", "/nonexistent-folder/out.json"], "not a file in an existing"),
    (["no-such-spec"], "spec file not found"),
    (["nexmark-q20-join"], "has an [operator] table"),
])
def test_bad_input_is_one_line_before_any_work(argv: list[str], says: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    before = set(tempdirs.live())
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("spark_throughput: ") and says in err, err
    assert set(tempdirs.live()) == before


def test_a_spec_without_ttl_is_refused_for_spark_ttl(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "no-ttl.toml"
    text = (Path(__file__).resolve().parents[2] / "workloads" / "specs"
            / "sessions-churn.toml").read_text()
    text = "\n".join(line for line in text.splitlines()
                     if not line.startswith(("ttl_ms", "strategies")))
    spec.write_text(text)
    assert main([str(spec), "--strategies", "spark_ttl"]) == 2
    assert "need a TTL" in capsys.readouterr().err


def test_the_jvm_processor_without_a_jdk_is_refused_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no javac on it
    assert main(["sessions-churn", "--variants", "python,jvm"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no `javac` was found" in err, err


# ------------------------------------------------------------------------------------------------
# Real queries
# ------------------------------------------------------------------------------------------------


def _settings(variants: str, strategies: str, batches: int = 3) -> Any:
    from workloads.spark_throughput import check, parser

    return check(parser().parse_args([
        "sessions-churn", "--batch-rows", "500,8000", "--batches", str(batches),
        "--warm-up", "2", "--variants", variants, "--strategies", strategies]))


@pytest.mark.slow
@pytest.mark.spark
def test_a_real_python_query_counts_every_event_and_a_positive_per_row_cost(spark: Any) -> None:
    from workloads.spark_throughput import measure

    settings = _settings("python", "spark_ttl")
    result = measure(settings, say=lambda line: None)
    (query,) = result["_measured"]
    events = settings.events
    assert query.figures.events == events == sum(result["plan"])
    assert query.figures.output_rows == events  # one output row per event, none lost
    assert sum(b.rows for b in query.figures.batches) == events
    assert [b.rows for b in query.figures.batches] == result["plan"]
    assert all(b.input_rows == b.rows for b in query.figures.steady())  # Spark's own count
    fit = query.trigger_fit
    assert fit is not None and fit.batches == 2 * 3
    assert fit.per_row_ms > 0
    assert all(math.isfinite(x) for x in (*fit.per_row_ci, *fit.per_batch_ci))
    assert not any(p.startswith(str(Path(os.environ.get("TMPDIR", "/tmp"))
                                     / "statebench-spark-throughput-"))
                   for p in tempdirs.live())


@pytest.mark.slow
@pytest.mark.spark
def test_a_real_jvm_processor_runs_beside_the_python_one(spark: Any) -> None:
    from workloads.spark_throughput import measure

    settings = _settings("jvm", "spark_no_ttl", batches=2)
    result = measure(settings, say=lambda line: None)
    (query,) = result["_measured"]
    assert query.figures.variant == "jvm"
    assert query.figures.output_rows == settings.events
    assert [b.rows for b in query.figures.batches] == result["plan"]
    assert query.trigger_fit is not None


@pytest.mark.slow
def test_the_command_prints_writes_json_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """In its own process (the command stops its session, which would end the package's):
    exit 0, the table, the JSON; no staged file or checkpoint left, no JVM left running."""
    import json
    import subprocess
    import sys

    import psutil

    out = tmp_path / "figures.json"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    proc = subprocess.Popen(
        [sys.executable, "-m", "workloads.spark_throughput", "sessions-churn", "--batch-rows",
         "500,4000", "--batches", "2", "--warm-up", "1", "--strategies", "spark_no_ttl",
         "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        cwd=Path(__file__).resolve().parents[2])
    children: set[int] = set()
    try:
        while proc.poll() is None:  # the JVM it starts, seen while it runs
            with suppress_gone():
                children |= {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
            try:
                stdout, stderr = proc.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            stdout, stderr = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-2000:]
    assert "python" in stdout and "per row us" in stdout
    figures = json.loads(out.read_text())
    (query,) = figures["queries"]
    assert query["output_rows"] == query["events"] == sum(figures["plan"])
    assert query["trigger_fit"]["batches"] == 4
    # staged files and checkpoints (owner-tagged "statebench-..." folders): all removed
    assert [p.name for p in scratch.iterdir() if "statebench" in p.name] == []
    assert children, "the command started no JVM"
    alive = [pid for pid in children if psutil.pid_exists(pid)
             and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert alive == []


class suppress_gone:
    """Ignore a process that ended while it was looked at."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        import psutil

        return kind is not None and issubclass(kind, psutil.Error)
