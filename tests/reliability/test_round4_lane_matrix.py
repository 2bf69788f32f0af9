"""Issue 42, category 1: a lane that works in one command and crashes in another.

``statebench compare SPEC --backend heap,spark-tws --repetitions 2`` always failed after Spark
started (``Invalid view name: statebench_tws_-1``): a comparison first runs an unmeasured
warm-up round on the lanes that keep state, its repetition is -1, and the query's name was
built from it. ``run`` never warms up, so the lane worked there.

The category is every registered lane in every command and mode that accepts it, so this
module walks the matrix: each lane of ``workloads.lanes.LANES`` (a test fails when a lane is
added without a row here) on a tiny spec it runs, in

* ``compare`` under Spark (the module's one session), two rounds and the warm-up round where
  the lane keeps state, parallelism 2, then ``report`` and ``diff`` of its folder;
* ``run --in-process`` at parallelism 1, with a knob sweep beside it (a sweep's scenarios run,
  or are listed not applicable with a reason that names the scenario);
* ``diff --rerun`` and ``ab``: both re-run a stored ``run`` through ``statebench run``'s
  arguments (``workloads.cli.ab.run_args``); those arguments must rebuild the stored
  configuration exactly, sweep included, for every lane; one real ``diff --rerun`` round
  runs the two stored runs again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.reliability.conftest import GENERATED, write_spec
from workloads import cli
from workloads.lanes import LANES

pytestmark = [pytest.mark.slow, pytest.mark.spark,
              pytest.mark.usefixtures("flink_lanes", "flink_sql_job")]

#: A key-value spec every key-value lane runs: value state, a TTL, 300 events over 0.3 s.
KEY_VALUE = ('name = "kv-matrix"\n' + GENERATED.replace("events = 50", "events = 300")
             + "[state]\nttl_ms = 100\n")
#: An operator spec the SQL lanes run (Nexmark q18's dedup), small.
OPERATOR = ("nexmark-q18-dedup", "--events", "1500")

#: lane -> (its spec: "kv" or "operator", one strategy it runs, a sweep for the run beside heap)
MATRIX: dict[str, tuple[str, str, str]] = {
    "heap": ("kv", "timer", "ttl(ms=50,200)"),
    "rocksdb": ("kv", "compaction_filter", "compaction_filter(query_time_after_num_entries=1,10)"),
    "flink-heap": ("kv", "incremental", "incremental(size=1,20)"),
    "flink-rocksdb": ("kv", "compaction_filter",
                      "compaction_filter(query_time_after_num_entries=1,10)"),
    "flink-forst": ("kv", "none", "ttl(ms=50,200)"),
    "flink-forst-async": ("kv", "none", "ttl(ms=50,200)"),
    "flink-sql": ("operator", "compaction_filter", "ttl(ms=500,2000)"),
    "flink-sql-heap": ("operator", "incremental(5, false)", "ttl(ms=500,2000)"),
    "spark-tws": ("kv", "spark_ttl", "ttl(ms=50,200)"),
    "spark-tws-nochangelog": ("kv", "spark_ttl", "ttl(ms=50,200)"),
    "spark-sql": ("operator", "spark_watermark", "ttl(ms=500,2000)"),
}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One Spark session for the module: every command below finds it and leaves it running
    (a command stops only a session it started)."""
    from workloads.run.engines.spark_session import get_session

    session = get_session("local[2]", app_name="statebench-tests-lane-matrix")
    try:
        yield session
    finally:
        session.stop()


def spec_args(tmp_path: Path, kind: str) -> list[str]:
    if kind == "kv":
        return [str(write_spec(tmp_path, KEY_VALUE))]
    return list(OPERATOR)


def only_run(results: Path) -> Path:
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    return run_dir


def measured(run_dir: Path, lane: str) -> dict[str, set[int]]:
    """strategy -> the repetitions whose summary rows the lane wrote."""
    rows = pq.read_table(run_dir / "rows.parquet").to_pylist()
    out: dict[str, set[int]] = {}
    for row in rows:
        if row["backend"] == lane and row["metric"] == "job_records_per_s":
            out.setdefault(row["strategy"], set()).add(int(row["step"]))  # step: repetition
    return out


def test_the_matrix_names_every_registered_lane() -> None:
    assert set(MATRIX) == set(LANES), "a lane without a row in the matrix is not walked"


