"""Plotly figures for one run.

Conventions every figure follows, because the browser test and readers rely on them:
one colour per strategy across the whole page; every trace's ``name`` is the strategy (traces of
the same strategy share a ``legendgroup`` so the legend toggles them together); backends are
facets (subplot columns) or categories, never colours. Two kinds of trace are not a strategy and
say so in ``meta``: compaction markers on the state plot (name "compaction ran", one legend
entry toggling them all, ``meta.kind == "compactions"``), and the knob-sweep chart's lines, whose
x axis is the knob and whose lines are backends (told apart by symbol and dash, not colour).

Every chart has a legend (even of one entry) and says the unit of every axis that shows ticks
(its title; a browser test reads them), and no chart puts two engines' lanes on one axis of the
same quantity: a Python lane and a JVM lane differ for reasons that are not the TTL strategy, so
the throughput-vs-state and throughput charts give each engine a panel of its own, as the
decision table gives each its own rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from backends.strategies import BASELINE
from workloads.report.engines import OWN, engine_of, engine_order, possessive
from workloads.report.fmt import DASH, fmt_value
from workloads.report.load import Run, ScenarioKey, backend_label
from workloads.report.metrics import (
    LOCKSTEP,
    STORED_ENTRIES,
    rocksdb_metric,
    run_lockstep_latency,
    spec_for,
)
from workloads.report.runinfo import is_paced, sweep
from workloads.report.stats import Stat, compaction_marks, pareto_points, stat
from workloads.report.tables import lockstep_backends
from workloads.report.ttl_curve import ttl_curve_points
from workloads.results.summaries import Samples

#: Okabe-Ito, colour-blind safe; "none" (the baseline) gets neutral grey.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442")
BASELINE_COLOUR = "#555555"
BACKEND_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross")
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"

STATE_ROWS = ("live_entries", "expired_present_entries", "logical_bytes", "physical_bytes")
PERF_COLS = ("records_per_s", "latency_p50_us", "latency_p99_us", "latency_p999_us")
CHECKPOINT_LINES = (
    ("checkpoint_bytes", "full", "solid"),
    ("checkpoint_uploaded_bytes", "uploaded", "dot"),
)
#: Checkpoint phases stacked per checkpoint: (metric, label, bar pattern).
CHECKPOINT_PHASES = (
    ("checkpoint_sync_ms", "sync", ""),
    ("checkpoint_async_ms", "async", "/"),
    ("checkpoint_upload_ms", "upload", "."),
)
#: State panels that carry compaction markers: where a compaction's effect shows.
MARKED_ROWS = ("expired_present_entries", "physical_bytes")
COMPACTION_MARKER = {"symbol": "diamond-open", "size": 9, "color": "#111", "line": {"width": 1.5}}
COMPACTION_NAME = "compaction ran"
#: RocksDB activity panels: (title, ((metric, line label, dash), ...), unit).
ROCKSDB_PANELS: tuple[tuple[str, tuple[tuple[str, str, str], ...], str], ...] = (
    ("compactions (solid), flushes (dotted)",
     (("rocksdb_compactions", "compactions", "solid"), ("rocksdb_flushes", "flushes", "dot")),
     "count"),
    ("bytes compacted: written (solid), read (dotted)",
     (("rocksdb_compaction_write_bytes", "compaction written", "solid"),
      ("rocksdb_compaction_read_bytes", "compaction read", "dot")),
     "bytes"),
    ("write amplification", (("rocksdb_write_amp", "write amplification", "solid"),), "x"),
    ("SST files", (("rocksdb_sst_files", "SST files", "solid"),), "count"),
    ("bytes: SST files (solid), memtables (dotted)",
     (("rocksdb_sst_bytes", "SST", "solid"), ("rocksdb_memtable_bytes", "memtable", "dot")),
     "bytes"),
)
#: Knob-sweep panels: (metric, title).
SWEEP_PANELS = (
    ("records_per_s", "throughput (records/s)"),
    (STORED_ENTRIES, "peak stored entries"),
    ("latency_p99_us", "p99 latency"),
    ("checkpoint_bytes", "checkpoint bytes (median)"),
)
SWEEP_LINES = (("solid", "circle"), ("dash", "square"), ("dot", "diamond"), ("dashdot", "x"))
SWEEP_COLOUR = "#333333"
#: State-vs-TTL panels: (TtlCurvePoint field on y, title).
TTL_CURVE_PANELS = (
    ("peak_live_entries", "peak live entries"),
    ("peak_checkpoint_bytes", "peak checkpoint bytes"),
)
#: An axis title per unit: what the numbers on a y axis count.
AXIS_UNITS = {"bytes": "bytes", "entries": "entries", "count": "count", "rows": "rows",
              "records/s": "records/s", "ops/s": "ops/s", "us": "µs", "ms": "ms",
              "x": "factor", "share": "share"}


@dataclass
class Chart:
    """A figure plus what the page needs around it (stable id, caption, strategies shown)."""

    fig_id: str
    title: str
    caption: str
    figure: go.Figure
    strategies: list[str] = field(default_factory=list)
    #: The workload it draws ("" for a chart of several), set by :func:`charts`.
    workload: str = ""



class Facets:
    """One figure of facets (subplot cells) whose traces are strategies, with what every such
    chart repeats: each strategy's colour, one legend entry per strategy (its traces share a
    legendgroup, so the entry toggles them all), the strategies drawn (in page order, the
    chart's data-strategies), unit-aware y axes and the page's layout. The state, RocksDB,
    performance and checkpoint charts are a grid of cells plus one `add` per trace."""

    def __init__(self, run: Run, titles: Sequence[str], rows: int = 1, cols: int | None = None,
                 **subplots: Any) -> None:
        self.run, self.rows = run, rows
        self.fig = make_subplots(rows=rows, cols=len(titles) if cols is None else cols,
                                 subplot_titles=list(titles), **subplots)
        _lift_titles(self.fig)
        self.colour = colours(run)
        self.strategies: list[str] = []

    def unit(self, metric: str) -> str:
        return self.run.units.get(metric, spec_for(metric).unit)

    def y_format(self, unit: str, row: int, col: int) -> None:
        _y_format(self.fig, unit, row, col)

    def add(self, kind: Callable[..., Any], row: int, col: int, strategy: str,
            **props: Any) -> None:
        """Add one strategy's trace (`kind`: go.Scatter, go.Bar) to a cell: named and grouped by
        the strategy, in the legend once."""
        self.fig.add_trace(kind(name=strategy, legendgroup=strategy,
                                showlegend=strategy not in self.strategies, **props),
                           row=row, col=col)
        if strategy not in self.strategies:
            self.strategies.append(strategy)

    def series(self, row: int, col: int, key: ScenarioKey, samples: Samples, divisor: float,
               hover: str, **line: Any) -> None:
        """A strategy's line over logical time (x in `divisor` ms)."""
        self.add(go.Scatter, row, col, key.strategy, x=samples.times_ms / divisor,
                 y=samples.values, mode="lines",
                 line={"color": self.colour[key.strategy], "width": 2, **line},
                 hovertemplate=f"{hover}<extra>{key.strategy} · {key.backend}</extra>")

    def chart(self, fig_id: str, title: str, caption: str, height: int) -> Chart | None:
        """The finished chart, or None when no strategy drew anything."""
        if not self.strategies:
            return None
        _layout(self.fig, height)
        return Chart(fig_id, title, caption, self.fig, _ordered(self.run, self.strategies))


def _min_max_bars(stats: Sequence[Any], thickness: float, **extra: Any) -> dict[str, Any]:
    """Asymmetric error bars from each median to its min and max (none for a missing stat)."""
    return {
        "type": "data",
        "symmetric": False,
        "array": [0.0 if s is None else s.hi - s.center for s in stats],
        "arrayminus": [0.0 if s is None else s.center - s.lo for s in stats],
        "thickness": thickness,
        "width": 3,
        **extra,
    }


def _cell_samples(run: Run, keys: list[ScenarioKey],
                  cells: Iterable[tuple[int, int, str, Sequence[tuple[str, str, str]]]],
                  series_only: bool = False,
                  ) -> Iterator[tuple[int, int, ScenarioKey, tuple[str, str, str], Samples]]:
    """(row, col, scenario, line, samples) for every cell (row, col, backend, lines), each of
    the backend's scenarios and each line (metric first) it has samples of (with
    `series_only`, samples over logical time)."""
    for row, col, backend, lines in cells:
        for key in keys:
            if key.backend != backend:
                continue
            for line in lines:
                samples = run.get(key, line[0])
                if samples is not None and not (series_only and samples.kind != "series"):
                    yield row, col, key, line, samples


def slug(text: str) -> str:
    """A stable, id-safe form of a workload name ("ycsb-a" stays "ycsb-a")."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def colours(run: Run) -> dict[str, str]:
    """Strategy -> colour, stable for a given set of strategies.

    A knob sweep's labels get an ordered single-hue ramp (light to dark purple along the knob, a
    hue the Okabe-Ito palette does not use), so the other strategies keep their distinct colours
    and the sweep reads as one family."""
    result: dict[str, str] = {}
    swept = sweep(run)
    labels = [s for s in (swept.labels if swept else ()) if s in run.strategies]
    if labels:
        ramp = sample_colorscale("Purples", [0.45 + 0.55 * i / max(1, len(labels) - 1)
                                             for i in range(len(labels))])
        result.update(zip(labels, ramp))
    others = [s for s in run.strategies if s != BASELINE and s not in result]
    for i, strategy in enumerate(others):
        result[strategy] = PALETTE[i % len(PALETTE)]
    if BASELINE in run.strategies:
        result[BASELINE] = BASELINE_COLOUR
    return result


def _time_axis(run: Run) -> tuple[float, str]:
    """Divisor and label so logical time reads in s, min or h depending on the run's span."""
    longest = 0
    for metrics in run.samples.values():
        for samples in metrics.values():
            if samples.kind == "series" and samples.times_ms.size:
                longest = max(longest, int(samples.times_ms.max()))
    if longest >= 3 * 3_600_000:
        return 3_600_000.0, "logical time (h)"
    if longest >= 180_000:
        return 60_000.0, "logical time (min)"
    return 1_000.0, "logical time (s)"


