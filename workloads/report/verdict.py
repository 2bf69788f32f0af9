"""What a diff may conclude about one metric of one scenario: a verdict only on evidence.

Numbers come in three classes (``workloads.report.metrics.class_of``, the one rule):

* **Exact** numbers are counted, not timed: entries, logical bytes, canonical full-snapshot
  sizes, cleanup counts and lags (in logical ms). Under a logical clock
  (EventTime) the same seed and configuration give the same numbers, so A and B are simply
  "equal" or "different", with the difference shown: no test, no noise.
* **Timing-dependent** numbers are physical: RocksDB's SST, physical and memtable bytes, its
  flush and compaction counts and write amplification, RocksDB's incremental checkpoint sizes,
  the heap's footprint (copy-on-write while asynchronous snapshots run), the state counts
  under RocksDB's compaction filter, and every counted number under
  ProcessingTime (the clock follows the wall). Background threads decide them, so they are
  never "different": they take the sampled path below, with their spread.
* **Timed** numbers (throughput, latency, durations, CPU, GC) vary from run to run.

Timing-dependent and timed ratios B/A are coloured only when both sides have at least
:data:`MIN_SAMPLES` samples and an exact Mann-Whitney U test rejects "no change" at
:data:`ALPHA`, the 95% interval of the ratio excludes 1 (Welch's t on the log values, whose
coverage tests/report/test_interval_coverage.py checks; a bootstrap range, so labelled, where a
value is not positive), and the change is at least :data:`NOTICEABLE`. Paired samples (rounds
run back to back) take the paired rule instead (:class:`_Evidence`). A page tests many
metrics at once, so p is also adjusted for their number (Benjamini-Hochberg,
:func:`adjusted`). Anything less is shown grey with the reason.

A *side* of a diff is one run folder, or the rounds of an interleaved A/B session. With one run,
the samples of a summary metric are its repetitions; a checkpoint median or a peak over time is
one number per run (checkpoints and samples over time are not repetitions), except where every
repetition wrote its own (a job lane's per-batch rows): then each repetition's median or peak
is one sample. With several runs,
each run contributes its headline number, so rounds, not repetitions inside one process, are the
unit of evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from workloads.report.fmt import DASH, TIMES, fmt_value
from workloads.report.load import Run, Samples, ScenarioKey
from workloads.report.metrics import (
    EXACT,
    TIMED,
    TIMING_DEPENDENT,
    MetricClass,
    run_class_of,
    spec_for,
    workload_clock,
)
from workloads.report.significance import (
    mann_whitney,
    mean_ratio_ci,
    ratio_of_medians_ci,
    sign_flip,
    smallest_p,
    smallest_sign_flip_p,
)
from workloads.report.stats import Stat, summarize
from workloads.results.band import log_ratio_interval
from workloads.results.summaries import repetition_values

#: A metric with no other class: timed (the sampled path).
_TIMED = MetricClass(TIMED, "timed")
ALPHA = 0.05
MIN_SAMPLES = 3
NOTICEABLE = 0.05
CI_LEVEL = 0.95

@dataclass(frozen=True)
class Side:
    """One side of a comparison: a label and one or more runs of the same configuration.

    ``interleaved``: the runs are rounds of an A/B session in the order they were taken, so
    the i-th run of A and the i-th run of B ran back to back and are compared as a pair.
    """

    label: str
    runs: tuple[Run, ...]
    interleaved: bool = False
    #: What ran, for the page's title ("HEAD~1 (8fd9dbe8ad77)"); the run id if empty.
    source: str = ""

    @classmethod
    def of(cls, label: str, runs: Run | Sequence[Run], interleaved: bool = False,
           source: str = "") -> Side:
        items = (runs,) if isinstance(runs, Run) else tuple(runs)
        if not items:
            raise ValueError(f"side {label} has no runs")
        return cls(label, items, interleaved, source)

    @property
    def first(self) -> Run:
        return self.runs[0]

    def samples(self, key: ScenarioKey, metric: str) -> list[Samples]:
        """The metric's samples in each run that recorded it."""
        found = [run.get(key, metric) for run in self.runs]
        return [s for s in found if s is not None]


@dataclass(frozen=True)
class Verdict:
    """How a diff shows one ratio: ``css`` is the colour, ``note`` says why."""

    ratio: float | None
    css: str  # better | worse | grey | equal | different | "" (nothing to compare)
    note: str
    kind: str  # "exact" or "sampled"
    p: float | None = None
    ci: tuple[float, float] | None = None
    q: float | None = None  # p adjusted for the number of tests on the page
    #: The metric's class here: exact, timing-dependent or timed (metrics.class_of).
    cls: str = ""

    @property
    def coloured(self) -> bool:
        """True when the diff claims B is better or worse than A."""
        return self.css in ("better", "worse")


