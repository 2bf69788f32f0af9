"""Simulated comparison cells through the report's own decision: how often it names a leader
among identical strategies (A/A), how often it names a truly faster one (power), and how often
its paired interval covers the true ratio.

A cell is one (workload, backend) of a comparison: ``strategies`` strategies, each run once per
round for ``rounds`` rounds. The model is the one the machine showed (docs/report.md, "How the
decision was checked"): each round's level moves every strategy of that round alike (log-normal,
sd ``drift``), and each job adds its own independent noise (log-normal, sd ``noise``). Strategy 0
runs ``lead`` times faster than the others, which are identical.

The values are drawn with numpy, vectorised and seeded; every cell is then an in-memory
:class:`~workloads.report.load.Run` with its rounds recorded, handed to
:func:`workloads.report.decision.pick`, the same call the decision table makes. Run
``python -m workloads.report.simulate`` for the power table in docs/report.md.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workloads.report.decision import THROUGHPUT, Pick, pick
from workloads.report.load import Run, ScenarioKey
from workloads.report.paired import round_matrix
from workloads.results.summaries import NO_TIME, Samples

WORKLOAD = "simulated"
BACKEND = "heap"
METRIC = THROUGHPUT[0]
#: A level near a real heap lane's (records/s): the decision is scale-free, the report's text not.
LEVEL = 300_000.0


@dataclass(frozen=True)
class Model:
    """The machine and the strategies of one simulated cell (see the module docstring)."""

    rounds: int
    drift: float
    noise: float
    lead: float = 1.0
    strategies: int = 4
    #: When set, each cell draws its drift's sd uniformly from [drift, drift_hi].
    drift_hi: float | None = None
    #: False: run.json records no rounds, so the decision compares repetitions unpaired.
    paired: bool = True
    #: The last strategy runs ``laggard`` times slower than the others (1: not at all): the
    #: shape of a cell whose leaders tie and one strategy trails.
    laggard: float = 1.0


def draw(model: Model, cells: int, rng: np.random.Generator) -> np.ndarray:
    """Throughputs of ``cells`` cells: shape (cells, strategies, rounds)."""
    shape = (cells, model.strategies, model.rounds)
    logs = rng.normal(0.0, model.noise, shape)
    sd = (np.full((cells, 1, 1), model.drift) if model.drift_hi is None
          else rng.uniform(model.drift, model.drift_hi, (cells, 1, 1)))
    logs += sd * rng.standard_normal((cells, 1, model.rounds))
    logs[:, 0, :] += math.log(model.lead)
    logs[:, -1, :] -= math.log(model.laggard)
    return LEVEL * np.exp(logs)


def strategy_names(count: int) -> list[str]:
    return [f"s{i}" for i in range(count)]


def cell_run(values: np.ndarray, paired: bool = True) -> Run:
    """One cell's throughputs (strategies x rounds) as a loaded run with its rounds recorded
    (each round lists every strategy, as run.json's ``config.rounds.orders`` does), or, not
    ``paired``, as a run from before rounds were recorded."""
    k, n = values.shape
    names = strategy_names(k)
    orders = [[f"{BACKEND}/{s}" for s in names] for _ in range(n)]
    config: dict = {"repetitions": n}
    if paired:
        config["rounds"] = {"count": n, "orders": orders}
    meta = {"spec": {"name": WORKLOAD}, "config": config}
    steps = np.arange(n, dtype=np.int64)
    times = np.full(n, NO_TIME, dtype=np.int64)
    samples = {ScenarioKey(WORKLOAD, BACKEND, s): {
        METRIC: Samples("summary", "records/s", steps, times, values[i].astype(np.float64))}
        for i, s in enumerate(names)}
    return Run(run_dir=Path(WORKLOAD), meta=meta, samples=samples, units={METRIC: "records/s"},
               workloads=[WORKLOAD], backends=[BACKEND], strategies=names)


def decide(values: np.ndarray, paired: bool = True) -> Pick:
    """The decision table's Fastest cell for one simulated cell."""
    run = cell_run(values, paired)
    found = pick(run, list(run.samples), THROUGHPUT)
    assert found is not None
    return found


@dataclass(frozen=True)
class Outcome:
    """What the decision did over many cells of one model."""

    cells: int
    #: Cells whose table puts any strategy behind the leading group (a leader named).
    named_any: float
    #: Cells whose table names strategy 0 alone, ahead of every other.
    named_lead_alone: float
    #: Cells whose table puts the last strategy behind the leading group.
    last_behind: float = 0.0


def run_cells(model: Model, cells: int, seed: int) -> Outcome:
    """Draw ``cells`` cells of ``model`` and decide each."""
    values = draw(model, cells, np.random.default_rng(seed))
    first = ScenarioKey(WORKLOAD, BACKEND, strategy_names(model.strategies)[0])
    last = ScenarioKey(WORKLOAD, BACKEND, strategy_names(model.strategies)[-1])
    any_named = alone = behind = 0
    for cell in values:
        found = decide(cell, model.paired)
        any_named += found.decided
        alone += found.separated and found.best == first
        behind += any(key == last for key, _ in found.behind)
    return Outcome(cells, any_named / cells, alone / cells, behind / cells)


def within_round_noise(run: Run, metric: str = METRIC) -> dict[tuple[str, str], float]:
    """Per (workload, backend) with recorded rounds, the sd of a job's log value around its
    round's level and its strategy's level (two-way residual): the per-job noise that paired
    rounds cannot cancel, the ``noise`` of :class:`Model`."""
    out: dict[tuple[str, str], float] = {}
    for workload in run.workloads:
        for backend in run.backends:
            keys = [k for k in run.scenarios(workload)
                    if k.backend == backend and k not in run.not_applicable]
            matrix = round_matrix(run, keys, metric) if len(keys) > 1 else None
            if matrix is None or matrix.shape[1] < 2:
                continue
            logs = np.log(matrix)
            resid = (logs - logs.mean(axis=0, keepdims=True) - logs.mean(axis=1, keepdims=True)
                     + logs.mean())
            dof = (logs.shape[0] - 1) * (logs.shape[1] - 1)
            out[(workload, backend)] = float(np.sqrt((resid**2).sum() / dof))
    return out


def power_table(rounds: Sequence[int], drifts: Sequence[float], noise: float, lead: float,
                cells: int, seed: int) -> str:
    """Markdown: per rounds, the share of cells naming the truly faster strategy alone at each
    drift (paired, each drift its own seed), the same unpaired at the middle drift, and the A/A
    share naming any leader (drift drawn over the range)."""
    powers = " | ".join(f"power, drift {d:g}" for d in drifts)
    middle = drifts[len(drifts) // 2]
    head = (f"| rounds | {powers} | unpaired power, drift {middle:g} | A/A: any leader "
            f"(drift {min(drifts):g}-{max(drifts):g}) |")
    lines = [head, "|---" * (len(drifts) + 3) + "|"]
    for n in rounds:
        found = [run_cells(Model(n, d, noise, lead), cells, seed + 10 * n + i).named_lead_alone
                 for i, d in enumerate(drifts)]
        unpaired = run_cells(Model(n, middle, noise, lead, paired=False), cells,
                             seed + 10 * n + 7).named_lead_alone
        aa = run_cells(Model(n, min(drifts), noise, drift_hi=max(drifts)), cells,
                       seed + 10 * n + 9).named_any
        lines.append(f"| {n} | " + " | ".join(f"{p:.3f}" for p in found)
                     + f" | {unpaired:.3f} | {aa:.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", default="6,8,10")
    parser.add_argument("--drift", default="0.15,0.2,0.25")
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--lead", type=float, default=1.15)
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args(argv)
    print(power_table([int(x) for x in args.rounds.split(",")],
                      [float(x) for x in args.drift.split(",")],
                      args.noise, args.lead, args.cells, args.seed))


if __name__ == "__main__":
    main()
