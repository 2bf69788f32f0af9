"""The asv change-point report (bench/changepoints.py over workloads/report/changepoints.py):
a step is named at its commit and a flat history names none, an exact count's one-unit change is
named, a real asv results folder (written with asv's own Results API) is read in the git log's
order, and input it cannot read exits 2 with one line.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
from pathlib import Path

import pytest

from bench import changepoint_history
from bench.bench_ratios import interleaved_ratio
from bench.changepoints import History, analyse, main
from workloads.report import changepoints as cp

SEED = 20261130


def _history(values: list[float | None], unit: str = "ratio") -> History:
    return History("bench_x.X.track_x", (("backend", "heap"),), "", unit, values,
                   [None] * len(values))


def _noisy(n: int, sd: float, step_at: int | None = None, factor: float = 1.0,
           seed: int = SEED) -> list[float | None]:
    rng = random.Random(seed)
    return [3.0 * rng.lognormvariate(0, sd) * (factor if step_at is not None and i >= step_at
                                                else 1.0) for i in range(n)]


# ----------------------------------------------------------------------------- measured histories
def test_a_step_is_named_at_its_commit_and_a_flat_history_names_none() -> None:
    kind, least, found, flagged = analyse(_history(_noisy(20, 0.03, step_at=12, factor=1.5)))
    assert (kind, least) == ("measured", 0.05)
    assert [(c.last_before, c.first_after) for c in found] == [(11, 12)]
    assert found[0].ratio == pytest.approx(1.5, rel=0.06)
    assert 12 in flagged  # asv's own detect_regressions lists it too
    # flat, log-normal noise of 3%: 20 commits, every seed of ten, name nothing
    for seed in range(SEED, SEED + 10):
        assert analyse(_history(_noisy(20, 0.03, seed=seed)))[2] == [], seed


def test_a_step_below_the_units_minimum_is_not_named() -> None:
    """asv's detector finds a clean 3% step; the ratio's 5% minimum drops it, keeps a 7% one
    and an improvement (a step down) alike."""
    from asv.step_detect import detect_steps

    small = _noisy(16, 0.002, step_at=8, factor=1.03)
    assert len(detect_steps(small)) == 2
    assert analyse(_history(small))[2] == []
    assert [c.first_after for c in analyse(_history(_noisy(16, 0.002, 8, 1.07)))[2]] == [8]
    down = analyse(_history(_noisy(16, 0.002, 8, 0.8)))
    assert [c.first_after for c in down[2]] == [8] and down[3] == set()  # asv: no regression
    # an absolute time needs 10%
    assert analyse(_history(_noisy(16, 0.002, 8, 1.07), unit="seconds"))[2] == []


def test_a_one_commit_blip_of_a_measured_history_is_no_change() -> None:
    values: list[float | None] = [1.0, 1.01, 0.99, 1.0, 1.6, 1.0, 1.01, 0.99, 1.0, 1.0]
    pieces = [(0, 4, 1.0, 0.99, 0.01), (4, 5, 1.6, 1.6, 0.0), (5, 10, 1.0, 0.99, 0.01)]
    assert cp.change_points(values, pieces, 0.05) == []
    # a missing commit does not count towards a piece's two
    values[3] = None
    short = [(0, 2, 1.0, 1.0, 0.0), (2, 4, 1.5, 1.5, 0.0), (4, 10, 1.5, 1.5, 0.0)]
    values[2] = 1.5
    assert [c.first_after for c in cp.change_points(values, short, 0.05)] == [4]


# ----------------------------------------------------------------------------- exact histories
def test_a_one_byte_change_of_an_exact_count_is_named() -> None:
    values: list[float | None] = [1_048_576.0] * 10 + [1_048_577.0] * 10
    kind, least, found, _ = analyse(_history(values, unit="bytes"))
    assert (kind, least) == ("exact", 0.0)
    assert [(c.first_after, c.before, c.after) for c in found] == [(10, 1_048_576, 1_048_577)]
    # at the newest commit too, and both edges of a one-commit change (a count has no outlier)
    newest = analyse(_history([*values[:10], 1_048_577.0], "bytes"))[2]
    assert [c.first_after for c in newest] == [10]
    blip = [5.0] * 4 + [6.0] + [5.0] * 3
    assert [c.first_after for c in analyse(_history(blip, "entries"))[2]] == [4, 5]
    assert analyse(_history([5.0] * 8, "entries"))[2] == []


def test_a_count_that_moves_every_commit_is_measured_not_exact() -> None:
    """RocksDB's file sizes differ by some bytes at every commit: a one-byte wobble is no
    change, and neither is a time whose values happen to repeat."""
    rng = random.Random(SEED)
    wobbling = [float(1_000_000 + rng.randrange(-3000, 3000)) for _ in range(12)]
    assert not cp.is_exact("bytes", wobbling)
    assert analyse(_history(wobbling, unit="bytes"))[:3] == ("measured", 0.05, [])
    assert not cp.is_exact("seconds", [1.0] * 8)
    assert not cp.is_exact("entries", [1.5] * 8)  # not a whole count
    assert cp.exact_pieces([None, 3.0, 3.0, None, 4.0]) == [(1, 3, 3.0, 3.0, 0.0),
                                                            (4, 5, 4.0, 4.0, 0.0)]


# ----------------------------------------------------------------------------- a real asv folder
BENCH = "bench_x.Ratios.track_ratio"
COUNT = "bench_x.track_entries"
MACHINE = "m1"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout.strip()


def _asv_folder(tmp: Path, levels: list[list[float]], unit: str = "ratio",
                ) -> tuple[Path, Path, list[str]]:
    """A git repository of len(levels) commits and an asv results folder with one result file
    per commit, written by asv's own Results API: a benchmark with parameter op in (a, b, c),
    ``levels[i]`` the values of a and b at commit i, c skipped (NaN) at every commit; and an
    exact count without parameters, one entry more from the third commit on. The recorded
    dates run backwards, so only the git log can order them."""
    from asv import util
    from asv.benchmarks import Benchmarks
    from asv.machine import Machine
    from asv.results import Results
    from asv.runner import BenchmarkResult

    repo = tmp / "repo"
    repo.mkdir()
    _git(repo, "init", "--quiet")
    hashes = []
    for i in range(len(levels)):
        _git(repo, "commit", "--quiet", "--allow-empty", "-m", f"commit {i + 1}")
        hashes.append(_git(repo, "rev-parse", "HEAD"))
    results = tmp / "results"
    bench = {"name": BENCH, "type": "track", "unit": unit, "version": "v1",
             "params": [["'a'", "'b'", "'c'"]], "param_names": ["op"]}
    count = {"name": COUNT, "type": "track", "unit": "entries", "version": "v1", "params": [],
             "param_names": []}
    util.write_json(str(results / "benchmarks.json"), {BENCH: bench, COUNT: count},
                    Benchmarks.api_version)
    util.write_json(str(results / MACHINE / "machine.json"), {"machine": MACHINE},
                    Machine.api_version)
    for i, (commit, measured) in enumerate(zip(hashes, levels)):
        values = [*measured, math.nan]
        r = Results({"machine": MACHINE, "python": "3.11"}, {}, commit,
                    date=2_000_000_000_000 - i * 1000, python="3.11", env_name="env-1",
                    env_vars={})
        r.add_result(bench, BenchmarkResult(result=values, samples=[None] * len(values),
                                            number=[None] * len(values), errcode=0, stderr="",
                                            profile=None))
        r.add_result(count, BenchmarkResult(result=[1000.0 + (i >= 2)], samples=[None],
                                            number=[None], errcode=0, stderr="", profile=None))
        r.save(str(results))
    return repo, results, hashes


def test_reads_a_real_asv_results_folder_in_the_git_logs_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(SEED)
    levels = [[2.0 * rng.lognormvariate(0, 0.01) * (1.4 if i >= 5 else 1.0),
               3.0 * rng.lognormvariate(0, 0.01)] for i in range(8)]
    repo, results, hashes = _asv_folder(tmp_path, levels)
    out = tmp_path / "report.json"
    assert main([str(results), "--repo", str(repo), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["order"] == "git" and [c["commit"] for c in doc["commits"]] == hashes
    assert doc["commits"][5]["subject"] == "commit 6"
    assert doc["histories"] == 3  # op c, skipped at every commit, has none
    assert [(p["benchmark"], p["params"], p["commit"], p["position"], p["last_before"], p["kind"])
            for p in doc["change_points"]] == [
        (BENCH, {"op": "a"}, hashes[5], 6, hashes[4], "measured"),
        (COUNT, {}, hashes[2], 3, hashes[1], "exact")]
    point = doc["change_points"][0]
    assert point["ratio"] == pytest.approx(1.4, rel=0.03) and point["asv_regression"]
    assert re.search(rf"^{re.escape(BENCH)}\(a\) +{hashes[5][:8]} +6/8 ", printed, re.M)
    assert re.search(rf"^{COUNT} +{hashes[2][:8]} +3/8 +1000 +1001 .* exact", printed, re.M)
    assert "1 of 2 histories change" in printed
    # --benchmark keeps the matching parameter set only; without a repository that has the
    # commits, the recorded dates order them (here backwards: the step reads as a drop at 5)
    assert main([str(results), "--benchmark", r"\('b'\)", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["histories"] == 1
    assert main([str(results), "--repo", str(tmp_path), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["order"] == "date" and doc["commits"][0]["commit"] == hashes[-1]
    assert [(p["position"], p["ratio"] < 1) for p in doc["change_points"]] == [(4, True),
                                                                              (7, True)]
    assert "commit dates" in capsys.readouterr().out


def test_a_step_in_an_absolute_time_is_shown_but_names_no_commit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Absolute times are measured minutes apart and move with the machine: their steps are
    listed, not judged; the commits named come from ratios and exact counts only."""
    rng = random.Random(SEED)
    levels = [[2.0 * rng.lognormvariate(0, 0.01) * (1.4 if i >= 5 else 1.0),
               3.0 * rng.lognormvariate(0, 0.01)] for i in range(8)]
    repo, results, hashes = _asv_folder(tmp_path, levels, unit="seconds")
    out = tmp_path / "report.json"
    assert main([str(results), "--repo", str(repo), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    judged = {p["benchmark"]: p["judged"] for p in doc["change_points"]}
    assert judged == {BENCH: False, COUNT: True}
    assert doc["judged_commits"] == [hashes[2]]  # the exact count's, not the time's
    assert "no: an absolute time" in capsys.readouterr().out


@pytest.mark.parametrize(("case", "message"), [
    ("missing", "no such folder"),
    ("empty", "not an asv results folder (no benchmarks.json)"),
    ("no-machine", "not an asv results folder (no <machine>/machine.json)"),
    ("unknown-machine", "unknown machine 'nope'"),
    ("bad-regex", "bad --benchmark regex"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         case: str, message: str) -> None:
    from asv import util
    from asv.benchmarks import Benchmarks

    folder = tmp_path / "results"
    args = [str(folder)]
    if case != "missing":
        folder.mkdir()
    if case in ("no-machine", "unknown-machine", "bad-regex"):
        util.write_json(str(folder / "benchmarks.json"), {}, Benchmarks.api_version)
    if case in ("unknown-machine", "bad-regex"):
        (folder / MACHINE).mkdir()
        (folder / MACHINE / "machine.json").write_text('{"machine": "m1", "version": 1}')
    args += {"unknown-machine": ["--machine", "nope"], "bad-regex": ["--benchmark", "("]}.get(
        case, [])
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and message in captured.err, captured.err


# ----------------------------------------------------------------------------- the experiment
def test_the_history_plants_its_slowdown_in_the_heap_key_switch() -> None:
    """The experiment's plant finds its line in the heap backend as it is now (it refuses a
    backend that moved on rather than plant nothing), and the result still compiles."""
    from backends import heap_backend

    source = Path(heap_backend.__file__).read_text()
    planted = changepoint_history.plant(source)
    assert planted.count("for _ in range(30)") == 1
    compile(planted, "heap_backend.py", "exec")
    with pytest.raises(ValueError, match="set_current_key"):
        changepoint_history.plant(source.replace("def set_current_key", "def select_key"))


def test_interleaved_ratio_is_the_median_of_the_pairs_after_a_warm_up() -> None:
    """state and raw alternate; each pair's ratio is the state call's clock time over the raw
    call's right after it; the warm-up calls are not timed."""
    calls: list[str] = []
    ticks = iter([0, 30, 40,  # pair 1: 30 / 10
                  40, 60, 70,  # pair 2: 20 / 10
                  70, 170, 180])  # pair 3: 100 / 10 (a pause: the median drops it)
    ratio = interleaved_ratio(lambda: calls.append("s"), lambda: calls.append("r"),
                              alternations=3, clock=lambda: next(ticks))
    assert ratio == 3.0
    assert calls == ["s", "r"] * 4