#: Pixels between a panel's title and its top y tick label, which plotly lets touch.
TITLE_LIFT = 8
#: Length of the x axes' outside ticks: the lowest y tick label ("0") and the first x tick
#: label meet at a panel's corner unless the x labels sit this far below the axis.
X_TICK_LENGTH = 8


def _lift_titles(fig: go.Figure) -> None:
    """Raise the subplot titles (annotations, at this point) clear of their top tick labels."""
    fig.update_annotations(yshift=TITLE_LIFT)


def _layout(fig: go.Figure, height: int) -> None:
    """The page's look, and a legend on every chart (plotly hides one of a single trace)."""
    fig.update_layout(
        height=height,
        margin={"l": 70, "r": 20, "t": 60, "b": 50},
        font={"family": FONT, "size": 12},
        showlegend=True,
        legend={"title": {"text": "strategy"}, "itemsizing": "constant", "tracegroupgap": 2},
        template="plotly_white",
        hovermode="closest",
    )
    fig.update_xaxes(automargin=True, ticks="outside", ticklen=X_TICK_LENGTH, tickcolor="#bbb")
    fig.update_yaxes(automargin=True)


def axis_title(unit: str) -> str:
    """A y axis's title: the unit its numbers are in ("bytes", "records/s")."""
    return AXIS_UNITS.get(unit, unit or "value")


