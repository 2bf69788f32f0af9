"""One summary number (with its spread) per scenario and metric.

Every view that shows a single number -- tables, findings, the Pareto plot, diffs -- takes it from
here, so "median of repetitions" versus "peak over time" is decided in exactly one place:

* summary metrics (step = repetition): median, min-max and IQR over repetitions;
* event metrics (step = checkpoint id): median over checkpoints;
* series metrics (step = sample): the peak, because capacity planning cares about the high-water
  mark, with the series' range and sample count as context.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workloads.report.load import Run, Samples, ScenarioKey

BASIS = {
    "summary": "median of repetitions",
    "event": "median over checkpoints",
    "series": "peak over logical time",
}


@dataclass(frozen=True)
class Stat:
    """A headline value and the spread around it."""

    center: float
    lo: float
    hi: float
    q1: float
    q3: float
    n: int
    basis: str
    #: Last sample of a time series (steady state vs. peak); None for other kinds.
    last: float | None = None

    @property
    def spread_known(self) -> bool:
        return self.n > 1


def summarize(samples: Samples) -> Stat | None:
    """Reduce samples to a Stat; None if there is nothing finite to summarise."""
    values = samples.values[np.isfinite(samples.values)]
    if values.size == 0:
        return None
    q1, q3 = (float(x) for x in np.percentile(values, [25, 75]))
    lo, hi = float(values.min()), float(values.max())
    series = samples.kind == "series"
    center = hi if series else float(np.median(values))
    last = float(values[-1]) if series else None
    basis = BASIS.get(samples.kind, samples.kind)
    return Stat(center, lo, hi, q1, q3, int(values.size), basis, last)


def stat(run: Run, key: ScenarioKey, metric: str) -> Stat | None:
    """The Stat for ``metric`` in scenario ``key`` or None if missing / not applicable."""
    samples = run.get(key, metric)
    return None if samples is None else summarize(samples)


def value(run: Run, key: ScenarioKey, metric: str) -> float | None:
    """Just the headline number, or None."""
    s = stat(run, key, metric)
    return None if s is None else s.center


def pareto_front(points: list[tuple[float, float]]) -> list[bool]:
    """Mark points not dominated when minimising x (state bytes) and maximising y (throughput).

    A point is dominated if another is at least as good on both axes and strictly better on one.
    Quadratic, which is fine for the handful of (backend, strategy) points in one workload.
    """
    flags = []
    for i, (xi, yi) in enumerate(points):
        dominated = any(
            xj <= xi and yj >= yi and (xj < xi or yj > yi)
            for j, (xj, yj) in enumerate(points)
            if j != i
        )
        flags.append(not dominated)
    return flags


@dataclass(frozen=True)
class ParetoPoint:
    """One (backend, strategy) in the throughput-versus-peak-state trade-off."""

    key: ScenarioKey
    peak_bytes: float
    throughput: Stat
    optimal: bool


def pareto_bytes_metric(run: Run, workload: str) -> str | None:
    """Physical bytes are what a deployment pays for; fall back to logical bytes if absent."""
    for metric in ("physical_bytes", "logical_bytes"):
        if any(run.get(k, metric) is not None for k in run.scenarios(workload)):
            return metric
    return None


def pareto_points(run: Run, workload: str) -> tuple[str | None, list[ParetoPoint]]:
    """Points with both a throughput and a peak-bytes number, flagged if Pareto-optimal."""
    metric = pareto_bytes_metric(run, workload)
    if metric is None:
        return None, []
    raw: list[tuple[ScenarioKey, float, Stat]] = []
    for key in run.scenarios(workload):
        tp, size = stat(run, key, "records_per_s"), stat(run, key, metric)
        if tp is not None and size is not None:
            raw.append((key, size.center, tp))
    flags = pareto_front([(x, tp.center) for _, x, tp in raw])
    points = [ParetoPoint(k, x, tp, f) for (k, x, tp), f in zip(raw, flags)]
    return metric, points
