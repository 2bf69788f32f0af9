"""Interleaved A/B: rounds alternate A B A B ..., drift cancels round by round, the stored
configuration survives a re-run, and the real runner works end to end."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tests.report.conftest import STRATEGIES, SyntheticRun, write_run_dir
from workloads.cli import CliError, main
from workloads.cli.ab import (
    SOURCE_TREE,
    Invocation,
    export_revision,
    interleave,
    run_args,
    run_session,
    spec_toml,
)
from workloads.report.load import ScenarioKey, load_run
from workloads.report.significance import signed_rank, smallest_paired_p
from workloads.report.verdict import Side, judge
from workloads.spec import builtin_specs, load_spec, parse_spec

A = Invocation("A", ("run", "a.toml"), Path("."), "revision a")
B = Invocation("B", ("run", "b.toml"), Path("."), "revision b")


class DriftingMachine:
    """A fake runner: each call writes a synthetic run whose speed drifts with the call count.

    ``slowdown`` applies to B's ``timer`` scenarios only: the injected effect to find.
    """

    def __init__(self, slowdown: float = 1.0, drift: float = 0.25) -> None:
        self.calls: list[str] = []
        self.slowdown = slowdown
        self.drift = drift

    def __call__(self, inv: Invocation, results_dir: Path) -> Path:
        self.calls.append(inv.label)
        k = len(self.calls)
        speed = 1.0 + self.drift * ((k - 1) // 2)  # the machine speeds up round by round
        factors = {s: speed for s in STRATEGIES}
        if inv.label == "B":
            factors["timer"] = speed / self.slowdown
        cfg = SyntheticRun(run_id=f"call-{k:02d}", seed=k, reps=1, throughput_factor=factors)
        return write_run_dir(results_dir / cfg.run_id, cfg)


def test_rounds_alternate_a_b_a_b(tmp_path: Path) -> None:
    machine = DriftingMachine()
    log = interleave(A, B, 4, machine, tmp_path)
    assert machine.calls == ["A", "B"] * 4
    assert [(e["round"], e["side"]) for e in log] == [(r, s) for r in range(4) for s in "AB"]
    assert all(Path(e["run_dir"]).parent == tmp_path / e["side"] for e in log)
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        interleave(A, B, 0, machine, tmp_path)


def test_interleaved_rounds_find_a_slowdown_despite_drift(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    # The machine speeds up 25% per round: unpaired, A's and B's rounds overlap widely.
    out = run_session(A, B, 10, tmp_path, 0.05, runner=DriftingMachine(slowdown=1.3))
    html = out.read_text(encoding="utf-8")
    worse = re.findall(r'<td class="why worse" data-metric="records_per_s"[^>]*>([^<]*)<', html)
    assert len(worse) == 4, "timer on both backends, both workloads"
    assert all(re.search(r"95% CI 0\.7\d.0\.7\d", note) for note in worse), worse
    assert not re.findall(r'<td class="num ratio better"', html)
    record = json.loads((tmp_path / "ab.json").read_text(encoding="utf-8"))
    assert [e["side"] for e in record["order"]] == ["A", "B"] * 10
    # The same rounds pooled without their pairing: the drift drowns the effect.
    runs = {s: [load_run(e["run_dir"]) for e in record["order"] if e["side"] == s] for s in "AB"}
    unpaired = judge(Side.of("A", runs["A"]), Side.of("B", runs["B"]),
                     ScenarioKey("ycsb-a", "heap", "timer"), "records_per_s")
    assert unpaired.css == "grey" and unpaired.note.startswith("not significant")
    printed = capsys.readouterr().out
    assert "ycsb-a/heap/timer" in printed and "worse" in printed and str(out) in printed


def test_interleaved_rounds_of_the_same_code_colour_nothing(tmp_path: Path) -> None:
    out = run_session(A, B, 8, tmp_path, 0.05, runner=DriftingMachine(slowdown=1.0))
    html = out.read_text(encoding="utf-8")
    assert not re.findall(r'<td class="num ratio (?:better|worse)"', html)


def test_signed_rank_pairs_cancel_drift() -> None:
    rounds = 1.0 + 0.25 * np.arange(8)
    a, b = 100 * rounds, 100 * rounds / 1.3 * np.linspace(0.99, 1.01, 8)
    assert signed_rank(a, b).p == pytest.approx(smallest_paired_p(8))
    assert signed_rank(a, a).p == 1.0


@pytest.mark.parametrize("name", sorted(builtin_specs()))
def test_shipped_specs_survive_the_trip_through_toml(name: str) -> None:
    spec = load_spec(name).with_overrides(events=1234)
    text = spec_toml(spec.to_dict())
    assert parse_spec(tomllib.loads(text)).to_dict() == spec.to_dict()


def test_run_args_repeat_the_stored_configuration(tmp_path: Path) -> None:
    meta = {"config": {"backends": ["heap", "rocksdb"],
                       "strategies": ["none", "incremental(5, false)"], "parallelism": 3,
                       "source_partitions": 3, "repetitions": 2, "sample_interval_ms": None,
                       "warmup_fraction": 0.1, "time_speedup": 1.0, "measure_latency": False,
                       "batch_size": 4096, "master": "local[2]", "in_process": False}}
    args = run_args(meta, tmp_path / "s.toml")
    assert args[:4] == ("run", str(tmp_path / "s.toml"), "--backend", "heap,rocksdb")
    assert "--sample-interval-ms" not in args and args[-1] == "--no-report"
    text = " ".join(args)
    for part in ("--strategy none --strategy incremental(5, false)", "--parallelism 3",
                 "--repetitions 2", "--no-latency", "--master local[2]", "--batch-size 4096"):
        assert part in text
    assert "--repetitions 7" in " ".join(run_args(meta, tmp_path / "s.toml", repetitions=7))


def test_rerun_refuses_a_compare_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    run = write_run_dir(tmp_path / "cmp", SyntheticRun(reps=1))  # spec is a list
    assert main(["diff", "--rerun", str(run), str(run), "--results-dir",
                 str(tmp_path / "out")]) == 2
    assert "re-runs folders written by `statebench run`" in capsys.readouterr().err


def test_diff_rerun_with_the_real_runner(tmp_path: Path) -> None:
    """Two real in-process runs of a tiny spec, re-run alternately by real subprocesses."""
    results = tmp_path / "results"
    common = ["run", "ycsb-a", "--in-process", "--events", "2000", "--backend", "heap",
              "--strategy", "none,timer", "--results-dir", str(results), "--no-report"]
    assert main(common) == 0 and main(common) == 0
    run_a, run_b = sorted(p for p in results.iterdir() if p.is_dir())
    assert main(["diff", "--rerun", str(run_a), str(run_b), "--rounds", "2",
                 "--results-dir", str(tmp_path / "ab")]) == 0
    (session,) = (tmp_path / "ab").iterdir()
    record = json.loads((session / "ab.json").read_text(encoding="utf-8"))
    assert [e["side"] for e in record["order"]] == ["A", "B", "A", "B"]
    created = [json.loads((Path(e["run_dir"]) / "run.json").read_text(encoding="utf-8"))
               ["created_utc"] for e in record["order"]]
    assert created == sorted(created), "runs were taken in the logged order"
    rerun = json.loads((Path(record["order"][0]["run_dir"]) / "run.json").read_text("utf-8"))
    original = json.loads((run_a / "run.json").read_text(encoding="utf-8"))
    assert rerun["spec"] == original["spec"]
    assert rerun["config"]["strategies"] == original["config"]["strategies"] == ["none", "timer"]
    html = (session / "diff.html").read_text(encoding="utf-8")
    classes = re.findall(r'<td class="num ratio ([a-z]*)"', html)
    # Same code, same spec: counted numbers are equal, and nothing is coloured.
    assert "equal" in classes and not {"better", "worse", "different"} & set(classes)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                   check=True, capture_output=True)


def test_revisions_are_exported_without_touching_the_checkout(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "speed.txt").write_text("slow\n", encoding="utf-8")
    _git(repo, "add", "speed.txt")
    _git(repo, "commit", "-qm", "one")
    (repo / "speed.txt").write_text("fast\n", encoding="utf-8")
    _git(repo, "commit", "-qam", "two")
    (repo / "speed.txt").write_text("uncommitted\n", encoding="utf-8")
    tree, describe = export_revision(repo, "HEAD~1", tmp_path / "a")
    assert (tree / "speed.txt").read_text(encoding="utf-8") == "slow\n"
    assert describe.startswith("HEAD~1 (") and len(describe) == len("HEAD~1 (") + 13
    assert (repo / "speed.txt").read_text(encoding="utf-8") == "uncommitted\n"
    assert export_revision(repo, ".", tmp_path / "b") == (SOURCE_TREE, "working tree")
    with pytest.raises(CliError, match="unknown git revision 'nope'"):
        export_revision(repo, "nope", tmp_path / "c")


def test_ab_compares_a_revision_with_the_working_tree(tmp_path: Path) -> None:
    """`statebench ab HEAD . ycsb-a`: HEAD exported by git archive, run by real subprocesses."""
    assert main(["ab", "HEAD", ".", "ycsb-a", "--in-process", "--events", "2000",
                 "--backend", "heap", "--strategy", "none", "--rounds", "2",
                 "--results-dir", str(tmp_path)]) == 0
    (session,) = tmp_path.iterdir()
    record = json.loads((session / "ab.json").read_text(encoding="utf-8"))
    assert [e["side"] for e in record["order"]] == ["A", "B", "A", "B"]
    assert record["revisions"] == {"A": "HEAD", "B": "."} and len(record["commits"]["A"]) == 40
    html = (session / "diff.html").read_text(encoding="utf-8")
    assert "working tree (2 runs)" in html
