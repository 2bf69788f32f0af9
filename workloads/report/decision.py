"""The first screen of a workload: per backend, which strategy to pick and what it costs.

A reader comes with one question: on this backend, for this workload, which cleanup strategy,
and what does it cost? The decision table answers it per backend in four cells: fastest,
smallest peak state, smallest checkpoint, and a recommended strategy with its trade-off in one
sentence. A cell names a winner only where the evidence separates it from every other strategy
on that backend, by the class of the number (``metrics.class_of``):

* **exact** numbers (counted under the logical clock: entries, canonical checkpoint sizes)
  separate when they differ: the same seed and configuration give the same number;
* numbers with **repetitions** (throughput: timed) separate when the diff's rule says so
  (``verdict.compare_scenarios``: exact Mann-Whitney U test, bootstrap interval of the ratio of
  medians, at least 5% apart, p adjusted over the cell's tests);
* **timing-dependent** numbers that are one per run (RocksDB's incremental checkpoint sizes, a
  count on a paced clock, a count under the compaction filter) cannot be tested from one run:
  checkpoint sizes separate when further apart than identical runs moved them
  (``findings.CHECKPOINT_LAYOUT_NOISE``, measured), other such numbers never from one run.

Otherwise the cell says which strategies it cannot tell apart, and why. Strategies are compared
inside one backend; backends only inside one engine (statebench's Python lanes, Flink's JVM
lanes): a Flink lane is context for statebench's, never ranked against it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workloads.report.findings import CHECKPOINT_LAYOUT_NOISE, Sentence
from workloads.report.fmt import compare_phrase, connector, fmt_value
from workloads.report.load import Run, ScenarioKey, is_reference
from workloads.report.metrics import (
    CHECKPOINT_SIZE_METRICS,
    STORED_ENTRIES,
    MetricClass,
    run_class_of,
    spec_for,
)
from workloads.report.significance import smallest_p
from workloads.report.stats import Stat, stat
from workloads.report.verdict import ALPHA, compare_scenarios

BASELINE = "none"
#: Configurations a tie names before it counts them instead.
MAX_NAMED = 3
THROUGHPUT = ("records_per_s",)
#: Peak state: entries held (live + expired), else the physical footprint.
PEAK_STATE = (STORED_ENTRIES, "physical_bytes")
#: Checkpoint size: what each checkpoint uploads, else its full size.
CHECKPOINT = ("checkpoint_uploaded_bytes", "checkpoint_bytes")
#: The table's columns: (id, heading, metrics in order of preference).
COLUMNS = (
    ("fastest", "Fastest", THROUGHPUT),
    ("state", "Smallest peak state", PEAK_STATE),
    ("checkpoint", "Smallest checkpoint", CHECKPOINT),
)
#: Engines in page order: (name, heading, whether its lanes are Flink's reference lanes).
ENGINES = (
    ("statebench", "statebench (Python lanes)", False),
    ("flink", "Flink (JVM lanes): context for statebench's, not ranked against them", True),
)


@dataclass(frozen=True)
class Separation:
    """Whether one scenario's number is told apart from another's, and the evidence."""

    separated: bool
    why: str


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

    @property
    def separated(self) -> bool:
        return not self.tied

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
    """A metric's values per repetition, or None when the run holds one number (a peak over
    logical time, a median over checkpoints)."""
    samples = run.get(key, metric)
    if samples is None or samples.kind != "summary":
        return None
    values = samples.values[np.isfinite(samples.values)]
    return values if values.size else None


def separations(run: Run, pairs: list[tuple[ScenarioKey, ScenarioKey, str]]
                ) -> list[Separation]:
    """For each (a, b, metric): whether b's number is separated from a's (either direction),
    the sampled ones tested as one family."""
    out: list[Separation | None] = [None] * len(pairs)
    sampled: list[tuple[int, tuple[str, np.ndarray, np.ndarray, MetricClass]]] = []
    for i, (a, b, metric) in enumerate(pairs):
        sa, sb = stat(run, a, metric), stat(run, b, metric)
        if sa is None or sb is None:
            out[i] = Separation(False, "not measured")
            continue
        ca, cb = _scenario_class(run, a, metric), _scenario_class(run, b, metric)
        if ca.exact and cb.exact:
            out[i] = Separation(sa.center != sb.center,
                                "exact" if sa.center != sb.center else "exact: equal")
            continue
        klass = cb if not cb.exact else ca  # the class that is not exact names the reason
        va, vb = _repetitions(run, a, metric), _repetitions(run, b, metric)
        if va is not None and vb is not None:
            sampled.append((i, (metric, va, vb, klass)))
            continue
        gap = abs(sb.center / sa.center - 1) if sa.center else float("inf")
        if metric in CHECKPOINT_SIZE_METRICS and gap > CHECKPOINT_LAYOUT_NOISE:
            out[i] = Separation(True, f"{klass.cls}: {gap:.0%} apart, beyond the "
                                      f"{CHECKPOINT_LAYOUT_NOISE:.0%} identical runs moved")
        else:
            out[i] = Separation(False, f"{klass.cls} ({klass.reason}): one number per run, "
                                       "which one run cannot test")
    verdicts = compare_scenarios([item for _, item in sampled])
    for (i, _), verdict in zip(sampled, verdicts):
        out[i] = Separation(verdict.coloured, verdict.note)
    return [s for s in out if s is not None]


def pick(run: Run, keys: list[ScenarioKey], metrics: tuple[str, ...]) -> Pick | None:
    """The leader among ``keys`` on the first of ``metrics`` any of them measured."""
    for metric in metrics:
        stats = {k: s for k in keys if (s := stat(run, k, metric)) is not None}
        if stats:
            break
    else:
        return None
    sign = spec_for(metric).better or -1
    ranked = sorted(stats, key=lambda k: -sign * stats[k].center)  # stable: run order on ties
    best, others = ranked[0], ranked[1:]
    if not others:
        return Pick(metric, best, stats[best], (), "nothing to compare", 1)
    found = separations(run, [(other, best, metric) for other in others])
    tied = tuple(o for o, s in zip(others, found) if not s.separated)
    why = next((s.why for s in found if not s.separated), found[0].why)
    return Pick(metric, best, stats[best], tied, why, len(ranked))


def _returned_expired(run: Run, key: ScenarioKey) -> bool:
    returned = stat(run, key, "expired_returned")
    return returned is not None and returned.hi > 0


def _what(metric: str) -> str:
    return {STORED_ENTRIES: "stored entries", "physical_bytes": "physical bytes",
            "records_per_s": "throughput",
            "checkpoint_uploaded_bytes": "bytes uploaded per checkpoint",
            "checkpoint_bytes": "checkpoint bytes"}.get(metric, spec_for(metric).label)


def _cost(run: Run, rec: ScenarioKey, base: ScenarioKey, metric: str, s: Sentence) -> None:
    """Append '; 12% lower throughput' where the evidence separates ``rec`` from ``base`` on
    ``metric``, else that it does not."""
    a, b = stat(run, base, metric), stat(run, rec, metric)
    if a is None or b is None:
        return
    found = separations(run, [(base, rec, metric)])[0]
    noun = _what(metric)
    if found.separated:
        down = "fewer" if spec_for(metric).unit in ("entries", "bytes") else "lower"
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
    if base is not None and base == state.best and state.separated:
        s = Sentence().b(BASELINE).t(": no strategy kept less peak state than ").b(BASELINE)
        return base, s.t(f" ({state.why}), so a cleanup here only costs.")
    if base is not None and base in state.leaders:
        return None, Sentence().t("No recommendation: the evidence does not separate any "
                                  "strategy's peak state from ").b(BASELINE).t(
                                      f"'s ({state.why}).")
    tp = {k: stat(run, k, "records_per_s") for k in leaders}
    rec = max(leaders, key=lambda k: -1.0 if tp[k] is None else tp[k].center)  # type: ignore[union-attr]
    s = Sentence().b(rec.strategy)
    if len(leaders) > 1:
        s.t(f" (the fastest of {', '.join(k.strategy for k in leaders)}, whose peak state the "
            "evidence does not separate)")
    if base is None:
        return rec, s.t(f" keeps the smallest peak state ({state.why}).")
    mine, theirs = stat(run, rec, state.metric), stat(run, base, state.metric)
    what = _what(state.metric)
    if mine is not None and theirs is not None:
        s.t(f" keeps {compare_phrase(mine.center, theirs.center, what, down='fewer')}"
            f"{connector(mine.center, theirs.center)}").b(BASELINE)
        s.t(f" ({fmt_value(mine.center, spec_for(state.metric).unit)} vs "
            f"{fmt_value(theirs.center, spec_for(state.metric).unit)})")
    _cost(run, rec, base, "records_per_s", s)
    checkpoint = picks.get("checkpoint")
    if checkpoint is not None:
        _cost(run, rec, base, checkpoint.metric, s)
    return rec, s.t(".")


def decide(run: Run, workload: str, backend: str) -> BackendDecision | None:
    """One backend's row: its picks and recommendation (None when nothing ran on it)."""
    keys = [k for k in run.scenarios(workload)
            if k.backend == backend and k not in run.not_applicable]
    if not keys:
        return None
    picks = {column: pick(run, keys, metrics) for column, _, metrics in COLUMNS}
    rec, sentence = recommend(run, keys, picks)
    return BackendDecision(backend, picks, rec, sentence)