def _y_format(fig: go.Figure, unit: str, row: int, col: int) -> None:
    suffix = {"bytes": "B", "us": " µs", "ms": " ms", "x": "\u00d7"}.get(unit, "")
    # a factor reads as 1.5x, not as SI's "1.5" with milli ticks below 1
    tickformat = ".3~g" if unit == "x" else "~s"
    fig.update_yaxes(tickformat=tickformat, ticksuffix=suffix, rangemode="tozero",
                     title_text=axis_title(unit), title_standoff=4, row=row, col=col)


def _na_note(run: Run, workload: str) -> str:
    """One short sentence: how many scenarios are not drawn because they do not apply (each
    reason is in the report's Not applicable section, not repeated under every chart)."""
    n = sum(1 for k in run.scenarios(workload) if k in run.not_applicable)
    if not n:
        return ""
    return (f" {n} not-applicable scenario{'s are' if n > 1 else ' is'} not drawn (reasons: "
            "Not applicable).")


def _backends(run: Run, workload: str) -> list[str]:
    present = {k.backend for k in run.scenarios(workload)}
    return [b for b in run.backends if b in present]


def _measured(run: Run, workload: str, metrics: Sequence[str]) -> tuple[list[str], list, list[str]]:
    """(backends, scenarios that ran, the metrics among `metrics` any of them measured)."""
    keys = [k for k in run.scenarios(workload) if k not in run.not_applicable]
    present = [m for m in metrics if any(run.get(k, m) is not None for k in keys)]
    return _backends(run, workload), keys, present


def tick_label(backend: str) -> str:
    """A backend as a category tick: its label on two lines ("flink-heap", "Flink
    (reference)"), narrow enough for plotly to leave unrotated beside its neighbours."""
    return backend_label(backend).replace(" · ", "<br>")


def facet_title(backend: str, what: str) -> str:
    """A facet's title on two lines (backend, then what it shows): four backends side by side
    leave too little width for one line, and plotly lets neighbouring titles overlap."""
    return f"{backend_label(backend)}<br>{what}"


def state_chart(run: Run, workload: str) -> Chart | None:
    """State size over logical time: metric rows x backend columns, one line per strategy."""
    backends, keys, rows = _measured(run, workload, STATE_ROWS)
    if not rows or not backends:
        return None
    divisor, xlabel = _time_axis(run)
    facets = Facets(run, [facet_title(b, spec_for(m).label) for m in rows for b in backends],
                    rows=len(rows), cols=len(backends), shared_xaxes=True,
                    vertical_spacing=0.08, horizontal_spacing=0.08)
    cells = [(r, c, b, ((m, "", ""),)) for r, m in enumerate(rows, start=1)
             for c, b in enumerate(backends, start=1)]
    for r, c, _, ((metric, _, _),) in cells:
        facets.y_format(facets.unit(metric), r, c)
    marked = [m for m in MARKED_ROWS if m in rows] or rows[:1]
    legend_shown = False
    for r, c, key, (metric, _, _), samples in _cell_samples(run, keys, cells, series_only=True):
        facets.series(r, c, key, samples, divisor,
                      f"%{{y:.3s}} {facets.unit(metric)} at %{{x:.4g}}")
        if metric in marked:
            legend_shown = _compaction_markers(
                facets.fig, run, key, samples, divisor, (r, c), legend_shown)
    facets.fig.update_xaxes(title_text=xlabel, row=len(rows))
    note = (
        " Open diamonds (legend: compaction ran) mark the samples by which RocksDB had run a "
        "compaction since the previous sample, on each strategy's "
        + " and ".join(spec_for(m).label for m in marked) + " lines."
        if legend_shown else ""
    )
    return facets.chart(
        f"fig-state-{slug(workload)}",
        f"State size over logical time — {workload}",
        "Entries held (live, and expired but not yet removed) and bytes (logical payload and "
        "physical footprint), summed over tasks, one line per strategy, one column per backend."
        + note + _clock_note(run, workload) + _na_note(run, workload),
        190 * len(rows) + 140,
    )