def time_characteristic(run: Run, workload: str) -> str:
    """The workload's TTL time characteristic from run.json ("unknown" if not recorded).

    A `run` folder stores one spec, a `compare` folder a list; the parser's default is
    ProcessingTime, so a spec without the field is ProcessingTime.
    """
    return workload_clock(run.meta, workload)


def metric_class(a: Side, b: Side, key: ScenarioKey, metric: str) -> MetricClass:
    """The metric's class in this scenario on both sides: exact only if exact in every run."""
    return run_class_of([r.meta for r in (*a.runs, *b.runs)], key.workload, key.backend,
                        key.strategy, metric)


def _values(samples: Samples) -> np.ndarray:
    return samples.values[np.isfinite(samples.values)]


def side_values(side: Side, key: ScenarioKey, metric: str) -> np.ndarray:
    """The independent samples of a sampled metric on one side (see the module docstring)."""
    found = side.samples(key, metric)
    if len(side.runs) == 1 and found:
        per_rep = repetition_values(found[0])  # a summary metric's, or each repetition's own
        if per_rep is not None or found[0].kind == "summary":
            return _values(found[0]) if per_rep is None else per_rep
    stats = [summarize(s) for s in found]
    return np.array([s.center for s in stats if s is not None], dtype=np.float64)


def side_stat(side: Side, key: ScenarioKey, metric: str) -> Stat | None:
    """The number shown for a side: the run's Stat, or a Stat over the rounds' headlines."""
    found = side.samples(key, metric)
    if not found:
        return None
    if len(side.runs) == 1:
        return summarize(found[0])
    values = side_values(side, key, metric)
    if values.size == 0:
        return None
    q1, q3 = (float(x) for x in np.percentile(values, [25, 75]))
    first = summarize(found[0])
    basis = f"median of {values.size} rounds, each the {first.basis if first else 'value'}"
    return Stat(float(np.median(values)), float(values.min()), float(values.max()), q1, q3,
                int(values.size), basis)


def _ratio(a: float, b: float) -> float | None:
    return None if a == 0 else b / a


def _same(samples: list[Samples]) -> bool:
    first = samples[0].values
    return all(s.values.shape == first.shape and np.array_equal(s.values, first)
               for s in samples[1:])


def _exact(metric: str, unit: str, a: list[Samples], b: list[Samples]) -> Verdict:
    sa, sb = summarize(a[0]), summarize(b[0])
    if sa is None or sb is None:
        return Verdict(None, "", "no finite values", "exact", cls=EXACT)
    r = _ratio(sa.center, sb.center)
    if a[0].values.shape == b[0].values.shape and np.array_equal(a[0].values, b[0].values):
        return Verdict(r, "equal", "equal (exact)", "exact", cls=EXACT)
    delta = sb.center - sa.center
    if delta == 0:
        differing = int(np.sum(a[0].values != b[0].values)) if a[0].values.shape == \
            b[0].values.shape else -1
        detail = (f"{differing} of {a[0].values.size} samples differ" if differing >= 0
                  else f"{a[0].values.size} vs {b[0].values.size} samples")
        return Verdict(r, "different", f"different: same {sa.basis}, {detail}", "exact",
                       cls=EXACT)
    sign = "+" if delta > 0 else "-"
    pct = f" ({sign}{abs(delta) / abs(sa.center) * 100:.1f}%)" if sa.center else ""
    return Verdict(r, "different",
                   f"different: {sign}{fmt_value(abs(delta), unit)}{pct}", "exact", cls=EXACT)


