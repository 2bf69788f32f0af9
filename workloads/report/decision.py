"""The first screen of a workload: per backend, which strategy to pick and what it costs.

A reader comes with one question: on this backend, for this workload, which cleanup strategy,
and what does it cost? The decision table answers it per backend in four cells: fastest,
smallest peak state, smallest checkpoint, and a recommended strategy with its trade-off in one
sentence. A cell names a leading group: the leader and every strategy the evidence cannot tell
from it, and how far the leader is ahead of each of the rest; a winner alone only where the
evidence separates it from every other strategy on that backend. Evidence, by the class of the
number (``metrics.class_of``):

* **exact** numbers (counted under the logical clock: entries, canonical checkpoint sizes)
  separate when they differ: the same seed and configuration give the same number;
* numbers with **repetitions** (throughput: timed) that ran in paired rounds (run.json records
  them, ``paired``) separate on their per-round log-ratios: first the cell's strategies must
  differ at all (their labels shuffled within rounds, ``significance.label_randomization``:
  the leader is picked from the same rounds it is tested on), then an exact sign-flip test of
  the leader against each other one, the cell's tests held together by closed testing
  (``significance.closed_pair_p``; Benjamini-Hochberg over more than six strategies),
  the t interval of the mean log-ratio excluding 1, and at least 5% apart
  (``verdict.compare_scenarios``, the rule ``statebench ab`` uses). Repetitions without
  recorded rounds keep the unpaired rule: an exact Mann-Whitney U test, Welch's t interval;
* **timing-dependent** numbers that are one per run (RocksDB's incremental checkpoint sizes, a
  count on a paced clock, a count under the compaction filter) cannot be tested from one run:
  checkpoint sizes separate when further apart than identical runs of that workload on that
  backend moved them (``checkpoint_noise``: a committed calibration), other such numbers never
  from one run.

Otherwise the cell says which strategies it cannot tell apart, and why. Strategies are compared
inside one backend; backends only inside one engine (statebench's Python lanes, Flink's JVM
backends, Flink SQL's jobs, Spark's streaming queries: each lane's engine is the lane
registry's, ``workloads.report.engines``): another engine's lane is context for statebench's,
never ranked against it.

No cell ranks latency. A lockstep job's latency (a Flink SQL job under event time:
``metrics.lockstep_latency``) measures how far the job fell behind its paced clock, not the
engine; where the table shows one (the figures of a run it does not rank) it says so.

One answer per question: a recommendation claims only what its cells decided, in their words
and with their folds (where the recommended strategy stands in the Fastest and Smallest
checkpoint cells, never a second test of it against ``none``), and the line under the table
names each backend's fastest as its Fastest cell does. Two numbers equal to the three
significant digits the page shows are "equal", never "1x" apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from backends import strategies
from workloads.report.checkpoint_noise import layout_noise
from workloads.report.engines import engine_lanes, engine_of, engine_order, possessive
from workloads.report.findings import Sentence
from workloads.report.fmt import TIMES, compare_phrase, fmt_value, fold_phrase
from workloads.report.load import Run, ScenarioKey, backend_label
from workloads.report.metrics import (
    CHECKPOINT_SIZE_METRICS,
    LOCKSTEP,
    STORED_ENTRIES,
    MetricClass,
    run_class_of,
    run_lockstep_latency,
    spec_for,
)
from workloads.report.paired import lead_scores, paired_values, round_matrix, round_orders
from workloads.report.runinfo import sweep
from workloads.report.significance import (
    CLOSED_MAX_STRATEGIES,
    closed_pair_ps,
    label_randomization,
    smallest_p,
    smallest_sign_flip_p,
)
from workloads.report.stats import Stat, stat
from workloads.report.verdict import ALPHA, compare_scenarios
from workloads.results.summaries import repetition_values

BASELINE = strategies.BASELINE
#: The share of an operator's outputs its TTL changed (``workloads.operators.results``).
CHANGED_RESULTS = "ttl_changed_results"
#: The knob of a TTL sweep (``workloads.run.sweep``: scenarios ``ttl(ms=V)``).
TTL_SWEEP = "ttl"
#: Configurations a tie names before it counts them instead.
MAX_NAMED = 3
#: Significant digits of a fold on the page: numbers that agree to them are shown equal.
SHOWN_DIGITS = 3
THROUGHPUT = ("records_per_s",)
#: Peak state: entries held (live + expired), else the physical footprint, else what a real
#: engine's lane counts of its state: Spark's state store rows (``numRowsTotal``), RocksDB's
#: estimate of its keys (a Flink SQL job). Each is named in its cell: they are not entries.
PEAK_STATE = (STORED_ENTRIES, "physical_bytes", "state_rows", "estimated_entries")
#: Checkpoint size: what each checkpoint uploads, else its full size.
CHECKPOINT = ("checkpoint_uploaded_bytes", "checkpoint_bytes")
#: The table's columns: (id, heading, metrics in order of preference).
COLUMNS = (
    ("fastest", "Fastest", THROUGHPUT),
    ("state", "Smallest peak state", PEAK_STATE),
    ("checkpoint", "Smallest checkpoint", CHECKPOINT),
)


@dataclass(frozen=True)
class Separation:
    """Whether one scenario's number is told apart from another's, and the evidence; ``ratio``
    is b's number over a's (paired rounds: the geometric mean of the per-round ratios)."""

    separated: bool
    why: str
    ratio: float | None = None
    #: The two numbers are equal as the page shows them (exact and the same, or a fold that
    #: reads 1 to :data:`SHOWN_DIGITS` significant digits).
    equal: bool = False

    @property
    def fold(self) -> float | None:
        """How many times apart the two numbers are, >= 1 (None without a ratio)."""
        r = self.ratio
        return None if r is None or r <= 0 or not np.isfinite(r) else max(r, 1 / r)


@dataclass(frozen=True)
class Pick:
    """One cell: the leading scenario on one metric, those the evidence cannot tell from it
    (``tied``), and the evidence (for a tie: why the first tied one is not separated; for a
    winner: how it is separated from the runner-up)."""

    metric: str
    best: ScenarioKey
    value: Stat
    tied: tuple[ScenarioKey, ...]
    why: str
    contenders: int
    #: The strategies the evidence puts behind the leading group, each with how many times the
    #: leader is ahead of it (>= 1), in the order of the ranking.
    behind: tuple[tuple[ScenarioKey, float | None], ...] = ()
    #: Every tied strategy's number equals the leader's as shown (a tie of equals, not of noise).
    equal: bool = False

    @property
    def separated(self) -> bool:
        """The leader alone is told apart from every other strategy."""
        return not self.tied

    @property
    def decided(self) -> bool:
        """The evidence puts at least one strategy behind the leading group."""
        return bool(self.behind)

    @property
    def leaders(self) -> tuple[ScenarioKey, ...]:
        return (self.best, *self.tied)

    @property
    def ranking(self) -> tuple[ScenarioKey, ...]:
        """Every strategy of the cell in the cell's order: the leading group, then the rest."""
        return (*self.leaders, *(k for k, _ in self.behind))

    def fold_behind(self, key: ScenarioKey) -> float | None:
        """How many times the leader is ahead of ``key`` (None when ``key`` is not behind)."""
        return dict(self.behind).get(key)


