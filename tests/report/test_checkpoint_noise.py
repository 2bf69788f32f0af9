"""Checkpoint sizes held once per run separate only beyond what identical runs of that workload
on that backend moved them (issue 29 item 7): the calibration is regenerable from the committed
runs, a cell uses its own workload's and backend's figure, and an uncalibrated one says so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from workloads.report import checkpoint_noise
from workloads.report.checkpoint_noise import CALIBRATION, calibrate, layout_noise, merge
from workloads.report.decision import separations
from workloads.report.load import ScenarioKey, load_run
from workloads.report.stats import stat

ROOT = Path(__file__).resolve().parents[2]
PACED = sorted((ROOT / "docs" / "results" / "sessions-paced").iterdir())
DEFAULT_RUNS = sorted((ROOT / "docs" / "results" / "checkpoint-noise").iterdir())
W = "ycsb-a"


def test_the_committed_calibration_is_what_its_runs_give() -> None:
    """The committed calibration (checkpoint_noise.CALIBRATION) is remade from the committed
    runs: three of sessions-paced (its RocksDB lanes) and three of the default comparison's
    RocksDB lanes."""
    committed = json.loads(CALIBRATION.read_text())["noise"]
    remade = merge(calibrate(PACED), calibrate(DEFAULT_RUNS))["noise"]
    assert set(remade) == set(committed)
    for name, entry in remade.items():
        assert committed[name]["spread"] == entry["spread"]
        assert committed[name]["runs"] == entry["runs"] >= checkpoint_noise.MIN_RUNS
    # one figure for every workload (the 10% it replaces) was wrong both ways
    spreads = [e["spread"] for e in committed.values()]
    assert min(spreads) < 0.10 < max(spreads)


@pytest.fixture
def rocksdb_pair(make_run: Callable[..., Path]) -> tuple[Path, ScenarioKey, ScenarioKey, str,
                                                          float]:
    """A run whose rocksdb checkpoint sizes are timing-dependent one-per-run numbers, and the
    gap between two of its strategies."""
    run_dir = make_run("ckpt", reps=3)  # ProcessingTime: checkpoint sizes timing-dependent
    run = load_run(run_dir)
    metric = "checkpoint_uploaded_bytes"
    keys = [k for k in run.scenarios(W) if k.backend == "rocksdb"
            and k not in run.not_applicable and stat(run, k, metric) is not None]
    sizes = {k: stat(run, k, metric).center for k in keys}  # type: ignore[union-attr]
    a, b = sorted(keys, key=sizes.__getitem__)[:2]
    gap = abs(sizes[b] / sizes[a] - 1)
    assert gap > 0
    return run_dir, a, b, metric, gap


def _calibrate_to(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spread: float) -> None:
    doc = {"noise": {f"{W}/rocksdb": {"spread": spread, "runs": 3}}}
    path = tmp_path / f"noise-{spread}.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(checkpoint_noise, "CALIBRATION", path)


def test_a_gap_beyond_the_calibrated_spread_separates_and_within_it_does_not(
        rocksdb_pair: tuple[Path, ScenarioKey, ScenarioKey, str, float],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run_dir, a, b, metric, gap = rocksdb_pair
    run = load_run(run_dir)
    _calibrate_to(monkeypatch, tmp_path, gap / 2)
    found = separations(run, [(a, b, metric)])[0]
    assert found.separated and f"beyond the {gap / 2:.0%} that 3 identical runs" in found.why
    _calibrate_to(monkeypatch, tmp_path, gap * 2)
    found = separations(run, [(a, b, metric)])[0]
    assert not found.separated and f"within the {gap * 2:.0%}" in found.why


def test_an_uncalibrated_workload_separates_no_checkpoint_size(
        rocksdb_pair: tuple[Path, ScenarioKey, ScenarioKey, str, float],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run_dir, a, b, metric, _ = rocksdb_pair
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"noise": {}}))
    monkeypatch.setattr(checkpoint_noise, "CALIBRATION", empty)
    assert layout_noise(W, "rocksdb") is None
    found = separations(load_run(run_dir), [(a, b, metric)])[0]
    assert not found.separated
    assert f"no calibration says how far identical runs of {W} move it on rocksdb" in found.why