def _chart_stat(run: Run, key: ScenarioKey, metric: str) -> Stat | None:
    """A scenario's number for a chart; None for a lockstep job's latency
    (``metrics.lockstep_latency``): a bar beside other lanes' would rank how far a job fell
    behind against the engines' latency."""
    if run_lockstep_latency([run.meta], key.workload, key.backend, metric):
        return None
    return stat(run, key, metric)


def _lockstep_note(run: Run, workload: str, metrics: Sequence[str]) -> str:
    """The caption's clause naming the lanes whose latency a chart left out ("" for none)."""
    found = lockstep_backends(run, run.scenarios(workload), list(metrics))
    if not found:
        return ""
    return (f" Latency of {', '.join(found)} left out ({LOCKSTEP}, under event time; the "
            "summary tables show it, marked).")


def _clock_note(run: Run, workload: str) -> str:
    """A paced workload's charts say so in a clause (the full note is on the first page)."""
    if not is_paced(run, workload):
        return ""
    return (" Wall-clock driven (a paced clock): these numbers vary from run to run; lines over "
            "time show repetition 0.")


def _compaction_markers(
    fig: go.Figure, run: Run, key: ScenarioKey, samples: Samples, divisor: float,
    cell: tuple[int, int], legend_shown: bool,
) -> bool:
    """Mark, on one strategy's line, the samples at which RocksDB had compacted since the
    previous sample; returns whether the legend entry has been shown."""
    marks = compaction_marks(run, key)
    if marks is None or not marks.times_ms:
        return legend_shown
    at = np.isin(samples.times_ms, np.array(marks.times_ms, dtype=np.int64))
    if not at.any():
        return legend_shown
    counts = dict(zip(marks.times_ms, marks.counts))
    fig.add_trace(
        go.Scatter(
            x=samples.times_ms[at] / divisor,
            y=samples.values[at],
            mode="markers",
            name=COMPACTION_NAME,
            legendgroup="compactions",
            showlegend=not legend_shown,
            marker=COMPACTION_MARKER,
            customdata=[counts[int(t)] for t in samples.times_ms[at]],
            meta={"kind": "compactions", "strategy": key.strategy, "backend": key.backend},
            hovertemplate="%{customdata} compaction(s) since the previous sample, at %{x:.4g}"
            f"<extra>{key.strategy} · {key.backend}</extra>",
        ),
        row=cell[0],
        col=cell[1],
    )
    return True


def _ordered(run: Run, names: list[str]) -> list[str]:
    return [s for s in run.strategies if s in names]


def _bar_hover(metric: str, unit: str, key: ScenarioKey, s: Stat | None) -> str:
    if s is None:
        return "—"
    return (
        f"{key.strategy} · {key.backend}<br>median {fmt_value(s.center, unit)}<br>"
        f"min{DASH}max {fmt_value(s.lo, unit)}{DASH}{fmt_value(s.hi, unit)} (n={s.n})"
    )


def engine_panel_title(engine: str, engines: Sequence[str]) -> str:
    """A panel's heading for one engine's lanes: "statebench's lanes", "Flink's lanes
    (context)" beside statebench's."""
    context = " (context)" if engine != OWN and OWN in engines else ""
    return f"{possessive(engine)} lanes{context}"


def perf_chart(run: Run, workload: str) -> Chart | None:
    """Throughput and latency percentiles: grouped bars (backend groups, strategy bars), one
    row of panels per engine, so no axis sets a Python lane's number beside a JVM lane's."""
    backends, keys, cols = _measured(run, workload, PERF_COLS)
    if not cols or not backends:
        return None
    engines = engine_order(backends)
    titles = ["throughput" if m == "records_per_s" else f"{spec_for(m).label} latency"
              for m in cols]
    facets = Facets(run, [f"{engine_panel_title(e, engines)}<br>{title}" for e in engines
                          for title in titles],
                    rows=len(engines), cols=len(cols), horizontal_spacing=0.08,
                    vertical_spacing=0.4 / len(engines))
    for r, engine in enumerate(engines, start=1):
        mine = [b for b in backends if engine_of(b) == engine]
        for c, metric in enumerate(cols, start=1):
            unit = facets.unit(metric)
            facets.y_format(unit, r, c)
            for strategy in run.strategies:
                scenarios = [ScenarioKey(workload, b, strategy) for b in mine]
                found = [_chart_stat(run, k, metric) if k in keys else None
                         for k in scenarios]
                if all(s is None for s in found):
                    continue
                facets.add(
                    go.Bar, r, c, strategy,
                    x=[tick_label(b) for b in mine],
                    y=[None if s is None else s.center for s in found],
                    marker_color=facets.colour[strategy],
                    error_y=_min_max_bars(found, 1.2),
                    hovertext=[_bar_hover(metric, unit, k, s)
                               for k, s in zip(scenarios, found)],
                    hoverinfo="text",
                )
    facets.fig.update_layout(barmode="group", bargap=0.25)
    facets.fig.update_xaxes(title_text="backend", tickfont={"size": 10})
    return facets.chart(
        f"fig-perf-{slug(workload)}",
        f"Throughput and latency — {workload}",
        f"Median over repetitions (warm-up excluded); error bars span min{DASH}max. One row "
        "per engine: engines are not ranked against each other."
        + _lockstep_note(run, workload, cols) + _clock_note(run, workload)
        + _na_note(run, workload),
        400 * len(engines) + 80,
    )