@dataclass(frozen=True)
class BackendDecision:
    """One backend's row of the table."""

    backend: str
    picks: dict[str, Pick | None]
    recommended: ScenarioKey | None
    tradeoff: Sentence


def _scenario_class(run: Run, key: ScenarioKey, metric: str) -> MetricClass:
    """The metric's class in one scenario of this run (metrics.class_of, with its reason)."""
    return run_class_of([run.meta], key.workload, key.backend, key.strategy, metric)


def _repetitions(run: Run, key: ScenarioKey, metric: str) -> np.ndarray | None:
    """A metric's number per repetition (a summary metric's values; a peak or a median over
    checkpoints of every repetition that wrote its own series), or None when the run holds
    one number (a series or checkpoints of repetition 0 only)."""
    samples = run.get(key, metric)
    return None if samples is None else repetition_values(samples)


def _ratio(a: Stat, b: Stat) -> float | None:
    return b.center / a.center if a.center else None


def separations(run: Run, pairs: list[tuple[ScenarioKey, ScenarioKey, str]],
                paired: bool = True, closed: Sequence[float | None] | None = None
                ) -> list[Separation]:
    """For each (a, b, metric): whether b's number is separated from a's (either direction),
    the sampled ones tested as one family. A pair whose repetitions ran in the same rounds
    (``workloads.report.paired``) is tested on its per-round ratios when ``paired``; otherwise,
    or without recorded rounds, its repetitions are compared unpaired. ``closed[i]``: pair
    i's closed-test p-value in its cell, which replaces Benjamini-Hochberg for it."""
    out: list[Separation | None] = [None] * len(pairs)
    sampled: list[tuple[int, tuple[str, np.ndarray, np.ndarray, MetricClass]]] = []
    pairing: list[bool] = []
    family: list[float | None] = []
    stats: dict[tuple[ScenarioKey, str], Stat | None] = {}  # the leader is in every pair
    for i, (a, b, metric) in enumerate(pairs):
        for k in (a, b):
            if (k, metric) not in stats:
                stats[(k, metric)] = stat(run, k, metric)
        sa, sb = stats[(a, metric)], stats[(b, metric)]
        if sa is None or sb is None:
            out[i] = Separation(False, "not measured")
            continue
        ca, cb = _scenario_class(run, a, metric), _scenario_class(run, b, metric)
        if ca.exact and cb.exact:
            same = sa.center == sb.center
            out[i] = Separation(not same, "exact: equal" if same else "exact", _ratio(sa, sb),
                                equal=same)
            continue
        klass = cb if not cb.exact else ca  # the class that is not exact names the reason
        rounds = paired_values(run, a, b, metric) if paired else None
        va, vb = rounds or (_repetitions(run, a, metric), _repetitions(run, b, metric))
        if va is not None and vb is not None:
            sampled.append((i, (metric, va, vb, klass)))
            pairing.append(rounds is not None)
            family.append(closed[i] if closed is not None and rounds is not None else None)
            continue
        out[i] = _one_per_run(a, b, metric, sa, sb, klass)
    verdicts = compare_scenarios([item for _, item in sampled], paired=pairing,
                                 closed=family if any(c is not None for c in family) else None)
    for (i, _), verdict in zip(sampled, verdicts):
        out[i] = Separation(verdict.coloured, verdict.note, verdict.ratio)
    return [equal_as_shown(s) for s in out if s is not None]


