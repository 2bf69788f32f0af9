"""The state-vs-TTL curve of a run swept over the TTL (``--sweep "ttl(ms=...)"``): per TTL and
backend, the state it kept (peak live entries, peak checkpoint bytes) against the share of the
operator's outputs it changed (``ttl_changed_results``) - the numbers a SQL user picks
``table.exec.state.ttl`` from. The report draws them
(``figures.ttl_curve_chart``) and lists them in a table (:func:`ttl_curve_table`).

Read from the loaded run: the peaks are the maxima over the job-wide samples (all repetitions),
``ttl_changed_results`` is repetition 0's (exact under event time, so every repetition has it).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from workloads.report.fmt import MISSING, fmt_value
from workloads.report.load import Run, ScenarioKey, backend_label
from workloads.report.runinfo import sweep

#: The knob of ``workloads.run.sweep``'s TTL sweep (its scenarios: ``ttl(ms=V)``).
TTL_SWEEP = "ttl"
CHANGED = "ttl_changed_results"


@dataclass(frozen=True)
class TtlCurvePoint:
    """One TTL of the sweep on one backend."""

    backend: str
    label: str
    ttl_ms: float
    peak_live_entries: float | None
    peak_checkpoint_bytes: float | None
    ttl_changed_results: float


def _peak(run: Run, key: ScenarioKey, metric: str) -> float | None:
    samples = run.get(key, metric)
    return None if samples is None or not len(samples.values) else float(samples.values.max())


def ttl_curve_points(run: Run, workload: str) -> list[TtlCurvePoint]:
    """The curve's points by backend (run order) then TTL; empty unless the run is a TTL sweep
    and the workload reports ``ttl_changed_results`` (an ``[operator]`` spec)."""
    swept = sweep(run)
    if swept is None or swept.strategy != TTL_SWEEP:
        return []
    points = []
    for backend in run.backends:
        for label, ttl in sorted(zip(swept.labels, swept.values), key=lambda p: p[1]):
            key = ScenarioKey(workload, backend, label)
            changed = run.get(key, CHANGED)
            if key in run.not_applicable or changed is None or not len(changed.values):
                continue
            rep0 = changed.values[changed.steps == 0]
            points.append(TtlCurvePoint(
                backend, label, ttl, _peak(run, key, "live_entries"),
                _peak(run, key, "checkpoint_bytes"),
                float(rep0[0] if len(rep0) else changed.values[0])))
    return points


def ttl_curve_table(run: Run, workload: str) -> str:
    """The curve as a table (one row per backend and TTL), or "" when there is none."""
    points = ttl_curve_points(run, workload)
    if not points:
        return ""

    def exact(value: float | None) -> str:  # whole numbers in full: a user sizes state by them
        return f"<td class=num>{MISSING if value is None else f'{value:,.0f}'}</td>"

    rows = "".join(
        f"<tr><td>{escape(backend_label(p.backend))}</td>"
        f"<td class=num>{escape(fmt_value(p.ttl_ms, 'ms'))}</td>"
        + exact(p.peak_live_entries) + exact(p.peak_checkpoint_bytes)
        + f"<td class=num>{escape(fmt_value(p.ttl_changed_results, 'share'))}</td></tr>"
        for p in points)
    return (
        f'<table class="ttl-curve" id="ttl-curve-{escape(workload)}" '
        f'data-workload="{escape(workload)}"><caption>State vs TTL — {escape(workload)}: '
        "what each <code>table.exec.state.ttl</code> keeps and what it changes</caption>"
        "<thead><tr><th>backend</th><th>TTL</th><th>peak live entries</th>"
        "<th>peak checkpoint bytes</th><th>outputs changed by the TTL</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
