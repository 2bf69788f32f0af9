"""Plain-words findings derived from the numbers (never written by hand).

Each finding is a list of text segments, some marked bold, so the same sentence can be rendered
as escaped HTML for the page and as plain text for tests and logs without the two drifting.
Comparisons are made within one backend, because strategies are the subject of the report and
heap and RocksDB differ by an order of magnitude for reasons that have nothing to do with TTL.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from workloads.report.fmt import DASH, compare_phrase, connector, fmt_value, si
from workloads.report.load import Run, ScenarioKey
from workloads.report.metrics import STORED_ENTRIES
from workloads.report.stats import Stat, pareto_points, stat

BASELINE = "none"


@dataclass
class Sentence:
    """A finding: text segments (text, bold) plus a severity ("info" or "warn")."""

    parts: list[tuple[str, bool]] = field(default_factory=list)
    severity: str = "info"

    def t(self, text: str) -> Sentence:
        self.parts.append((text, False))
        return self

    def b(self, text: str) -> Sentence:
        self.parts.append((text, True))
        return self

    @property
    def text(self) -> str:
        return "".join(p for p, _ in self.parts)

    @property
    def html(self) -> str:
        return "".join(
            f"<strong>{html.escape(p)}</strong>" if bold else html.escape(p)
            for p, bold in self.parts
        )


def _rate(records_per_s: float) -> str:
    return f"{si(records_per_s)} records/s"


def _stats(run: Run, keys: list[ScenarioKey], metric: str) -> dict[ScenarioKey, Stat]:
    found = {k: stat(run, k, metric) for k in keys}
    return {k: s for k, s in found.items() if s is not None}


def _baseline(stats: dict[ScenarioKey, Stat], worst: ScenarioKey) -> ScenarioKey:
    """Compare against "none" when it was measured, otherwise against the worst scenario."""
    for key in stats:
        if key.strategy == BASELINE:
            return key
    return worst


def _cost(run: Run, best: ScenarioKey, base: ScenarioKey) -> str:
    """'at 12% lower throughput and 30% higher p99 latency' for ``best`` relative to ``base``."""
    parts = []
    tb, tr = stat(run, best, "records_per_s"), stat(run, base, "records_per_s")
    if tb is not None and tr is not None:
        parts.append(compare_phrase(tb.center, tr.center, "throughput"))
    lb, lr = stat(run, best, "latency_p99_us"), stat(run, base, "latency_p99_us")
    if lb is not None and lr is not None:
        parts.append(compare_phrase(lb.center, lr.center, "p99 latency"))
    return f", at {' and '.join(parts)}" if parts else ""


def _throughput(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    tp = _stats(run, keys, "records_per_s")
    if not tp:
        return []
    ranked = sorted(tp, key=lambda k: tp[k].center, reverse=True)
    best = ranked[0]
    s = Sentence().t(f"On {backend}, ").b(best.strategy)
    s.t(f" has the highest throughput ({_rate(tp[best].center)})")
    if len(ranked) == 1:
        return [s.t(".")]
    worst, second = ranked[-1], ranked[1]
    change = compare_phrase(tp[worst].center, tp[best].center, "throughput")
    s.t("; the slowest, ").b(worst.strategy).t(f", has {change} ")
    s.t(f"({_rate(tp[worst].center)}).")
    if tp[best].lo <= tp[second].hi:
        s.t(" Its lead over ").b(second.strategy)
        s.t(f" is within the run-to-run spread (their min{DASH}max ranges overlap).")
    return [s]


def _state(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    metric = STORED_ENTRIES
    entries = _stats(run, keys, metric)
    if len(entries) < 2:
        metric = "live_entries"
        entries = _stats(run, keys, metric)
    if not entries:
        return []
    best = min(entries, key=lambda k: entries[k].center)
    worst = max(entries, key=lambda k: entries[k].center)
    base = _baseline(entries, worst)
    what = "entries (live + expired)" if metric == STORED_ENTRIES else "live entries"
    s = Sentence().t(f"On {backend}, ").b(best.strategy).t(" keeps the smallest peak state")
    out = [s]
    if best == base:
        s.t(f" ({fmt_value(entries[best].center, 'entries')} {what}); no strategy shrank it.")
    else:
        e_best, e_base = entries[best].center, entries[base].center
        s.t(f": {compare_phrase(e_best, e_base, what, down='fewer')}{connector(e_best, e_base)}")
        s.b(base.strategy)
        s.t(f" ({fmt_value(entries[best].center, 'entries')} vs ")
        s.t(f"{fmt_value(entries[base].center, 'entries')})")
        pb, pr = stat(run, best, "physical_bytes"), stat(run, base, "physical_bytes")
        if pb is not None and pr is not None and pb.center != pr.center:
            phrase = compare_phrase(pb.center, pr.center, "physical bytes", "more", "fewer")
            s.t(f" and {phrase}" if pb.center < pr.center else f" but {phrase}")
        s.t(_cost(run, best, base) + ".")
    phys = _stats(run, keys, "physical_bytes")
    if len(phys) > 1:
        by_bytes = min(phys, key=lambda k: phys[k].center)
        if by_bytes != best:
            out.append(
                Sentence()
                .t(f"On {backend}, by peak physical bytes ")
                .b(by_bytes.strategy)
                .t(f" is smallest ({fmt_value(phys[by_bytes].center, 'bytes')}).")
            )
    return out


def _checkpoints(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    metric, what = "checkpoint_uploaded_bytes", "uploaded"
    sizes = _stats(run, keys, metric)
    if not sizes:
        metric, what = "checkpoint_bytes", "written"
        sizes = _stats(run, keys, metric)
    if not sizes:
        return []
    best = min(sizes, key=lambda k: sizes[k].center)
    worst = max(sizes, key=lambda k: sizes[k].center)
    base = _baseline(sizes, worst)
    s = Sentence().t(f"On {backend}, ").b(best.strategy).t(" writes the least per checkpoint (")
    s.t(f"median {fmt_value(sizes[best].center, 'bytes')} {what}")
    if best == base:
        return [s.t(").")]
    c_best, c_base = sizes[best].center, sizes[base].center
    s.t(f", {compare_phrase(c_best, c_base, 'bytes', down='fewer')}{connector(c_best, c_base)}")
    s.b(base.strategy)
    s.t(f" at {fmt_value(sizes[base].center, 'bytes')})")
    return [s.t(_cost(run, best, base) + ".")]


def _correctness(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    returned = _stats(run, keys, "expired_returned")
    if not returned:
        return []
    bad = [k for k in keys if k in returned and returned[k].hi > 0]
    if not bad:
        return [Sentence().t(f"On {backend}, no strategy returned an expired value.")]
    return [
        Sentence(severity="warn")
        .b(k.strategy)
        .t(f" on {backend} returned {fmt_value(returned[k].hi, 'count')} expired values")
        .t(" (at most; NeverReturnExpired requires 0).")
        for k in bad
    ]


def _pareto(run: Run, workload: str) -> list[Sentence]:
    metric, points = pareto_points(run, workload)
    if not points:
        return []
    fastest = max(points, key=lambda p: p.throughput.center)
    s = Sentence().t("Fastest overall: ").b(f"{fastest.key.backend}/{fastest.key.strategy}")
    s.t(f" ({_rate(fastest.throughput.center)}). ")
    s.t(f"Pareto-optimal for throughput vs peak {str(metric).replace('_', ' ')}: ")
    optimal = [p for p in points if p.optimal]
    for i, p in enumerate(optimal):
        s.t(", " if i else "").b(f"{p.key.backend}/{p.key.strategy}")
    return [s.t(".")]


def findings(run: Run) -> dict[str, list[Sentence]]:
    """Findings per workload, ordered: throughput, state, checkpoints, correctness, overall."""
    result: dict[str, list[Sentence]] = {}
    for workload in run.workloads:
        out: list[Sentence] = []
        for backend in run.backends:
            keys = [
                k
                for k in run.scenarios(workload)
                if k.backend == backend and k not in run.not_applicable
            ]
            if not keys:
                continue
            for part in (_throughput, _state, _checkpoints, _correctness):
                out.extend(part(run, backend, keys))
        out.extend(_pareto(run, workload))
        result[workload] = out
    return result