def shown_fold(fold: float) -> str:
    """A fold as the page prints it: three significant digits ("1.33", "18.5")."""
    return f"{fold:.{SHOWN_DIGITS}g}"


def equal_as_shown(found: Separation) -> Separation:
    """A separation whose fold the page would print as "1" is a tie of equals: two exact
    numbers a few bytes apart in megabytes are not one strategy ahead of another "1x"."""
    fold = found.fold
    if not found.separated or fold is None or shown_fold(fold) != "1":
        return found
    return Separation(False, f"{found.why}: equal to {SHOWN_DIGITS} significant digits",
                      found.ratio, equal=True)


def _one_per_run(a: ScenarioKey, b: ScenarioKey, metric: str, sa: Stat, sb: Stat,
                 klass: MetricClass) -> Separation:
    """A timing-dependent number held once per run: a checkpoint size separates when further
    apart than identical runs of this workload on this backend moved it (the committed
    calibration, ``checkpoint_noise``); anything else, or an uncalibrated pair, does not."""
    single = f"{klass.cls} ({klass.reason}): one number per run, which one run cannot test"
    if metric not in CHECKPOINT_SIZE_METRICS:
        return Separation(False, single)
    noise = layout_noise(b.workload, b.backend)
    if noise is None:
        return Separation(False, f"{single}, and no calibration says how far identical runs "
                                 f"of {b.workload} move it on {b.backend}")
    spread, runs = noise
    gap = abs(sb.center / sa.center - 1) if sa.center else float("inf")
    if gap > spread:
        return Separation(True, f"{klass.cls}: {gap:.0%} apart, beyond the {spread:.0%} that "
                                f"{runs} identical runs moved it", _ratio(sa, sb))
    return Separation(False, f"{klass.cls}: {gap:.0%} apart, within the {spread:.0%} that "
                             f"{runs} identical runs moved it")


def _ranked(run: Run, stats: dict[ScenarioKey, Stat], metric: str
            ) -> tuple[list[ScenarioKey], np.ndarray | None]:
    """The keys best first, and their values per round when every key ran in every recorded
    round (then ranked by :func:`paired.lead_scores`, each round's level taken out, which
    orders them as the paired tests compare them); else by their headline numbers."""
    sign = spec_for(metric).better or -1
    keys = list(stats)
    matrix = round_matrix(run, keys, metric) if len(keys) > 1 else None
    if matrix is None:
        return sorted(keys, key=lambda k: -sign * stats[k].center), None  # stable: run order
    scores = lead_scores(matrix)
    order = sorted(range(len(keys)), key=lambda i: -sign * scores[i])
    return [keys[i] for i in order], matrix[order]


def _differ_at_all(matrix: np.ndarray, metric: str) -> float:
    """p-value of "the cell's strategies are alike" from their per-round values (best first):
    :func:`significance.label_randomization` on the log values, oriented so larger is better."""
    sign = spec_for(metric).better or -1
    return label_randomization(sign * np.log(matrix))