def engine_of(backend: str) -> str:
    return "flink" if is_reference(backend) else "statebench"


def decisions(run: Run, workload: str) -> dict[str, list[BackendDecision]]:
    """Rows per engine, in page order (engines without a backend in the run left out)."""
    out: dict[str, list[BackendDecision]] = {}
    for engine, _, _ in ENGINES:
        rows = [d for b in run.backends if engine_of(b) == engine
                if (d := decide(run, workload, b)) is not None]
        if rows:
            out[engine] = rows
    return out


def fastest_per_engine(run: Run, workload: str) -> Sentence | None:
    """Like with like: the fastest configuration of each engine over its own lanes (each
    separated from its runner-up or not), the other engine as context, never one ranking."""
    parts = []
    for engine, heading, _ in ENGINES:
        keys = [k for k in run.scenarios(workload)
                if engine_of(k.backend) == engine and k not in run.not_applicable]
        found = pick(run, keys, THROUGHPUT) if keys else None
        if found is not None:
            parts.append((engine, heading, found))
    if not parts:
        return None
    s = Sentence()
    for i, (engine, _, found) in enumerate(parts):
        lead = f"{found.best.backend}/{found.best.strategy}"
        if i == 0:
            s.t(f"Fastest on {'statebench' if engine == 'statebench' else 'Flink'}'s lanes: ")
        else:
            s.t(f"; for context, on {'Flink' if engine == 'flink' else 'statebench'}'s: ")
        s.b(lead).t(f" ({fmt_value(found.value.center, 'records/s')}")
        if found.tied:
            tied = (", ".join(f"{k.backend}/{k.strategy}" for k in found.tied)
                    if len(found.tied) <= MAX_NAMED else f"{len(found.tied)} other configurations")
            s.t(f"; not separated from {tied}: {found.why}")
        s.t(")")
    if len(parts) > 1:
        s.t(". The engines are not ranked against each other: Python and JVM lanes differ for "
            "reasons that are not the TTL strategy.")
    else:
        s.t(".")
    return s


