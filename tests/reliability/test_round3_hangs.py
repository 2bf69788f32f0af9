"""Issue 31, category 2 (hangs and unbounded resources), beyond the sliding-windows bound.

* ``--in-process`` built the whole input in memory whatever its size: ``--events 300000000``
  grew to 18.3 GB in 90 s with no output. It is now refused before any work, with the numbers.
* Progress existed per finished job only: one long job showed nothing for half an hour. The
  in-process engine now reports how far a job has read its input, and the run says up front
  what it holds and takes (``workloads.run.estimate``, issue 42).
* Paths handed to Flink as ``file:`` URI strings (a folder with a space, '#' or '%') made the
  flink-sql job wait: ``tests/flink/test_sql_job.py``.
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workloads.cli.progress import Progress
from workloads.run.engines.inprocess import InProcessEngine, memory_problem
from workloads.run.plan import PlanError, RunConfig, plan_scenarios
from workloads.spec import load_spec

_BOOT = "import sys; from workloads.cli import main; sys.exit(main())"
#: A limit on the child's address space, so that the unfixed code fails fast (MemoryError)
#: instead of taking the machine's memory.
CHILD_MEMORY = 6 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def test_an_in_process_input_that_does_not_fit_is_refused_before_any_work(
        tmp_path: Path) -> None:
    results = tmp_path / "r"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _BOOT, "run", "ycsb-a", "--in-process", "--events",
         "1500000000", "--backend", "heap", "--strategy", "none", "--no-report",
         "--results-dir", str(results)],
        capture_output=True, text=True, timeout=300, preexec_fn=_limit_memory)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "--in-process builds the whole input in memory" in lines[0]
    assert "1,500,000,000 events need about" in lines[0] and "lower --events" in lines[0]
    assert time.monotonic() - started < 120
    assert not results.exists() or not any(results.iterdir())


def test_the_memory_check_passes_what_fits_and_names_what_would() -> None:
    spec = load_spec("ycsb-a")
    assert memory_problem(RunConfig(spec.with_overrides(events=100_000),
                                    backends=("heap",))) is None
    problem = memory_problem(RunConfig(spec.with_overrides(events=10**10 // 8),
                                       backends=("heap",)))
    assert problem is not None and "at most about" in problem


def test_the_in_process_engine_reports_progress_within_a_job() -> None:
    cfg = RunConfig(load_spec("ycsb-a").with_overrides(events=3_000), backends=("heap",),
                    strategies=("none",), batch_size=500)
    engine = InProcessEngine()
    seen: list[tuple[int, int]] = []
    engine.on_progress = lambda done, total: seen.append((done, total))
    facts = engine.prepare(cfg)
    from workloads.run.plan import operator_config

    (scenario,), _ = plan_scenarios(cfg)
    engine.run_tasks(operator_config(cfg, scenario, 0, facts))
    assert len(seen) >= 6  # one call per input batch of 500 rows
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert seen[-1] == (3_000, 3_000)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_long_job_prints_progress_before_it_ends_and_an_estimate_up_front() -> None:
    """The line up front is now the run's estimate (``workloads.run.estimate``, printed by the
    CLI: tests/reliability/test_round4_long_runs.py); until a job has read anything its ETA
    is that estimate's."""
    out, clock = io.StringIO(), _Clock()
    progress = Progress(2, "w", stream=out, clock=clock, estimate_s=600.0)
    assert out.getvalue() == ""
    clock.now = 30.0
    progress.tick()
    assert out.getvalue().splitlines() == [
        "statebench: w 0/2 jobs, 30 s elapsed, ETA 10 min (estimated)"]
    clock.now = 60.0
    progress.within(250_000, 1_000_000)
    line = out.getvalue().splitlines()[-1]
    assert line == "statebench: w 0/2 jobs, job 1 at 25%, 60 s elapsed, ETA 7 min", line
    clock.now = 61.0
    progress.within(260_000, 1_000_000)  # within LOG_EVERY_S of the last line: quiet
    assert len(out.getvalue().splitlines()) == 2


@pytest.mark.usefixtures("flink_lanes")
@pytest.mark.parametrize("name", ["sp ace", "h#sh", "p%20ct"])
def test_forst_under_a_folder_it_would_quote_twice_is_refused_before_any_work(
        name: str, tmp_path: Path) -> None:
    """ForSt (Flink's code) names its primary folder by a URI string it quotes again: under
    ``sp ace`` its files went to a sibling ``sp%20ace`` that nothing removed."""
    spec = load_spec("ycsb-a")
    with pytest.raises(PlanError, match="ForSt names its primary folder by a URI"):
        RunConfig(spec, backends=("heap", "flink-forst"), local_dir=str(tmp_path / name))
    with pytest.raises(PlanError, match="ForSt names its primary folder by a URI"):
        RunConfig(spec, backends=("flink-forst-async",), checkpoint_root=str(tmp_path / name))
    RunConfig(spec, backends=("heap", "flink-rocksdb"), local_dir=str(tmp_path / name))


def test_a_flink_sql_scenario_whose_events_do_not_fit_is_refused_with_the_numbers() -> None:
    """The SQL lanes make and sort a scenario's events in memory before the job reads them,
    on any engine: refused up front (``statebench run`` calls this in its pre-flight)."""
    from workloads.lanes.flink_sql_job import input_memory_problem

    spec = load_spec("nexmark-q18-dedup")
    assert input_memory_problem(spec, 1 << 30) is None
    problem = input_memory_problem(spec.with_overrides(events=100_000_000), 1 << 30)
    assert problem is not None and "100,000,000 Nexmark events" in problem
    assert input_memory_problem(load_spec("ycsb-a"), 1) is None  # no query: not its input