def pick(run: Run, keys: list[ScenarioKey], metrics: tuple[str, ...]) -> Pick | None:
    """The leader among ``keys`` on the first of ``metrics`` any of them measured."""
    for metric in metrics:
        stats = {k: s for k in keys if (s := stat(run, k, metric)) is not None}
        if stats:
            break
    else:
        return None
    ranked, matrix = _ranked(run, stats, metric)
    best, others = ranked[0], ranked[1:]
    if not others:
        return Pick(metric, best, stats[best], (), "nothing to compare", 1)
    if matrix is not None and len(ranked) > 2 and smallest_sign_flip_p(matrix.shape[1]) < ALPHA \
            and not all(_scenario_class(run, k, metric).exact for k in ranked):
        # (with too few rounds the paired tests below cannot reach alpha and say so)
        gate = _differ_at_all(matrix, metric)
        if gate >= ALPHA:
            why = (f"paired over {matrix.shape[1]} rounds, the strategies do not differ beyond "
                   f"chance (p={gate:.2g}, labels shuffled within rounds)")
            return Pick(metric, best, stats[best], tuple(others), why, len(ranked))
    closed = None
    if matrix is not None and len(ranked) <= CLOSED_MAX_STRATEGIES:
        logs = np.log(matrix)  # the closed test is two-sided: orientation does not matter
        closed = closed_pair_ps(logs, [(0, i) for i in range(1, len(ranked))])
    found = separations(run, [(other, best, metric) for other in others],
                        paired=matrix is not None, closed=closed)
    tied = tuple(o for o, s in zip(others, found) if not s.separated)
    behind = tuple((o, s.fold) for o, s in zip(others, found) if s.separated)
    why = next((s.why for s in found if not s.separated), found[0].why)
    equal = bool(tied) and all(s.equal for s in found if not s.separated)
    return Pick(metric, best, stats[best], tied, why, len(ranked), behind, equal)


def _returned_expired(run: Run, key: ScenarioKey) -> bool:
    returned = stat(run, key, "expired_returned")
    return returned is not None and returned.hi > 0


def _what(metric: str) -> str:
    return {STORED_ENTRIES: "stored entries", "physical_bytes": "physical bytes",
            "state_rows": "state store rows", "estimated_entries": "estimated entries",
            "records_per_s": "throughput",
            "checkpoint_uploaded_bytes": "bytes uploaded per checkpoint",
            "checkpoint_bytes": "checkpoint bytes"}.get(metric, spec_for(metric).label)


#: Units of amounts (less is "fewer"), not rates or durations.
_AMOUNTS = ("entries", "bytes", "rows", "count")


def _amount(metric: str, value: float) -> str:
    """A cell's number: "105 k", "9.62 MB"; an amount that is not stored entries and whose unit
    does not say what it is names its quantity ("487 state store rows", "1.2 k estimated
    entries"), so nobody reads a real engine's count as statebench's entries."""
    unit = spec_for(metric).unit
    number = fmt_value(value, unit)
    if metric == STORED_ENTRIES or unit in ("bytes", "records/s", "ops/s", "us", "ms", "share"):
        return number
    return f"{number} {_what(metric)}"


#: Per column: how the page names its leader alone and its leading group.
_LEADER_WORDS = {"fastest": ("the fastest", "the fastest group"),
                 "state": ("the smallest peak state", "the smallest-state group"),
                 "checkpoint": ("the smallest checkpoint", "the smallest-checkpoint group")}


def _worse(metric: str) -> str:
    """The word for a number of ``metric`` worse than the leader's: lower throughput, more
    bytes, higher latency."""
    spec = spec_for(metric)
    if spec.better > 0:
        return "lower"
    return "more" if spec.unit in _AMOUNTS else "higher"


def standing(found: Pick | None, key: ScenarioKey, column: str, s: Sentence) -> None:
    """Append where ``key`` stands in one cell, in the cell's own terms (its groups, its
    folds): '; the fastest', '; 25% lower throughput than full_snapshot, the fastest'. Nothing
    for a cell that did not measure ``key`` or compared nothing. A recommendation says this,
    never a test of its own, so one row cannot give two answers about one column."""
    if found is None or found.contenders < 2 or key not in found.ranking:
        return
    noun = _what(found.metric)
    alone, group = _LEADER_WORDS[column]
    if not found.decided:
        s.t(f"; {noun}: no difference the evidence separates")
        return
    if key == found.best and found.separated:
        s.t(f"; {alone}")
        return
    others = _and([k.strategy for k in found.leaders if k != key])
    if key == found.best:
        s.t(f"; {noun}: leads {group}, with {others}")
        return
    if key in found.leaders:
        s.t(f"; {noun}: in {group}, led by ").b(found.best.strategy)
        return
    fold = found.fold_behind(key)
    s.t(f"; {fold_phrase(fold, noun, _worse(found.metric))} than ").b(found.best.strategy)
    if found.separated:
        s.t(f", {alone}")
    else:
        s.t(f", which leads {group} (with "
            f"{_and([k.strategy for k in found.tied])})")


