"""Plotly figures for one run.

Conventions every figure follows, because the browser test and readers rely on them:
one colour per strategy across the whole page; every trace's ``name`` is the strategy (traces of
the same strategy share a ``legendgroup`` so the legend toggles them together); backends are
facets (subplot columns) or categories, never colours.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from workloads.report.fmt import DASH, fmt_value
from workloads.report.load import Run, ScenarioKey
from workloads.report.metrics import spec_for
from workloads.report.stats import pareto_points, stat

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


@dataclass
class Chart:
    """A figure plus what the page needs around it (stable id, caption, strategies shown)."""

    fig_id: str
    title: str
    caption: str
    figure: go.Figure
    strategies: list[str] = field(default_factory=list)


def slug(text: str) -> str:
    """A stable, id-safe form of a workload name ("ycsb-a" stays "ycsb-a")."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def colours(run: Run) -> dict[str, str]:
    """Strategy -> colour, stable for a given set of strategies."""
    result: dict[str, str] = {}
    others = [s for s in run.strategies if s != "none"]
    for i, strategy in enumerate(others):
        result[strategy] = PALETTE[i % len(PALETTE)]
    if "none" in run.strategies:
        result["none"] = BASELINE_COLOUR
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


def _layout(fig: go.Figure, height: int) -> None:
    fig.update_layout(
        height=height,
        margin={"l": 70, "r": 20, "t": 60, "b": 50},
        font={"family": FONT, "size": 12},
        legend={"title": {"text": "strategy"}, "itemsizing": "constant", "tracegroupgap": 2},
        template="plotly_white",
        hovermode="closest",
    )


def _y_format(fig: go.Figure, unit: str, row: int, col: int) -> None:
    suffix = {"bytes": "B", "us": " µs", "ms": " ms"}.get(unit, "")
    fig.update_yaxes(tickformat="~s", ticksuffix=suffix, rangemode="tozero", row=row, col=col)


def _na_note(run: Run, workload: str) -> str:
    items = [k for k in run.scenarios(workload) if k in run.not_applicable]
    if not items:
        return ""
    parts = [
        f"{k.strategy} on {k.backend}"
        + (f" ({run.not_applicable[k]})" if run.not_applicable[k] else "")
        for k in items
    ]
    return " Not applicable, so not shown: " + "; ".join(parts) + "."


def _backends(run: Run, workload: str) -> list[str]:
    present = {k.backend for k in run.scenarios(workload)}
    return [b for b in run.backends if b in present]


def _measured(run: Run, workload: str, metrics: Sequence[str]) -> tuple[list[str], list, list[str]]:
    """(backends, scenarios that ran, the metrics among `metrics` any of them measured)."""
    keys = [k for k in run.scenarios(workload) if k not in run.not_applicable]
    present = [m for m in metrics if any(run.get(k, m) is not None for k in keys)]
    return _backends(run, workload), keys, present


def state_chart(run: Run, workload: str) -> Chart | None:
    """State size over logical time: metric rows x backend columns, one line per strategy."""
    backends, keys, rows = _measured(run, workload, STATE_ROWS)
    if not rows or not backends:
        return None
    divisor, xlabel = _time_axis(run)
    titles = [f"{b} · {spec_for(m).label}" for m in rows for b in backends]
    fig = make_subplots(
        rows=len(rows),
        cols=len(backends),
        shared_xaxes=True,
        subplot_titles=titles,
        vertical_spacing=0.06,
        horizontal_spacing=0.08,
    )
    colour, shown = colours(run), set()
    strategies: list[str] = []
    for r, metric in enumerate(rows, start=1):
        unit = run.units.get(metric, spec_for(metric).unit)
        for c, backend in enumerate(backends, start=1):
            _y_format(fig, unit, r, c)
            for key in keys:
                samples = run.get(key, metric)
                if key.backend != backend or samples is None or samples.kind != "series":
                    continue
                fig.add_trace(
                    go.Scatter(
                        x=samples.times_ms / divisor,
                        y=samples.values,
                        mode="lines",
                        name=key.strategy,
                        legendgroup=key.strategy,
                        showlegend=key.strategy not in shown,
                        line={"color": colour[key.strategy], "width": 2},
                        hovertemplate=f"%{{y:.3s}} {unit} at %{{x:.4g}}"
                        f"<extra>{key.strategy} · {backend}</extra>",
                    ),
                    row=r,
                    col=c,
                )
                shown.add(key.strategy)
                if key.strategy not in strategies:
                    strategies.append(key.strategy)
    if not strategies:
        return None
    fig.update_xaxes(title_text=xlabel, row=len(rows))
    _layout(fig, 190 * len(rows) + 140)
    return Chart(
        f"fig-state-{slug(workload)}",
        f"State size over logical time — {workload}",
        "Entries held (live, and expired but not yet removed) and bytes (logical payload and "
        "physical footprint), summed over tasks, one line per strategy, one column per backend."
        + _na_note(run, workload),
        fig,
        _ordered(run, strategies),
    )


