"""The report's first page: per workload, the decision table first, the detail one click down.

Each workload shows, in this order: which of its numbers follow the wall clock (a paced
workload's note), the decision table (``decision.py``: per backend, grouped by engine), the
fastest configuration per engine (like with like), the warnings, one line of the checks that
passed, at most one chart (throughput against peak state, a panel per engine), and then, inside
a closed ``<details>``, every finding sentence (``findings.py``). Every sentence about which
strategy leads comes from the table's cells (one decision per workload, computed once here), so
the page gives one answer per question. The rest of the report (state over time, RocksDB,
checkpoints, fidelity, the environment) is on the report's other tabs.
"""

from __future__ import annotations

from html import escape

from workloads.report.decision import (
    COLUMNS,
    BackendDecision,
    Pick,
    cell_text,
    decisions,
    fastest_per_engine,
    repetitions_hint,
    ttl_headline,
)
from workloads.report.engines import engine_heading
from workloads.report.figures import Chart, slug
from workloads.report.findings import Sentence, checks, findings
from workloads.report.fmt import MISSING
from workloads.report.load import Run, backend_label
from workloads.report.real_engine import real_engine_front
from workloads.report.template import chart_html
from workloads.report.ttl_curve import flat_curve

#: What the table's cells rest on, under every table.
EVIDENCE_NOTE = (
    "A cell names the leading group: the leader and every strategy the evidence cannot tell "
    "from it on that backend, then how far the leader is ahead of each of the rest. Evidence: "
    "exact numbers (counted under the logical clock) when they differ; timed numbers by their "
    "per-round ratios where the strategies ran in paired rounds (exact sign-flip tests, once "
    "the cell's strategies differ at all), else by a rank test over repetitions (as statebench "
    "diff does); timing-dependent numbers held once per run only beyond what identical runs of "
    "that workload and backend moved them (a committed calibration). Otherwise it says which "
    "strategies it cannot tell apart and why."
)


#: Above the findings one click down: they are the medians as measured, per backend; which of
#: their differences the evidence separates is the table's to say, not theirs.
DETAIL_NOTE = (
    "Each backend's numbers as measured (medians, peaks), in words. They rank nothing: which "
    "differences the evidence separates is what the table above says."
)


def _cell(column: str, found: Pick | None) -> str:
    headline, separated, why = cell_text(found)
    # "group": a leading group of several, ahead of the rest (neither a winner nor a tie)
    state = "yes" if separated else "group" if found is not None and found.decided else "no"
    evidence = f'<span class="why">{escape(why)}</span>' if why else ""
    return (f'<td data-cell="{column}" data-separated="{state}">'
            f'<span class="pick">{escape(headline)}</span>{evidence}</td>')


def decision_table(run: Run, workload: str,
                   rows: dict[str, list[BackendDecision]] | None = None) -> str:
    """The table: one row per backend, engines as row groups; "" when nothing ran."""
    rows = decisions(run, workload) if rows is None else rows
    if not rows:
        return ""
    head = "".join(f"<th>{escape(title)}</th>" for _, title, _ in COLUMNS)
    body = []
    for engine, engine_rows in rows.items():  # the engines in page order
        body.append(f'<tr class="engine" data-engine="{escape(engine)}">'
                    f'<th colspan="{len(COLUMNS) + 2}">{escape(engine_heading(engine))}</th></tr>')
        for row in engine_rows:
            cells = "".join(_cell(column, row.picks[column]) for column, _, _ in COLUMNS)
            body.append(
                f'<tr data-backend="{escape(row.backend)}"><th>{escape(backend_label(row.backend))}'
                f"</th>{cells}<td data-cell=\"recommended\">{row.tradeoff.html}</td></tr>")
    return (f'<div class="scroll"><table class="decision" data-workload="{escape(workload)}">'
            f"<thead><tr><th>backend</th>{head}<th>Recommended, and what it costs</th></tr>"
            f'</thead><tbody>{"".join(body)}</tbody></table></div>')


def _items(sentences: list[Sentence]) -> str:
    return "".join(f'<li class="{s.severity}">{s.html}</li>' for s in sentences)


def workload_front(run: Run, workload: str, sentences: list[Sentence],
                   chart: Chart | None = None) -> str:
    """One workload's first screen: clock note, table, per-engine line, warnings, checks, its
    one chart; the rest of its findings in a closed <details>."""
    rows = decisions(run, workload)  # the one decision every line below restates
    clock = [s for s in sentences if s.severity == "clock"]
    warns = [s for s in sentences if s.severity == "warn"]
    rest = [s for s in sentences if s.severity == "info"]
    parts = [f'<h3 id="decide-{slug(workload)}">{escape(workload)}</h3>']
    if clock:
        parts.append(f'<ul class="findings">{_items(clock)}</ul>')
    headline = ttl_headline(run, workload, rows)  # a TTL sweep: state against results, first
    if headline is not None:
        parts.append(f'<ul class="findings front headline">{_items([headline])}</ul>')
    flat = flat_curve(run, workload)  # a kind Flink's TTL does not reach: flat is Flink's answer
    if flat is not None:
        said = Sentence(severity="warn" if flat.differs else "info").t(flat.text)
        parts.append(f'<ul class="findings front headline">{_items([said])}</ul>')
    parts.append(decision_table(run, workload, rows)
                 or f"<p>{MISSING} (no comparable numbers)</p>")
    lines = [s for s in (fastest_per_engine(run, workload, rows),
                         repetitions_hint(run, workload, rows),
                         checks(run, workload), real_engine_front(run, workload)) if s]
    lines += warns
    if lines:
        parts.append(f'<ul class="findings front">{_items(lines)}</ul>')
    if chart is not None:
        parts.append(chart_html(chart))
    if rest:
        parts.append(f'<details class="findings"><summary>All {len(rest)} findings for '
                     f'{escape(workload)}</summary><p class="evidence">{escape(DETAIL_NOTE)}'
                     f'</p><ul class="findings">{_items(rest)}</ul></details>')
    return f'<div class="workload" data-workload="{escape(workload)}">{"".join(parts)}</div>'


def front_html(run: Run, first_charts: dict[str, Chart] | None = None) -> str:
    """The first page of the report, every workload in turn, each with its chart from
    ``first_charts`` (by workload) when it has one."""
    by_workload = findings(run)
    charts = first_charts or {}
    parts = [workload_front(run, w, by_workload.get(w, []), charts.get(w))
             for w in run.workloads]
    if not parts:
        return "<p>The run has no rows to summarise.</p>"
    return f'<p class="evidence">{escape(EVIDENCE_NOTE)}</p>' + "\n".join(parts)