def _fastest_of(run: Run, leaders: list[ScenarioKey], fastest: Pick | None) -> ScenarioKey:
    """Of strategies whose peak state is not separated, the one the Fastest cell ranks first
    (else the highest median throughput, when no cell ranked them)."""
    order = fastest.ranking if fastest is not None else ()
    ranked = [k for k in order if k in leaders]
    if ranked:
        return ranked[0]
    tp = {k: stat(run, k, "records_per_s") for k in leaders}
    return max(leaders, key=lambda k: -1.0 if tp[k] is None else tp[k].center)  # type: ignore[union-attr]


def _among(rec: ScenarioKey, leaders: list[ScenarioKey], fastest: Pick | None) -> str:
    """Why ``rec`` of several strategies whose peak state is not separated: the fastest of
    them only where the Fastest cell puts the others behind it."""
    names = ", ".join(k.strategy for k in leaders)
    others = [k for k in leaders if k != rec]
    if fastest is not None and rec in fastest.leaders \
            and all(fastest.fold_behind(k) is not None for k in others):
        return f" (the fastest of {names}, whose peak state the evidence does not separate)"
    return (f" (one of {names}, whose peak state the evidence does not separate; the Fastest "
            "cell does not separate their throughput either)")


def recommend(run: Run, keys: list[ScenarioKey], picks: dict[str, Pick | None]
              ) -> tuple[ScenarioKey | None, Sentence]:
    """The strategy to pick on this backend and its trade-off in one sentence: the strategy
    that keeps the smallest peak state (cleanup is what a TTL is for), the one the Fastest cell
    ranks first of those the evidence cannot tell apart on state; then where it stands in the
    Fastest and Smallest checkpoint cells (:func:`standing`). Every claim is a cell's: its
    lead over ``none`` is the state cell's fold. A strategy that returned an expired value is
    never recommended."""
    state = picks.get("state")
    base = next((k for k in keys if k.strategy == BASELINE), None)
    if state is None:
        return None, Sentence().t("No peak state measured: nothing to recommend on.")
    leaders = [k for k in state.leaders if not _returned_expired(run, k)]
    if not leaders:
        return None, Sentence(severity="warn").t(
            "No recommendation: every strategy with the smallest state returned expired values.")
    if state.contenders == 1:
        return None, Sentence().t("Only ").b(state.best.strategy).t(
            " ran on this backend: nothing to choose between.")
    if ttl_sweep(run):
        return sweep_tradeoff(run, keys, state)
    if base is not None and base == state.best and state.separated:
        s = Sentence().b(BASELINE).t(": no strategy kept less peak state than ").b(BASELINE)
        s.t(f" ({state.why}), so a cleanup here only costs")
        _results_cost(run, base, s)
        return base, s.t(".")
    if base is not None and base in state.leaders:
        return None, Sentence().t("No recommendation: the evidence does not separate any "
                                  "strategy's peak state from ").b(BASELINE).t(
                                      f"'s ({state.why}).")
    if not state.decided:  # (no baseline ran: nothing it could be set against either)
        return None, Sentence().t("No recommendation: the evidence does not separate the "
                                  f"strategies' peak state ({state.why}).")
    fastest = picks.get("fastest")
    rec = _fastest_of(run, leaders, fastest)
    s = Sentence().b(rec.strategy)
    if len(leaders) > 1:
        s.t(_among(rec, leaders, fastest))
    lead = _amount(state.metric, state.value.center)
    behind = _and([f"{k.strategy}{_fold_text(fold)}" for k, fold in state.behind])
    base_fold = state.fold_behind(base) if base is not None else None
    if rec != state.best:  # in the leading group, not its leader: never "the smallest"
        s.t(" is in the group with the smallest peak state, led by ").b(state.best.strategy)
        s.t(f" ({lead}), ahead of {behind}")
    elif base is not None and base_fold is not None:  # the cell's lead over none, its words
        mine, theirs = state.value.center, stat(run, base, state.metric)
        s.t(f" keeps {fold_phrase(base_fold, _what(state.metric), 'fewer')} than ").b(BASELINE)
        if theirs is not None:
            unit = spec_for(state.metric).unit
            s.t(f" ({fmt_value(mine, unit)} vs {fmt_value(theirs.center, unit)})")
    else:  # a leader alone: the evidence that separates it
        evidence = f" ({state.why})" if state.separated else ""
        s.t(f" keeps the smallest peak state ({lead}), ahead of {behind}{evidence}")
    _results_cost(run, rec, s)
    standing(fastest, rec, "fastest", s)
    standing(picks.get("checkpoint"), rec, "checkpoint", s)
    return rec, s.t(".")