def _ordered(run: Run, names: list[str]) -> list[str]:
    return [s for s in run.strategies if s in names]


def _bar_hover(metric: str, unit: str, key: ScenarioKey, run: Run) -> str:
    s = stat(run, key, metric)
    if s is None:
        return "—"
    return (
        f"{key.strategy} · {key.backend}<br>median {fmt_value(s.center, unit)}<br>"
        f"min{DASH}max {fmt_value(s.lo, unit)}{DASH}{fmt_value(s.hi, unit)} (n={s.n})"
    )


def perf_chart(run: Run, workload: str) -> Chart | None:
    """Throughput and latency percentiles: grouped bars (backend groups, strategy bars)."""
    backends, keys, cols = _measured(run, workload, PERF_COLS)
    if not cols or not backends:
        return None
    titles = [
        "throughput (records/s)" if m == "records_per_s" else f"{spec_for(m).label} latency"
        for m in cols
    ]
    fig = make_subplots(rows=1, cols=len(cols), subplot_titles=titles, horizontal_spacing=0.07)
    colour, shown = colours(run), set()
    strategies: list[str] = []
    for c, metric in enumerate(cols, start=1):
        unit = run.units.get(metric, spec_for(metric).unit)
        _y_format(fig, unit, 1, c)
        for strategy in run.strategies:
            ys, plus, minus, hover = [], [], [], []
            for backend in backends:
                key = ScenarioKey(workload, backend, strategy)
                s = stat(run, key, metric) if key in keys else None
                ys.append(None if s is None else s.center)
                plus.append(0.0 if s is None else s.hi - s.center)
                minus.append(0.0 if s is None else s.center - s.lo)
                hover.append(_bar_hover(metric, unit, key, run))
            if all(y is None for y in ys):
                continue
            fig.add_trace(
                go.Bar(
                    x=backends,
                    y=ys,
                    name=strategy,
                    legendgroup=strategy,
                    showlegend=strategy not in shown,
                    marker_color=colour[strategy],
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": plus,
                        "arrayminus": minus,
                        "thickness": 1.2,
                        "width": 3,
                    },
                    hovertext=hover,
                    hoverinfo="text",
                ),
                row=1,
                col=c,
            )
            shown.add(strategy)
            if strategy not in strategies:
                strategies.append(strategy)
    if not strategies:
        return None
    fig.update_layout(barmode="group", bargap=0.25)
    _layout(fig, 420)
    return Chart(
        f"fig-perf-{slug(workload)}",
        f"Throughput and latency — {workload}",
        f"Median over repetitions (warm-up excluded); error bars span min{DASH}max."
        + _na_note(run, workload),
        fig,
        _ordered(run, strategies),
    )


def checkpoint_chart(run: Run, workload: str) -> Chart | None:
    """Checkpoint size per checkpoint id: full (solid) and uploaded (dotted), backend columns."""
    backends, keys, measured = _measured(run, workload, [m for m, _, _ in CHECKPOINT_LINES])
    if not measured:
        return None
    fig = make_subplots(
        rows=1, cols=len(backends), subplot_titles=backends, horizontal_spacing=0.08
    )
    colour, shown = colours(run), set()
    strategies: list[str] = []
    for c, backend in enumerate(backends, start=1):
        _y_format(fig, "bytes", 1, c)
        for key in keys:
            if key.backend != backend:
                continue
            for metric, label, dash in CHECKPOINT_LINES:
                samples = run.get(key, metric)
                if samples is None:
                    continue
                fig.add_trace(
                    go.Scatter(
                        x=samples.steps,
                        y=samples.values,
                        mode="lines+markers",
                        name=key.strategy,
                        legendgroup=key.strategy,
                        showlegend=key.strategy not in shown,
                        line={"color": colour[key.strategy], "dash": dash, "width": 2},
                        marker={"size": 6},
                        hovertemplate=f"checkpoint %{{x}}: %{{y:.3s}}B {label}"
                        f"<extra>{key.strategy} · {backend}</extra>",
                    ),
                    row=1,
                    col=c,
                )
                shown.add(key.strategy)
                if key.strategy not in strategies:
                    strategies.append(key.strategy)
    if not strategies:
        return None
    fig.update_xaxes(title_text="checkpoint id", dtick=1)
    _layout(fig, 420)
    return Chart(
        f"fig-checkpoint-{slug(workload)}",
        f"Checkpoint size — {workload}",
        "Solid: full checkpoint size; dotted: bytes uploaded for that checkpoint (equal to the "
        "full size in full mode, smaller when checkpoints are incremental). Summed over tasks."
        + _na_note(run, workload),
        fig,
        _ordered(run, strategies),
    )


