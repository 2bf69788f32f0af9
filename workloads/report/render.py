"""Public entry points: ``render_report`` (one run) and ``render_diff`` (two runs).

Both write a single self-contained HTML file and return its path. A run's report opens on its
first page (what to pick: the decision tables, one chart per workload); every other section is
a tab of the same file (``template.page``).  Assembly only: loading,
statistics, findings, figures and tables each live in their own module.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from workloads.report.cross_engine import cross_engine_html
from workloads.report.diff import diff_page
from workloads.report.fidelity import fidelity_html
from workloads.report.figures import Chart, charts
from workloads.report.fmt import MISSING, TIMES, fmt_value
from workloads.report.front import front_html
from workloads.report.load import Run, load_run
from workloads.report.real_engine import real_engine_html
from workloads.report.tables import (
    environment_table,
    not_applicable_table,
    spec_block,
    summary_tables,
)
from workloads.report.template import chart_html, page
from workloads.report.ttl_curve import ttl_curve_table
from workloads.report.verdict import Side
from workloads.results.store import write_text_atomic

SECTION_TITLES = {
    "state": "State over time",
    "perf": "Throughput & latency",
    "checkpoint": "Checkpoints",
    "rocksdb": "RocksDB activity",
    "sweep": "Knob sweep",
}
#: The charts on the first page, one per workload (the rest are a tab away).
FIRST_PAGE = "pareto"


def _meta(run: Run, key: str) -> str:
    value = run.meta.get(key)
    return MISSING if value in (None, "") else str(value)


def _header(run: Run) -> str:
    duration = run.meta.get("duration_s")
    took = fmt_value(float(duration) * 1e3, "ms") if isinstance(duration, int | float) else MISSING
    n, na = len(run.scenarios()), len(run.not_applicable)
    commit = _meta(run, "git_commit")[:12]
    grid = (run.workloads, run.backends, run.strategies)
    return (
        f"<h1>statebench report — <code>{escape(run.run_id)}</code></h1>"
        f"<p>created {escape(_meta(run, 'created_utc'))} · took {escape(took)} · "
        f"git {escape(commit)} · master {escape(_meta(run, 'spark_master'))} · "
        f"{n} scenarios ({na} not applicable): "
        + f" {TIMES} ".join(escape(", ".join(names)) for names in grid)
        + "</p>"
        + (f'<p class="warn" data-banner="incomplete"><strong>{escape(run.incomplete)}'
           "</strong>: the scenarios that did not run read \"not run\"; every number here "
           "is of the jobs that finished.</p>" if run.incomplete else "")
    )


def _charts_html(items: list[Chart]) -> str:
    return "\n".join(chart_html(c) for c in items) or f"<p>{MISSING} (no data for this view)</p>"


def report_html(run: Run) -> str:
    """The full report page for ``run`` as a string: the first page (the decision tables and
    one chart per workload), every other section a tab of the same file."""
    by_section = charts(run)
    first = {c.workload: c for c in by_section.pop(FIRST_PAGE, [])}
    sections = [("findings", "What to pick", front_html(run, first))]
    for name, items in by_section.items():
        html = _charts_html(items)
        if name == "sweep":  # a TTL sweep's state-vs-TTL numbers under its curve
            html += "\n".join(ttl_curve_table(run, w) for w in run.workloads)
        sections.append((name, SECTION_TITLES[name], html))
    fidelity = fidelity_html(run)  # only when the run has Flink reference lanes
    if fidelity is not None:
        sections.append(("fidelity", "Fidelity: statebench vs Flink", fidelity))
    real = real_engine_html(run)  # only with a flink-sql lane beside an emulated one
    if real is not None:
        sections.append(("real-engine", "The real engine beside the emulation", real))
    engines = cross_engine_html(run)  # only with flink-sql and spark-sql scenarios of a workload
    if engines is not None:
        sections.append(("cross-engine", "Flink SQL beside Spark", engines))
    tables = "\n".join(f"<h3>{escape(w)}</h3>{summary_tables(run, w)}" for w in run.workloads)
    sections += [
        ("tables", "Summary tables", tables or f"<p>{MISSING}</p>"),
        ("not-applicable", "Not applicable", not_applicable_table(run)),
        ("environment", "Environment", environment_table(run.meta)),
        ("spec", "Workload spec", spec_block(run.meta)),
    ]
    return page(f"statebench report {run.run_id}", _header(run), sections, with_plotly=True,
                tabs=True)


def render_report(run_dir: str | Path, out_path: Path | None = None) -> Path:
    """Render ``run_dir`` (rows.parquet + run.json) to ``out_path`` or ``run_dir/report.html``."""
    run = load_run(run_dir)
    out = Path(out_path) if out_path is not None else run.run_dir / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, report_html(run))  # never a truncated page that looks complete
    return out


def diff_html(a: Run, b: Run) -> str:
    """The comparison page for runs ``a`` and ``b`` as a string (see ``report/diff.py``)."""
    return diff_page(Side.of("A", a), Side.of("B", b))


def render_diff(run_a: str | Path, run_b: str | Path, out_path: str | Path | None = None) -> Path:
    """Render runs A and B side by side with ratios b/a; default output ``run_b/diff.html``."""
    a, b = load_run(run_a), load_run(run_b)
    out = Path(out_path) if out_path is not None else b.run_dir / "diff.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, diff_html(a, b))
    return out