def changed_results(run: Run, key: ScenarioKey) -> float | None:
    """The share of the operator's outputs the TTL changed against the same run without TTL
    (``ttl_changed_results``: an ``[operator]`` workload's; None for other workloads)."""
    found = stat(run, key, CHANGED_RESULTS)
    return None if found is None else found.center


def _results_cost(run: Run, key: ScenarioKey, s: Sentence) -> None:
    """Append what ``key`` costs in results, where the workload measures it: a recommendation
    never hides that its TTL changed the operator's outputs."""
    share = changed_results(run, key)
    if share is None:
        return
    if share > 0:
        s.t("; ").b(f"changes {fmt_value(share, 'share')} of the operator's outputs")
        s.t(" (against the same run without TTL)")
    else:
        s.t("; changes none of the operator's outputs")


def ttl_sweep(run: Run) -> bool:
    """True for a run swept over the TTL itself (``--sweep "ttl(ms=...)"``)."""
    swept = sweep(run)
    return swept is not None and swept.strategy == TTL_SWEEP


def _counted(run: Run, a: ScenarioKey, b: ScenarioKey, metric: str) -> Separation | None:
    """a against b where both numbers are exact (counted: no test, the same every run), else
    None: a sweep sets each TTL against ``none`` only where no test is needed for it."""
    if not (_scenario_class(run, a, metric).exact and _scenario_class(run, b, metric).exact):
        return None
    return separations(run, [(a, b, metric)])[0]


def sweep_tradeoff(run: Run, keys: list[ScenarioKey], state: Pick
                   ) -> tuple[ScenarioKey | None, Sentence]:
    """A TTL sweep's answer is a trade-off, not a winner: per TTL, the state it keeps (against
    ``none`` where both are counted numbers) and the share of outputs it changes, shortest TTL
    first; recommended is the TTL with the smallest state among those that changed no output,
    where its state is told from theirs (counted, or the state cell's leading group); None when
    every TTL changed some: how many changed outputs a job can take is the user's call."""
    swept = sweep(run)
    assert swept is not None
    by_label = dict(zip(swept.labels, swept.values))
    ttls = sorted((k for k in keys if k.strategy in by_label), key=lambda k: by_label[k.strategy])
    base = next((k for k in keys if k.strategy == BASELINE), None)
    what, unit = _what(state.metric), spec_for(state.metric).unit
    theirs = stat(run, base, state.metric) if base is not None else None
    s = Sentence().t("State against results: ")
    clean: list[tuple[float, ScenarioKey]] = []
    for i, key in enumerate(ttls):
        mine, share = stat(run, key, state.metric), changed_results(run, key)
        s.t("; " if i else "").b(key.strategy)
        if mine is not None:
            against = _counted(run, base, key, state.metric) if base is not None else None
            number = fmt_value(mine.center, unit)
            if against is not None and against.separated and theirs is not None:
                s.t(f" keeps {compare_phrase(mine.center, theirs.center, what, down='fewer')}"
                    f" ({number})")
            elif against is not None and against.equal:
                s.t(f" keeps the same {what} as {BASELINE} ({number})")
            else:  # not counted: its number, no claim a test would have to make
                s.t(f" keeps {number} {what}")
        if share is not None:
            s.t(" and changes ").b(f"{fmt_value(share, 'share')} of the outputs")
            if share == 0 and mine is not None and not _returned_expired(run, key):
                clean.append((mine.center, key))
    if base is not None and theirs is not None:
        s.t(", against ").b(BASELINE).t(f"'s {fmt_value(theirs.center, unit)} {what}")
    if not clean:
        return None, s.t(". Every TTL swept changed outputs: pick by how many a job can take.")
    rec = min(clean, key=lambda c: c[0])[1]
    told = [_counted(run, k, rec, state.metric) for _, k in clean if k != rec]
    if not state.decided or not (rec in state.leaders or all(
            f is not None and f.separated for f in told)):
        return None, s.t(". The evidence does not separate the peak state of these "
                         f"strategies ({state.why}): no smallest state to recommend.")
    return rec, s.t(". The smallest state that changes no output: ").b(rec.strategy).t(".")


