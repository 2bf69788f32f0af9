"""Fidelity: does statebench's relative cost of each cleanup strategy match Flink's own?

A run with Flink's backends as reference lanes (``flink-heap``, ``flink-rocksdb``) answers the
question users ask of every statebench number: "and what does Flink do?". Absolute numbers of a
Python backend and a JVM one differ for reasons that have nothing to do with TTL, so what is
compared is each strategy's cost *relative to ``none`` on the same backend*: throughput
(strategy / none) and peak stored entries (strategy / none), plus TTL (``none``) against the same
workload without a TTL when the run has one. statebench's heap is set against Flink's heap and
statebench's RocksDB against Flink's RocksDB. Where the two relative costs differ by more than
:data:`DISAGREE`, a finding says so in plain words (the project's steering goal: within 1.5x).

A throughput disagreement is put down to what each side measured of the checkpoint model
(:data:`CAUSES`): the share of task time in synchronous phases and barrier waits, the JVM's
garbage collection (Flink's lanes) and the CPU of the asynchronous checkpoint thread, each as a
share of the task's busy time (records / records/s), for the strategy and for ``none``; the
cause whose share differs most between the two is named.

Every number is a :func:`workloads.report.stats.stat` center, i.e. the one summary rule of
``workloads.results.summaries`` (median of repetitions for throughput, peak over logical time
for state).

ForSt beside RocksDB (:func:`forst_html`): a run with both ``flink-rocksdb`` and
``flink-forst`` (Flink 2.x's embedded and disaggregated LSM backends) gets a table per workload
with, per strategy run on both, ForSt's numbers over RocksDB's (throughput, peak stored
entries, physical bytes, checkpoint size and upload, restore time) and each strategy's cost
relative to ``none`` on each, so ForSt's relative costs sit beside RocksDB's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from html import escape
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from backends import strategies
from backends.storage.registry import STORAGE_BACKENDS
from backends.strategies import strategy_of_label
from workloads.report.figures import Chart, colours, slug
from workloads.report.findings import Sentence
from workloads.report.fmt import MISSING, TIMES, compare_phrase, connector, fmt_ratio, fmt_value
from workloads.report.load import Run, ScenarioKey, backend_label, is_reference
from workloads.report.metrics import STORED_ENTRIES
from workloads.report.stats import stat
from workloads.report.template import chart_html
from workloads.results.band import band_agreement, log_ratio_interval

#: (statebench backend, the Flink lane it is compared with).
PAIRS = (("heap", "flink-heap"), ("rocksdb", "flink-rocksdb"))
#: (metric, what its ratio is called, unit).
MEASURES = (
    ("records_per_s", "throughput", "records/s"),
    (STORED_ENTRIES, "peak stored entries", "entries"),
)
BASELINE = strategies.BASELINE
#: Relative costs further apart than this factor disagree.
DISAGREE = 1.5
#: The confidence of a factor's interval (factor_interval).
INTERVAL_CONFIDENCE = 0.95
#: A cost both sides reproduce is worth a sentence when it is at least this large either way.
NOTABLE = 1.5
#: The row comparing the TTL workload's ``none`` with the same workload without a TTL.
TTL_ROW = "TTL vs no TTL"
#: Spec fields that say how TTL is configured; two specs equal apart from these (and their
#: names) are one workload with and without a TTL.
TTL_FIELDS = ("ttl_ms", "strategies", "update_type", "visibility")
#: Why Flink's incremental cleanup removes less on sparse heap state (Flink's
#: CopyOnWriteStateMap iterator advances over table positions and stops at an empty one).
INCREMENTAL_HEAP_REASON = (
    "Flink's incremental cleanup walks hash-table positions, not entries, and stops at empty "
    "positions, so it cleans much less on sparse state"
)


#: Measured causes of a throughput gap: (metric, what it is, how it becomes a share of the
#: task's busy time: "share" is one already, "ms"/"s" are divided by the busy time).
CAUSES = (
    ("checkpoint_sync_share", "sync phases and barrier waits", "share"),
    ("jvm_gc_ms", "JVM garbage collection", "ms"),
    ("checkpoint_async_cpu_s", "checkpoint-thread CPU", "s"),
)


@dataclass(frozen=True)
class Cost:
    """One backend's number for a strategy and for what it is compared with (``none``, or the
    same workload without a TTL), and the ratio each repetition gives (its value over the
    same repetition's base: the jobs run repetition by repetition, so a repetition's two jobs
    met the same machine) when both are per-repetition numbers of two or more repetitions."""

    value: float
    base: float
    reps: tuple[float, ...] = ()

    @property
    def ratio(self) -> float | None:
        return self.value / self.base if self.base else None


@dataclass(frozen=True)
class Comparison:
    """One strategy's relative cost on statebench's backend and on the matching Flink lane."""

    workload: str
    ours: str
    flink: str
    strategy: str
    metric: str
    noun: str
    unit: str
    mine: Cost | None
    theirs: Cost | None

    @property
    def factor(self) -> float | None:
        """statebench's ratio over Flink's (None when either is missing or zero)."""
        a = self.mine.ratio if self.mine else None
        b = self.theirs.ratio if self.theirs else None
        if a is None or b is None or a <= 0 or b <= 0:
            return None
        return a / b

    @property
    def fold(self) -> float | None:
        """How far apart the two relative costs are, as a factor >= 1."""
        f = self.factor
        return None if f is None else max(f, 1 / f)

    @cached_property
    def factor_interval(self) -> tuple[float, float] | None:
        """A 95% interval of the medians' factor (:func:`factor_interval`) when both sides have
        per-repetition ratios; None otherwise (a peak over logical time is one number). Cached:
        the verdict, the finding and the cell each ask for it."""
        if self.mine is None or self.theirs is None or not (self.mine.reps and self.theirs.reps):
            return None
        if min(self.mine.reps) <= 0 or min(self.theirs.reps) <= 0:
            return None  # a log-ratio interval needs positive ratios
        return factor_interval(self.mine.reps, self.theirs.reps)

    @property
    def agreement(self) -> str:
        """agree, disagree or undecided (empty when a side is missing). With repetitions
        on both sides, agree or disagree only where the factor's interval lies wholly inside
        or wholly outside the band (an exact number repeats, so its interval is its one
        factor); without, the medians' factor decides."""
        if self.fold is None:
            return ""
        span = self.factor_interval
        if span is None:
            return "disagree" if self.fold > DISAGREE else "agree"
        return band_agreement(*span, DISAGREE)

    @property
    def disagrees(self) -> bool:
        return self.agreement == "disagree"
