"""How a run's rows become numbers: per-task values into job totals, and each scenario's metric
into one number with its spread. The one definition the CLI's summary table, asv
(``bench/bench_scenarios.py``) and the report (``workloads/report``) all use, so "median of
repetitions" versus "peak over time", and "sum" versus "max" over tasks, are decided here only.

1. Tasks into a job (:func:`combine_tasks`): per-task values of an additive unit (bytes, entries,
   counts, rates) add up; anything else (durations, latencies) takes the max, because a job is
   done when its slowest task is. The runner writes task=-1 totals with this rule
   (``workloads.run.metrics.finalize_rows``, which also merges latency histograms and weights
   the mean cleanup lag, what per-task rows alone cannot give); readers prefer those totals and
   fall back to this rule for rows without them (:func:`collapse`).
2. Steps into one number (:func:`summarize`), by the metric's kind:

   * summary metrics (step = repetition): median, min-max and IQR over repetitions;
   * event metrics (step = checkpoint id): median over checkpoints;
   * series metrics (step = sample): the peak, because capacity planning cares about the
     high-water mark, with the range, the last sample and the steady state (median of the later
     half) as context.

:func:`summaries` does both for a whole rows table.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

#: Units whose per-task values add up to the job's value.
ADDITIVE_UNITS = frozenset({"bytes", "entries", "count", "records/s", "ops/s", "s"})
TOTAL_TASK = -1
NO_TIME = -1

#: A metric whose rows say "this strategy was not run on this backend".
NOT_APPLICABLE = "not_applicable"
#: Derived metric: entries physically held (live + expired-but-present) at each sample.
STORED_ENTRIES = "stored_entries"
#: Metrics sampled once per checkpoint/restore (step = checkpoint id).
CHECKPOINT_PREFIX = "checkpoint_"
EVENT_METRICS = frozenset({"restore_ms"})

BASIS = {
    "summary": "median of repetitions",
    "event": "median over checkpoints",
    "series": "peak over logical time",
}


def is_additive(unit: str) -> bool:
    """True when per-task values of this unit sum to the job-wide value."""
    return unit in ADDITIVE_UNITS


def lag_metric(mechanism: str, stat: str) -> str:
    """The row name of one cleanup-lag statistic (p50, p99, max) of one cleanup mechanism."""
    return f"cleanup_lag_{mechanism}_{stat}_ms"


def combine_tasks(unit: str, values: Iterable[float]) -> float:
    """One job-wide value from the tasks' values of one metric at one step."""
    return math.fsum(values) if is_additive(unit) else max(values)


def is_event_metric(name: str) -> bool:
    """True for metrics sampled once per checkpoint/restore rather than over logical time."""
    return name.startswith(CHECKPOINT_PREFIX) or name in EVENT_METRICS


def metric_kind(metric: str, times: Iterable[int]) -> str:
    """"summary" (no logical time), "event" (per checkpoint) or "series" (over logical time)."""
    if all(t == NO_TIME for t in times):
        return "summary"
    return "event" if is_event_metric(metric) else "series"


@dataclass(frozen=True, order=True)
class ScenarioKey:
    """One benchmarked combination; the unit of comparison of summaries and the report."""

    workload: str
    backend: str
    strategy: str

    @property
    def label(self) -> str:
        """``workload/backend/strategy``: the rows' ``scenario`` column."""
        return f"{self.workload}/{self.backend}/{self.strategy}"


@dataclass(frozen=True)
class Samples:
    """Job-wide samples of one metric in one scenario, ordered by step.

    ``kind`` is "summary" (step = repetition), "event" (step = checkpoint id) or "series"
    (step = sample index over logical time).
    """

    kind: str
    unit: str
    steps: np.ndarray
    times_ms: np.ndarray
    values: np.ndarray


def collapse(unit: str, rows: list[tuple[int, int, int, float]]) -> tuple[np.ndarray, ...]:
    """(steps, times, values): one job-wide value per step from (task, step, time, value) rows.

    The task=-1 total when the run wrote one (it may be more than a combination, e.g. a merged
    latency histogram), otherwise :func:`combine_tasks` over the tasks."""
    totals = [r for r in rows if r[0] == TOTAL_TASK]
    by_step: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for _task, step, t, v in totals or rows:
        by_step[step].append((t, v))
    steps = np.array(sorted(by_step), dtype=np.int64)
    times = np.array([max(t for t, _ in by_step[s]) for s in steps], dtype=np.int64)
    if totals:
        # Duplicate totals for one step should not happen; a mean keeps them harmless.
        values = [float(np.mean([v for _, v in by_step[s]])) for s in steps]
    else:
        values = [combine_tasks(unit, [v for _, v in by_step[s]]) for s in steps]
    return steps, times, np.array(values, dtype=np.float64)


def stored_entries(metrics: dict[str, Samples]) -> Samples | None:
    """live + expired-present per step: what a cleanup strategy actually shrinks."""
    live, expired = metrics.get("live_entries"), metrics.get("expired_present_entries")
    if live is None or expired is None:
        return None
    common, li, ei = np.intersect1d(live.steps, expired.steps, return_indices=True)
    if common.size == 0:
        return None
    return Samples(
        kind=live.kind,
        unit=live.unit,
        steps=common,
        times_ms=live.times_ms[li],
        values=live.values[li] + expired.values[ei],
    )


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
    #: Median of the later half of a time series' samples; None for other kinds.
    steady: float | None = None

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
    steady = float(np.median(values[values.size // 2:])) if series else None
    basis = BASIS.get(samples.kind, samples.kind)
    return Stat(center, lo, hi, q1, q3, int(values.size), basis, last, steady)


def summaries(rows: pa.Table) -> dict[ScenarioKey, dict[str, Stat]]:
    """Scenario -> metric -> Stat, for every scenario that ran.

    Rows with a null or NaN value and ``not_applicable`` flags carry no measurement and are
    skipped; :data:`STORED_ENTRIES` is derived where both entry series exist."""
    names = ("workload", "backend", "strategy", "task", "step", "logical_time_ms", "metric",
             "value", "unit")
    cols: list[list[Any]] = [rows.column(n).to_pylist() for n in names]
    grouped: dict[ScenarioKey, dict[str, list[tuple[int, int, int, float]]]] = defaultdict(
        lambda: defaultdict(list))
    units: dict[str, str] = {}
    for w, b, s, task, step, t, metric, value, unit in zip(*cols):
        if metric == NOT_APPLICABLE or value is None or math.isnan(value):
            continue
        units.setdefault(metric, unit)
        grouped[ScenarioKey(w, b, s)][metric].append((task, step, t, value))
    out: dict[ScenarioKey, dict[str, Stat]] = {}
    for key, metrics in grouped.items():
        samples = {}
        for metric, metric_rows in metrics.items():
            steps, times, values = collapse(units[metric], metric_rows)
            kind = metric_kind(metric, (r[2] for r in metric_rows))
            samples[metric] = Samples(kind, units[metric], steps, times, values)
        derived = stored_entries(samples)
        if derived is not None:
            samples[STORED_ENTRIES] = derived
        stats = ((metric, summarize(s)) for metric, s in samples.items())
        out[key] = {metric: st for metric, st in stats if st is not None}
    return out
