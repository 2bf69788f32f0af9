"""How often a protocol's per-op verdicts would repeat, predicted from runs already made.

The per-op table is judged by its verdicts over back-to-back runs (``bench.perop.compare``; a
bar of 24 of 28 the same, none contradicting itself). Three runs take one to two hours, so
before changing the protocol (more forks, workers or rounds) it is worth knowing what the
change can buy. This fits a simple model to runs of one protocol and simulates new triples
through the suite's own verdict rule (``workloads.results.band``).

The model, per cell and side (statebench or Flink), on the log of a process's ratio of mean
rates, TTL over off (what the verdict stands on, ``perop_stats.process_ratios``):

* **level**: the mean over every process of every run;
* **drift**: how far a run's mean moves from run to run beyond what its processes' spread
  explains (on this machine kind, the share of the L3 the neighbours leave changes between
  runs); no protocol choice inside a run averages it out;
* **process**: the spread between a run's processes that their rounds' noise does not explain
  (a fork's JIT, a worker's memory layout); only more processes average it out;
* **round**: the spread of one round's ratio (the rounds of the modes pair: they took turns),
  which more measured rounds per process average out.

A simulated run draws a drift per side, then each process's log-ratio from the process and
round spreads; its verdict is the suite's (Welch t over the two sides' processes, against the
1.5x band). What the prediction says is the cells' part: a cell whose level sits near an edge
of the band, within its drift, flips whatever the protocol, and the ``ceiling`` (processes
without spread) says how many cells that leaves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.perop_stats import check_runs, contradicts, process_ratios, verdict_bar
from workloads.results.band import band_agreement, log_ratio_interval

#: Simulated triples per prediction: the expected count of repeated cells moves by about 0.1
#: between seeds at this size.
DRAWS = 400
SEED = 29
SIDES = ("statebench", "flink")  # numerator and denominator of a cell's ratio
#: Processes a side in the ceiling: enough that the interval is the drift alone.
CEILING_PROCESSES = 200
#: The largest protocol a prediction simulates: processes a side (no more than the ceiling's),
#: measured rounds a process, and back-to-back runs a set (each costs the time of a run of the
#: prediction, about half a second).
MAX_PROCESSES = CEILING_PROCESSES
MAX_ROUNDS = 1000
MAX_RUNS = 100


@dataclass(frozen=True)
class SideFit:
    """One side of one cell, in natural-log units of the ratio TTL / off."""

    level: float
    drift: float  # standard deviations
    process: float
    round: float

    def process_sd(self, rounds: int) -> float:
        return math.sqrt(self.process**2 + self.round**2 / rounds)


def _process_logs(doc: dict[str, Any]) -> dict[tuple, tuple[np.ndarray, float, int]]:
    """Per (side, backend, ttl, op): each process's log-ratio of mean rates, the variance of
    one round's log-ratio (the rounds of the modes pair) averaged over the processes, and the
    rounds a process gave."""
    clock = doc.get("clock", "cpu")
    series = {(r["side"], r["backend"], r["ttl"], r["op"]): np.asarray(r["values"][clock], float)
              for r in doc["rates"]}
    out: dict[tuple, tuple[np.ndarray, float, int]] = {}
    for (side, backend, ttl, op), on in series.items():
        if ttl == "off":
            continue
        off = series[(side, backend, "off", op)]
        width = min(on.shape[1], off.shape[1])
        on, off = on[:, :width], off[:, :width]
        logs = np.log(process_ratios(on.tolist(), off.tolist()))
        per_round = np.log(on) - np.log(off)
        round_var = float(per_round.var(axis=1, ddof=1).mean()) if width > 1 else 0.0
        out[(side, backend, ttl, op)] = (logs, round_var, width)
    return out


def fit(docs: Sequence[dict[str, Any]]) -> dict[tuple, dict[str, SideFit]]:
    """The model of every cell present in all `docs` (runs of one protocol), by (backend, ttl,
    op) and side."""
    if len(docs) < 2:
        raise ValueError("a drift between runs needs at least two runs")
    if any(d["protocol"] != docs[0]["protocol"] for d in docs):
        raise ValueError("the runs must share one protocol")
    per_doc = [_process_logs(d) for d in docs]
    fits: dict[tuple, dict[str, SideFit]] = {}
    for key in per_doc[0]:
        if not all(key in p for p in per_doc):
            continue
        logs = [p[key][0] for p in per_doc]
        n = min(len(x) for x in logs)
        within = float(np.mean([x.var(ddof=1) for x in logs])) if n > 1 else 0.0
        means = np.array([x.mean() for x in logs])
        round_var = float(np.mean([p[key][1] for p in per_doc]))
        share = float(np.mean([p[key][1] / p[key][2] for p in per_doc]))  # of a process's
        fits.setdefault(key[1:], {})[key[0]] = SideFit(
            level=float(np.concatenate(logs).mean()),
            drift=math.sqrt(max(float(means.var(ddof=1)) - within / n, 0.0)),
            process=math.sqrt(max(within - share, 0.0)), round=math.sqrt(round_var))
    fits = {c: f for c, f in fits.items() if set(f) == set(SIDES)}
    if not fits:
        raise ValueError("no cell has both sides' rates, with TTL and without, in every run: "
                         "nothing to fit")
    return fits


def _verdict(num: np.ndarray, den: np.ndarray, band: float) -> str:
    lo, hi = log_ratio_interval(np.exp(num).tolist(), np.exp(den).tolist())
    return band_agreement(lo, hi, band)


def predict(fits: dict[tuple, dict[str, SideFit]], forks: int, workers: int,
            rounds_flink: int, rounds_statebench: int, band: float = 1.5, runs: int = 3,
            draws: int = DRAWS, seed: int = SEED) -> dict[str, Any]:
    """Simulated sets of `runs` runs (triples by default) of a protocol with `forks` Flink
    forks and `workers` statebench workers a cell, their rounds as given: the expected number
    of cells whose verdict repeats, how often the bar (``verdict_bar`` of the cells, none
    contradicting) is met, the expected contradictions, and each cell's repeat probability."""
    rng = np.random.default_rng(seed)
    shape = {"statebench": (workers, rounds_statebench), "flink": (forks, rounds_flink)}
    repeat = np.zeros((draws, len(fits)), bool)
    contradict = np.zeros((draws, len(fits)), bool)
    for j, sides in enumerate(fits.values()):
        for i in range(draws):
            verdicts = set()
            for _ in range(runs):
                drawn = {}
                for side, f in sides.items():
                    n, r = shape[side]
                    drawn[side] = (f.level + rng.normal(0, f.drift)
                                   + rng.normal(0, f.process_sd(r), n))
                verdicts.add(_verdict(drawn["statebench"], drawn["flink"], band))
            repeat[i, j] = len(verdicts) == 1
            contradict[i, j] = contradicts(verdicts)
    same = repeat.sum(axis=1)
    bar = verdict_bar(len(fits))
    met = (same >= bar) & ~contradict.any(axis=1)
    return {
        "forks": forks, "workers": workers, "rounds": [rounds_flink, rounds_statebench],
        "cells": len(fits), "expected_same": float(same.mean()),
        "same_p10_p90": [float(np.percentile(same, 10)), float(np.percentile(same, 90))],
        "bar": bar, "bar_met_share": float(met.mean()),
        "expected_contradicted": float(contradict.sum(axis=1).mean()),
        "repeat_by_cell": {"/".join(c): round(float(p), 2)
                           for c, p in zip(fits, repeat.mean(axis=0))},
    }


def report(docs: Sequence[dict[str, Any]], options: Sequence[tuple[int, int, int, int]],
           draws: int = DRAWS, runs: int = 3) -> dict[str, Any]:
    """The fit of `docs`, the prediction for their own protocol, for each of `options`
    ((forks, workers, Flink rounds, statebench rounds)) and for the ceiling, each over sets of
    `runs` back-to-back runs (3: the bar's triples; 2: what a pair of runs should share)."""
    check_runs(runs, MAX_RUNS)
    fits = fit(docs)
    proto = docs[0]["protocol"]
    own = (proto["forks"], proto["workers"], proto["jvm_iterations"], proto["py_values"])
    ceiling = (CEILING_PROCESSES, CEILING_PROCESSES, own[2], own[3])
    return {
        "runs": len(docs), "protocol": proto["name"], "simulated_runs": runs,
        "fit": {"/".join(c): {s: {k: round(v, 4) for k, v in vars(f).items()}
                             for s, f in sides.items()} for c, sides in fits.items()},
        "own": predict(fits, *own, runs=runs, draws=draws),
        "options": [predict(fits, *o, runs=runs, draws=draws) for o in options],
        "ceiling": predict(fits, *ceiling, runs=runs, draws=max(draws // 4, 50)),
    }