def repetitions_needed(alpha: float = ALPHA) -> int:
    """The fewest repetitions a side with which the exact rank test can reach p < alpha."""
    n = 1
    while smallest_p(n, n) >= alpha:
        n += 1
    return n


def repetitions_hint(run: Run, workload: str) -> Sentence | None:
    """One line when a cell could not test throughput because the run has too few
    repetitions for the rank test (the default comparison's 3: smallest p is 0.1)."""
    short = [d for rows in decisions(run, workload).values() for d in rows
             for p in d.picks.values() if p is not None and "cannot reach p<" in p.why]
    if not short:
        return None
    need = repetitions_needed()
    return Sentence().t(f"Throughput is timed, and with this run's repetitions the rank test "
                        f"cannot reach p<{ALPHA:g}: the cells that say so can name no strategy. "
                        f"Run --repetitions {need} or more (the smallest p of {need} vs {need} "
                        f"is {smallest_p(need, need):.2g}).")


def cell_text(found: Pick | None) -> tuple[str, bool, str]:
    """(headline, separated, evidence) for one cell, in plain text."""
    if found is None:
        return "not measured", False, ""
    unit = spec_for(found.metric).unit
    number = fmt_value(found.value.center, unit)
    if found.contenders == 1:
        return f"only {found.best.strategy} ran ({number})", False, "nothing to compare"
    if found.separated:
        return f"{found.best.strategy} ({number})", True, found.why
    names = ", ".join(k.strategy for k in found.leaders)
    if len(found.leaders) == found.contenders:
        return f"not separated: {names}", False, found.why
    return f"not separated: {names} (lead {number})", False, found.why
