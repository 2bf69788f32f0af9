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
never ranked against it. A recommendation claims only what its cells decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workloads.report.checkpoint_noise import layout_noise
from workloads.report.engines import engine_lanes, engine_of, engine_order, possessive
from workloads.report.findings import Sentence
from workloads.report.fmt import TIMES, compare_phrase, connector, fmt_value
from workloads.report.load import Run, ScenarioKey, backend_label
from workloads.report.metrics import (
    CHECKPOINT_SIZE_METRICS,
    STORED_ENTRIES,
    MetricClass,
    run_class_of,
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

BASELINE = "none"
#: The share of an operator's outputs its TTL changed (``workloads.operators.results``).
CHANGED_RESULTS = "ttl_changed_results"
#: The knob of a TTL sweep (``workloads.run.sweep``: scenarios ``ttl(ms=V)``).
TTL_SWEEP = "ttl"
#: Configurations a tie names before it counts them instead.
MAX_NAMED = 3
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
            out[i] = Separation(sa.center != sb.center,
                                "exact" if sa.center != sb.center else "exact: equal",
                                _ratio(sa, sb))
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
    return [s for s in out if s is not None]


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
    return Pick(metric, best, stats[best], tied, why, len(ranked), behind)


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


def _cost(run: Run, rec: ScenarioKey, base: ScenarioKey, metric: str, s: Sentence) -> None:
    """Append '; 12% lower throughput' where the evidence separates ``rec`` from ``base`` on
    ``metric``, else that it does not."""
    a, b = stat(run, base, metric), stat(run, rec, metric)
    if a is None or b is None:
        return
    found = separations(run, [(base, rec, metric)])[0]
    noun = _what(metric)
    if found.separated:
        down = "fewer" if spec_for(metric).unit in _AMOUNTS else "lower"
        s.t(f"; {compare_phrase(b.center, a.center, noun, down=down)}")
    else:
        s.t(f"; {noun}: no difference the evidence separates")


def recommend(run: Run, keys: list[ScenarioKey], picks: dict[str, Pick | None]
              ) -> tuple[ScenarioKey | None, Sentence]:
    """The strategy to pick on this backend and its trade-off in one sentence: the strategy
    that keeps the smallest peak state (cleanup is what a TTL is for), the fastest of those the
    evidence cannot tell apart on state; against ``none``'s throughput and checkpoints. A
    strategy that returned an expired value is never recommended."""
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
    tp = {k: stat(run, k, "records_per_s") for k in leaders}
    rec = max(leaders, key=lambda k: -1.0 if tp[k] is None else tp[k].center)  # type: ignore[union-attr]
    s = Sentence().b(rec.strategy)
    if len(leaders) > 1:
        s.t(f" (the fastest of {', '.join(k.strategy for k in leaders)}, whose peak state the "
            "evidence does not separate)")
    what = _what(state.metric)
    if base is None:
        behind = _and([k.strategy for k, _ in state.behind])
        lead = _amount(state.metric, state.value.center)
        # a leader alone: the evidence that separates it; a group's why is about its tie
        evidence = f" ({state.why})" if state.separated else ""
        if rec == state.best:  # the leader: its number is the smallest
            s.t(f" keeps the smallest peak state ({lead}), ahead of {behind}{evidence}")
        else:  # in the leading group, not its leader: never "the smallest"
            s.t(" is in the group with the smallest peak state, led by ").b(state.best.strategy)
            s.t(f" ({lead}), ahead of {behind}")
        _results_cost(run, rec, s)
        return rec, s.t(".")
    mine, theirs = stat(run, rec, state.metric), stat(run, base, state.metric)
    # the leader is separated from none (none is behind it); a tied leader is tested itself
    against = None if rec == state.best else separations(run, [(base, rec, state.metric)])[0]
    if mine is not None and theirs is not None and (against is None or against.separated):
        unit = spec_for(state.metric).unit
        s.t(f" keeps {compare_phrase(mine.center, theirs.center, what, down='fewer')}"
            f"{connector(mine.center, theirs.center)}").b(BASELINE)
        s.t(f" ({fmt_value(mine.center, unit)} vs {fmt_value(theirs.center, unit)})")
    elif against is not None:  # in the leading group, yet not itself told from none's
        s.t(" is in the group with the smallest peak state, led by ").b(state.best.strategy)
        s.t(f"; its own {what} the evidence does not separate from ").b(BASELINE)
        s.t(f"'s ({against.why})")
    _results_cost(run, rec, s)
    _cost(run, rec, base, "records_per_s", s)
    checkpoint = picks.get("checkpoint")
    if checkpoint is not None:
        _cost(run, rec, base, checkpoint.metric, s)
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


def sweep_tradeoff(run: Run, keys: list[ScenarioKey], state: Pick
                   ) -> tuple[ScenarioKey | None, Sentence]:
    """A TTL sweep's answer is a trade-off, not a winner: per TTL, the state it keeps against
    ``none`` and the share of outputs it changes, shortest TTL first; recommended is the TTL
    with the smallest state among those that changed no output (None when every TTL changed
    some: how many changed outputs a job can take is the user's call)."""
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
        if mine is not None and theirs is not None and base is not None:
            s.t(f" keeps {compare_phrase(mine.center, theirs.center, what, down='fewer')}")
            s.t(f" ({fmt_value(mine.center, unit)})")
        if share is not None:
            s.t(" and changes ").b(f"{fmt_value(share, 'share')} of the outputs")
            if share == 0 and mine is not None and not _returned_expired(run, key):
                clean.append((mine.center, key))
    if base is not None and theirs is not None:
        s.t(", against ").b(BASELINE).t(f"'s {fmt_value(theirs.center, unit)} {what}")
    if not clean:
        return None, s.t(". Every TTL swept changed outputs: pick by how many a job can take.")
    if not state.decided:  # no TTL's state told from another's: no "smallest" to name
        return None, s.t(". The evidence does not separate the peak state of these "
                         f"strategies ({state.why}): no smallest state to recommend.")
    rec = min(clean, key=lambda c: c[0])[1]
    return rec, s.t(". The smallest state that changes no output: ").b(rec.strategy).t(".")


def decide(run: Run, workload: str, backend: str) -> BackendDecision | None:
    """One backend's row: its picks and recommendation (None when nothing ran on it)."""
    keys = [k for k in run.scenarios(workload)
            if k.backend == backend and k not in run.not_applicable]
    if not keys:
        return None
    picks = {column: pick(run, keys, metrics) for column, _, metrics in COLUMNS}
    rec, sentence = recommend(run, keys, picks)
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


def ttl_headline(run: Run, workload: str) -> Sentence | None:
    """A TTL sweep's headline above the table: the state-against-results trade-off of the
    first backend that has one (each backend's is in its row), or None for any other run."""
    if not ttl_sweep(run):
        return None
    for rows in decisions(run, workload).values():
        for row in rows:
            if row.tradeoff.text.startswith("State against results"):
                head = Sentence().t(f"TTL sweep, on {backend_label(row.backend)}: ")
                head.parts.extend(row.tradeoff.parts)
                return head
    return None


def fastest_per_engine(run: Run, workload: str) -> Sentence | None:
    """Like with like: the fastest configuration of each engine over its own lanes (each
    separated from its runner-up or not), each engine named as the lane registry names it
    (statebench's first, the others as context), never one ranking."""
    parts = []
    keys_of = [k for k in run.scenarios(workload) if k not in run.not_applicable]
    for engine in engine_order(k.backend for k in keys_of):
        keys = [k for k in keys_of if engine_of(k.backend) == engine]
        found = pick(run, keys, THROUGHPUT) if keys else None
        if found is not None:
            parts.append((engine, found))
    if not parts:
        return None
    s = Sentence()
    for i, (engine, found) in enumerate(parts):
        lead = f"{found.best.backend}/{found.best.strategy}"
        if i == 0:
            s.t(f"Fastest on {possessive(engine)} lanes: ")
        else:
            s.t(f"; for context, on {possessive(engine)}: ")
        s.b(lead).t(f" ({fmt_value(found.value.center, 'records/s')}")
        if found.tied:
            tied = (", ".join(f"{k.backend}/{k.strategy}" for k in found.tied)
                    if len(found.tied) <= MAX_NAMED else f"{len(found.tied)} other configurations")
            s.t(f"; not separated from {tied}: {found.why}")
        s.t(")")
    if len(parts) > 1:
        s.t(f". The engines are not ranked against each other: "
            f"{_and([engine_lanes(engine) for engine, _ in parts])} differ for reasons that "
            "are not the TTL strategy.")
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


def repetitions_hint(run: Run, workload: str) -> Sentence | None:
    """One line when a cell could not test throughput because the run has too few
    repetitions for its exact test (3 unpaired: smallest p 0.1; 3 paired rounds: 0.25)."""
    short = [d for rows in decisions(run, workload).values() for d in rows
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
    incremental(5, false) 2.4x". ``separated``: the leader stands alone."""
    if found is None:
        return "not measured", False, ""
    number = _amount(found.metric, found.value.center)
    if found.contenders == 1:
        return f"only {found.best.strategy} ran ({number})", False, "nothing to compare"
    if not found.decided:
        names = ", ".join(k.strategy for k in found.leaders)
        if len(found.leaders) == found.contenders:
            return f"not separated: {names}", False, found.why
        return f"not separated: {names} (lead {number})", False, found.why
    ahead = _and([f"{k.strategy}{_fold_text(fold)}" for k, fold in found.behind])
    if found.separated:
        return f"{found.best.strategy} ({number}), ahead of {ahead}", True, found.why
    group = _and([k.strategy for k in found.leaders])
    return f"{group} (lead {number}), ahead of {ahead}", False, found.why
