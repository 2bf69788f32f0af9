"""Paired rounds: which repetitions of two strategies ran together, and their values side by side.

A comparison runs in rounds (``workloads.run.runner.job_order``): round r runs every strategy
of a backend once, back to back in a shuffled order, and every row a job writes carries r as its
repetition index; run.json records each round's order (``orders`` under
``config.workloads.<name>.rounds`` in a comparison, ``config.rounds`` in a single run). A shared
machine moves whole rounds (a round under load runs every strategy slower), so the ratio of two
strategies inside one round carries their difference without the round's level: the decision
tests those per-round ratios (``decision.separations``).

Values pair by repetition INDEX, never by position: a job that wrote no value (a NaN dropped at
load) leaves a hole in one strategy's rounds, and counting positions would then pair round 3
of one strategy with round 4 of the other. Two scenarios pair only when the run recorded its
rounds, both ran in every recorded round, and their repetition sets are the same; anything
else (an older run, a failed job) keeps the unpaired rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workloads.report.load import Run, ScenarioKey
from workloads.report.runinfo import workload_config


def round_orders(run: Run, workload: str) -> list[list[str]] | None:
    """Each recorded round's jobs (``backend/strategy`` labels) of one workload, or None when
    run.json records no rounds (a run from before paired rounds)."""
    rounds: Any = workload_config(run, workload).get("rounds")
    if not isinstance(rounds, dict):
        return None
    orders = rounds.get("orders")
    if not isinstance(orders, list) or not orders or not all(isinstance(o, list) for o in orders):
        return None
    return [[str(label) for label in order] for order in orders]


def _ran_every_round(orders: list[list[str]], key: ScenarioKey) -> bool:
    label = f"{key.backend}/{key.strategy}"
    return all(label in order for order in orders)


def per_round(run: Run, key: ScenarioKey, metric: str) -> dict[int, float]:
    """A summary metric's finite value per repetition index ({} for other kinds)."""
    samples = run.get(key, metric)
    if samples is None or samples.kind != "summary":
        return {}
    return {int(step): float(v) for step, v in zip(samples.steps, samples.values)
            if np.isfinite(v)}


def round_matrix(run: Run, keys: Sequence[ScenarioKey], metric: str) -> np.ndarray | None:
    """The metric's values, one row per key and one column per round, when every key ran in
    every recorded round of its workload with the same repetitions and a positive value in
    each; None otherwise (the keys are then compared unpaired)."""
    if not keys:
        return None
    workloads = {k.workload for k in keys}
    if len(workloads) != 1:
        return None
    orders = round_orders(run, next(iter(workloads)))
    if orders is None or not all(_ran_every_round(orders, k) for k in keys):
        return None
    values = [per_round(run, k, metric) for k in keys]
    steps = set(values[0])
    if not steps or any(set(v) != steps for v in values[1:]):
        return None
    ordered = sorted(steps)
    matrix = np.array([[v[s] for s in ordered] for v in values], dtype=np.float64)
    return matrix if bool(np.all(matrix > 0)) else None


def paired_values(run: Run, a: ScenarioKey, b: ScenarioKey, metric: str
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """(a's values, b's values) aligned by repetition index, or None when they do not pair."""
    matrix = round_matrix(run, (a, b), metric)
    return None if matrix is None else (matrix[0], matrix[1])


def lead_scores(matrix: np.ndarray) -> np.ndarray:
    """Each row's mean log value relative to its rounds' mean: the order the rounds give the
    strategies once each round's level is taken out (how the decision ranks paired cells)."""
    logs = np.log(matrix)
    return (logs - logs.mean(axis=0, keepdims=True)).mean(axis=1)
