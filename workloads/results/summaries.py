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

   An event or series metric whose rows hold several repetitions (a job lane that writes its
   per-batch or per-checkpoint rows in every repetition: Spark's lanes, Flink SQL's
   checkpoints) is never averaged step by step across them: each repetition keeps its own
   samples (:func:`split_repetitions`), its own headline (median over checkpoints, peak), and
   the number shown is the median of those headlines, one per repetition
   (:func:`repetition_values`), which is what a decision may test.

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
    (step = sample index over logical time). An event or series metric written in several
    repetitions keeps the first one's samples in ``steps``, ``times_ms`` and ``values`` (what
    the plots over time show) and every repetition's samples, in order, in ``repetitions``
    (empty when the rows hold one repetition).
    """

    kind: str
    unit: str
    steps: np.ndarray
    times_ms: np.ndarray
    values: np.ndarray
    repetitions: tuple[Samples, ...] = ()


Row = tuple[int, int, int, float]  # task, step, logical_time_ms, value


def collapse(unit: str, rows: list[Row]) -> tuple[np.ndarray, ...]:
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
        # Duplicate totals for one step come from several repetitions, which samples_of keeps
        # apart before it gets here; a mean keeps any other duplicate harmless.
        values = [float(np.mean([v for _, v in by_step[s]])) for s in steps]
    else:
        values = [combine_tasks(unit, [v for _, v in by_step[s]]) for s in steps]
    return steps, times, np.array(values, dtype=np.float64)


def split_repetitions(rows: list[Row]) -> list[list[Row]]:
    """The rows of one event or series metric of one scenario, one list per repetition.

    Rows carry no repetition column: a per-batch or per-checkpoint row's step is its batch or
    checkpoint id, which starts again in every repetition's job. A job writes each step of a
    task once, and the runner writes jobs round after round (``workloads.run.runner``), so a
    (task, step) that is written again belongs to a later repetition; within one task the rows
    of one job come in the order it wrote them, steps increasing, and a step that does not
    increase on its task's previous row starts the next repetition. Rows with no repeated
    (task, step) are one repetition, as they always were."""
    if len({(r[0], r[1]) for r in rows}) == len(rows):
        return [rows]
    parts: list[list[Row]] = []
    last: dict[int, tuple[int, int]] = {}  # task -> (its repetition, its previous step)
    for row in rows:
        task, step = row[0], row[1]
        rep, previous = last.get(task, (0, step - 1))
        if step <= previous:
            rep += 1
        last[task] = (rep, step)
        while len(parts) <= rep:
            parts.append([])
        parts[rep].append(row)
    return [p for p in parts if p]


def samples_of(metric: str, unit: str, rows: list[Row]) -> Samples:
    """One scenario's metric as :class:`Samples`: the job totals per step (:func:`collapse`),
    each repetition apart for an event or series metric (:func:`split_repetitions`)."""
    kind = metric_kind(metric, (r[2] for r in rows))
    if kind == "summary":
        return Samples(kind, unit, *collapse(unit, rows))
    totals = [r for r in rows if r[0] == TOTAL_TASK]
    parts = [Samples(kind, unit, *collapse(unit, part))
             for part in split_repetitions(totals or rows)]
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    return Samples(kind, unit, first.steps, first.times_ms, first.values, tuple(parts))


def _stored(live: Samples, expired: Samples) -> Samples | None:
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


def stored_entries(metrics: dict[str, Samples]) -> Samples | None:
    """live + expired-present per step: what a cleanup strategy actually shrinks (per
    repetition where both were written in the same repetitions)."""
    live, expired = metrics.get("live_entries"), metrics.get("expired_present_entries")
    if live is None or expired is None:
        return None
    first = _stored(live, expired)
    if first is None or len(live.repetitions) < 2 or \
            len(live.repetitions) != len(expired.repetitions):
        return first
    parts = [_stored(a, b) for a, b in zip(live.repetitions, expired.repetitions)]
    reps = tuple(p for p in parts if p is not None)
    return first if len(reps) < 2 else Samples(first.kind, first.unit, first.steps,
                                               first.times_ms, first.values, reps)


@dataclass(frozen=True)
class Stat:
    """A headline value and the spread around it (with ``per_repetition``, the spread of the
    repetitions' headlines: each a median over checkpoints or a peak over time)."""

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
    #: The number is the median of one headline per repetition (:func:`repetition_values`).
    per_repetition: bool = False

    @property
    def spread_known(self) -> bool:
        return self.n > 1


def _headline(kind: str, values: np.ndarray) -> float:
    """One repetition's number: the peak of a series, the median of anything else."""
    return float(values.max()) if kind == "series" else float(np.median(values))


def repetition_values(samples: Samples) -> np.ndarray | None:
    """One number per repetition: a summary metric's values (step = repetition), or for an
    event or series metric written in several repetitions each repetition's headline (median
    over checkpoints, peak over time); None when the rows hold the metric once per run."""
    if samples.kind == "summary":
        values = samples.values[np.isfinite(samples.values)]
        return values if values.size else None
    if len(samples.repetitions) < 2:
        return None
    heads = [_headline(samples.kind, v[np.isfinite(v)])
             for v in (r.values for r in samples.repetitions) if np.isfinite(v).any()]
    return np.array(heads, dtype=np.float64) if heads else None


def _over_repetitions(samples: Samples) -> Stat | None:
    """The Stat of an event or series metric held in several repetitions: the median of their
    headlines, with their spread."""
    heads = repetition_values(samples)
    if heads is None:
        return None
    finite = [v[np.isfinite(v)] for v in (r.values for r in samples.repetitions)
              if np.isfinite(v).any()]
    q1, q3 = (float(x) for x in np.percentile(heads, [25, 75]))
    series = samples.kind == "series"
    last = float(np.median([v[-1] for v in finite])) if series else None
    steady = (float(np.median([np.median(v[v.size // 2:]) for v in finite])) if series
              else None)
    basis = f"{BASIS.get(samples.kind, samples.kind)}, median of {heads.size} repetitions"
    return Stat(float(np.median(heads)), float(heads.min()), float(heads.max()), q1, q3,
                int(heads.size), basis, last, steady, per_repetition=True)


def summarize(samples: Samples) -> Stat | None:
    """Reduce samples to a Stat; None if there is nothing finite to summarise."""
    if len(samples.repetitions) > 1:
        return _over_repetitions(samples)
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
    grouped: dict[ScenarioKey, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
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
            samples[metric] = samples_of(metric, units[metric], metric_rows)
        derived = stored_entries(samples)
        if derived is not None:
            samples[STORED_ENTRIES] = derived
        stats = ((metric, summarize(s)) for metric, s in samples.items())
        out[key] = {metric: st for metric, st in stats if st is not None}
    return out
