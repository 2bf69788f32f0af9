"""Side-by-side comparison of two runs: every summary number of A and B with the ratio b/a.

A ratio is coloured only when it moves by at least ``NOTICEABLE``, the metric has a direction
(throughput up is good, bytes/latency up is bad) and the two runs' min-max ranges do not overlap:
a 10% "win" inside the run-to-run noise is not a win.  Descriptive counts stay uncoloured.
"""

from __future__ import annotations

from html import escape

from workloads.report.fmt import MISSING, fmt_ratio
from workloads.report.load import Run, ScenarioKey
from workloads.report.metrics import CATALOGUE, spec_for
from workloads.report.stats import Stat, stat
from workloads.report.tables import environment_items, na_text, stat_cell, unit_of, value_cell

NOTICEABLE = 0.05


def ratio(a: Stat | None, b: Stat | None) -> float | None:
    """b/a of the headline values; None when either is missing or a is 0."""
    if a is None or b is None or a.center == 0:
        return None
    return b.center / a.center


def overlap(a: Stat | None, b: Stat | None) -> bool:
    """True when both numbers have a spread and their min-max ranges intersect."""
    if a is None or b is None or not (a.spread_known and b.spread_known):
        return False
    if a.basis.startswith("peak"):  # a series' range is its trajectory, not noise
        return False
    return a.lo <= b.hi and b.lo <= a.hi


def _ratio_class(metric: str, r: float | None, noisy: bool) -> str:
    better = spec_for(metric).better
    if r is None or better == 0 or abs(r - 1.0) < NOTICEABLE:
        return ""
    if noisy:
        return "overlap"
    return "better" if (r > 1) == (better > 0) else "worse"


def _metrics(a: Run, b: Run, key: ScenarioKey) -> list[str]:
    present = set(a.samples.get(key, {})) | set(b.samples.get(key, {}))
    known = [m for m in CATALOGUE if m in present]
    return known + sorted(present - set(known))


def _na_cell(run: Run, key: ScenarioKey) -> str | None:
    if key in run.not_applicable:
        return f'<td class="na">{escape(na_text(run.not_applicable[key]))}</td>'
    if key not in run.samples:
        return '<td class="na">not in this run</td>'
    return None


def _scenario_rows(a: Run, b: Run, key: ScenarioKey) -> list[str]:
    head = f'<th scope="row">{escape(key.backend)}</th><th scope="row">{escape(key.strategy)}</th>'
    na_a, na_b = _na_cell(a, key), _na_cell(b, key)
    if na_a or na_b:
        return [
            f'<tr class="na">{head}<td>—</td>{na_a or "<td>measured</td>"}'
            f'{na_b or "<td>measured</td>"}<td class="num missing">{MISSING}</td></tr>'
        ]
    rows = []
    for metric in _metrics(a, b, key):
        sa, sb = stat(a, key, metric), stat(b, key, metric)
        r = ratio(sa, sb)
        css = _ratio_class(metric, r, overlap(sa, sb))
        spec = spec_for(metric)
        label = f"{spec.label} ({spec.group})" if spec.group != "other" else spec.label
        rows.append(
            f"<tr>{head}<td>{escape(label)}</td>{stat_cell(sa, unit_of(a, metric))}"
            f"{stat_cell(sb, unit_of(b, metric))}"
            f'<td class="num ratio {css}" data-metric="{escape(metric)}">'
            f"{escape(fmt_ratio(r))}</td></tr>"
        )
    return rows


def diff_tables(a: Run, b: Run) -> str:
    """One table per workload with A, B and b/a for every metric of every scenario."""
    workloads = sorted(set(a.workloads) | set(b.workloads))
    parts = []
    for workload in workloads:
        keys = sorted(
            set(a.scenarios(workload)) | set(b.scenarios(workload)),
            key=lambda k: (
                _pos(a.backends + b.backends, k.backend),
                _pos(a.strategies + b.strategies, k.strategy),
            ),
        )
        rows = "".join(r for k in keys for r in _scenario_rows(a, b, k))
        parts.append(
            f'<h3>{escape(workload)}</h3><div class="scroll"><table class="diff" '
            f'data-workload="{escape(workload)}"><thead><tr><th>backend</th><th>strategy</th>'
            f"<th>metric</th><th>A: {escape(a.run_id)}</th><th>B: {escape(b.run_id)}</th>"
            f"<th>B/A</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )
    return "\n".join(parts)


def _pos(items: list[str], item: str) -> int:
    return items.index(item) if item in items else len(items)


def environment_diff(a: Run, b: Run) -> str:
    """Provenance of both runs side by side; rows that differ are marked."""
    ia, ib = dict(environment_items(a.meta)), dict(environment_items(b.meta))
    keys = list(dict.fromkeys([*ia, *ib]))
    rows = []
    for key in keys:
        cells = value_cell(key, ia.get(key)) + value_cell(key, ib.get(key))
        css = ' class="changed"' if ia.get(key) != ib.get(key) else ""
        rows.append(f'<tr{css}><th scope="row">{escape(key)}</th>{cells}</tr>')
    return (
        '<table class="kv"><thead><tr><th></th><th>A</th><th>B</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
