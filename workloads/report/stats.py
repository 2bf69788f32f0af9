"""The report's view of one summary number (with its spread) per scenario and metric.

Every view that shows a single number -- tables, findings, the Pareto plot, diffs -- takes it from
here, and this module takes the rule from ``workloads.results.summaries`` (shared with the CLI's
summary table and asv): median of repetitions, median over checkpoints, peak over logical time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workloads.report.engines import engine_of
from workloads.report.load import Run, ScenarioKey
from workloads.results.summaries import BASIS, Stat, summarize

__all__ = ["BASIS", "CompactionMarks", "ParetoPoint", "Stat", "compaction_marks", "pareto_front",
           "pareto_points", "stat", "summarize", "value"]


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
    """Points with both a throughput and a peak-bytes number, flagged if Pareto-optimal among
    their own engine's points (the lane registry's): a JVM lane several times faster than a
    Python one would otherwise push every Python lane off the frontier, a ranking of engines
    the report never makes."""
    metric = pareto_bytes_metric(run, workload)
    if metric is None:
        return None, []
    raw: list[tuple[ScenarioKey, float, Stat]] = []
    for key in run.scenarios(workload):
        tp, size = stat(run, key, "records_per_s"), stat(run, key, metric)
        if tp is not None and size is not None:
            raw.append((key, size.center, tp))
    optimal: dict[ScenarioKey, bool] = {}
    for engine in {engine_of(k.backend) for k, _, _ in raw}:
        mine = [(k, x, tp) for k, x, tp in raw if engine_of(k.backend) == engine]
        optimal.update(zip((k for k, _, _ in mine),
                           pareto_front([(x, tp.center) for _, x, tp in mine])))
    points = [ParetoPoint(k, x, tp, optimal[k]) for k, x, tp in raw]
    return metric, points


@dataclass(frozen=True)
class CompactionMarks:
    """Where RocksDB compacted in one scenario: sample times (ms) at which its cumulative
    ``rocksdb_compactions`` counter had grown since the previous sample, and by how much."""

    times_ms: tuple[int, ...]
    counts: tuple[int, ...]
    #: The counter's last value: compactions over the whole run (None without the series).
    total: float | None
    flushes: float | None

    @property
    def ran(self) -> bool:
        return bool(self.total)


def compaction_marks(run: Run, key: ScenarioKey) -> CompactionMarks | None:
    """The scenario's compactions, or None when the run recorded no compaction counter for it
    (a heap backend, or a run from before RocksDB's counters were recorded)."""
    samples = run.get(key, "rocksdb_compactions")
    if samples is None or samples.kind != "series" or samples.values.size == 0:
        return None
    values = samples.values
    grew = np.diff(values, prepend=0.0)  # compactions before the first sample count there
    at = np.flatnonzero(grew > 0)
    flushes = run.get(key, "rocksdb_flushes")
    return CompactionMarks(
        times_ms=tuple(int(samples.times_ms[i]) for i in at),
        counts=tuple(round(float(grew[i])) for i in at),
        total=float(values[np.isfinite(values)].max()) if np.isfinite(values).any() else None,
        flushes=(
            float(np.nanmax(flushes.values)) if flushes is not None and flushes.values.size
            else None
        ),
    )
