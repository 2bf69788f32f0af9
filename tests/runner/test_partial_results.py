"""Nothing lost when a long run stops: a run folder is written as each job finishes, so a run
interrupted (SIGINT, SIGTERM) or failing in a later scenario keeps the jobs that finished,
marked incomplete in run.json, and ``report`` and ``diff`` on it say so.

Every run here is in-process, on the heap backend, a few thousand events: two scenarios
(``none`` and ``timer``) in one round, so "after the first job" is "after the first scenario".
"""

from __future__ import annotations

import json
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.runner.conftest import deterministic
from workloads import cli
from workloads.cli.progress import Progress
from workloads.errors import InfrastructureError
from workloads.report.load import load_run
from workloads.results.completion import NOT_RUN
from workloads.results.store import RunFolder, run_metadata, write_run
from workloads.results.summaries import ScenarioKey
from workloads.run import run_tempdirs
from workloads.run.compare import ComparisonFolder, comparison_configs, run_comparison
from workloads.run.engines.inprocess import InProcessEngine
from workloads.run.plan import RunConfig
from workloads.run.runner import run, stop_reason
from workloads.spec import load_spec

ARGS = ("--in-process", "--events", "3000", "--backend", "heap", "--strategy", "none,timer",
        "--no-report")
INCOMPLETE = "incomplete run: 1 of 2 scenarios finished"


def _cfg(**kw: Any) -> RunConfig:
    return RunConfig(spec=load_spec("ycsb-a").with_overrides(events=3000), backends=("heap",),
                     strategies=("none", "timer"), **kw)


def _folder(results: Path) -> Path:
    """The one run folder under ``results``, and nothing else there (no hidden partial)."""
    (run_dir,) = list(results.iterdir())
    assert sorted(p.name for p in run_dir.iterdir()) == ["rows.parquet", "run.json"]
    return run_dir


