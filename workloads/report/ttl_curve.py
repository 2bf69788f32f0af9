"""The state-vs-TTL curve of a run swept over the TTL (``--sweep "ttl(ms=...)"``): per TTL and
backend, the state it kept (peak live entries, peak checkpoint bytes) against the share of the
operator's outputs it changed (``ttl_changed_results``) - the numbers a SQL user picks
``table.exec.state.ttl`` from. The report draws them
(``figures.ttl_curve_chart``) and lists them in a table (:func:`ttl_curve_table`).

Read from the loaded run: the peaks are the maxima over the job-wide samples (all repetitions),
``ttl_changed_results`` is repetition 0's (exact under event time, so every repetition has it).

Where Flink's state TTL does not reach the operator (the windows and the interval join:
``workloads.operators.flink_ttl``), Flink's curve is flat: the TTL changes nothing the operator
emits or keeps. The table then says so first (:func:`flat_curve`), so a flat curve
reads as the expected answer and not as a sweep that failed, and names each lane whose curve
moved anyway (:func:`lane_moves`) as differing from Flink.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from workloads.operators.flink_ttl import ttl_reaches
from workloads.report.fmt import MISSING, fmt_value
from workloads.report.load import Run, ScenarioKey, backend_label
from workloads.report.metrics import run_class_of
from workloads.report.real_engine import operator_kind
from workloads.report.runinfo import sweep

#: The knob of ``workloads.run.sweep``'s TTL sweep (its scenarios: ``ttl(ms=V)``).
TTL_SWEEP = "ttl"
CHANGED = "ttl_changed_results"
OUTPUTS = "operator_outputs"
LIVE = "live_entries"


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


def _rep0(run: Run, key: ScenarioKey, metric: str) -> float | None:
    samples = run.get(key, metric)
    if samples is None or not len(samples.values):
        return None
    rep0 = samples.values[samples.steps == 0]
    return float(rep0.sum() if len(rep0) else samples.values[0])


def _spread(name: str, values: list[float]) -> str | None:
    """``"outputs 24,548 to 24,550"`` when ``values`` (counts, one per TTL) are not all equal,
    else None: in full, as the table gives them, so a gap of one reads as one."""
    if len(set(values)) < 2:
        return None
    return f"{name} {min(values):,.0f} to {max(values):,.0f}"


def unreached_kind(run: Run, workload: str) -> str | None:
    """The workload's ``[operator] kind`` when Flink's state TTL does not reach it (so its TTL
    curve is flat in Flink), else None (a TTL kind, key-value traffic, an unknown kind)."""
    kind = operator_kind(run, workload)
    try:
        return kind if kind is not None and not ttl_reaches(kind) else None
    except ValueError:  # a kind this version does not emulate: nothing to say of it
        return None


def lane_moves(run: Run, workload: str, backend: str,
               points: list[TtlCurvePoint] | None = None) -> list[str]:
    """What the swept TTL changed on ``backend``, each as a few words (empty: its curve is
    flat): outputs that differ between TTLs, outputs changed against the run without TTL,
    and peak live entries that differ where they are exact (a timing-dependent count would
    move with the machine, not the TTL). Read for a kind whose curve Flink keeps flat."""
    mine = [p for p in (points if points is not None else ttl_curve_points(run, workload))
            if p.backend == backend]
    moved = []
    outputs = [v for p in mine
               if (v := _rep0(run, ScenarioKey(workload, backend, p.label), OUTPUTS)) is not None]
    moved.append(_spread("outputs", outputs))
    changed = max((p.ttl_changed_results for p in mine), default=0.0)
    if changed > 0:
        moved.append(f"outputs changed by the TTL up to {fmt_value(changed, 'share')}")
    exact = [p.peak_live_entries for p in mine if p.peak_live_entries is not None
             and run_class_of([run.meta], workload, backend, p.label, LIVE).exact]
    moved.append(_spread("peak live entries", exact))
    return [m for m in moved if m is not None]


@dataclass(frozen=True)
class FlatCurve:
    """A TTL sweep of a kind Flink's state TTL does not reach, lane by lane: where its curve is
    flat (what Flink shows), where it moved (:func:`lane_moves`: that lane differs from Flink),
    and the run's lanes that drew no curve (their sweep scenarios did not run)."""

    kind: str
    flat: tuple[str, ...]
    moved: tuple[tuple[str, tuple[str, ...]], ...]
    unswept: tuple[str, ...]

    @property
    def differs(self) -> bool:
        """Whether some lane's curve is not flat."""
        return bool(self.moved)

    @property
    def text(self) -> str:
        """The sentence in plain words (the report's, above the table)."""
        text = (f"Flink's state TTL does not reach this operator ({self.kind}): Flink "
                "registers its state without a TTL and cleans it with its own timers, so at "
                "every TTL it emits the same outputs and keeps the same state - a flat curve is "
                "what Flink shows, not a failed sweep.")
        if self.flat:
            text += f" Flat, as in Flink, on {_names(self.flat)}."
        for backend, moves in self.moved:
            text += (f" Not flat on {backend} ({'; '.join(moves)}): this lane "
                     "differs from Flink, which applies no TTL here.")
        if self.unswept:
            text += (f" No curve on {_names(self.unswept)}: the sweep's scenarios did not run "
                     "there (the Not applicable tab says why).")
        return text


def _names(backends: tuple[str, ...]) -> str:
    """The lanes as ``--backend`` names them (a sentence's words, not a table's labels)."""
    return ", ".join(backends)


def flat_curve(run: Run, workload: str,
               points: list[TtlCurvePoint] | None = None) -> FlatCurve | None:
    """The sweep's curve lane by lane for a kind Flink's state TTL does not reach; None for any
    other workload or run (a TTL kind, key-value traffic, no TTL sweep). ``points``: the
    workload's :func:`ttl_curve_points`, when the caller has them."""
    kind = unreached_kind(run, workload)
    if points is None:
        points = ttl_curve_points(run, workload)
    if kind is None or not points:
        return None
    swept = tuple(dict.fromkeys(p.backend for p in points))
    moves = {b: tuple(lane_moves(run, workload, b, points)) for b in swept}
    return FlatCurve(kind, tuple(b for b in swept if not moves[b]),
                     tuple((b, moves[b]) for b in swept if moves[b]),
                     tuple(b for b in run.backends if b not in swept))


def _flat_curve_note(run: Run, workload: str, points: list[TtlCurvePoint]) -> str:
    """:func:`flat_curve`'s sentence as the paragraph above the table ("" when there is none);
    a warning when some lane's curve moved."""
    found = flat_curve(run, workload, points)
    if found is None:
        return ""
    verdict = "differs" if found.differs else "flat"
    return (f'<p class="{"warn ttl-reach" if found.differs else "ttl-reach"}" '
            f'data-ttl-reach="{verdict}" data-workload="{escape(workload)}">'
            f"{escape(found.text)}</p>")


def ttl_curve_table(run: Run, workload: str) -> str:
    """The curve as a table (one row per backend and TTL), or "" when there is none; for a
    kind Flink's TTL does not reach, the sentence that says so above it."""
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
    return _flat_curve_note(run, workload, points) + (
        f'<table class="ttl-curve" id="ttl-curve-{escape(workload)}" '
        f'data-workload="{escape(workload)}"><caption>State vs TTL — {escape(workload)}: '
        "what each <code>table.exec.state.ttl</code> keeps and what it changes</caption>"
        "<thead><tr><th>backend</th><th>TTL</th><th>peak live entries</th>"
        "<th>peak checkpoint bytes</th><th>outputs changed by the TTL</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
