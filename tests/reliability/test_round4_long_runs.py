"""Issue 42, category 3: runs that would take days, without a word.

``statebench run flink-27504 --backend spark-tws --strategy spark_ttl`` paced a shipped spec of
1.5 logical days at speed-up 1 (about 36 hours) with no estimate and no ETA, wrote every 100 ms
input slice before its query started (195,000 files and 800 MB after 2 minutes, of 1.3
million), and took 76 s to exit on SIGINT (190 s here, deleting 196,000 staged files). Now every
run and comparison prints its estimate (wall time, disk) up front, a run beyond
``workloads.run.estimate.MAX_WALL_S`` or the free disk is refused in one line before any work
unless ``--allow-long`` is given (``ab`` and ``diff --rerun`` count their rounds), the ETA comes
from the estimate until a job has ended, the spark-tws lane writes its slices a bounded stretch
ahead and deletes those its query has read (``backends.spark.slices``), and SIGINT exits in
seconds.

Each test fails on a3a37bc: there, the refused runs started (the tests stop them at the start
of the work, ``_no_work``), no estimate line was printed, ``--allow-long`` was an unknown option,
``backends.spark.slices`` did not exist, and the spark-tws query started only once every slice
was written.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.reliability.conftest import PROGRESS
from tests.reliability.test_children import _BOOT, _left_behind
from workloads import cli

#: A progress line of ``workloads.cli.progress`` (not the run's one error line).


@pytest.fixture
def _no_work(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The work of a run or a comparison, replaced: a test of a refusal must not run for a day
    where the code under test (a3a37bc) starts the run; it records that the work began."""
    from workloads.cli import ab, run
    from workloads.run import compare

    began: list[Any] = []

    def instead(*args: Any, **kwargs: Any) -> int:
        began.append(args)
        raise AssertionError("the run started")

    monkeypatch.setattr(run, "_run_checked", instead)
    monkeypatch.setattr(compare, "run_comparison", instead)
    monkeypatch.setattr(ab, "run_session", instead)
    return began


def _estimate_line(out: str, desc: str) -> str:
    lines = out.splitlines()
    assert lines and lines[0].startswith(f"statebench: {desc}: estimate: "), out
    return lines[0]


# ------------------------------------------------------------------ the refusal, in one line


def test_the_issue_run_is_refused_in_one_line_before_any_work(
        tmp_path: Path, fails: Callable[..., str], capsys: pytest.CaptureFixture[str],
        _no_work: list[Any]) -> None:
    line = fails("run", "flink-27504", "--backend", "spark-tws", "--strategy", "spark_ttl",
                 "--results-dir", str(tmp_path / "r"))
    assert line.startswith("statebench: error: flink-27504: the run would take about 36.0 h "
                           "of wall time (1 job, 36.0 h of it pacing records"), line
    assert "--allow-long" in line and "--time-speedup" in line
    assert _no_work == []
    assert not (tmp_path / "r").exists() or list((tmp_path / "r").iterdir()) == []
    from pyspark import SparkContext

    assert SparkContext._active_spark_context is None  # no JVM was started


