"""Side-by-side comparison of two runs (or two sets of interleaved rounds) with ratios b/a.

Each ratio carries a verdict from :mod:`workloads.report.verdict`: exact numbers are "equal" or
"different" (with the difference); timing-dependent and timed numbers (the classes are
``workloads.report.metrics.class_of``) are coloured only on statistical evidence and are
otherwise grey with the reason. A banner above the tables says which numbers the two sides'
environments allow to compare: exact numbers always; timings only as a caveat when the machine,
CPU count, Spark master or library versions differ (their ratios then stay grey).
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from workloads.report.fmt import DASH, MISSING, TIMES, fmt_ratio
from workloads.report.load import Run, ScenarioKey
from workloads.report.metrics import CATALOGUE, spec_for
from workloads.report.tables import environment_items, na_text, stat_cell, unit_of, value_cell
from workloads.report.template import page
from workloads.report.verdict import (
    ALPHA,
    CI_LEVEL,
    MIN_SAMPLES,
    NOTICEABLE,
    Side,
    Verdict,
    judge_all,
    side_stat,
)
from workloads.results.store import write_text_atomic

#: run.json facts that change timings but not counted numbers.
ENVIRONMENT_FIELDS = (
    ("machine", "cpu_model"),
    ("machine", "cores"),
    ("machine", "memory_bytes"),
    ("machine", "platform"),
    ("spark_master",),
)
#: Versions that are the thing under comparison, not its environment.
COMPARED_VERSIONS = frozenset({"statebench"})
#: run.json config fields that change what is measured (so exact numbers may differ).
CONFIG_FIELDS = (
    "events", "parallelism", "source_partitions", "batch_size", "sample_interval_ms",
    "warmup_fraction", "time_speedup", "measure_latency", "max_parallelism", "checkpoints",
)
ENVIRONMENT_CAVEAT = "environments differ"


def _at(meta: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = meta
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _changes(pairs: list[tuple[str, Any, Any]]) -> list[tuple[str, str, str]]:
    return [(name, _show(x), _show(y)) for name, x, y in pairs if x != y]


def _show(value: Any) -> str:
    return MISSING if value is None else str(value)


def environment_changes(a: Side, b: Side) -> list[tuple[str, str, str]]:
    """(field, A, B) for every environment fact that differs between the sides' first runs.

    Within a side of interleaved rounds all runs share one machine, so the first run speaks
    for the side.
    """
    ma, mb = a.first.meta, b.first.meta
    pairs = [(".".join(p), _at(ma, p), _at(mb, p)) for p in ENVIRONMENT_FIELDS]
    va = ma.get("versions") if isinstance(ma.get("versions"), dict) else {}
    vb = mb.get("versions") if isinstance(mb.get("versions"), dict) else {}
    for lib in sorted((set(va) | set(vb)) - COMPARED_VERSIONS):
        pairs.append((lib, va.get(lib), vb.get(lib)))
    return _changes(pairs)


def _specs(meta: dict[str, Any]) -> dict[str, Any]:
    spec = meta.get("spec")
    items = spec if isinstance(spec, list) else [spec]
    return {str(s.get("name")): s for s in items if isinstance(s, dict)}


def configuration_changes(a: Side, b: Side) -> list[tuple[str, str, str]]:
    """(field, A, B) for run configuration and workload spec differences."""
    ca = a.first.meta.get("config") if isinstance(a.first.meta.get("config"), dict) else {}
    cb = b.first.meta.get("config") if isinstance(b.first.meta.get("config"), dict) else {}
    pairs = [(f"config.{f}", ca.get(f), cb.get(f)) for f in CONFIG_FIELDS]
    sa, sb = _specs(a.first.meta), _specs(b.first.meta)
    for name in sorted(set(sa) & set(sb)):
        if sa[name] != sb[name]:
            pairs.append((f"spec {name}", "as in A", "differs"))
    return _changes(pairs)


def _change_list(changes: list[tuple[str, str, str]]) -> str:
    return "; ".join(f"{escape(f)} {escape(x)} → {escape(y)}" for f, x, y in changes)


def banner_html(a: Side, b: Side) -> str:
    """Which numbers may be compared, given both sides' recorded environments."""
    items = []
    env = environment_changes(a, b)
    if env:
        items.append(
            '<li class="warn" data-banner="environment"><strong>Different environments</strong>: '
            f"{_change_list(env)}. Exact numbers (entries, counts, logical bytes, canonical "
            "full-snapshot sizes under a logical clock) are comparable; timings and "
            "timing-dependent sizes are not: their ratios are shown as a caveat, never "
            "coloured.</li>"
        )
    else:
        items.append(
            '<li data-banner="environment">Same machine, CPU count, Spark master and library '
            "versions: exact numbers and timings are comparable (timings subject to the "
            "test below).</li>"
        )
    for side in (a, b):
        for run in side.runs:
            if run.incomplete:
                items.append('<li class="warn" data-banner="incomplete"><strong>'
                             f"{escape(side.label)} {escape(run.run_id)}</strong>: "
                             f"{escape(run.incomplete)}; its "
                             "unfinished scenarios are missing from the comparison.</li>")
    config = configuration_changes(a, b)
    if config:
        items.append(
            '<li class="warn" data-banner="configuration"><strong>Different configurations'
            f"</strong>: {_change_list(config)}. Differences may come from the configuration, "
            "not the code.</li>"
        )
    return f'<ul class="findings banner">{"".join(items)}</ul>'