def _meta(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run.json").read_text(encoding="utf-8"))


def _ours(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "statebench" in p.name)


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temp dir the run's temporary folders go to, empty, to see them removed."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder


def _stop_after(monkeypatch: pytest.MonkeyPatch, jobs: int,
                exc: Callable[[], BaseException] = KeyboardInterrupt) -> list[Any]:
    """The CLI's progress callback raises ``exc`` once ``jobs`` jobs have ended: a Ctrl-C (or
    SIGTERM) right after a job, as the signal handler would raise it. Returns the jobs run."""
    ran: list[Any] = []
    step = Progress.step

    def stopping(self: Progress, scenario: Any, rep: int) -> None:
        step(self, scenario, rep)
        ran.append(scenario)
        if len(ran) == jobs:
            raise exc()

    monkeypatch.setattr(Progress, "step", stopping)
    return ran


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("complete")
    assert cli.main(["run", "ycsb-a", *ARGS, "--results-dir", str(results)]) == 0
    return _folder(results)


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A run whose second scenario stops it (a planted error in its job, one that stops a
    run: an environment error; a job's failure in its engine does not, see
    tests/reliability/test_round4_engine_errors.py), written as it went; the folder and the
    scenario that finished."""
    results = tmp_path_factory.mktemp("failed")
    engine = InProcessEngine()
    first = engine.run_tasks
    ran: list[str] = []

    def planted(op_cfg: Any) -> Any:
        if ran:
            raise InfrastructureError("planted failure in the second scenario")
        ran.append(op_cfg.strategy)
        return first(op_cfg)

    engine.run_tasks = planted  # type: ignore[method-assign]
    cfg = _cfg()
    folder = RunFolder(cfg.run_id, results)
    with pytest.raises(RuntimeError, match="planted failure"):
        run(cfg, engine, on_result=folder.save)
    return _folder(results), ran[0]


def test_an_interrupted_run_keeps_its_first_scenario(tmp_path: Path, temp: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str],
                                                     complete_run: Path) -> None:
    ran = _stop_after(monkeypatch, 1)
    results = tmp_path / "results"
    assert cli.main(["run", "ycsb-a", *ARGS, "--results-dir", str(results)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "statebench: error: interrupted; temporary folders removed"
    run_dir = _folder(results)
    assert err[-2].startswith(f"statebench: {INCOMPLETE} (1 of 2 jobs; interrupted); kept in "
                              f"{run_dir}")
    assert _ours(temp) == []  # the temporary folders went, as before

    meta = _meta(run_dir)
    assert meta["complete"] is False
    progress = meta["progress"]
    assert progress["stopped"] == "interrupted"
    assert (progress["scenarios"], progress["scenarios_finished"]) == (2, 1)
    assert (progress["jobs"], progress["jobs_finished"]) == (2, 1)
    first = ran[0].strategy
    other = ({"none", "timer"} - {first}).pop()
    assert [(f["strategy"], f["rounds"]) for f in progress["finished"]] == [(first, 1)]
    assert [(u["strategy"], u["rounds_finished"]) for u in progress["unfinished"]] == [
        (other, 0)]

    run_ = load_run(run_dir)
    assert run_.incomplete is not None and run_.incomplete.startswith(INCOMPLETE)
    done, left = (ScenarioKey("ycsb-a", "heap", s) for s in (first, other))
    assert run_.get(done, "records_per_s") is not None
    assert run_.not_applicable == {left: NOT_RUN}
    # the first scenario's rows are those a whole run writes for it (its exact numbers)
    label = f"ycsb-a/heap/{first}"
    kept = pq.read_table(run_dir / "rows.parquet")
    whole = pq.read_table(complete_run / "rows.parquet")
    assert {s for s in kept.column("scenario").to_pylist()} == {label}
    assert deterministic(kept) == [r for r in deterministic(whole) if r[0] == label]
    assert set(kept.column("metric").to_pylist()) == {
        m for s, m in zip(whole.column("scenario").to_pylist(),
                          whole.column("metric").to_pylist()) if s == label}


def test_a_terminated_run_says_terminated(tmp_path: Path, temp: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    _stop_after(monkeypatch, 1, lambda: run_tempdirs.Terminated(signal.SIGTERM))
    results = tmp_path / "results"
    assert cli.main(["run", "ycsb-a", *ARGS, "--results-dir", str(results)]) == 143
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "statebench: error: terminated; temporary folders removed"
    meta = _meta(_folder(results))
    assert meta["complete"] is False and meta["progress"]["stopped"] == "terminated"
    assert meta["progress"]["jobs_finished"] == 1
    assert _ours(temp) == []


def test_an_error_in_a_later_scenario_keeps_the_earlier_one(failed_run: tuple[Path, str]
                                                            ) -> None:
    run_dir, first = failed_run
    progress = _meta(run_dir)["progress"]
    assert progress["stopped"] == "failed"
    assert progress["error"] == "InfrastructureError: planted failure in the second scenario"
    assert [f["strategy"] for f in progress["finished"]] == [first]
    run_ = load_run(run_dir)
    assert run_.incomplete == (f"{INCOMPLETE} (1 of 2 jobs; stopped by an error: "
                               "InfrastructureError: planted failure in the second scenario)")
    assert [k.strategy for k in run_.samples] == [first]


def test_report_on_an_incomplete_run_says_so(failed_run: tuple[Path, str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    run_dir, _ = failed_run
    out = tmp_path / "report.html"
    assert cli.main(["report", str(run_dir), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"statebench: warning: {run_dir}: {INCOMPLETE}" in err
    html = out.read_text(encoding="utf-8")
    assert NOT_RUN in html  # the scenario that never ran reads "n/a (not run ...)"
    assert 'data-banner="incomplete"' in html and INCOMPLETE in html  # on the page too


def test_diff_says_which_side_is_incomplete(complete_run: Path, failed_run: tuple[Path, str],
                                            tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    run_dir, _ = failed_run
    out = tmp_path / "diff.html"
    assert cli.main(["diff", str(complete_run), str(run_dir), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"statebench: warning: B {run_dir}: {INCOMPLETE}" in err
    assert f"A {complete_run}" not in err
    page = out.read_text(encoding="utf-8")
    assert NOT_RUN in page
    assert page.count('data-banner="incomplete"') == 1  # B's run only


def test_a_complete_run_is_marked_complete(complete_run: Path) -> None:
    meta = _meta(complete_run)
    assert meta["complete"] is True and "progress" not in meta
    assert load_run(complete_run).incomplete is None


def test_a_run_is_written_as_each_job_ends_and_its_end_is_the_whole_run(tmp_path: Path) -> None:
    """While the run goes, its folder holds the finished jobs, marked incomplete; its last
    write is the run's whole outcome: its rows as the runner finalized them together, and
    run.json as for a run written at its end, with ``complete`` true."""
    cfg = _cfg(repetitions=2)
    folder = RunFolder(cfg.run_id, tmp_path)
    seen: list[tuple[bool, int]] = []

    def after_job(scenario: Any, rep: int) -> None:
        meta = _meta(tmp_path / cfg.run_id)
        seen.append((meta["complete"], meta["progress"]["jobs_finished"]))

    outcome = run(cfg, InProcessEngine(), on_job=after_job, on_result=folder.save)
    assert seen == [(False, 1), (False, 2), (False, 3), (False, 4)]
    run_dir = write_run(outcome, tmp_path, folder)
    assert _folder(tmp_path) == run_dir
    assert pq.read_table(run_dir / "rows.parquet").equals(outcome.rows)
    meta = _meta(run_dir)
    expected = run_metadata(outcome, created_utc=meta["created_utc"])
    for key in ("duration_s", "git_commit"):  # read again when written
        expected[key] = meta[key]
    assert meta == expected and meta["complete"] is True


def test_an_interrupted_comparison_keeps_its_finished_workloads(tmp_path: Path) -> None:
    specs = [load_spec("ycsb-a").with_overrides(events=2000),
             load_spec("sessions-churn").with_overrides(events=2000)]
    configs = comparison_configs(specs, backends=("heap",), strategies=("none", "timer"),
                                 repetitions=1)
    folder = ComparisonFolder(configs, tmp_path)
    ran: list[str] = []

    def on_job(scenario: Any, rep: int) -> None:
        ran.append(scenario.strategy)
        if len(ran) == 3:  # the second workload's first job
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_comparison(configs, in_process=True, on_job=on_job, on_result=folder.save)
    run_dir = _folder(tmp_path)
    progress = _meta(run_dir)["progress"]
    assert progress["stopped"] == "interrupted"
    assert (progress["scenarios"], progress["scenarios_finished"]) == (4, 3)
    assert [(u["workload"], u["strategy"]) for u in progress["unfinished"]] == [
        ("sessions-churn", ({"none", "timer"} - {ran[2]}).pop())]
    assert folder.kept() is not None and "3 of 4 scenarios finished" in folder.kept()
    run_ = load_run(run_dir)
    assert run_.workloads == ["sessions-churn", "ycsb-a"]
    assert len(run_.samples) == 3 and len(run_.not_applicable) == 1


def test_a_comparison_stopped_in_its_first_workload_lists_the_others_not_started(
        tmp_path: Path) -> None:
    specs = [load_spec("ycsb-a").with_overrides(events=2000),
             load_spec("sessions-churn").with_overrides(events=2000)]
    configs = comparison_configs(specs, backends=("heap",), strategies=("none", "timer"),
                                 repetitions=1)
    folder = ComparisonFolder(configs, tmp_path)

    def on_job(scenario: Any, rep: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_comparison(configs, in_process=True, on_job=on_job, on_result=folder.save)
    run_dir = _folder(tmp_path)
    progress = _meta(run_dir)["progress"]
    assert (progress["scenarios"], progress["scenarios_finished"]) == (4, 1)
    assert {u["workload"] for u in progress["unfinished"]} == {"ycsb-a", "sessions-churn"}
    run_ = load_run(run_dir)  # the workload never started is there, every scenario "not run"
    assert {k for k, v in run_.not_applicable.items() if v == NOT_RUN} == {
        ScenarioKey("ycsb-a", "heap", ({"none", "timer"} - {k.strategy for k in run_.samples}
                                        ).pop()),
        ScenarioKey("sessions-churn", "heap", "none"),
        ScenarioKey("sessions-churn", "heap", "timer")}
    out = tmp_path / "report.html"
    assert cli.main(["report", str(run_dir), "-o", str(out)]) == 0  # renders


def test_how_a_run_stopped() -> None:
    assert stop_reason(KeyboardInterrupt()) == ("interrupted", "")
    assert stop_reason(run_tempdirs.Terminated()) == ("terminated", "")
    try:  # a Spark job broken off by the signal fails with an error of its own
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("py4j: An error occurred while calling o1.collect") from None
    except RuntimeError as exc:
        assert stop_reason(exc) == ("interrupted", "")
    assert stop_reason(ValueError("bad\nmore")) == ("failed", "ValueError: bad")