def checkpoint_chart(run: Run, workload: str) -> Chart | None:
    """Checkpoint size per checkpoint id: full (solid) and uploaded (dotted), backend columns."""
    backends, keys, measured = _measured(run, workload, [m for m, _, _ in CHECKPOINT_LINES])
    if not measured:
        return None
    facets = Facets(run, [backend_label(b) for b in backends], horizontal_spacing=0.08)
    cells = [(1, c, b, CHECKPOINT_LINES) for c, b in enumerate(backends, start=1)]
    for _, c, _, _ in cells:
        facets.y_format("bytes", 1, c)
    for _, c, key, (_, label, dash), samples in _cell_samples(run, keys, cells):
        facets.add(
            go.Scatter, 1, c, key.strategy,
            x=samples.steps,
            y=samples.values,
            mode="lines+markers",
            line={"color": facets.colour[key.strategy], "dash": dash, "width": 2},
            marker={"size": 6},
            hovertemplate=f"checkpoint %{{x}}: %{{y:.3s}}B {label}"
            f"<extra>{key.strategy} · {key.backend}</extra>",
        )
    facets.fig.update_xaxes(title_text="checkpoint id", dtick=1)
    return facets.chart(
        f"fig-checkpoint-{slug(workload)}",
        f"Checkpoint size — {workload}",
        "Solid: full checkpoint size; dotted: bytes uploaded for that checkpoint (equal to the "
        "full size in full mode, smaller when checkpoints are incremental). Summed over tasks."
        + _clock_note(run, workload) + _na_note(run, workload),
        420,
    )


def pareto_chart(run: Run, workload: str) -> Chart | None:
    """Throughput vs peak state bytes, one panel per engine (the lane registry's), each with its
    own frontier: never one frontier over Python and JVM lanes, which the decision table does
    not rank against each other either. Colour: strategy; symbol: backend (a legend entry
    each, no labels on the points to collide); Pareto-optimal points are large and outlined."""
    metric, points = pareto_points(run, workload)
    if metric is None or not points:
        return None
    drawn = {p.key.backend for p in points}
    backends = [b for b in _backends(run, workload) if b in drawn]
    symbol = {b: BACKEND_SYMBOLS[i % len(BACKEND_SYMBOLS)] for i, b in enumerate(backends)}
    engines = engine_order(backends)
    colour = colours(run)
    fig = make_subplots(rows=1, cols=len(engines), horizontal_spacing=0.1,
                        subplot_titles=[engine_panel_title(e, engines) for e in engines])
    _lift_titles(fig)
    shown: set[str] = set()
    for c, engine in enumerate(engines, start=1):
        mine = [p for p in points if engine_of(p.key.backend) == engine]
        front = sorted((p for p in mine if p.optimal), key=lambda p: p.peak_bytes)
        if len(front) > 1:
            fig.add_trace(go.Scatter(
                x=[p.peak_bytes for p in front], y=[p.throughput.center for p in front],
                mode="lines", name="Pareto frontier", legendgroup="frontier",
                showlegend="frontier" not in shown, hoverinfo="skip",
                line={"color": "#999", "dash": "dash", "shape": "hv"}), row=1, col=c)
            shown.add("frontier")
        for strategy in _ordered(run, [p.key.strategy for p in mine]):
            fig.add_trace(_pareto_trace(strategy, [p for p in mine if p.key.strategy == strategy],
                                        colour[strategy], symbol, strategy not in shown),
                          row=1, col=c)
            shown.add(strategy)
        xs = np.array([p.peak_bytes for p in mine], dtype=float)
        log_x = bool(xs.min() > 0 and xs.max() / xs.min() > 20)
        ticks = {"dtick": "D2"} if log_x else {"nticks": 6}  # a log axis labels every digit
        # by default: 400k 500k 600k ... overlapped in a panel a third of the page wide
        fig.update_xaxes(title_text=f"peak {metric.replace('_', ' ')}, bytes (lower is better)",
                         tickformat="~s", ticksuffix="B", type="log" if log_x else "linear",
                         row=1, col=c, **ticks)
        fig.update_yaxes(title_text="throughput, records/s (higher is better)",
                         tickformat="~s", rangemode="tozero", row=1, col=c)
    for b in backends:  # the symbols' key: legend entries that draw no point
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=backend_label(b),
                                 legendgroup="backends", hoverinfo="skip",
                                 marker={"symbol": symbol[b], "color": "#777", "size": 10},
                                 meta={"kind": "backend-key", "backend": b}))
    _layout(fig, 440)
    fig.update_layout(margin={"t": 40},
                      legend={"title": {"text": "colour: strategy<br>symbol: backend"}})
    return Chart(
        f"fig-pareto-{slug(workload)}",
        f"Throughput vs peak state — {workload}",
        f"One panel per engine, each against its own frontier: engines are not ranked against "
        f"each other. One marker per backend (symbol) and strategy (colour); x is the peak "
        f"{spec_for(metric).label} over logical time, y the median throughput with "
        f"min{DASH}max bars. Large outlined markers are Pareto-optimal in their panel: no "
        "other configuration of that engine is both at least as fast and at least as small. "
        "The dashed staircase is the frontier."
        + _clock_note(run, workload),
        fig,
        _ordered(run, [p.key.strategy for p in points]),
    )