@pytest.mark.parametrize("lane", list(MATRIX))
def test_every_lane_runs_in_compare_with_its_warm_up_round_under_spark(
        lane: str, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kind, strategy, _ = MATRIX[lane]
    results = tmp_path / "results"
    status = cli.main(["compare", *spec_args(tmp_path, kind), "--backend", lane,
                       "--strategy", strategy, "--repetitions", "2", "--parallelism", "2",
                       "--master", "local[2]", "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert status == 0, err[-3000:]
    assert "Traceback" not in err
    run_dir = only_run(results)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["complete"] is True
    assert meta["config"]["warm_up"] is LANES[lane].keeps_state  # what broke spark-tws
    got = measured(run_dir, lane)
    assert got, f"{lane} measured nothing: {meta.get('not_applicable')}"
    assert all(reps == {0, 1} for reps in got.values()), got
    # the commands that read a run: report re-renders it, diff sets it beside itself
    assert cli.main(["report", str(run_dir), "-o", str(tmp_path / "report.html")]) == 0
    assert cli.main(["diff", str(run_dir), str(run_dir), "-o", str(tmp_path / "diff.html")]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error" not in err, err


@pytest.mark.parametrize("lane", list(MATRIX))
def test_every_lane_runs_in_process_with_a_sweep_and_reruns_as_stored(
        lane: str, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workloads.cli.ab import run_args
    from workloads.cli.run import build_config

    kind, _, sweep = MATRIX[lane]
    backends = lane if lane == "heap" else f"heap,{lane}"
    results = tmp_path / "results"
    status = cli.main(["run", *spec_args(tmp_path, kind), "--backend", backends,
                       "--in-process", "--parallelism", "1", "--sweep", sweep, "--no-report",
                       "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert status == 0, err[-3000:]
    run_dir = only_run(results)
    meta = json.loads((run_dir / "run.json").read_text())
    got = measured(run_dir, lane)
    skipped = {(n["backend"], n["strategy"]): n["reason"] for n in meta["not_applicable"]}
    labels = meta["sweep"]["labels"] if "sweep" in meta else meta["config"]["sweep"]["labels"]
    for label in labels:  # every swept scenario ran, or says why not, naming itself
        if label in got:
            continue
        reason = skipped.get((lane, label))
        assert reason is not None, (lane, label, got, skipped)
        assert label in reason, reason
    assert got or any(b == lane for b, _ in skipped), meta

    # diff --rerun and ab re-run a stored run through `statebench run`'s arguments: they must
    # rebuild the configuration it recorded (the run id aside)
    args = cli.build_parser().parse_args(list(run_args(meta, tmp_path / "spec.toml")))
    (tmp_path / "spec.toml").write_text(_spec_toml(meta), encoding="utf-8")
    args.spec = str(tmp_path / "spec.toml")
    rebuilt = build_config(args, str(tmp_path / "checkpoints")).describe()  # the CLI always
    # checkpoints (a temporary folder by default)
    stored = meta["config"]  # describe() and what the run adds (argv, job seconds, ...)
    assert {k: stored.get(k) for k in rebuilt} == rebuilt


def _spec_toml(meta: dict[str, Any]) -> str:
    from workloads.cli.ab import spec_toml

    return spec_toml(meta["spec"])


def test_diff_rerun_runs_a_stored_sweep_again(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The stored sweep's scenarios are re-run as the sweep (before, ``--rerun`` passed their
    labels as strategies without the sweep, and every round failed to plan)."""
    spec = write_spec(tmp_path, KEY_VALUE)
    runs = []
    for name in ("a", "b"):
        results = tmp_path / name
        assert cli.main(["run", str(spec), "--backend", "heap", "--in-process", "--sweep",
                         "ttl(ms=50,200)", "--no-report", "--results-dir", str(results)]) == 0
        runs.append(only_run(results))
    capsys.readouterr()
    session = tmp_path / "sessions"
    status = cli.main(["diff", "--rerun", str(runs[0]), str(runs[1]), "--rounds", "1",
                       "--results-dir", str(session)])
    err = capsys.readouterr().err
    assert status == 0, err[-3000:]
    (folder,) = list(session.iterdir())
    for side in ("A", "B"):
        (rerun,) = [p for p in (folder / side).iterdir() if p.is_dir()]
        assert set(measured(rerun, "heap")) == {"none", "ttl(ms=50)", "ttl(ms=200)"}


def test_progress_names_the_warm_up_round_not_repetition_minus_one() -> None:
    import io

    from workloads.cli.progress import Progress
    from workloads.run.plan import Scenario
    from workloads.run.runner import WARMUP_ROUND

    stream = io.StringIO()
    progress = Progress(1, "compare", stream=stream)  # the last job's line is always printed
    progress.step(Scenario("flink-heap", "none"), WARMUP_ROUND)
    progress.close()
    assert "(flink-heap/none warm-up)" in stream.getvalue(), stream.getvalue()