def pareto_chart(run: Run, workload: str) -> Chart | None:
    """Throughput vs peak state bytes; Pareto-optimal points are large and outlined."""
    metric, points = pareto_points(run, workload)
    if metric is None or not points:
        return None
    backends = _backends(run, workload)
    symbol = {b: BACKEND_SYMBOLS[i % len(BACKEND_SYMBOLS)] for i, b in enumerate(backends)}
    colour = colours(run)
    fig = go.Figure()
    front = sorted((p for p in points if p.optimal), key=lambda p: p.peak_bytes)
    if len(front) > 1:
        fig.add_trace(
            go.Scatter(
                x=[p.peak_bytes for p in front],
                y=[p.throughput.center for p in front],
                mode="lines",
                name="Pareto frontier",
                line={"color": "#999", "dash": "dash", "shape": "hv"},
                hoverinfo="skip",
            )
        )
    strategies = _ordered(run, [p.key.strategy for p in points])
    for strategy in strategies:
        mine = [p for p in points if p.key.strategy == strategy]
        fig.add_trace(
            go.Scatter(
                x=[p.peak_bytes for p in mine],
                y=[p.throughput.center for p in mine],
                mode="markers+text",
                name=strategy,
                text=[p.key.backend for p in mine],
                textposition="top center",
                textfont={"size": 10, "color": "#555"},
                marker={
                    "color": colour[strategy],
                    "symbol": [symbol[p.key.backend] for p in mine],
                    "size": [18 if p.optimal else 11 for p in mine],
                    "line": {"color": "#111", "width": [3 if p.optimal else 0 for p in mine]},
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [p.throughput.hi - p.throughput.center for p in mine],
                    "arrayminus": [p.throughput.center - p.throughput.lo for p in mine],
                    "thickness": 1,
                    "width": 3,
                },
                hovertext=[
                    f"{strategy} · {p.key.backend}<br>{fmt_value(p.throughput.center, 'records/s')}"
                    f"<br>peak {fmt_value(p.peak_bytes, 'bytes')}"
                    + ("<br><b>Pareto-optimal</b>" if p.optimal else "")
                    for p in mine
                ],
                hoverinfo="text",
            )
        )
    xs = np.array([p.peak_bytes for p in points], dtype=float)
    log_x = bool(xs.min() > 0 and xs.max() / xs.min() > 20)
    fig.update_xaxes(
        title_text=f"peak {metric.replace('_', ' ')} (lower is better)",
        tickformat="~s",
        ticksuffix="B",
        type="log" if log_x else "linear",
    )
    fig.update_yaxes(
        title_text="throughput, records/s (higher is better)", tickformat="~s", rangemode="tozero"
    )
    _layout(fig, 440)
    fig.update_layout(margin={"t": 20})
    return Chart(
        f"fig-pareto-{slug(workload)}",
        f"Throughput vs peak state — {workload}",
        f"One marker per backend (shape, labelled) and strategy (colour); x is the peak "
        f"{spec_for(metric).label} over logical time, y the median throughput with "
        f"min{DASH}max bars. "
        "Large outlined markers are Pareto-optimal: no other configuration is both at least as "
        "fast and at least as small. The dashed staircase is the frontier.",
        fig,
        strategies,
    )


def charts(run: Run) -> dict[str, list[Chart]]:
    """All charts by section name ("pareto", "state", "perf", "checkpoint")."""
    builders = {
        "pareto": pareto_chart,
        "state": state_chart,
        "perf": perf_chart,
        "checkpoint": checkpoint_chart,
    }
    result: dict[str, list[Chart]] = {}
    for section, build in builders.items():
        made = [build(run, w) for w in run.workloads]
        result[section] = [c for c in made if c is not None]
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