#: Flink's RocksDB lane and ForSt's, compared with each other (both are Flink's own backends).
FORST_PAIR = ("flink-rocksdb", "flink-forst")
#: (metric, what it is, unit) of the ForSt-beside-RocksDB table.
FORST_MEASURES = (
    ("records_per_s", "throughput", "records/s"),
    (STORED_ENTRIES, "peak stored entries", "entries"),
    ("physical_bytes", "physical bytes", "bytes"),
    ("checkpoint_bytes", "checkpoint size", "bytes"),
    ("checkpoint_uploaded_bytes", "checkpoint uploaded", "bytes"),
    ("restore_ms", "restore from the last checkpoint", "ms"),
)


@dataclass(frozen=True)
class ForStRow:
    """One strategy and measure: RocksDB's and ForSt's numbers, and each one's cost relative to
    ``none`` on its own backend (None for ``none`` itself or where a side is missing)."""

    workload: str
    strategy: str
    metric: str
    noun: str
    unit: str
    rocksdb: float | None
    forst: float | None
    rocksdb_rel: Cost | None
    forst_rel: Cost | None

    @property
    def forst_over_rocksdb(self) -> float | None:
        if self.rocksdb is None or self.forst is None or self.rocksdb == 0:
            return None
        return self.forst / self.rocksdb


def has_reference_lanes(run: Run) -> bool:
    """True when the run ran a Flink lane next to the statebench backend it mirrors."""
    return any(ours in run.backends and flink in run.backends for ours, flink in PAIRS)


def _specs(run: Run) -> list[dict[str, Any]]:
    spec = run.meta.get("spec")
    items = spec if isinstance(spec, list) else [spec]
    return [s for s in items if isinstance(s, dict)]


