"""The decision rule, tested for what it claims (issue 29 item 4a), on simulated cells run
through the report's own ``decision.pick`` (``workloads.report.simulate``):

* A/A: among 4 identical strategies whose rounds move together (round drift, log-normal sd
  0.15-0.25) with per-job noise on top, the Fastest cell names a leader (puts any strategy
  behind the leading group) in at most 5% of 1,000 cells;
* power: a strategy truly 15% faster is named alone, ahead of the 3 others, in at least 85% of
  cells at the default comparison's rounds.

Per-job noise is what pairing cannot cancel (docs/report.md, "How the decision was checked"):
the sd of a job's log throughput around its round's level and its strategy's. A/A is checked at
the level measured on this machine kind under six sessions' load (:data:`NOISE_LOADED`, a
6-round comparison's within-round residual) and at a quiet machine's (:data:`NOISE`); power at
the quiet machine's only, because under that load no practical number of rounds separates 15%
(the table in docs/report.md).
"""

from __future__ import annotations

import numpy as np
import pytest

from workloads.report import decision
from workloads.report.significance import closed_pair_p, partition_randomization, set_partitions
from workloads.report.simulate import Model, run_cells
from workloads.run.compare import DEFAULT_REPETITIONS

#: Per-job log-normal noise (sd) on a quiet machine: three checks of one ratio moved it by a
#: few percent (README: Flink's heap full_snapshot/none 0.99-1.07x, a log-ratio sd of about
#: 0.04, so about 0.03 a job). The power it gives falls fast with more noise: at 0.05 the
#: default 6 rounds name the leader in about 70% of cells and 8 rounds are needed
#: (docs/report.md, "How the decision was checked").
NOISE = 0.03
#: Measured under six sessions' load: a 6-round in-process comparison's within-round residual,
#: pooled over 6 cells (0.24-0.41 each, docs/report.md).
NOISE_LOADED = 0.34
#: The comparison's measured rounds (8 if the default were under 6: fewer cannot reach p < 0.05
#: with an exact paired test, 2 / 2**5 = 0.0625).
ROUNDS = DEFAULT_REPETITIONS if DEFAULT_REPETITIONS >= 6 else 8
CELLS = 1000


@pytest.mark.parametrize("noise", [NOISE, NOISE_LOADED])
def test_identical_strategies_name_a_leader_in_at_most_5_percent_of_cells(noise: float) -> None:
    """Each cell draws its round drift's sd from 0.15-0.25."""
    outcome = run_cells(Model(ROUNDS, 0.15, noise, drift_hi=0.25), CELLS, seed=29)
    assert outcome.named_any <= 0.05, outcome


def test_a_leader_truly_15_percent_faster_is_named_with_power_085() -> None:
    outcome = run_cells(Model(ROUNDS, 0.15, NOISE, lead=1.15, drift_hi=0.25), CELLS // 2,
                        seed=30)
    assert outcome.named_lead_alone >= 0.85, outcome


def test_without_the_check_of_the_whole_cell_identical_strategies_would_name_leaders(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard the A/A test needs: with more noise than pairing removes, the leader picked
    from the same rounds it is tested on beats its rivals in most rounds by selection alone,
    and with many rounds the paired tests alone would name it; the cell's randomization test
    (labels shuffled within rounds) keeps the rate at alpha. Here: a model where the paired
    tests alone name a leader in more than 5% of cells."""
    model = Model(10, 0.2, 0.1)
    guarded = run_cells(model, 300, seed=31).named_any
    monkeypatch.setattr(decision, "_differ_at_all", lambda matrix, metric: 0.0)
    # and each pair tested on its own, without the closure over the cell's partitions
    monkeypatch.setattr(decision, "closed_pair_ps", lambda logs, pairs: [
        partition_randomization(logs, [[i, j]]) for i, j in pairs])
    unguarded = run_cells(model, 300, seed=31).named_any
    # the guarded rate is alpha's binomial draw over 300 cells (sd 0.0126): allow two sd
    assert unguarded > 0.15 and guarded <= 0.05 + 2 * 0.0126, (unguarded, guarded)


@pytest.mark.parametrize("strategies", [3, 4])
def test_a_strategy_half_again_slower_than_tied_leaders_is_put_behind(strategies: int) -> None:
    """The shape of most of the default comparison's 1.5x cells (e.g. none and full_snapshot
    tied, timer behind): at 6 rounds a Benjamini-Hochberg factor over 2 or more comparisons
    lifted the exact paired test's smallest p (2/64) past 0.05, and the cell's gate (the
    leader's lead alone) passed about one cell in twenty, so the trailing strategy was put
    behind in about 5% of cells. The closed test puts it behind in nearly all, and still names
    no difference between the tied leaders beyond alpha."""
    outcome = run_cells(Model(ROUNDS, 0.15, 0.1, laggard=1.5, strategies=strategies,
                              drift_hi=0.25), 300, seed=32)
    assert outcome.last_behind >= 0.9, outcome
    assert outcome.named_lead_alone <= 0.05, outcome


def test_closed_testing_covers_every_partition_that_joins_the_pair() -> None:
    assert [sum(1 for _ in set_partitions(list(range(n)))) for n in range(1, 6)] == [
        1, 2, 5, 15, 52]  # Bell numbers
    rng = np.random.default_rng(3)
    logs = rng.normal(0, 0.01, (3, 6))
    logs[2] -= 0.5  # strategy 2 trails in every round, 0 and 1 tie
    assert closed_pair_p(logs, 0, 2) < 0.05 < closed_pair_p(logs, 0, 1)
    # the pair's own test can be small while a partition joining it with a third is not
    logs[1] -= 0.5
    logs[1, :3] += 1.0  # 1 swings: above 0 in half the rounds, far below in the rest
    assert closed_pair_p(logs, 0, 2) >= partition_randomization(logs, [[0, 2], [1]])