def kept_up(run: Run, key: ScenarioKey) -> bool:
    """False for a TTL run whose lane marked it invalid in any repetition (``ttl_run_valid``
    0: its batches or its latency were at least the TTL, so what expired was its lag's, not
    the strategy's): such a run is shown, never ranked."""
    valid = stat(run, key, "ttl_run_valid")
    return valid is None or valid.lo >= 1


#: The figures that show why a TTL run was invalid: (label, metric, unit).
_VALIDITY_FIGURES = (("median batch", "data_batch_duration_p50_ms", "ms"),
                     ("p50 latency", "latency_p50_us", "us"), ("TTL", "ttl_wall_ms", "ms"))


def _lockstep_mark(run: Run, key: ScenarioKey, metric: str) -> str:
    """" [lockstep: ...]" after a lockstep job's latency (``metrics.lockstep_latency``), which
    says how far the job fell behind, not how fast the engine is; "" for any other number."""
    found = run_lockstep_latency([run.meta], key.workload, key.backend, metric)
    return f" [{LOCKSTEP}]" if found else ""


def _not_ranked(run: Run, keys: list[ScenarioKey]) -> Sentence | None:
    """The line naming each scenario left out of the ranking as invalid, with the figures
    that made it so."""
    if not keys:
        return None
    s = Sentence().t("Not ranked (a TTL run that did not keep up with its TTL): ")
    for i, key in enumerate(keys):
        s.t("; " if i else "").b(key.strategy)
        shown = [f"{label} {fmt_value(found.center, unit)}{_lockstep_mark(run, key, metric)}"
                 for label, metric, unit in _VALIDITY_FIGURES
                 if (found := stat(run, key, metric)) is not None]
        if shown:
            s.t(f" ({', '.join(shown)})")
    return s.t(".")


def decide(run: Run, workload: str, backend: str) -> BackendDecision | None:
    """One backend's row: its picks and recommendation (None when nothing ran on it). A TTL
    run its lane marked invalid (:func:`kept_up`) is left out of the ranking and named."""
    ran = [k for k in run.scenarios(workload)
           if k.backend == backend and k not in run.not_applicable]
    keys = [k for k in ran if kept_up(run, k)]
    if not ran:
        return None
    invalid = _not_ranked(run, [k for k in ran if k not in keys])
    picks = {column: pick(run, keys, metrics) if keys else None for column, _, metrics in COLUMNS}
    rec, sentence = recommend(run, keys, picks) if keys else (None, Sentence())
    if invalid is not None:
        sentence = (sentence.t(" ") if sentence.parts else sentence)
        sentence.parts.extend(invalid.parts)
    return BackendDecision(backend, picks, rec, sentence)


def decisions(run: Run, workload: str) -> dict[str, list[BackendDecision]]:
    """Rows per engine (the lane registry's, ``workloads.report.engines``), in page order
    (engines without a backend in the run left out)."""
    out: dict[str, list[BackendDecision]] = {}
    for engine in engine_order(run.backends):
        rows = [d for b in run.backends if engine_of(b) == engine
                if (d := decide(run, workload, b)) is not None]
        if rows:
            out[engine] = rows
    return out


def ttl_headline(run: Run, workload: str,
                 rows: dict[str, list[BackendDecision]] | None = None) -> Sentence | None:
    """A TTL sweep's headline above the table: the state-against-results trade-off of the
    first backend that has one (each backend's is in its row), or None for any other run."""
    if not ttl_sweep(run):
        return None
    for engine_rows in (rows if rows is not None else decisions(run, workload)).values():
        for row in engine_rows:
            if row.tradeoff.text.startswith("State against results"):
                head = Sentence().t(f"TTL sweep, on {backend_label(row.backend)}: ")
                head.parts.extend(row.tradeoff.parts)
                return head
    return None