def _ttl(spec: dict[str, Any]) -> Any:
    state = spec.get("state")
    return state.get("ttl_ms") if isinstance(state, dict) else spec.get("ttl_ms")


def _without_ttl(spec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k not in ("name", "description", *TTL_FIELDS)}
    if isinstance(out.get("state"), dict):
        out["state"] = {k: v for k, v in out["state"].items() if k not in TTL_FIELDS}
    return out


def no_ttl_partner(run: Run, workload: str) -> str | None:
    """The run's workload that is ``workload`` without a TTL (same spec apart from its name and
    TTL fields), or None when the run has none."""
    specs = {str(s.get("name")): s for s in _specs(run)}
    mine = specs.get(workload)
    if mine is None or _ttl(mine) is None:
        return None
    shape = _without_ttl(mine)
    for name, spec in specs.items():
        if name != workload and name in run.workloads and _ttl(spec) is None \
                and _without_ttl(spec) == shape:
            return name
    return None


def factor_interval(mine: Sequence[float], theirs: Sequence[float]) -> tuple[float, float]:
    """The 95% interval of the two costs' factor from each side's per-repetition ratios:
    Welch's t on their mean log-ratios (``workloads.results.band.log_ratio_interval``, the
    per-op suite's rule). A bootstrap of medians of three returned every pairing's range and
    covered the true factor about 90% of the time; this one covers 95% and narrows with more
    repetitions."""
    return log_ratio_interval(mine, theirs, INTERVAL_CONFIDENCE)


def _cost(run: Run, key: ScenarioKey, base: ScenarioKey, metric: str) -> Cost | None:
    if key in run.not_applicable or base in run.not_applicable:
        return None
    a, b = stat(run, key, metric), stat(run, base, metric)
    if a is None or b is None or not (math.isfinite(a.center) and math.isfinite(b.center)):
        return None
    return Cost(a.center, b.center, _rep_ratios(run, key, base, metric))


def _rep_ratios(run: Run, key: ScenarioKey, base: ScenarioKey, metric: str) -> tuple[float, ...]:
    """Each repetition's value over the same repetition's base (summary metrics of two or
    more repetitions on both; else empty)."""
    a, b = run.get(key, metric), run.get(base, metric)
    if a is None or b is None or a.kind != "summary" or b.kind != "summary":
        return ()
    of_base = dict(zip(b.steps.tolist(), b.values.tolist()))
    ratios = tuple(v / of_base[step] for step, v in zip(a.steps.tolist(), a.values.tolist())
                   if step in of_base and of_base[step] > 0
                   and math.isfinite(v) and math.isfinite(of_base[step]))
    return ratios if len(ratios) >= 2 else ()


def _strategies(run: Run, workload: str) -> list[str]:
    """Strategies run on both sides of some pair (``none`` is the baseline, not a row)."""
    found = []
    for strategy in run.strategies:
        if strategy == BASELINE:
            continue
        for ours, flink in PAIRS:
            keys = (ScenarioKey(workload, ours, strategy), ScenarioKey(workload, flink, strategy))
            if any(k in run.samples or k in run.not_applicable for k in keys):
                found.append(strategy)
                break
    return found


def comparisons(run: Run, workload: str) -> list[Comparison]:
    """Every (strategy, measure, pair) of ``workload``, strategies in the run's order, then the
    TTL-vs-no-TTL rows when the run has the workload without a TTL."""
    pairs = [(o, f) for o, f in PAIRS if o in run.backends and f in run.backends]
    rows: list[Comparison] = []

    def add_rows(label: str, workload_of: str, strategy: str, base_workload: str) -> None:
        """One row per measure and pair: (workload_of, strategy) against (base_workload,
        the baseline), on each side of the pair."""
        for metric, noun, unit in MEASURES:
            for ours, flink in pairs:
                sides = [
                    _cost(run, ScenarioKey(workload_of, b, strategy),
                          ScenarioKey(base_workload, b, BASELINE), metric)
                    for b in (ours, flink)
                ]
                rows.append(Comparison(workload, ours, flink, label, metric, noun, unit, *sides))

    for strategy in _strategies(run, workload):
        add_rows(strategy, workload, strategy, workload)
    partner = no_ttl_partner(run, workload)
    if partner is not None:  # TTL vs no TTL: the baseline against the partner's baseline
        add_rows(TTL_ROW, workload, BASELINE, partner)
    return rows


