"""Plotly figures for one run.

Conventions every figure follows, because the browser test and readers rely on them:
one colour per strategy across the whole page; every trace's ``name`` is the strategy (traces of
the same strategy share a ``legendgroup`` so the legend toggles them together); backends are
facets (subplot columns) or categories, never colours. Two kinds of trace are not a strategy and
say so in ``meta``: compaction markers on the state plot (name "compaction ran", one legend
entry toggling them all, ``meta.kind == "compactions"``), and the knob-sweep chart's lines, whose
x axis is the knob and whose lines are backends (told apart by symbol and dash, not colour).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from workloads.report.fmt import DASH, fmt_value
from workloads.report.load import Run, ScenarioKey, backend_label
from workloads.report.metrics import STORED_ENTRIES, rocksdb_metric, spec_for
from workloads.report.runinfo import is_paced, paced_note, sweep
from workloads.report.stats import compaction_marks, pareto_points, stat
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


@dataclass
class Chart:
    """A figure plus what the page needs around it (stable id, caption, strategies shown)."""

    fig_id: str
    title: str
    caption: str
    figure: go.Figure
    strategies: list[str] = field(default_factory=list)



def _add_trace(fig: go.Figure, trace: Any, row: int, col: int, strategy: str, shown: set[str],
               strategies: list[str]) -> None:
    """Add one strategy's trace to a facet; its legend entry shows once (`shown`) and the
    strategies drawn are collected in order (`strategies`, the chart's data-strategies)."""
    fig.add_trace(trace, row=row, col=col)
    shown.add(strategy)
    if strategy not in strategies:
        strategies.append(strategy)

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
    others = [s for s in run.strategies if s != "none" and s not in result]
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
    suffix = {"bytes": "B", "us": " µs", "ms": " ms", "x": "\u00d7"}.get(unit, "")
    # a factor reads as 1.5x, not as SI's "1.5" with milli ticks below 1
    tickformat = ".3~g" if unit == "x" else "~s"
    fig.update_yaxes(tickformat=tickformat, ticksuffix=suffix, rangemode="tozero", row=row,
                     col=col)


def _na_note(run: Run, workload: str) -> str:
    items = [k for k in run.scenarios(workload) if k in run.not_applicable]
    if not items:
        return ""
    # a swept strategy's labels share their reason: name the strategy once
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for k in items:
        base = k.strategy.split("(", 1)[0].strip()
        grouped.setdefault((base, k.backend, run.not_applicable[k]), []).append(k.strategy)
    parts = [
        (labels[0] if len(labels) == 1 else f"{base} ({len(labels)} swept values)")
        + f" on {backend}" + (f" ({reason})" if reason else "")
        for (base, backend, reason), labels in grouped.items()
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
    titles = [facet_title(b, spec_for(m).label) for m in rows for b in backends]
    fig = make_subplots(
        rows=len(rows),
        cols=len(backends),
        shared_xaxes=True,
        subplot_titles=titles,
        vertical_spacing=0.08,
        horizontal_spacing=0.08,
    )
    colour, shown = colours(run), set()
    strategies: list[str] = []
    marked = [m for m in MARKED_ROWS if m in rows] or rows[:1]
    legend_shown = False
    for r, metric in enumerate(rows, start=1):
        unit = run.units.get(metric, spec_for(metric).unit)
        for c, backend in enumerate(backends, start=1):
            _y_format(fig, unit, r, c)
            for key in keys:
                samples = run.get(key, metric)
                if key.backend != backend or samples is None or samples.kind != "series":
                    continue
                _add_trace(
                    fig,
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
                    r,
                    c,
                    key.strategy,
                    shown,
                    strategies,
                )
                if metric in marked:
                    legend_shown = _compaction_markers(
                        fig, run, key, samples, divisor, (r, c), legend_shown)
    if not strategies:
        return None
    fig.update_xaxes(title_text=xlabel, row=len(rows))
    _layout(fig, 190 * len(rows) + 140)
    note = (
        " Open diamonds (legend: compaction ran) mark the samples by which RocksDB had run a "
        "compaction since the previous sample, on each strategy's "
        + " and ".join(spec_for(m).label for m in marked) + " lines."
        if legend_shown else ""
    )
    return Chart(
        f"fig-state-{slug(workload)}",
        f"State size over logical time — {workload}",
        "Entries held (live, and expired but not yet removed) and bytes (logical payload and "
        "physical footprint), summed over tasks, one line per strategy, one column per backend."
        + note + _clock_note(run, workload) + _na_note(run, workload),
        fig,
        _ordered(run, strategies),
    )


def _clock_note(run: Run, workload: str) -> str:
    return " " + paced_note(run, workload) if is_paced(run, workload) else ""


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
            _add_trace(
                fig,
                go.Bar(
                    x=[backend_label(b) for b in backends],
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
                1,
                c,
                strategy,
                shown,
                strategies,
            )
    if not strategies:
        return None
    fig.update_layout(barmode="group", bargap=0.25)
    _layout(fig, 420)
    return Chart(
        f"fig-perf-{slug(workload)}",
        f"Throughput and latency — {workload}",
        f"Median over repetitions (warm-up excluded); error bars span min{DASH}max."
        + _clock_note(run, workload) + _na_note(run, workload),
        fig,
        _ordered(run, strategies),
    )


def _column_samples(run: Run, keys: list[ScenarioKey], backends: list[str],
                    lines: Sequence[tuple[str, str, str]]
                    ) -> Iterator[tuple[int, ScenarioKey, tuple[str, str, str], Any]]:
    """(column, scenario, line, samples) for every backend column (1-based), each of its
    scenarios and each line (metric first) that scenario has samples of."""
    for c, backend in enumerate(backends, start=1):
        for key in keys:
            if key.backend != backend:
                continue
            for line in lines:
                samples = run.get(key, line[0])
                if samples is not None:
                    yield c, key, line, samples


def checkpoint_chart(run: Run, workload: str) -> Chart | None:
    """Checkpoint size per checkpoint id: full (solid) and uploaded (dotted), backend columns."""
    backends, keys, measured = _measured(run, workload, [m for m, _, _ in CHECKPOINT_LINES])
    if not measured:
        return None
    fig = make_subplots(
        rows=1, cols=len(backends), subplot_titles=[backend_label(b) for b in backends],
        horizontal_spacing=0.08,
    )
    colour, shown = colours(run), set()
    strategies: list[str] = []
    for c in range(1, len(backends) + 1):
        _y_format(fig, "bytes", 1, c)
    for c, key, (_, label, dash), samples in _column_samples(run, keys, backends,
                                                              CHECKPOINT_LINES):
        _add_trace(
            fig,
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
                f"<extra>{key.strategy} · {key.backend}</extra>",
            ),
            1,
            c,
            key.strategy,
            shown,
            strategies,
        )
    if not strategies:
        return None
    fig.update_xaxes(title_text="checkpoint id", dtick=1)
    _layout(fig, 420)
    return Chart(
        f"fig-checkpoint-{slug(workload)}",
        f"Checkpoint size — {workload}",
        "Solid: full checkpoint size; dotted: bytes uploaded for that checkpoint (equal to the "
        "full size in full mode, smaller when checkpoints are incremental). Summed over tasks."
        + _clock_note(run, workload) + _na_note(run, workload),
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
                text=[backend_label(p.key.backend) for p in mine],
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
        "fast and at least as small. The dashed staircase is the frontier."
        + _clock_note(run, workload),
        fig,
        strategies,
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
    cells: dict[tuple[int, str], tuple[int, int]] = {}
    for i in range(len(panels)):
        for j, backend in enumerate(backends):
            cells[(i, backend)] = (i // 2 + 1, i % 2 + 1) if single else (i + 1, j + 1)
    titles = [""] * (n_rows * n_cols)
    for (i, backend), (r, c) in cells.items():
        titles[(r - 1) * n_cols + (c - 1)] = facet_title(backend, panels[i][0])
    fig = make_subplots(rows=n_rows, cols=n_cols, subplot_titles=titles, shared_xaxes=True,
                        vertical_spacing=0.09, horizontal_spacing=0.09)
    divisor, xlabel = _time_axis(run)
    colour, shown = colours(run), set()
    strategies: list[str] = []
    for (i, backend), (r, c) in cells.items():
        _title, lines, unit = panels[i]
        _y_format(fig, unit, r, c)
        for key in keys:
            if key.backend != backend:
                continue
            for metric, label, dash in lines:
                samples = run.get(key, metric)
                if samples is None or samples.kind != "series":
                    continue
                _add_trace(
                    fig,
                    go.Scatter(
                        x=samples.times_ms / divisor,
                        y=samples.values,
                        mode="lines",
                        name=key.strategy,
                        legendgroup=key.strategy,
                        showlegend=key.strategy not in shown,
                        line={"color": colour[key.strategy], "width": 2, "dash": dash,
                              "shape": "hv" if unit == "count" else "linear"},
                        hovertemplate=f"{label}: %{{y:.3s}} at %{{x:.4g}}"
                        f"<extra>{key.strategy} · {backend}</extra>",
                    ),
                    r,
                    c,
                    key.strategy,
                    shown,
                    strategies,
                )
    if not strategies:
        return None
    fig.update_xaxes(title_text=xlabel, row=n_rows)
    _layout(fig, 210 * n_rows + 140)
    return Chart(
        f"fig-rocksdb-{slug(workload)}",
        f"RocksDB activity over logical time — {workload}",
        "RocksDB's own counters, one line per strategy: compactions and flushes since the "
        "backend opened, bytes compactions wrote and read, write amplification ((flushed + "
        "compaction-written bytes) / flushed bytes), live SST files, and bytes in SST files "
        "and memtables. Job totals over tasks; the expired entries a compaction filter drops "
        "leave when a compaction runs."
        + _clock_note(run, workload) + _na_note(run, workload),
        fig,
        _ordered(run, strategies),
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
    fig = make_subplots(rows=1, cols=len(backends),
                        subplot_titles=[backend_label(b) for b in backends],
                        horizontal_spacing=0.06)
    colour, shown = colours(run), set()
    strategies: list[str] = []
    for c in range(1, len(backends) + 1):
        _y_format(fig, "ms", 1, c)
    for c, key, (_, label, pattern), samples in _column_samples(run, keys, backends, measured):
        ids = [str(int(step)) for step in samples.steps]
        _add_trace(
            fig,
            go.Bar(
                x=[[key.strategy] * len(ids), ids],
                y=samples.values,
                name=key.strategy,
                legendgroup=key.strategy,
                showlegend=key.strategy not in shown,
                marker={
                    "color": colour[key.strategy],
                    "pattern": {"shape": pattern, "fgcolor": "#ffffff", "size": 6,
                                "solidity": 0.4},
                },
                meta={"phase": label},
                hovertemplate=f"checkpoint %{{x}}: {label} %{{y:.3s}} ms"
                f"<extra>{key.strategy} · {key.backend}</extra>",
            ),
            1,
            c,
            key.strategy,
            shown,
            strategies,
        )
    if not strategies:
        return None
    fig.update_layout(barmode="stack", bargap=0.15)
    fig.update_xaxes(tickfont={"size": 9})
    _layout(fig, 440)
    phases = ", ".join(
        f"{label} ({'solid' if not pattern else 'hatched' if pattern == '/' else 'dotted'})"
        for _, label, pattern in measured
    )
    return Chart(
        f"fig-checkpoint-time-{slug(workload)}",
        f"Checkpoint duration by phase — {workload}",
        f"One stacked bar per checkpoint (x: strategy, then checkpoint id), split into {phases}. "
        "Each phase is its slowest task's time, so a stack can exceed the checkpoint's total."
        + _clock_note(run, workload) + _na_note(run, workload),
        fig,
        _ordered(run, strategies),
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
    knob = f"{swept.strategy} {swept.knob}".strip()
    for c, (metric, _title) in enumerate(panels, start=1):
        unit = run.units.get(metric, spec_for(metric).unit)
        _y_format(fig, unit, 1, c)
        for j, backend in enumerate(backends):
            points = []
            for label, x in labelled.items():
                s = stat(run, ScenarioKey(workload, backend, label), metric)
                if s is not None:
                    points.append((x, s, label))
            if not points:
                continue
            points.sort(key=lambda p: p[0])
            dash, symbol = SWEEP_LINES[j % len(SWEEP_LINES)]
            spread = metric != STORED_ENTRIES and metric != "checkpoint_bytes"
            fig.add_trace(
                go.Scatter(
                    x=[p[0] for p in points],
                    y=[p[1].center for p in points],
                    mode="lines+markers",
                    name=backend_label(backend),
                    legendgroup=backend,
                    showlegend=c == 1,
                    line={"color": SWEEP_COLOUR, "dash": dash, "width": 2},
                    marker={"symbol": symbol, "size": 8, "color": SWEEP_COLOUR},
                    error_y={
                        "type": "data", "symmetric": False, "thickness": 1, "width": 3,
                        "array": [p[1].hi - p[1].center for p in points],
                        "arrayminus": [p[1].center - p[1].lo for p in points],
                        "visible": spread,
                    },
                    meta={"kind": "sweep", "backend": backend, "metric": metric},
                    hovertext=[f"{p[2]} · {backend}<br>{fmt_value(p[1].center, unit)}"
                               for p in points],
                    hoverinfo="text",
                ),
                row=1,
                col=c,
            )
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
        + _clock_note(run, workload) + _na_note(run, workload),
        fig,
        [],
    )


#: Sections in page order and the charts each holds per workload. "rocksdb" and "sweep" appear
#: only when a run has RocksDB counters or a knob sweep.
BUILDERS = {
    "pareto": (pareto_chart,),
    "state": (state_chart,),
    "rocksdb": (rocksdb_chart,),
    "perf": (perf_chart,),
    "checkpoint": (checkpoint_chart, checkpoint_time_chart),
    "sweep": (sweep_chart,),
}
OPTIONAL_SECTIONS = frozenset({"rocksdb", "sweep"})


def charts(run: Run) -> dict[str, list[Chart]]:
    """All charts by section name (see :data:`BUILDERS`), each section's charts by workload."""
    result: dict[str, list[Chart]] = {}
    for section, builders in BUILDERS.items():
        made = [build(run, w) for w in run.workloads for build in builders]
        kept = [c for c in made if c is not None]
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