@dataclass(frozen=True)
class _Evidence:
    """The samples behind a sampled verdict, tested once: ratio, p-value and interval.

    Unpaired samples (repetitions of two runs) get the rank-sum test and the ratio of medians;
    paired ones (A and B of a round back to back: interleaved A/B rounds, or two strategies'
    repetitions in one round of a comparison) get the per-round log-ratios, in which the
    machine's drift cancels: their geometric mean as the ratio, an exact sign-flip test
    (``significance.sign_flip``) and the t interval of their mean (``mean_ratio_ci``).
    """

    metric: str
    a: np.ndarray
    b: np.ndarray
    caveat: str
    ratio: float | None
    p: float | None = None
    ci: tuple[float, float] | None = None
    min_p: float = 1.0
    #: The metric's class (timed or timing-dependent) and why, named in the note.
    cls: MetricClass = field(default_factory=lambda: _TIMED)
    #: Paired rounds behind the evidence (0: unpaired samples).
    rounds: int = 0
    #: What the interval is: a 95% t interval, or (values not all positive, so no log-ratio)
    #: the bootstrap range of the ratio of medians, which is not 95% with a few samples.
    ci_label: str = f"{CI_LEVEL:.0%} CI"

    @classmethod
    def of(cls, metric: str, a: np.ndarray, b: np.ndarray, caveat: str,
           paired: bool, klass: MetricClass | None = None) -> _Evidence:
        klass = klass or _TIMED
        paired = paired and a.size == b.size and bool(np.all(a > 0)) and bool(np.all(b > 0))
        if a.size == 0 or b.size == 0:
            return cls(metric, a, b, caveat, None, cls=klass)
        if paired:
            d = np.log(b / a)
            ratio: float | None = float(np.exp(d.mean()))
        else:
            ratio = _ratio(float(np.median(a)), float(np.median(b)))
        if min(a.size, b.size) < MIN_SAMPLES:
            return cls(metric, a, b, caveat, ratio, cls=klass)
        if paired:
            return cls(metric, a, b, caveat, ratio, sign_flip(d).p,
                       mean_ratio_ci(d, level=CI_LEVEL), smallest_sign_flip_p(a.size),
                       cls=klass, rounds=a.size)
        if bool(np.all(a > 0)) and bool(np.all(b > 0)):
            return cls(metric, a, b, caveat, ratio, mann_whitney(a, b).p,
                       log_ratio_interval(b, a, CI_LEVEL), smallest_p(a.size, b.size),
                       cls=klass)
        return cls(metric, a, b, caveat, ratio, mann_whitney(a, b).p,
                   ratio_of_medians_ci(a, b, level=CI_LEVEL), smallest_p(a.size, b.size),
                   cls=klass, ci_label="bootstrap range")