def _pareto_trace(strategy: str, mine: list[Any], colour: str, symbol: dict[str, str],
                  show: bool) -> go.Scatter:
    """One strategy's points in one engine's panel: a marker per backend (its symbol)."""
    return go.Scatter(
        x=[p.peak_bytes for p in mine],
        y=[p.throughput.center for p in mine],
        mode="markers",
        name=strategy,
        legendgroup=strategy,
        showlegend=show,
        marker={
            "color": colour,
            "symbol": [symbol[p.key.backend] for p in mine],
            "size": [18 if p.optimal else 11 for p in mine],
            "line": {"color": "#111", "width": [3 if p.optimal else 0 for p in mine]},
        },
        error_y=_min_max_bars([p.throughput for p in mine], 1),
        meta={"kind": "pareto", "backends": [p.key.backend for p in mine]},
        hovertext=[
            f"{strategy} · {backend_label(p.key.backend)}<br>"
            f"{fmt_value(p.throughput.center, 'records/s')}"
            f"<br>peak {fmt_value(p.peak_bytes, 'bytes')}"
            + ("<br><b>Pareto-optimal</b> (in its engine)" if p.optimal else "")
            for p in mine
        ],
        hoverinfo="text",
    )


def _rocksdb_backends(run: Run, keys: list[ScenarioKey]) -> list[str]:
    found = {k.backend for k in keys if any(rocksdb_metric(m) for m in run.samples.get(k, {}))}
    return [b for b in run.backends if b in found]


