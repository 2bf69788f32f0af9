"""Paired rounds in the decision table: repetitions pair by their index (never by position),
only where run.json records the rounds and both strategies ran in every one; a leader ahead in
every round is named however much the rounds' levels move, and the same numbers without the
rounds keep the unpaired rule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from workloads.report.decision import THROUGHPUT, cell_text, pick, repetitions_hint, separations
from workloads.report.load import ScenarioKey, load_run
from workloads.report.paired import paired_values, round_matrix

W, B, M = "churn", "heap", "records_per_s"


def write_run(path: Path, values: dict[str, list[float]], rounds: bool = True) -> Path:
    """A run folder: one records_per_s row per strategy and repetition (NaN: the job wrote no
    value), and run.json with each round's order when ``rounds``."""
    rows = [{"workload": W, "backend": B, "strategy": s, "metric": M, "value": v, "task": -1,
             "step": rep, "logical_time_ms": -1, "unit": "records/s"}
            for s, vs in values.items() for rep, v in enumerate(vs)]
    path.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), path / "rows.parquet")
    n = max(len(v) for v in values.values())
    config: dict = {"repetitions": n, "backends": [B], "strategies": list(values)}
    if rounds:
        config["rounds"] = {"count": n, "order_seed": 1,
                            "orders": [[f"{B}/{s}" for s in values] for _ in range(n)]}
    (path / "run.json").write_text(json.dumps({"spec": {"name": W}, "config": config}))
    return path


def key(strategy: str) -> ScenarioKey:
    return ScenarioKey(W, B, strategy)


def test_values_pair_by_repetition_index_not_position(tmp_path: Path) -> None:
    nan = float("nan")
    run = load_run(write_run(tmp_path / "r", {
        "x": [100.0, nan, 300.0, 400.0],  # repetition 1 wrote no value
        "y": [110.0, nan, 330.0, 440.0],
    }))
    a, b = paired_values(run, key("x"), key("y"), M)  # type: ignore[misc]
    assert list(a) == [100.0, 300.0, 400.0] and list(b) == [110.0, 330.0, 440.0]
    assert np.allclose(b / a, 1.1)  # positions after the hole would pair 300 with 440


def test_unequal_repetitions_or_no_recorded_rounds_do_not_pair(tmp_path: Path) -> None:
    nan = float("nan")
    holes = load_run(write_run(tmp_path / "h", {"x": [1.0, nan, 3.0], "y": [1.0, 2.0, 3.0]}))
    assert paired_values(holes, key("x"), key("y"), M) is None
    old = load_run(write_run(tmp_path / "o", {"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]},
                             rounds=False))
    assert paired_values(old, key("x"), key("y"), M) is None
    assert round_matrix(old, [key("x"), key("y")], M) is None


def _drifting(rounds: int, factors: dict[str, float], seed: int = 3) -> dict[str, list[float]]:
    """Rounds whose level moves up to 5x (shared by the round's strategies), 2% job noise."""
    rng = np.random.default_rng(seed)
    level = 300_000 * np.exp(rng.normal(0, 0.6, rounds))
    return {s: list(level * f * np.exp(rng.normal(0, 0.02, rounds))) for s, f in factors.items()}


def _fold(values: dict[str, list[float]], a: str, b: str) -> float:
    """How many times faster a ran than b: the geometric mean of their per-round ratios."""
    return float(np.exp(np.mean(np.log(np.array(values[a]) / np.array(values[b])))))


def test_a_leader_ahead_in_every_round_is_named_whatever_the_rounds_levels(
        tmp_path: Path) -> None:
    values = _drifting(8, {"none": 1.0, "timer": 1 / 1.6, "incremental": 1 / 2.4})
    paired = load_run(write_run(tmp_path / "p", values))
    found = pick(paired, [key(s) for s in values], THROUGHPUT)
    assert found is not None and found.separated and found.best == key("none")
    headline, separated, why = cell_text(found)
    assert separated and headline.startswith("none (")
    ahead = f"ahead of timer {_fold(values, 'none', 'timer'):.3g}\u00d7 and incremental " \
        f"{_fold(values, 'none', 'incremental'):.3g}\u00d7"
    assert headline.endswith(ahead)
    assert abs(_fold(values, "none", "timer") - 1.6) < 0.05  # what the rounds were made with
    assert "8 paired rounds" in why and why.startswith("better, p=")
    # the same numbers without recorded rounds: the unpaired rank test sees the rounds' spread
    unpaired = load_run(write_run(tmp_path / "u", values, rounds=False))
    verdict = separations(unpaired, [(key("timer"), key("none"), M)])[0]
    assert "paired" not in verdict.why
    assert not verdict.separated, verdict.why


def test_the_leading_group_holds_what_the_rounds_cannot_tell_apart(tmp_path: Path) -> None:
    values = _drifting(8, {"none": 1.0, "full_snapshot": 1.0, "timer": 1 / 1.6,
                           "incremental": 1 / 2.4})
    run = load_run(write_run(tmp_path / "g", values))
    found = pick(run, [key(s) for s in values], THROUGHPUT)
    assert found is not None and not found.separated and found.decided
    assert set(found.leaders) == {key("none"), key("full_snapshot")}
    headline, separated, _ = cell_text(found)
    assert not separated
    first, second = (k.strategy for k in found.leaders)
    assert headline.startswith(f"{first} and {second} (lead ")
    assert headline.endswith(f"ahead of timer {_fold(values, first, 'timer'):.3g}\u00d7 and "
                             f"incremental {_fold(values, first, 'incremental'):.3g}\u00d7")


def test_identical_strategies_name_no_leader_however_the_rounds_move(tmp_path: Path) -> None:
    values = _drifting(8, {"none": 1.0, "full_snapshot": 1.0, "timer": 1.0, "incremental": 1.0})
    run = load_run(write_run(tmp_path / "a", values))
    found = pick(run, [key(s) for s in values], THROUGHPUT)
    assert found is not None and not found.decided
    headline, _, why = cell_text(found)
    assert headline.startswith("not separated: ")
    assert "labels shuffled within rounds" in why


def test_three_rounds_cannot_decide_and_the_hint_says_how_many_can(tmp_path: Path) -> None:
    """3 paired rounds: the smallest sign-flip p is 2 / 2**3 = 0.25, so the cell cannot name
    anyone however far apart, and the line under the table asks for 6 rounds (2 / 2**6 =
    0.031), computed from the test rather than written down."""
    values = _drifting(3, {"none": 1.0, "full_snapshot": 1 / 1.5, "timer": 1 / 2.0,
                           "incremental": 1 / 3.0})
    run = load_run(write_run(tmp_path / "three", values))
    found = pick(run, [key(s) for s in values], THROUGHPUT)
    assert found is not None and not found.decided
    assert "cannot reach p<0.05 (smallest p=0.25)" in found.why
    hint = repetitions_hint(run, W)
    assert hint is not None and "Run --repetitions 6 or more" in hint.text
    assert "the paired test" in hint.text and "0.031" in hint.text