def adjusted(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the input order.

    A diff page runs one test per scenario and timed metric, often a hundred or more; at
    alpha = 0.05 each, two runs of identical code would light up about five of them. Comparing
    q instead of p keeps the chance that such a page colours anything at all at alpha (all
    nulls true), while a real change that moves several metrics still gets through.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    q = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        q[i] = min(1.0, running)
    return q


def _decide(e: _Evidence, alpha: float, q: float | None, tests: int,
            family: str = "") -> Verdict:
    """The verdict from tested evidence; ``q`` is p adjusted for the ``tests`` on the page
    (``family`` names another adjustment, e.g. a cell's closed test)."""
    a, b, r = e.a, e.b, e.ratio
    klass = e.cls.cls
    if a.size == 0 or b.size == 0:
        return Verdict(None, "", "no finite values", "sampled", cls=klass)
    tag = f"{TIMING_DEPENDENT} ({e.cls.reason}); " if klass == TIMING_DEPENDENT else ""
    prefix = tag + (f"{e.caveat}; " if e.caveat else "")
    if e.p is None:
        why = "n=1: no spread" if min(a.size, b.size) == 1 else (
            f"n={a.size} vs {b.size}: fewer than {MIN_SAMPLES} per side")
        return Verdict(r, "grey", prefix + why, "sampled", cls=klass)
    interval = f" · {e.ci_label} {e.ci[0]:.2f}{DASH}{e.ci[1]:.2f}{TIMES}" if e.ci else ""
    q = e.p if q is None else q
    family = (f", {family} p={q:.2g}" if family
              else f", q={q:.2g} over {tests} tests" if tests > 1 else "")
    rounds = f", {e.rounds} paired rounds" if e.rounds else ""
    stated = f"p={e.p:.2g}{family}{rounds}{interval}"
    verdict = partial(Verdict, r, "grey", kind="sampled", p=e.p, ci=e.ci, q=q, cls=klass)
    if e.min_p >= alpha:
        return verdict(f"{prefix}n={a.size} vs {b.size}: the exact test cannot reach "
                       f"p<{alpha:g} (smallest p={e.min_p:.2g})")
    if e.p >= alpha:
        return verdict(f"{prefix}not significant, {stated}")
    if q >= alpha:
        return verdict(f"{prefix}not significant across the page's tests, {stated}")
    if e.ci is not None and e.ci[0] <= 1 <= e.ci[1]:
        return verdict(f"{prefix}interval includes 1, {stated}")
    if r is None or abs(r - 1) < NOTICEABLE:
        return verdict(f"{prefix}significant but under {NOTICEABLE:.0%}, {stated}")
    better = spec_for(e.metric).better
    if e.caveat or better == 0:
        return verdict(f"{prefix}changed, {stated}")
    css = "better" if (r > 1) == (better > 0) else "worse"
    return Verdict(r, css, f"{tag}{css}, {stated}", "sampled", e.p, e.ci, q, klass)


def _assess(a: Side, b: Side, key: ScenarioKey, metric: str, caveat: str, paired: bool
            ) -> Verdict | _Evidence:
    """An exact (or missing) metric's final verdict, or a sampled metric's tested evidence."""
    sa, sb = a.samples(key, metric), b.samples(key, metric)
    if not sa or not sb:
        missing = " and ".join(s.label for s, found in ((a, sa), (b, sb)) if not found)
        return Verdict(None, "", f"not measured in {missing}", "exact")
    klass = metric_class(a, b, key, metric)
    if klass.cls == EXACT:
        if _same(sa) and _same(sb):
            return _exact(metric, sa[0].unit or spec_for(metric).unit, sa, sb)
        unstable = " and ".join(s.label for s, x in ((a, sa), (b, sb)) if not _same(x))
        caveat = ", ".join(c for c in (caveat, f"not reproducible across {unstable}'s runs")
                           if c)
    return _Evidence.of(metric, side_values(a, key, metric), side_values(b, key, metric),
                        caveat, paired, klass)


def judge_all(a: Side, b: Side, items: Sequence[tuple[ScenarioKey, str]], *,
              alpha: float = ALPHA, caveat: str = "") -> dict[tuple[ScenarioKey, str], Verdict]:
    """Verdicts for every (scenario, metric) of a page, tested as one family (see
    :func:`adjusted`).

    ``caveat`` (e.g. "environments differ") keeps sampled ratios grey whatever the test says:
    the numbers are shown, the verdict is withheld. Exact numbers are compared regardless.
    Interleaved sides are compared round by round (see :class:`_Evidence`).
    """
    paired = a.interleaved and b.interleaved and len(a.runs) == len(b.runs)
    assessed = {item: _assess(a, b, item[0], item[1], caveat, paired) for item in items}
    tested = [i for i, e in assessed.items() if isinstance(e, _Evidence) and e.p is not None]
    q = dict(zip(tested, adjusted([assessed[i].p for i in tested])))  # type: ignore[union-attr]
    return {
        item: e if isinstance(e, Verdict) else _decide(e, alpha, q.get(item), len(tested))
        for item, e in assessed.items()
    }


def judge(a: Side, b: Side, key: ScenarioKey, metric: str, *, alpha: float = ALPHA,
          caveat: str = "") -> Verdict:
    """The verdict for one metric of one scenario, tested on its own (a family of one)."""
    return judge_all(a, b, [(key, metric)], alpha=alpha, caveat=caveat)[(key, metric)]


def compare_scenarios(items: Sequence[tuple[str, np.ndarray, np.ndarray, MetricClass]], *,
                      alpha: float = ALPHA, paired: Sequence[bool] | None = None,
                      closed: Sequence[float | None] | None = None) -> list[Verdict]:
    """Verdicts of each item's samples ``b`` against its samples ``a``: two scenarios of one run,
    tested as one family (:func:`adjusted`). ``paired[i]`` says item i's a[r] and b[r] ran in
    one round (aligned by repetition index: ``workloads.report.paired``); otherwise its
    repetitions are compared unpaired. The report's decision table asks this of a leading
    strategy and each other one; the rule is the diff's (paired: the A/B session's). Where
    ``closed[i]`` is given (the cell's closed test, ``significance.closed_pair_p``), it stands
    for item i's family adjustment instead of Benjamini-Hochberg.
    """
    flags = list(paired) if paired is not None else [False] * len(items)
    evidence = [_Evidence.of(metric, a, b, "", flag, klass)
                for (metric, a, b, klass), flag in zip(items, flags)]
    tested = [i for i, e in enumerate(evidence) if e.p is not None]
    q = dict(zip(tested, adjusted([evidence[i].p for i in tested])))  # type: ignore[misc]
    if closed is not None:
        return [_decide(e, alpha, closed[i] if closed[i] is not None else q.get(i), len(tested),
                        "closed-test" if closed[i] is not None else "")
                for i, e in enumerate(evidence)]
    return [_decide(e, alpha, q.get(i), len(tested)) for i, e in enumerate(evidence)]