def _walks_entries(backend: str) -> bool:
    """Whether statebench's ``backend`` walks entries in memory (its incremental cleanup's
    iterator), where Flink's walks hash-table positions."""
    found = STORAGE_BACKENDS.get(backend)
    return found is not None and strategies.ENTRY_ITERATOR in found.capabilities


def _kind(backend: str) -> str:
    """statebench's backend as a sentence names it ("RocksDB"), from the backend registry."""
    found = STORAGE_BACKENDS.get(backend)
    return backend if found is None else found.title


def _against(c: Comparison) -> str:
    return "the no-TTL run's" if c.strategy == TTL_ROW else f"{BASELINE}'s"


def _subject(c: Comparison) -> str:
    return "TTL (none vs the same workload without TTL)" if c.strategy == TTL_ROW else c.strategy


def _sentence(run: Run, c: Comparison) -> Sentence | None:
    """A finding for one comparison: always when the two sides disagree, otherwise only when
    both show a cost of at least :data:`NOTABLE` either way (a reproduced effect)."""
    if c.mine is None or c.theirs is None or c.fold is None:
        return None
    a, b = c.mine.ratio, c.theirs.ratio
    assert a is not None and b is not None  # fold is set only when both ratios are
    notable = all(r <= 1 / NOTABLE or r >= NOTABLE for r in (a, b))
    if c.agreement == "agree" and not notable:
        return None
    s = Sentence(severity="warn" if c.disagrees else "info")
    s.t(f"On {_kind(c.ours)}, ").b(_subject(c))
    if c.metric == "records_per_s":
        s.t(f" costs statebench {fmt_ratio(a)} of {_against(c)} throughput and Flink "
            f"{fmt_ratio(b)}")
    else:
        s.t(f" keeps {c.noun} at {fmt_ratio(a)} of {_against(c)} on statebench and "
            f"{fmt_ratio(b)} on Flink")
    if c.agreement == "undecided":
        lo, hi = c.factor_interval or (c.fold, c.fold)  # undecided only with repetitions
        return s.t(": ").b("undecided").t(
            f": over their repetitions statebench's ratio is {fmt_ratio(lo)} to "
            f"{fmt_ratio(hi)} of Flink's (95% interval), across an edge of the "
            f"{DISAGREE:g}{TIMES}-either-way band (medians {fmt_ratio(c.fold)} apart).")
    if not c.disagrees:
        return s.t(": they agree.")
    s.t(": they ").b(f"disagree by {fmt_ratio(c.fold)}").t(".")
    if c.metric == STORED_ENTRIES and c.strategy != TTL_ROW:
        _expired(run, c, s)
    if c.metric == "records_per_s" and c.strategy != TTL_ROW:
        _causes(run, c, s)
    return s


def _tasks(run: Run) -> int:
    config = run.meta.get("config")
    n = config.get("parallelism") if isinstance(config, dict) else None
    return n if isinstance(n, int) and n > 0 else 1


def cause_shares(run: Run, key: ScenarioKey) -> dict[str, float]:
    """Each measured cause of :data:`CAUSES` the scenario has, as a share of its task's busy
    time (records over records/s, both job totals: the per-task time when tasks are alike).
    Job totals of the CPU seconds are the tasks' sum, so they count against every task's time;
    the other two are the tasks' maximum."""
    records, rate = stat(run, key, "records"), stat(run, key, "records_per_s")
    busy_s = (records.center / rate.center
              if records is not None and rate is not None and rate.center > 0 else None)
    out: dict[str, float] = {}
    for metric, _what, unit in CAUSES:
        found = stat(run, key, metric)
        if found is None or not math.isfinite(found.center):
            continue
        if unit == "share":
            out[metric] = found.center
        elif busy_s:
            per_task = found.center / 1e3 if unit == "ms" else found.center / _tasks(run)
            out[metric] = per_task / busy_s
    return out