def legend_html(a: Side, b: Side, alpha: float = ALPHA) -> str:
    """How to read the ratio column; states the tests and their alpha."""
    rounds = ""
    test = f"a two-sided exact Mann{DASH}Whitney U test"
    interval = "ratio (Welch's t on the log values)"
    if a.interleaved and b.interleaved:
        rounds = (f" A and B ran alternately, {len(a.runs)} rounds each: rounds are compared "
                  "pairwise (the ratio shown is the geometric mean of the rounds' B/A), so "
                  "drift over the session cancels.")
        test = "a two-sided exact sign-flip test of the rounds' log B/A"
        interval = "geometric mean of the rounds' B/A"
    elif len(a.runs) > 1 or len(b.runs) > 1:
        rounds = (f" A has {len(a.runs)} runs, B has {len(b.runs)}: each run's number is one "
                  "sample.")
    return (
        "<p>Ratios are B/A of each summary number (median of repetitions, median over "
        f"checkpoints, or peak over time).{rounds} <strong>Exact</strong> numbers (counted under "
        "a logical clock: entries, logical bytes, canonical "
        "full-snapshot sizes, cleanup counts) read <em>equal</em> or <em>different</em> with "
        "the difference. <strong>Timing-dependent</strong> numbers (RocksDB's files, counters "
        "and incremental checkpoint sizes, the heap's footprint under copy-on-write snapshots, "
        "the state under RocksDB's compaction filter, every count "
        "on a processing-time clock: background threads decide them) and <strong>timed</strong>"
        " numbers are never <em>different</em>: they are green (B better) or red (B worse) "
        "only when both "
        f"sides have ≥{MIN_SAMPLES} samples, {test} rejects "
        f"“no change” at alpha={alpha:g} also after adjusting for the number of tests on this "
        f"page (Benjamini{DASH}Hochberg q &lt; alpha: two runs of identical code colour nothing "
        f"except with probability alpha), the {CI_LEVEL:.0%} t interval of the "
        f"{interval} excludes 1{TIMES} and the change is ≥{NOTICEABLE:.0%}. Otherwise grey, with "
        "the reason. For a verdict on two commits, use interleaved rounds "
        "(<code>statebench ab</code> or <code>statebench diff --rerun</code>).</p>"
    )


def _metrics(a: Side, b: Side, key: ScenarioKey) -> list[str]:
    present: set[str] = set()
    for run in (*a.runs, *b.runs):
        present |= set(run.samples.get(key, {}))
    known = [m for m in CATALOGUE if m in present]
    return known + sorted(present - set(known))


def _na_cell(run: Run, key: ScenarioKey) -> str | None:
    if key in run.not_applicable:
        return f'<td class="na">{escape(na_text(run.not_applicable[key]))}</td>'
    if key not in run.samples:
        return '<td class="na">not in this run</td>'
    return None


def _verdict_cells(metric: str, v: Verdict) -> str:
    name = f'data-metric="{escape(metric)}"'
    return (
        f'<td class="num ratio {v.css}" {name}>{escape(fmt_ratio(v.ratio))}</td>'
        f'<td class="why {v.css}" {name} data-kind="{v.kind}">{escape(v.note)}</td>'
    )


def _keys(a: Side, b: Side, workload: str) -> list[ScenarioKey]:
    first_a, first_b = a.first, b.first
    return sorted(
        set(first_a.scenarios(workload)) | set(first_b.scenarios(workload)),
        key=lambda k: (
            _pos(first_a.backends + first_b.backends, k.backend),
            _pos(first_a.strategies + first_b.strategies, k.strategy),
        ),
    )


def _workloads(a: Side, b: Side) -> list[str]:
    return sorted(set(a.first.workloads) | set(b.first.workloads))