def rocksdb_chart(run: Run, workload: str) -> Chart | None:
    """RocksDB's own activity over logical time, one line per strategy: flushes and
    compactions, bytes compacted, write amplification, SST files, SST and memtable bytes.

    One backend lays the panels out two per row; several put one backend per column."""
    keys = [k for k in run.scenarios(workload) if k not in run.not_applicable]
    backends = _rocksdb_backends(run, keys)
    panels = [
        p for p in ROCKSDB_PANELS
        if any(run.get(k, m) is not None for k in keys for m, _, _ in p[1])
    ]
    if not backends or not panels:
        return None
    single = len(backends) == 1
    n_rows = -(-len(panels) // 2) if single else len(panels)
    n_cols = 2 if single else len(backends)
    cells = [((i // 2 + 1, i % 2 + 1) if single else (i + 1, j + 1), backend, panel)
             for i, panel in enumerate(panels) for j, backend in enumerate(backends)]
    titles = [""] * (n_rows * n_cols)
    for (r, c), backend, (title, _, _) in cells:
        titles[(r - 1) * n_cols + (c - 1)] = facet_title(backend, title)
    facets = Facets(run, titles, rows=n_rows, cols=n_cols, shared_xaxes=True,
                    vertical_spacing=0.09, horizontal_spacing=0.09)
    divisor, xlabel = _time_axis(run)
    units = {(r, c): unit for (r, c), _, (_, _, unit) in cells}
    for (r, c), unit in units.items():
        facets.y_format(unit, r, c)
    found = _cell_samples(run, keys, [(r, c, b, lines) for (r, c), b, (_, lines, _) in cells],
                          series_only=True)
    for r, c, key, (_, label, dash), samples in found:
        facets.series(r, c, key, samples, divisor, f"{label}: %{{y:.3s}} at %{{x:.4g}}",
                      dash=dash, shape="hv" if units[(r, c)] == "count" else "linear")
    facets.fig.update_xaxes(title_text=xlabel, row=n_rows)
    if single and len(panels) % 2:  # no empty panel: the column above it shows the time axis
        facets.fig.update_xaxes(visible=False, row=n_rows, col=2)
        facets.fig.update_yaxes(visible=False, row=n_rows, col=2)
        facets.fig.update_xaxes(title_text=xlabel, showticklabels=True, row=n_rows - 1, col=2)
    return facets.chart(
        f"fig-rocksdb-{slug(workload)}",
        f"RocksDB activity over logical time — {workload}",
        "RocksDB's own counters, one line per strategy: compactions and flushes since the "
        "backend opened, bytes compactions wrote and read, write amplification ((flushed + "
        "compaction-written bytes) / flushed bytes), live SST files, and bytes in SST files "
        "and memtables. Job totals over tasks; the expired entries a compaction filter drops "
        "leave when a compaction runs."
        + _clock_note(run, workload) + _na_note(run, workload),
        210 * n_rows + 140,
    )


def checkpoint_time_chart(run: Run, workload: str) -> Chart | None:
    """Each checkpoint's duration split into sync, async and upload, stacked: backend columns,
    bars grouped by strategy (colour) and checkpoint id, phases told apart by bar pattern."""
    keys = [k for k in run.scenarios(workload) if k not in run.not_applicable]
    measured = [p for p in CHECKPOINT_PHASES if any(run.get(k, p[0]) is not None for k in keys)]
    if len(measured) < 2:  # one phase alone is the duration table's column, not a breakdown
        return None
    backends = [b for b in _backends(run, workload)
                if any(k.backend == b and run.get(k, m) is not None
                       for k in keys for m, _, _ in measured)]
    # one backend a row: each row has the page's width for its strategies' names (side by
    # side, four backends' panels left them overlapping)
    facets = Facets(run, [backend_label(b) for b in backends], rows=len(backends), cols=1,
                    vertical_spacing=min(0.12, 0.5 / max(1, len(backends))))
    cells = [(r, 1, b, measured) for r, b in enumerate(backends, start=1)]
    for r, _, _, _ in cells:
        facets.y_format("ms", r, 1)
    for r, _, key, (_, label, pattern), samples in _cell_samples(run, keys, cells):
        ids = [str(int(step)) for step in samples.steps]
        facets.add(
            go.Bar, r, 1, key.strategy,
            x=[[key.strategy] * len(ids), ids],
            y=samples.values,
            marker={
                "color": facets.colour[key.strategy],
                "pattern": {"shape": pattern, "fgcolor": "#ffffff", "size": 6,
                            "solidity": 0.4},
            },
            meta={"phase": label},
            hovertemplate=f"checkpoint %{{x}}: {label} %{{y:.3s}} ms"
            f"<extra>{key.strategy} · {key.backend}</extra>",
        )
    facets.fig.update_layout(barmode="stack", bargap=0.15)
    facets.fig.update_xaxes(tickfont={"size": 9}, title_text="strategy, checkpoint id")
    phases = ", ".join(
        f"{label} ({'solid' if not pattern else 'hatched' if pattern == '/' else 'dotted'})"
        for _, label, pattern in measured
    )
    return facets.chart(
        f"fig-checkpoint-time-{slug(workload)}",
        f"Checkpoint duration by phase — {workload}",
        f"One stacked bar per checkpoint (x: strategy, then checkpoint id), split into {phases}. "
        "Each phase is its slowest task's time, so a stack can exceed the checkpoint's total."
        + _clock_note(run, workload) + _na_note(run, workload),
        120 + 260 * len(backends),
    )


def sweep_chart(run: Run, workload: str) -> Chart | None:
    """A swept knob on x (log when its values span more than 10x), one panel per headline metric
    (throughput, peak stored entries, p99 latency, checkpoint bytes), one line per backend;
    throughput and latency carry min-max bars over repetitions."""
    swept = sweep(run)
    if swept is None:
        return None
    labelled = dict(zip(swept.labels, swept.values))
    keys = [k for k in run.scenarios(workload)
            if k.strategy in labelled and k not in run.not_applicable]
    panels = [(m, t) for m, t in SWEEP_PANELS if any(run.get(k, m) is not None for k in keys)]
    backends = [b for b in run.backends if any(k.backend == b for k in keys)]
    if not panels or not backends:
        return None
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[t for _, t in panels],
                        horizontal_spacing=0.07)
    _lift_titles(fig)
    knob = f"{swept.strategy} {swept.knob}".strip()
    for c, (metric, _title) in enumerate(panels, start=1):
        unit = run.units.get(metric, spec_for(metric).unit)
        _y_format(fig, unit, 1, c)
        for j, backend in enumerate(backends):
            points = []
            for label, x in labelled.items():
                s = _chart_stat(run, ScenarioKey(workload, backend, label), metric)
                if s is not None:
                    points.append((x, s, label))
            if not points:
                continue
            points.sort(key=lambda p: p[0])
            fig.add_trace(_sweep_trace(backend, j, points, metric, unit, show=c == 1),
                          row=1, col=c)
        fig.update_xaxes(title_text=knob, type="log" if swept.log_axis else "linear",
                         row=1, col=c)
    if not fig.data:
        return None
    _layout(fig, 400)
    fig.update_layout(legend={"title": {"text": "backend"}})
    values = ", ".join(f"{v:g}" for v in swept.values)
    return Chart(
        f"fig-sweep-{slug(workload)}",
        f"Knob sweep: {knob} — {workload}",
        f"{swept.strategy} run once per value of {swept.knob} ({values}); one line per backend "
        f"(symbol and dash), x on a {'log' if swept.log_axis else 'linear'} axis. Throughput "
        f"and p99 latency: median with min{DASH}max over repetitions; peak stored entries over "
        "logical time; checkpoint bytes: median over checkpoints."
        + _lockstep_note(run, workload, [m for m, _ in panels]) + _clock_note(run, workload)
        + _na_note(run, workload),
        fig,
        [],
    )


def _sweep_trace(backend: str, j: int, points: list[tuple[float, Any, str]], metric: str,
                 unit: str, show: bool) -> go.Scatter:
    """One backend's line on a knob-sweep panel through (knob value, stat, label) points in
    knob order; told apart from other backends by dash and symbol (the `j`-th style)."""
    dash, symbol = SWEEP_LINES[j % len(SWEEP_LINES)]
    spread = metric != STORED_ENTRIES and metric != "checkpoint_bytes"
    return go.Scatter(
        x=[p[0] for p in points],
        y=[p[1].center for p in points],
        mode="lines+markers",
        name=backend_label(backend),
        legendgroup=backend,
        showlegend=show,
        line={"color": SWEEP_COLOUR, "dash": dash, "width": 2},
        marker={"symbol": symbol, "size": 8, "color": SWEEP_COLOUR},
        error_y=_min_max_bars([p[1] for p in points], 1, visible=spread),
        meta={"kind": "sweep", "backend": backend, "metric": metric},
        hovertext=[f"{p[2]} · {backend}<br>{fmt_value(p[1].center, unit)}" for p in points],
        hoverinfo="text",
    )


def ttl_curve_chart(run: Run, workload: str) -> Chart | None:
    """A TTL sweep's state-vs-TTL curve: the outputs the TTL changed on x, the
    state it kept on y (peak live entries, peak checkpoint bytes), one point per TTL, one line
    per backend (the knob-sweep chart's styles); the curve a SQL user picks
    ``table.exec.state.ttl`` from. None unless the run swept ``ttl(ms=...)`` over an operator
    workload. Numbers: ``ttl_curve.ttl_curve_points``, also listed under the chart."""
    points = ttl_curve_points(run, workload)
    panels = [(m, t) for m, t in TTL_CURVE_PANELS
              if any(getattr(p, m) is not None for p in points)]
    if not panels:
        return None
    cells = Facets(run, [t for _, t in panels], horizontal_spacing=0.1)
    for c, (field_name, _title) in enumerate(panels, start=1):
        unit = "bytes" if field_name == "peak_checkpoint_bytes" else "count"
        cells.y_format(unit, 1, c)
        cells.fig.update_xaxes(title_text="outputs changed by the TTL", tickformat=".0%",
                               row=1, col=c)
        for j, backend in enumerate(dict.fromkeys(p.backend for p in points)):
            mine = [p for p in points
                    if p.backend == backend and getattr(p, field_name) is not None]
            cells.fig.add_trace(_ttl_curve_trace(backend, j, mine, field_name, unit, c == 1),
                                row=1, col=c)
    _layout(cells.fig, 420)
    cells.fig.update_layout(legend={"title": {"text": "backend"}})
    return Chart(
        f"fig-ttl-curve-{slug(workload)}", f"State vs TTL — {workload}",
        "One point per swept TTL (labelled), one line per backend: the share of the operator's "
        "outputs that differ from the same run without TTL (ttl_changed_results, repetition 0) "
        "against the state that TTL kept (peak live entries over logical time; peak full "
        "checkpoint). Pick the smallest state whose changed share you can accept."
        + _clock_note(run, workload) + _na_note(run, workload),
        cells.fig, [])


def _ttl_curve_trace(backend: str, j: int, points: Sequence[Any], field_name: str, unit: str,
                     show: bool) -> go.Scatter:
    """One backend's state-vs-TTL line through its TtlCurvePoints (labelled by TTL), styled as
    the `j`-th knob-sweep line."""
    dash, symbol = SWEEP_LINES[j % len(SWEEP_LINES)]
    return go.Scatter(
        x=[p.ttl_changed_results for p in points], y=[getattr(p, field_name) for p in points],
        mode="lines+markers+text", text=[fmt_value(p.ttl_ms, "ms") for p in points],
        textposition="top right", name=backend_label(backend), legendgroup=backend,
        showlegend=show, line={"color": SWEEP_COLOUR, "dash": dash, "width": 2},
        marker={"symbol": symbol, "size": 8, "color": SWEEP_COLOUR},
        meta={"kind": "sweep", "backend": backend, "metric": field_name},
        hovertext=[f"TTL {fmt_value(p.ttl_ms, 'ms')} · {backend}<br>"
                   f"{fmt_value(getattr(p, field_name), unit)}, "
                   f"{fmt_value(p.ttl_changed_results, 'share')} of outputs changed"
                   for p in points],
        hoverinfo="text",
    )


#: Sections in page order and the charts each holds per workload. "rocksdb" and "sweep" appear
#: only when a run has RocksDB counters or a knob sweep. "pareto" is each workload's one chart
#: on the report's first page (``front.py``), not a section of its own.
BUILDERS = {
    "pareto": (pareto_chart,),
    "state": (state_chart,),
    "rocksdb": (rocksdb_chart,),
    "perf": (perf_chart,),
    "checkpoint": (checkpoint_chart, checkpoint_time_chart),
    "sweep": (sweep_chart, ttl_curve_chart),
}
OPTIONAL_SECTIONS = frozenset({"rocksdb", "sweep"})


def charts(run: Run) -> dict[str, list[Chart]]:
    """All charts by section name (see :data:`BUILDERS`), each section's charts by workload."""
    result: dict[str, list[Chart]] = {}
    for section, builders in BUILDERS.items():
        kept = []
        for w in run.workloads:
            for build in builders:
                chart = build(run, w)
                if chart is not None:
                    chart.workload = w
                    kept.append(chart)
        if kept or section not in OPTIONAL_SECTIONS:
            result[section] = kept
    return _unique_ids(result)


def _unique_ids(sections: dict[str, list[Chart]]) -> dict[str, list[Chart]]:
    """Two workloads may slug to the same id; suffix repeats so ids stay unique and stable."""
    seen: dict[str, int] = {}
    for items in sections.values():
        for chart in items:
            count = seen.get(chart.fig_id, 0)
            seen[chart.fig_id] = count + 1
            if count:
                chart.fig_id = f"{chart.fig_id}-{count + 1}"
    return sections