def _causes(run: Run, c: Comparison, s: Sentence) -> None:
    """Per side, the measured causes of none's time against the strategy's, and the one that
    differs most (in points of task time), so a gap is put down to what was measured."""
    for side, backend in (("statebench", c.ours), ("Flink", c.flink)):
        mine = cause_shares(run, ScenarioKey(c.workload, backend, c.strategy))
        base = cause_shares(run, ScenarioKey(c.workload, backend, BASELINE))
        both = [(m, what) for m, what, _ in CAUSES if m in mine and m in base]
        if not both:
            continue
        parts = [f"{what} {base[m]:.1%} vs {mine[m]:.1%}" for m, what in both]
        metric, what = max(both, key=lambda mw: abs(base[mw[0]] - mine[mw[0]]))
        delta = (base[metric] - mine[metric]) * 100
        s.t(f" Measured on {side} ({BASELINE} vs {c.strategy}, share of task time): "
            f"{', '.join(parts)}; the largest difference is ").b(what).t(
            f" ({delta:+.1f} points).")


def _expired(run: Run, c: Comparison, s: Sentence) -> None:
    """The expired entries each side left behind, which is where cleanup strategies differ;
    the cause only where it is known (Flink's incremental cleanup on heap)."""
    ours = stat(run, ScenarioKey(c.workload, c.ours, c.strategy), "expired_present_entries")
    flink = stat(run, ScenarioKey(c.workload, c.flink, c.strategy), "expired_present_entries")
    if ours is None or flink is None or ours.center == flink.center:
        return
    phrase = compare_phrase(ours.center, flink.center, "expired entries", "more", "fewer")
    s.t(f" On statebench it leaves {phrase}{connector(ours.center, flink.center)}Flink "
        f"({fmt_value(ours.center, 'entries')} vs {fmt_value(flink.center, 'entries')}, peak)")
    if (strategy_of_label(c.strategy) is strategies.INCREMENTAL and _walks_entries(c.ours)
            and ours.center < flink.center):
        s.t(f": {INCREMENTAL_HEAP_REASON}.")
    else:
        s.t(".")


def fidelity_findings(run: Run, workload: str) -> list[Sentence]:
    """Plain-words findings of one workload: every disagreement, and notable agreements."""
    found = (_sentence(run, c) for c in comparisons(run, workload))
    return [s for s in found if s is not None]


def _cell(cost: Cost | None, unit: str, na: bool) -> str:
    if cost is None:
        text = "n/a" if na else MISSING
        return f'<td class="{"na" if na else "num missing"}">{text}</td>'
    detail = f"{fmt_value(cost.value, unit)} vs {fmt_value(cost.base, unit)}"
    title = escape(f"exact ratio {cost.ratio:.6g}" if cost.ratio is not None else "base is 0")
    return (f'<td class="num" title="{title}" data-ratio="{cost.ratio!r}">'
            f'<span class="v">{escape(fmt_ratio(cost.ratio))}</span>'
            f'<span class="spread">{escape(detail)}</span></td>')


def _verdict(c: Comparison) -> str:
    if c.fold is None:
        return f'<td class="grey">{MISSING}</td>'
    if c.disagrees:
        return (f'<td class="different" data-verdict="disagree">disagree, '
                f"{escape(fmt_ratio(c.fold))} apart</td>")
    if c.agreement == "undecided":
        lo, hi = c.factor_interval or (c.fold, c.fold)
        title = escape(f"95% interval of the factor {lo:.3g}-{hi:.3g}: across the band's edge")
        return (f'<td data-verdict="undecided" title="{title}">undecided '
                f"({escape(fmt_ratio(c.fold))}; interval {escape(fmt_ratio(lo))}-"
                f"{escape(fmt_ratio(hi))})</td>")
    return f'<td data-verdict="agree">agree ({escape(fmt_ratio(c.fold))})</td>'


def _na(run: Run, workload: str, backend: str, strategy: str) -> bool:
    return strategy != TTL_ROW and ScenarioKey(workload, backend, strategy) in run.not_applicable