def _measured(a: Side, b: Side, key: ScenarioKey) -> bool:
    return _na_cell(a.first, key) is None and _na_cell(b.first, key) is None


def page_verdicts(a: Side, b: Side, alpha: float = ALPHA
                  ) -> dict[tuple[ScenarioKey, str], Verdict]:
    """Every verdict of the page, tested as one family; timings grey if environments differ."""
    caveat = ENVIRONMENT_CAVEAT if environment_changes(a, b) else ""
    items = [(key, metric) for workload in _workloads(a, b) for key in _keys(a, b, workload)
             if _measured(a, b, key) for metric in _metrics(a, b, key)]
    return judge_all(a, b, items, alpha=alpha, caveat=caveat)


def _scenario_rows(a: Side, b: Side, key: ScenarioKey,
                   verdicts: dict[tuple[ScenarioKey, str], Verdict]) -> list[str]:
    head = f'<th scope="row">{escape(key.backend)}</th><th scope="row">{escape(key.strategy)}</th>'
    na_a, na_b = _na_cell(a.first, key), _na_cell(b.first, key)
    if na_a or na_b:
        return [
            f'<tr class="na">{head}<td>—</td>{na_a or "<td>measured</td>"}'
            f'{na_b or "<td>measured</td>"}<td class="num missing">{MISSING}</td><td></td></tr>'
        ]
    rows = []
    for metric in _metrics(a, b, key):
        verdict = verdicts[(key, metric)]
        spec = spec_for(metric)
        label = f"{spec.label} ({spec.group})" if spec.group != "other" else spec.label
        rows.append(
            f"<tr>{head}<td>{escape(label)}</td>"
            f"{stat_cell(side_stat(a, key, metric), unit_of(a.first, metric), klass=verdict.cls)}"
            f"{stat_cell(side_stat(b, key, metric), unit_of(b.first, metric), klass=verdict.cls)}"
            f"{_verdict_cells(metric, verdict)}</tr>"
        )
    return rows


def _side(label: str, value: Run | Side) -> Side:
    return value if isinstance(value, Side) else Side.of(label, value)


def diff_tables(a: Run | Side, b: Run | Side, alpha: float = ALPHA) -> str:
    """One table per workload with A, B, b/a and the verdict for every metric of every scenario."""
    sa, sb = _side("A", a), _side("B", b)
    verdicts = page_verdicts(sa, sb, alpha)
    parts = []
    for workload in _workloads(sa, sb):
        rows = "".join(r for k in _keys(sa, sb, workload)
                       for r in _scenario_rows(sa, sb, k, verdicts))
        parts.append(
            f'<h3>{escape(workload)}</h3><div class="scroll"><table class="diff" '
            f'data-workload="{escape(workload)}"><thead><tr><th>backend</th><th>strategy</th>'
            f"<th>metric</th><th>A: {escape(_title(sa))}</th><th>B: {escape(_title(sb))}</th>"
            f"<th>B/A</th><th>evidence</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )
    return "\n".join(parts)


def _title(side: Side) -> str:
    name = side.source or (side.first.run_id if len(side.runs) == 1 else side.label)
    return name if len(side.runs) == 1 else f"{name} ({len(side.runs)} runs)"


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


def diff_page(a: Side, b: Side, alpha: float = ALPHA) -> str:
    """The whole comparison page: header, banner, legend, ratio tables, environment."""
    header = (
        f"<h1>statebench diff — <code>{escape(_title(a))}</code> → "
        f"<code>{escape(_title(b))}</code></h1>{banner_html(a, b)}{legend_html(a, b, alpha)}"
    )
    sections = [
        ("ratios", "Summary metrics, B/A", diff_tables(a, b, alpha)),
        ("environment", "Environment", environment_diff(a.first, b.first)),
    ]
    return page(f"statebench diff {_title(a)} vs {_title(b)}", header, sections,
                with_plotly=False)


def write_diff_page(a: Side, b: Side, out: str | Path, alpha: float = ALPHA) -> Path:
    """Write :func:`diff_page` to ``out`` and return it."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, diff_page(a, b, alpha))  # complete or not at all
    return path


def summary_lines(a: Side, b: Side, metrics: tuple[str, ...] = ("records_per_s",),
                  alpha: float = ALPHA) -> list[str]:
    """Plain-text verdicts for the terminal, as on the page: one line per scenario and metric."""
    verdicts = page_verdicts(a, b, alpha)
    lines = []
    for (key, metric), v in verdicts.items():
        if metric in metrics and v.ratio is not None:
            lines.append(f"{key.label}  {spec_for(metric).label}  {fmt_ratio(v.ratio)}  "
                         f"{v.note}")
    return lines