def fastest_per_engine(run: Run, workload: str,
                       rows: dict[str, list[BackendDecision]] | None = None) -> Sentence | None:
    """Like with like: per engine, its fastest backend as that backend's Fastest cell names its
    leader (and leading group: never a second ranking of one backend's strategies), against the
    leaders of the engine's other backends, each engine named as the lane registry names it
    (statebench's first, the others as context), never one ranking over engines."""
    parts = []
    for engine, found in (rows if rows is not None else decisions(run, workload)).items():
        cells = [p for row in found if (p := row.picks.get("fastest")) is not None]
        if cells:
            top = max(cells, key=lambda p: p.value.center)
            others = [p for p in cells if p is not top]
            told = separations(run, [(p.best, top.best, top.metric) for p in others])
            parts.append((engine, top, list(zip(others, told))))
    if not parts:
        return None
    s = Sentence()
    for i, (engine, top, others) in enumerate(parts):
        s.t(f"Fastest on {possessive(engine)} lanes: " if i == 0
            else f"; for context, on {possessive(engine)}: ")
        s.b(f"{top.best.backend}/{top.best.strategy}")
        s.t(f" ({fmt_value(top.value.center, 'records/s')}")
        if top.tied:
            tied = (_and([k.strategy for k in top.tied]) if len(top.tied) <= MAX_NAMED
                    else f"{len(top.tied)} other strategies")
            s.t(f"; on {top.best.backend} not separated from {tied}")
        s.t(")")
        ahead = [f"{p.best.backend}/{p.best.strategy}{_fold_text(f.fold)}"
                 for p, f in others if f.separated]
        level = [(p, f) for p, f in others if not f.separated]
        if ahead:
            s.t(f", ahead of {_and(ahead)}")
        if level:
            names = _and([f"{p.best.backend}/{p.best.strategy}" for p, _ in level])
            s.t(f"; not separated from {names}: {level[0][1].why}")
    if len(parts) > 1:
        s.t(f". The engines are not ranked against each other: "
            f"{_and([engine_lanes(engine) for engine, _, _ in parts])} differ for reasons "
            "that are not the TTL strategy.")
    else:
        s.t(".")
    return s


def repetitions_needed(alpha: float = ALPHA, paired: bool = False) -> int:
    """The fewest repetitions a side with which the exact test can reach p < alpha: the rank
    test's (unpaired, 4: smallest p 0.029) or the sign-flip test's (paired rounds, 6: 0.031)."""
    smallest = smallest_sign_flip_p if paired else (lambda n: smallest_p(n, n))
    n = 1
    while smallest(n) >= alpha:
        n += 1
    return n


def repetitions_hint(run: Run, workload: str,
                     rows: dict[str, list[BackendDecision]] | None = None) -> Sentence | None:
    """One line when a cell could not test throughput because the run has too few
    repetitions for its exact test (3 unpaired: smallest p 0.1; 3 paired rounds: 0.25)."""
    found = rows if rows is not None else decisions(run, workload)
    short = [d for engine_rows in found.values() for d in engine_rows
             for p in d.picks.values()  # (its words are about throughput, timed)
             if p is not None and p.metric in THROUGHPUT and "cannot reach p<" in p.why]
    if not short:
        return None
    paired = round_orders(run, workload) is not None
    need = repetitions_needed(paired=paired)
    if paired:
        return Sentence().t(
            f"Throughput is timed, and with this run's rounds the paired test cannot reach "
            f"p<{ALPHA:g}: the cells that say so can name no strategy. Run --repetitions "
            f"{need} or more (the smallest p of {need} paired rounds is "
            f"{smallest_sign_flip_p(need):.2g}).")
    return Sentence().t(f"Throughput is timed, and with this run's repetitions the rank test "
                        f"cannot reach p<{ALPHA:g}: the cells that say so can name no strategy. "
                        f"Run --repetitions {need} or more (the smallest p of {need} vs {need} "
                        f"is {smallest_p(need, need):.2g}).")


def _and(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _fold_text(fold: float | None) -> str:
    return "" if fold is None else f" {fold:.3g}{TIMES}"


def cell_text(found: Pick | None) -> tuple[str, bool, str]:
    """(headline, separated, evidence) for one cell, in plain text: the leading group (the
    leader and those the evidence cannot tell from it) and how far the leader is ahead of each
    of the rest, e.g. "none and full_snapshot (lead 260 k records/s), ahead of timer 1.6x and
    incremental(5, false) 2.4x"; a group of numbers equal as shown says "equal", never "1x".
    ``separated``: the leader stands alone."""
    if found is None:
        return "not measured", False, ""
    number = _amount(found.metric, found.value.center)
    if found.contenders == 1:
        return f"only {found.best.strategy} ran ({number})", False, "nothing to compare"
    names = ", ".join(k.strategy for k in found.leaders)
    if not found.decided:
        if found.equal:
            return f"equal: {names} ({number})", False, found.why
        return f"not separated: {names}", False, found.why
    ahead = _and([f"{k.strategy}{_fold_text(fold)}" for k, fold in found.behind])
    if found.separated:
        return f"{found.best.strategy} ({number}), ahead of {ahead}", True, found.why
    group = _and([k.strategy for k in found.leaders])
    lead = "equal, " if found.equal else "lead "
    return f"{group} ({lead}{number}), ahead of {ahead}", False, found.why