def fidelity_table(run: Run, workload: str, rows: list[Comparison]) -> str:
    """Strategy x measure rows; per pair: statebench's ratio, Flink's ratio, the verdict."""
    pairs = list(dict.fromkeys((c.ours, c.flink) for c in rows))
    head = '<th scope="col">strategy</th><th scope="col">cost measure</th>' + "".join(
        f'<th scope="col">statebench {escape(o)}<span class="unit">ratio (value vs base)</span>'
        f'</th><th scope="col" class="reference">{escape(backend_label(f))}<span class="unit">'
        f'ratio (value vs base)</span></th><th scope="col">agreement<span class="unit">'
        f"within {DISAGREE:g}{TIMES}</span></th>"
        for o, f in pairs
    )
    body = []
    by_row: dict[tuple[str, str], dict[tuple[str, str], Comparison]] = {}
    for c in rows:
        by_row.setdefault((c.strategy, c.metric), {})[(c.ours, c.flink)] = c
    for (strategy, metric), cells in by_row.items():
        first = next(iter(cells.values()))
        what = f"{first.noun} / {'no TTL' if strategy == TTL_ROW else BASELINE}"
        tds = []
        for pair in pairs:
            c = cells.get(pair)
            if c is None:
                tds.append(f'<td class="missing" colspan="3">{MISSING}</td>')
                continue
            tds.append(_cell(c.mine, c.unit, _na(run, workload, c.ours, strategy)))
            tds.append(_cell(c.theirs, c.unit, _na(run, workload, c.flink, strategy)))
            tds.append(_verdict(c))
        body.append(f'<tr data-strategy="{escape(strategy)}" data-metric="{escape(metric)}">'
                    f'<th scope="row">{escape(strategy)}</th><td>{escape(what)}</td>'
                    + "".join(tds) + "</tr>")
    return (f'<div class="scroll"><table class="stats fidelity" data-workload="{escape(workload)}"'
            f' data-group="fidelity"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def fidelity_chart(run: Run, workload: str, rows: list[Comparison]) -> Chart | None:
    """Grouped bars: backends on x (each Flink lane beside its statebench backend), one bar per
    strategy (its report-wide colour), a panel per measure; the dashed line at 1 is no cost."""
    measures = [m for m in MEASURES if any(c.metric == m[0] and (c.mine or c.theirs)
                                           for c in rows)]
    if not measures:
        return None
    backends = [b for pair in dict.fromkeys((c.ours, c.flink) for c in rows) for b in pair]
    fig = make_subplots(rows=1, cols=len(measures), horizontal_spacing=0.08,
                        subplot_titles=[f"{noun} relative to none" for _, noun, _ in measures])
    colour = colours(run)
    labels = [s for s in dict.fromkeys(c.strategy for c in rows)]
    shown: set[str] = set()
    for col, (metric, noun, _unit) in enumerate(measures, start=1):
        for label in labels:
            ys: list[float | None] = []
            hover = []
            for b in backends:
                c = next((c for c in rows if c.strategy == label and c.metric == metric
                          and b in (c.ours, c.flink)), None)
                cost = None if c is None else (c.theirs if is_reference(b) else c.mine)
                ys.append(None if cost is None else cost.ratio)
                hover.append(f"{label} · {backend_label(b)}<br>{noun}: "
                             + (MISSING if cost is None else
                                f"{fmt_ratio(cost.ratio)} ({fmt_value(cost.value, c.unit)} vs "
                                f"{fmt_value(cost.base, c.unit)})"))
            if all(y is None for y in ys):
                continue
            ttl = label == TTL_ROW
            fig.add_trace(
                go.Bar(
                    x=[backend_label(b) for b in backends],
                    y=ys,
                    name=label,
                    legendgroup=label,
                    showlegend=label not in shown,
                    marker={"color": "#999999" if ttl else colour.get(label, "#333333"),
                            "pattern": {"shape": "/" if ttl else ""}},
                    meta={"kind": "ttl"} if ttl else None,
                    hovertext=hover,
                    hoverinfo="text",
                ),
                row=1,
                col=col,
            )
            shown.add(label)
        fig.add_hline(y=1.0, line={"color": "#555", "dash": "dash", "width": 1}, row=1, col=col)
        fig.update_yaxes(tickformat=".3~g", ticksuffix=TIMES, rangemode="tozero",
                         title_text=f"factor of {BASELINE}'s {noun}", automargin=True,
                         row=1, col=col)
        fig.update_xaxes(title_text="backend", automargin=True, row=1, col=col)
    if not fig.data:
        return None
    fig.update_layout(barmode="group", bargap=0.2, height=420, template="plotly_white",
                      margin={"l": 60, "r": 20, "t": 60, "b": 60}, showlegend=True,
                      legend={"title": {"text": "strategy"}})
    strategies = [s for s in labels if s != TTL_ROW and s in shown]
    return Chart(
        f"fig-fidelity-{slug(workload)}",
        f"Fidelity: statebench vs Flink — {workload}",
        f"Each strategy's cost relative to {BASELINE} on the same backend (throughput: median "
        "over repetitions; stored entries: peak over logical time), statebench's backends "
        "beside Flink's (reference lanes). Bars at the dashed line cost nothing; where a bar "
        f"is missing the strategy does not apply to that backend."
        + (f" Hatched grey: {TTL_ROW}, the workload's {BASELINE} against the same workload "
           "run without a TTL." if TTL_ROW in shown else ""),
        fig,
        strategies,
    )


def has_forst_pair(run: Run) -> bool:
    """True when the run ran ForSt's lane beside Flink's RocksDB lane."""
    return all(b in run.backends for b in FORST_PAIR)


def _center(run: Run, key: ScenarioKey, metric: str) -> float | None:
    if key in run.not_applicable:
        return None
    found = stat(run, key, metric)
    return found.center if found is not None and math.isfinite(found.center) else None


def forst_rows(run: Run, workload: str) -> list[ForStRow]:
    """Per strategy run on both ForSt and RocksDB (``none`` first), one row per measure."""
    rocks, forst = FORST_PAIR
    strategies = [s for s in run.strategies
                  if all(ScenarioKey(workload, b, s) in run.samples for b in FORST_PAIR)]
    strategies.sort(key=lambda s: s != BASELINE)
    rows = []
    for strategy in strategies:
        for metric, noun, unit in FORST_MEASURES:
            rel = [None if strategy == BASELINE else
                   _cost(run, ScenarioKey(workload, b, strategy),
                         ScenarioKey(workload, b, BASELINE), metric) for b in FORST_PAIR]
            rows.append(ForStRow(workload, strategy, metric, noun, unit,
                                 _center(run, ScenarioKey(workload, rocks, strategy), metric),
                                 _center(run, ScenarioKey(workload, forst, strategy), metric),
                                 *rel))
    return rows


def forst_findings(rows: list[ForStRow]) -> list[Sentence]:
    """One sentence per strategy: ForSt's numbers as multiples of RocksDB's."""
    out = []
    for strategy in dict.fromkeys(r.strategy for r in rows):
        parts = [(r.noun, r.forst_over_rocksdb) for r in rows
                 if r.strategy == strategy and r.forst_over_rocksdb is not None]
        if not parts:
            continue
        s = Sentence(severity="info")
        s.t("With ").b(strategy).t(", ForSt has " + ", ".join(
            f"{fmt_ratio(ratio)} of RocksDB's {noun}" for noun, ratio in parts) + ".")
        out.append(s)
    return out


def _forst_cost(cost: Cost | None, unit: str) -> str:
    if cost is None:
        return f'<td class="grey">{MISSING}</td>'
    return _cell(cost, unit, False)


def forst_table(rows: list[ForStRow]) -> str:
    """Strategy x measure: RocksDB's number, ForSt's, ForSt / RocksDB, then each one's
    strategy / none."""
    rocks, forst = FORST_PAIR
    head = ('<th scope="col">strategy</th><th scope="col">measure</th>'
            f'<th scope="col" class="reference">{escape(backend_label(rocks))}</th>'
            f'<th scope="col" class="reference">{escape(backend_label(forst))}</th>'
            '<th scope="col">ForSt / RocksDB</th>'
            f'<th scope="col">RocksDB<span class="unit">strategy / {BASELINE}</span></th>'
            f'<th scope="col">ForSt<span class="unit">strategy / {BASELINE}</span></th>')
    body = []
    for r in rows:
        values = "".join(
            f'<td class="num">{escape(fmt_value(v, r.unit))}</td>' if v is not None
            else f'<td class="num missing">{MISSING}</td>' for v in (r.rocksdb, r.forst))
        ratio = r.forst_over_rocksdb
        over = (f'<td class="num" data-ratio="{ratio!r}">{escape(fmt_ratio(ratio))}</td>'
                if ratio is not None else f'<td class="grey">{MISSING}</td>')
        body.append(f'<tr data-strategy="{escape(r.strategy)}" data-metric="{escape(r.metric)}">'
                    f'<th scope="row">{escape(r.strategy)}</th><td>{escape(r.noun)}</td>'
                    f"{values}{over}{_forst_cost(r.rocksdb_rel, r.unit)}"
                    f"{_forst_cost(r.forst_rel, r.unit)}</tr>")
    return (f'<div class="scroll"><table class="stats fidelity forst" data-group="forst">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def forst_html(run: Run) -> str | None:
    """The ForSt-beside-RocksDB part of the section, or None without both lanes."""
    if not has_forst_pair(run):
        return None
    parts = [
        "<h3>ForSt beside RocksDB</h3><p>Flink 2.x's disaggregated backend (ForSt, its "
        "synchronous keyed backend with the DB's files on a separate primary folder) against "
        "its embedded RocksDB backend, on the same strategies: ForSt's numbers over RocksDB's, "
        f"and each strategy's cost relative to <code>{BASELINE}</code> on each.</p>"
    ]
    for workload in run.workloads:
        rows = forst_rows(run, workload)
        if not rows:
            continue
        items = "".join(f'<li class="{s.severity}">{s.html}</li>' for s in forst_findings(rows))
        parts.append(f'<h4>{escape(workload)}</h4><ul class="findings forst" '
                     f'data-workload="{escape(workload)}">{items}</ul>' + forst_table(rows))
    return "\n".join(parts)


def fidelity_workloads(run: Run) -> list[str]:
    """Workloads with something to compare (a no-TTL partner alone has no strategy rows)."""
    return [w for w in run.workloads if any(c.mine or c.theirs for c in comparisons(run, w))]


def fidelity_charts(run: Run) -> list[Chart]:
    """The fidelity plot of every workload that has one (for page assembly and tests)."""
    made = (fidelity_chart(run, w, comparisons(run, w)) for w in fidelity_workloads(run))
    return [c for c in made if c is not None]


def fidelity_html(run: Run) -> str | None:
    """The "Fidelity: statebench vs Flink" section body, or None when the run has no Flink
    lane beside a statebench backend and not ForSt beside RocksDB (the section is then left
    out)."""
    forst = forst_html(run)
    if not has_reference_lanes(run):
        return forst
    parts = [
        f"<p>Each strategy's cost relative to <code>{BASELINE}</code> on the same backend, "
        "statebench's heap against Flink's heap and statebench's RocksDB against Flink's "
        f"RocksDB. Relative costs more than {DISAGREE:g}{TIMES} apart disagree; with "
        "repetitions on both sides only where a 95% interval of the two costs' factor (each "
        "side's repetitions resampled) lies wholly outside the band, and they agree only where "
        "it lies wholly inside; otherwise the row is undecided.</p>"
    ]
    for workload in fidelity_workloads(run):
        rows = comparisons(run, workload)
        sentences = fidelity_findings(run, workload)
        items = "".join(f'<li class="{s.severity}">{s.html}</li>' for s in sentences) or (
            f"<li>statebench and Flink agree within {DISAGREE:g}{TIMES} on every strategy, "
            "and no strategy costs much on either.</li>")
        chart = fidelity_chart(run, workload, rows)
        parts.append(
            f'<h3>{escape(workload)}</h3><ul class="findings fidelity" '
            f'data-workload="{escape(workload)}">{items}</ul>'
            + fidelity_table(run, workload, rows)
            + (chart_html(chart) if chart is not None else "")
        )
    if forst is not None:
        parts.append(forst)
    return "\n".join(parts)
