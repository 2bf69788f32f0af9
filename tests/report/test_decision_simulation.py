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

import pytest

from workloads.report import decision
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
    unguarded = run_cells(model, 300, seed=31).named_any
    assert unguarded > 0.05 and guarded <= 0.05, (unguarded, guarded)