def test_allow_long_starts_it_after_the_estimate(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from workloads.cli import run

    started: list[tuple[Any, float | None]] = []
    monkeypatch.setattr(run, "_run_checked",
                        lambda args, cfg, estimate_s=None: started.append((cfg, estimate_s)))
    assert cli.main(["run", "flink-27504", "--backend", "spark-tws", "--strategy",
                     "spark_ttl", "--allow-long", "--results-dir", str(tmp_path / "r")]) == 0
    line = _estimate_line(capsys.readouterr().out, "flink-27504")
    assert "1 job of 2,592,000 events, about 36.0 h of wall time" in line
    ((cfg, estimate_s),) = started
    assert cfg.backends == ("spark-tws",)
    assert estimate_s == pytest.approx(36 * 3600, rel=0.02)  # Progress's ETA before a job ends


#: Reads only, a million a logical second: --events at its documented maximum is 10,000
#: logical seconds (a schedule the checkpoint bound allows) and writes no state.
READS = """name = "reads"
[keys]
count = 1000
distribution = "uniform"
[operations]
value_get = 1.0
[time]
rate = 1_000_000
events = 1000
"""


@pytest.mark.parametrize(("argv", "said"), [
    # --events at the documented maximum on Spark (in-process is refused for its memory)
    (("run", "READS", "--events", "10000000000", "--backend", "heap", "--strategy", "none",
      "--master", "local[2]"), "reads: the run would take about"),
    # statebench's own paced lanes: 100 s of clock at speed-up 0.001 is 28 h a job
    (("run", "sessions-paced", "--in-process", "--time-speedup", "0.001", "--backend",
      "heap", "--strategy", "none"), "pacing records on the wall clock"),
    # a sweep multiplies scenarios, repetitions multiply the jobs
    (("run", "ycsb-a", "--master", "local[2]", "--events", "50000000", "--backend", "heap",
      "--sweep", "incremental(size=1,2,3,4,5,6,7,8)", "--repetitions", "20"),
     "(180 jobs)"),
    (("compare", "ycsb-a", "sessions-churn", "--in-process", "--events", "100000000",
      "--backend", "heap,rocksdb"), "compare: the run would take about"),
])
def test_runs_of_hours_are_refused_before_any_work(argv: tuple[str, ...], said: str,
                                                   tmp_path: Path, fails: Callable[..., str],
                                                   capsys: pytest.CaptureFixture[str],
                                                   _no_work: list[Any]) -> None:
    reads = tmp_path / "reads.toml"
    reads.write_text(READS)
    argv = tuple(str(reads) if a == "READS" else a for a in argv)
    line = fails(*argv, "--results-dir", str(tmp_path / "r"))
    assert said in line and "more than the 6.0 h a run may take without --allow-long" in line
    assert _no_work == []


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("tiny")
    assert cli.main(["run", "ycsb-a", "--in-process", "--events", "200", "--backend", "heap",
                     "--strategy", "none", "--no-report", "--results-dir", str(results)]) == 0
    (run_dir,) = results.iterdir()
    return run_dir


def test_a_week_of_pacing_is_refused_even_with_allow_long(
        tmp_path: Path, fails: Callable[..., str], _no_work: list[Any]) -> None:
    """The paced bound (``workloads.limits.MAX_PACED_WALL_MS``) held for ProcessingTime specs
    only; spark-tws and flink-sql pace every spec."""
    line = fails("run", "flink-27504", "--backend", "spark-tws", "--strategy", "spark_ttl",
                 "--time-speedup", "0.1", "--allow-long", "--results-dir", str(tmp_path / "r"))
    assert line.startswith("statebench: error: the paced run of flink-27504 spans 129600000 ms")
    assert "15 days of wall time per scenario; at most 7 days" in line
    assert _no_work == []


def test_ab_and_diff_rerun_count_their_rounds(tmp_path: Path, fails: Callable[..., str],
                                              capsys: pytest.CaptureFixture[str],
                                              tiny_run: Path, _no_work: list[Any]) -> None:
    """A run of seconds, 1,000 rounds of two: half a day. Refused before a revision is
    exported (``ab``) or a session folder made."""
    assert cli.main(["ab", ".", ".", "ycsb-a", "--in-process", "--events", "2000000",
                     "--backend", "heap", "--strategy", "none", "--rounds", "1000",
                     "--results-dir", str(tmp_path / "r")]) == 2
    said = capsys.readouterr()
    (line,) = said.err.strip().splitlines()
    assert line.startswith("statebench: error: ab (1000 rounds): the run would take about")
    assert "ab (1000 rounds): estimate: 2000 jobs of 2,000,000 events" in said.out
    assert not (tmp_path / "r").exists()

    line = fails("diff", str(tiny_run), str(tiny_run), "--rerun", "--rounds", "50000",
                 "--results-dir", str(tmp_path / "r2"))
    assert line.startswith("statebench: error: diff --rerun (50000 rounds): the run would")
    assert not (tmp_path / "r2").exists()
    assert _no_work == []


def test_ab_passes_allow_long_to_the_revisions_that_know_it(tmp_path: Path) -> None:
    from workloads.cli.ab import SOURCE_TREE
    from workloads.cli.long_runs import forwarded

    argv = ("run", "ycsb-a", "--no-report")
    assert forwarded(argv, SOURCE_TREE, True) == (*argv, "--allow-long")
    assert forwarded(argv, SOURCE_TREE, False) == argv
    old = tmp_path / "old"  # a revision without the option (a3a37bc): it would fail on it
    (old / "workloads" / "cli").mkdir(parents=True)
    (old / "workloads" / "cli" / "run.py").write_text("# no such option\n")
    assert forwarded(argv, old, True) == argv


def test_more_disk_than_is_free_is_refused(tmp_path: Path) -> None:
    from workloads.run.estimate import Estimate, free_bytes

    free = free_bytes(str(tmp_path))
    assert free is not None
    est = Estimate(jobs=1, events=10, wall_s=60.0, paced_s=0.0, input_bytes=free * 0.6,
                   result_bytes=free * 0.6, temp_dir=str(tmp_path / "t"),
                   results_dir=str(tmp_path / "r" / "not-made-yet"))
    problem = est.problem()  # one disk: the temporary and the results folder add up
    assert problem is not None and problem.startswith("would write about ")
    assert f"into {tmp_path / 't'}, where" in problem and "--allow-long" in problem
    assert Estimate(1, 10, 60.0, 0.0, free * 0.6, 0.0, str(tmp_path),
                    str(tmp_path)).problem() is None


# ------------------------------------------------------------------ the estimate, always


def test_every_run_and_comparison_prints_its_estimate_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny = ("--in-process", "--events", "300", "--backend", "heap", "--strategy", "none")
    assert cli.main(["run", "ycsb-a", *tiny, "--no-report",
                     "--results-dir", str(tmp_path / "r")]) == 0
    line = _estimate_line(capsys.readouterr().out, "ycsb-a")
    assert re.fullmatch(r"statebench: ycsb-a: estimate: 1 job of 300 events, about \d+ s of "
                        r"wall time and [\d.]+ kB of disk", line), line
    assert cli.main(["compare", "ycsb-a", *tiny, "--repetitions", "1",
                     "--results-dir", str(tmp_path / "c")]) == 0
    line = _estimate_line(capsys.readouterr().out, "compare")
    assert "1 job of 300 events" in line


def test_the_estimate_sums_what_the_lanes_answer() -> None:
    """Each lane answers its pacing and rate (``Lane.job_cost``); the estimate adds the jobs
    the runner will run, a comparison's warm-up round included."""
    from workloads.lanes import LANES
    from workloads.run.estimate import estimate
    from workloads.run.plan import RunConfig
    from workloads.spec import load_spec

    spec = load_spec("flink-27504")
    tws = estimate([RunConfig(spec, backends=("spark-tws",), strategies=("spark_ttl",))])
    assert tws.paced_s == pytest.approx(129_600.0)  # 1.5 days at speed-up 1
    faster = estimate([RunConfig(spec, backends=("spark-tws",), strategies=("spark_ttl",),
                                 time_speedup=100.0)])
    assert faster.paced_s == pytest.approx(1_296.0) and faster.problem() is None
    assert LANES["spark-tws"].paces(RunConfig(spec, backends=("spark-tws",))) is True
    assert LANES["heap"].paces(RunConfig(spec, backends=("heap",))) is False  # EventTime
    # its input: a bounded stretch of slices, not 1.3 million files
    assert tws.input_bytes < 1e9
    # statebench's in-process lanes: twice the tasks' span one after the other
    paced = load_spec("sessions-paced")
    one = estimate([RunConfig(paced, backends=("heap",), strategies=("none",))],
                   in_process=True)
    spark = estimate([RunConfig(paced, backends=("heap",), strategies=("none",))],
                     master="local[2]")
    assert one.paced_s == pytest.approx(2 * spark.paced_s) == pytest.approx(20.0)
    warm = estimate([RunConfig(spec, backends=("spark-tws",), strategies=("spark_ttl",),
                               repetitions=2, warm_up=True)])
    assert warm.jobs == 3  # the kept session's warm-up round, then 2 rounds


# ------------------------------------------------------------------ the ETA of one long job


def test_a_single_long_job_has_an_eta_from_the_estimate() -> None:
    import io

    from workloads.cli.progress import Progress

    now = [0.0]
    out = io.StringIO()
    progress = Progress(1, "flink-27504", stream=out, clock=lambda: now[0],
                        estimate_s=36 * 3600.0)
    for now[0] in (5.0, 12.0, 13.0, 600.0, 630.0):
        progress.tick()
    assert out.getvalue().splitlines() == [
        "statebench: flink-27504 0/1 jobs, 12 s elapsed, ETA 36.0 h (estimated)",
        "statebench: flink-27504 0/1 jobs, 10 min elapsed, ETA 35.8 h (estimated)"]
    now[0] = 40 * 3600.0  # past the estimate: no ETA of 0 s
    progress.tick()
    assert out.getvalue().splitlines()[-1].endswith("ETA unknown (past the estimate of 36.0 h)")


# ------------------------------------------------------------------ lazy slices


def _events(n: int) -> pa.Table:
    return pa.table({"key": pa.array(np.arange(n) % 7, pa.int64()),
                     "ord": pa.array(np.arange(n), pa.int64()),
                     "v": pa.array([f"value-{i}" for i in range(n)])})


def test_slices_are_written_a_bounded_stretch_ahead_and_the_read_ones_removed(
        tmp_path: Path) -> None:
    from backends.spark.slices import Feeder, SliceWriter, plan_slices, write_slices

    n = 3_000
    release = np.sort(np.random.default_rng(42).integers(0, 1_500, n))  # 1.5 s, 1 ms slices
    events = _events(n)
    eager = write_slices(events, release, 1, tmp_path / "eager")
    plan = plan_slices(release, 1)
    assert len(plan) == len(eager) > 500
    staging, input_dir = tmp_path / "staging", tmp_path / "input"
    input_dir.mkdir()
    writer = SliceWriter(events, plan, staging, ahead=20)
    writer.start()
    deadline = time.monotonic() + 10
    while writer.written < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the writer filled its stretch, and waits for the feeder
    assert writer.written == 20 and len(list(staging.iterdir())) == 20
    t0 = time.time()
    feeder = Feeder(writer, input_dir, t0)
    feeder.start()
    most = 0
    while feeder.is_alive():
        most = max(most, len(list(staging.iterdir())))
        time.sleep(0.002)
    writer.join(5)
    assert feeder.error is None and writer.error is None
    assert most <= 20
    assert feeder.released == len(plan)
    # the same files, the same contents, released no earlier than their slice's end
    released = sorted(input_dir.iterdir())
    assert [p.name for p in released] == [p.name for _, p in eager]
    for (_, path), got in zip(eager, released):
        assert pq.read_table(got).equals(pq.read_table(path))
    times = {path.name: at for at, path in feeder._out}
    assert all(times[path.name] - t0 >= due / 1000.0 for due, path in eager)
    # what the query has read goes (here: everything released before now + the margin)
    assert feeder.prune(time.time() + 2.0) == len(plan)
    assert list(input_dir.iterdir()) == []


def test_a_stopped_feeder_leaves_at_once(tmp_path: Path) -> None:
    from backends.spark.slices import Feeder, SliceWriter, plan_slices

    release = np.arange(0, 3_600_000, 500)  # an hour of slices
    plan = plan_slices(release, 100)
    writer = SliceWriter(_events(len(release)), plan, tmp_path / "staging", ahead=50)
    (tmp_path / "input").mkdir()
    feeder = Feeder(writer, tmp_path / "input", time.time())
    writer.start()
    feeder.start()
    time.sleep(0.8)
    started = time.monotonic()
    feeder.stop()
    feeder.join(2)
    writer.join(2)
    assert not feeder.is_alive() and not writer.is_alive()
    assert time.monotonic() - started < 1.5
    assert len(list((tmp_path / "staging").iterdir())) <= 50


# ------------------------------------------------------------------ the real thing, and SIGINT

#: Ten hours of a key-value workload at 10 events a second, paced on the wall clock by
#: spark-tws: beyond the 6 h bound (``--allow-long``), 360,000 events in about 230,000 slices
#: (a3a37bc wrote them all, for minutes, before its query started).
TEN_HOURS = """name = "ten-hours"
[keys]
count = 50
distribution = "uniform"
[operations]
value_get = 0.5
value_update = 0.5
[time]
rate = 10
duration_ms = 36_000_000
[state]
ttl_ms = 60_000
"""


def _folders(tmp: Path, name: str) -> list[Path]:
    return [f for job in tmp.glob("statebench-spark-tws-*") for f in (job / name,)
            if f.is_dir()]


def _slices(folders: list[Path]) -> list[int]:
    """The indexes of the slice files in ``folders``."""
    found = []
    for folder in folders:
        try:
            found += [int(p.name[6:-8]) for p in os.scandir(folder)
                      if p.name.startswith("slice-")]
        except (OSError, ValueError):
            continue
    return found


@pytest.mark.slow
def test_a_long_spark_tws_run_starts_its_query_at_once_and_exits_on_sigint_in_seconds(
        tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from backends.spark.slices import AHEAD, PRUNE_LAG

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    spec = tmp_path / "ten-hours.toml"
    spec.write_text(TEN_HOURS)
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOT, "run", str(spec), "--backend", "spark-tws", "--strategy",
         "spark_ttl", "--master", "local[2]", "--allow-long", "--no-report",
         "--results-dir", str(tmp_path / "r")],
        env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or []), daemon=True)
    reader.start()
    try:
        most_staged, deadline = 0, time.monotonic() + 240
        while not _slices(_folders(tmp, "input")):  # the query started: its first releases
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, (
                f"the query did not start; {len(_slices(_folders(tmp, 'staging')))} staged")
            most_staged = max(most_staged, len(_slices(_folders(tmp, "staging"))))
            time.sleep(0.2)
        deadline = time.monotonic() + 60
        while True:  # batches run, and the files they have read go
            most_staged = max(most_staged, len(_slices(_folders(tmp, "staging"))))
            released = _slices(_folders(tmp, "input"))
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            if released and max(released) + 1 - len(released) >= 20:
                break
            assert time.monotonic() < deadline, f"nothing read was removed: {sorted(released)}"
            time.sleep(0.2)
        assert most_staged <= AHEAD
        assert len(released) <= AHEAD + PRUNE_LAG
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(5)
    assert out and out[0].startswith("statebench: ten-hours: estimate: 1 job of 360,000 events, "
                                     "about 10.0 h of wall time"), out
    assert proc.returncode == 130, err[-3000:]
    assert took < 15, f"SIGINT took {took:.1f} s"
    ours = [line for line in err.splitlines()
            if line.startswith("statebench") and not PROGRESS.match(line)]
    assert ours == ["statebench: error: interrupted; temporary folders removed"], err[-3000:]
    folders, procs = _left_behind(tmp)
    assert [f for f in folders if f.startswith(("statebench-", ".statebench-"))] == []
    assert procs == []


def test_what_py4j_logs_while_a_signal_breaks_the_link_is_not_printed() -> None:
    """A SIGINT while Spark's context was starting printed py4j's "Exception occurred while
    shutting down connection" and a traceback: py4j.clientserver hands its records to the root
    logger's handlers, which a filter on the root logger never sees. --verbose keeps them."""
    import logging

    seen: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        assert cli.main(["run", "ycsb-a", "--in-process", "--events", "100", "--backend",
                         "heap", "--sweep", "nonsense"]) == 2  # any command, quietly
        logging.getLogger("py4j.clientserver").error(
            "Exception occurred while shutting down connection", exc_info=KeyboardInterrupt())
        assert seen == []
        assert cli.main(["-v", "run", "ycsb-a", "--in-process", "--events", "100",
                         "--backend", "heap", "--sweep", "nonsense"]) == 2
        logging.getLogger("py4j.clientserver").error("shown with --verbose")
        assert [r.getMessage() for r in seen] == ["shown with --verbose"]
    finally:
        root.removeHandler(handler)
        logging.getLogger("py4j").setLevel(logging.NOTSET)
