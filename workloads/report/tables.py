"""HTML tables: summary numbers with spread, not-applicable scenarios, environment, spec.

Every piece of run-provided text passes through ``html.escape`` here; the functions return
HTML fragments that the page template assembles.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from backends.strategies import strategy_of_label
from workloads.lanes import ENGINES
from workloads.report.engines import OWN, UNREGISTERED, engine_of, engine_title, possessive
from workloads.report.fmt import DASH, MISSING, fmt_range, fmt_value, iec_bytes
from workloads.report.load import Run, ScenarioKey, backend_label, is_reference
from workloads.report.metrics import (
    CATALOGUE,
    EXACT,
    GROUPS,
    LAG_STATS,
    LOCKSTEP,
    MECHANISMS,
    NOT_APPLICABLE,
    OPTIONAL_GROUPS,
    TIMING_DEPENDENT,
    lag_metric,
    run_class_of,
    run_lockstep_latency,
    spec_for,
)
from workloads.report.runinfo import is_paced, paced_note
from workloads.report.stats import Stat, stat


def na_text(reason: str) -> str:
    """How a not-applicable scenario reads in a cell."""
    return f"n/a ({reason})" if reason else "n/a"


def metrics_by_group(run: Run) -> dict[str, list[str]]:
    """Catalogue metrics (always, so absent ones show "—") plus any unknown metric the run has."""
    groups: dict[str, list[str]] = {g: [] for g, _ in GROUPS}
    for name, spec in CATALOGUE.items():
        if spec.legacy and name not in run.units:
            continue
        groups[spec.group].append(name)
    extra = sorted(set(run.units) - set(CATALOGUE) - {NOT_APPLICABLE})
    for name in extra:
        groups[spec_for(name, run.units[name]).group].append(name)
    return groups


def unit_of(run: Run, metric: str) -> str:
    return run.units.get(metric) or spec_for(metric).unit


def metric_class(run: Run, key: ScenarioKey, metric: str) -> str:
    """The metric's class in this scenario of ``run`` (``metrics.class_of``)."""
    return run_class_of([run.meta], key.workload, key.backend, key.strategy, metric).cls


def behind(run: Run, key: ScenarioKey) -> str:
    """How far a paced job fell behind, from the run's own numbers where it has them:
    " (98.0% of records late, up to 2.80 s behind)"; "" when it has neither."""
    late, lag = stat(run, key, "late_records_share"), stat(run, key, "schedule_lag_max_ms")
    parts = []
    if late is not None:
        parts.append(f"{fmt_value(late.center, 'share')} of records late")
    if lag is not None:
        parts.append(f"up to {fmt_value(lag.center, 'ms')} behind")
    return f" ({', '.join(parts)})" if parts else ""


def lockstep_note(run: Run, key: ScenarioKey, metric: str) -> str:
    """What a lockstep job's latency measures (``metrics.lockstep_latency``), with how far the
    job fell behind; "" for a number that is the engine's latency."""
    if not run_lockstep_latency([run.meta], key.workload, key.backend, metric):
        return ""
    return LOCKSTEP + behind(run, key)


def scenario_cell(run: Run, key: ScenarioKey, metric: str) -> str:
    """One scenario's cell for ``metric``: its number, class and, for a lockstep job's
    latency, what that latency measures (every table that shows a scenario's number)."""
    return stat_cell(stat(run, key, metric), unit_of(run, metric), metric,
                     metric_class(run, key, metric), lockstep_note(run, key, metric))


def stat_cell(s: Stat | None, unit: str, metric: str = "", klass: str = "",
              note: str = "") -> str:
    """A table cell: the headline value, then spread in small print (or "—" if missing).

    ``data-metric`` names the metric so tests (and user scripts) can find a cell without
    depending on column order; ``data-class`` its class (exact, timing-dependent, timed) when
    given, and a timing-dependent number says so under its spread. ``note`` (a lockstep job's
    latency: :func:`lockstep_note`) says under the spread what the number measures, and
    ``data-lockstep`` marks the cell.
    """
    attr = f' data-metric="{escape(metric)}"' if metric else ""
    attr += f' data-class="{escape(klass)}"' if klass else ""
    attr += ' data-lockstep="true"' if note else ""
    if s is None:
        return f'<td class="num missing"{attr}>{MISSING}</td>'
    if s.basis.startswith("peak") and not s.per_repetition:  # (else: over repetitions' peaks)
        lines = [f"range {fmt_range(s.lo, s.hi, unit)} · n={s.n}"]
        if s.last is not None:
            lines.append(f"final {fmt_value(s.last, unit)}")
    elif s.n > 1:
        lines = [
            f"min{DASH}max {fmt_range(s.lo, s.hi, unit)}",
            f"IQR {fmt_range(s.q1, s.q3, unit)} · n={s.n}",
        ]
    else:
        lines = ["n=1"]
    if klass == TIMING_DEPENDENT:
        lines.append("timing-dependent")
    if note:
        lines.append(note)
    detail = "<br>".join(escape(line) for line in lines)
    title = escape(f"{s.basis}; exact value {s.center:.6g}")
    shown = escape(fmt_value(s.center, unit))
    return (
        f'<td class="num"{attr} title="{title}"><span class="v">{shown}</span>'
        f'<span class="spread">{detail}</span></td>'
    )


def _header(run: Run, metrics: list[str]) -> str:
    cells = "".join(
        f'<th scope="col">{escape(spec_for(m).label)}<span class="unit">'
        f"{escape(unit_of(run, m))}</span></th>"
        for m in metrics
    )
    first = '<th scope="col">backend</th><th scope="col">strategy</th>'
    return f"<thead><tr>{first}{cells}</tr></thead>"


def _row(run: Run, key: ScenarioKey, metrics: list[str]) -> str:
    ids = f'data-backend="{escape(key.backend)}" data-strategy="{escape(key.strategy)}"'
    head = (f'<td>{escape(backend_label(key.backend))}</td>'
            f'<th scope="row">{escape(key.strategy)}</th>')
    if key in run.not_applicable:
        text = escape(na_text(run.not_applicable[key]))
        return (
            f'<tr class="na" {ids}>{head}<td class="na" colspan="{len(metrics)}">{text}</td></tr>'
        )
    cells = "".join(scenario_cell(run, key, m) for m in metrics)
    return f"<tr {ids}>{head}{cells}</tr>"


def _with_data(run: Run, keys: list[ScenarioKey], metrics: list[str]) -> list[ScenarioKey]:
    """The scenarios of backends on which some scenario measured one of ``metrics`` (an
    optional group's table leaves out backends that cannot have its numbers)."""
    backends = {k.backend for k in keys if any(run.get(k, m) is not None for m in metrics)}
    return [k for k in keys if k.backend in backends]


def _mechanisms(run: Run, key: ScenarioKey) -> list[tuple[str, str]]:
    """The cleanup mechanisms one scenario's lag table lists: on read (every TTL strategy),
    the strategy's own mechanism, and any other that recorded a lag."""
    base = key.strategy.split("(", 1)[0].strip()
    return [
        (m, label) for m, label in MECHANISMS
        if m in ("read", base)
        or any(run.get(key, lag_metric(m, st)) is not None for st in LAG_STATS)
    ]


def cleanup_lag_table(run: Run, workload: str, title: str) -> str:
    """Cleanup lag per mechanism: a row per (scenario, mechanism) with the entries that
    mechanism removed and its lag p50/p99/max; "" when the run has no per-mechanism lags."""
    keys = run.scenarios(workload)
    lags = [lag_metric(m, st) for m, _ in MECHANISMS for st in LAG_STATS]
    if not any(run.get(k, m) is not None for k in keys for m in lags):
        return ""
    head = (
        '<thead><tr><th scope="col">backend</th><th scope="col">strategy</th>'
        '<th scope="col">mechanism</th><th scope="col">removed<span class="unit">entries'
        "</span></th>"
        + "".join(f'<th scope="col">lag {st}<span class="unit">ms</span></th>'
                  for st in LAG_STATS)
        + "</tr></thead>"
    )
    rows = []
    for key in keys:
        if is_reference(key.backend):
            continue  # nothing to show: the note under the table says why
        ids = f'data-backend="{escape(key.backend)}" data-strategy="{escape(key.strategy)}"'
        head_cells = (f'<td>{escape(backend_label(key.backend))}</td>'
                      f'<th scope="row">{escape(key.strategy)}</th>')
        if key in run.not_applicable:
            text = escape(na_text(run.not_applicable[key]))
            rows.append(f'<tr class="na" {ids}>{head_cells}<td class="na" '
                        f'colspan="{2 + len(LAG_STATS)}">{text}</td></tr>')
            continue
        for mechanism, label in _mechanisms(run, key):
            removed = f"cleanup_removed_{mechanism}"
            cells = stat_cell(stat(run, key, removed), unit_of(run, removed), removed,
                              metric_class(run, key, removed)) + "".join(
                stat_cell(stat(run, key, m), "ms", m, metric_class(run, key, m))
                for m in (lag_metric(mechanism, st) for st in LAG_STATS)
            )
            rows.append(f'<tr {ids} data-mechanism="{escape(mechanism)}">{head_cells}'
                        f"<td>{escape(label)}</td>{cells}</tr>")
    return (
        f'<h4>{escape(title)}</h4><div class="scroll"><table class="stats" '
        f'data-workload="{escape(workload)}" data-group="cleanup_lag">'
        f"{head}<tbody>{''.join(rows)}</tbody></table></div>{_unmeasured_lag_note(keys)}"
    )


def _in_compactions(label: str) -> bool:
    """Whether scenario ``label``'s strategy cleans inside compactions (no lag measurable)."""
    found = strategy_of_label(label)
    return found is not None and found.cleans_in_compactions


def _unmeasured_lag_note(keys: list[ScenarioKey]) -> str:
    """Why some lag cells stay empty, for the scenarios of this table that have such cells."""
    reasons = []
    if any(_in_compactions(k.strategy) and not is_reference(k.backend) for k in keys):
        reasons.append("The compaction filter's lag is not measurable: RocksDB drops expired "
                       "entries inside its compactions and reports only how many.")
    engines = {engine_of(k.backend) for k in keys} - {OWN, UNREGISTERED}
    known = [e for e in ENGINES if e in engines]  # the registry's order, then the others
    for engine in [*known, *sorted(engines - set(known))]:
        note = engine_title(engine).lag_note
        if note is None:
            note = f"{possessive(engine)} lanes are left out: they report no removal's lag."
        if note and note not in reasons:
            reasons.append(note)
    if not reasons:
        return ""
    return f'<p class="lag-note">{escape(" ".join(reasons))}</p>'


def clock_badge(run: Run, workload: str) -> str:
    """A badge and note saying a workload's numbers are wall-clock driven ("" if they are
    not: event-time workloads count on a logical clock)."""
    if not is_paced(run, workload):
        return ""
    return (
        f'<p class="clock-note" data-clock="paced" data-workload="{escape(workload)}">'
        f'<span class="badge">wall-clock driven</span> {escape(paced_note(run, workload))}</p>'
    )


def summary_tables(run: Run, workload: str) -> str:
    """One table per metric group for ``workload`` (rows: backend x strategy), after the
    wall-clock badge of a paced workload. Optional groups (schedule lag, RocksDB counters)
    appear only where measured; cleanup lag has a row per mechanism."""
    keys = run.scenarios(workload)
    groups = metrics_by_group(run)
    parts = [clock_badge(run, workload)] if is_paced(run, workload) else []
    paced = ' data-clock="paced"' if is_paced(run, workload) else ""
    for group, title in GROUPS:
        if group == "cleanup_lag":
            parts.append(cleanup_lag_table(run, workload, title))
            continue
        metrics = groups[group]
        if not metrics:
            continue
        shown = keys
        if group in OPTIONAL_GROUPS:
            shown = _with_data(run, keys, metrics)
            if not shown:
                continue
        rows = "".join(_row(run, k, metrics) for k in shown)
        parts.append(
            f'<h4>{escape(title)}</h4><div class="scroll"><table class="stats" '
            f'data-workload="{escape(workload)}" data-group="{escape(group)}"{paced}>'
            f"{_header(run, metrics)}<tbody>{rows}</tbody></table></div>"
            f"{lockstep_table_note(run, shown, metrics)}"
        )
    parts.append(CLASSES_NOTE)
    return "\n".join(p for p in parts if p)


def lockstep_backends(run: Run, keys: list[ScenarioKey], metrics: list[str]) -> list[str]:
    """The backends of ``keys`` one of whose ``metrics`` is a lockstep job's latency, in run
    order."""
    return list(dict.fromkeys(
        k.backend for k in keys if k not in run.not_applicable
        and any(run.get(k, m) is not None
                and run_lockstep_latency([run.meta], k.workload, k.backend, m)
                for m in metrics)))


def lockstep_table_note(run: Run, keys: list[ScenarioKey], metrics: list[str]) -> str:
    """One line under a table that shows a lockstep job's latency: what it measures, and that
    the report ranks it against no other lane's latency ("" when the table shows none)."""
    found = lockstep_backends(run, keys, metrics)
    if not found:
        return ""
    names = ", ".join(backend_label(b) for b in found)
    return (f'<p class="lockstep-note" data-lockstep="true">{escape(names)}: under event time '
            "its job runs in lockstep (its source holds each record until the keyed tasks "
            "took the one before, for its TTL clock to follow the records' time): its latency "
            f"is {escape(LOCKSTEP.split(': ', 1)[1])}, not the engine's per-record latency, "
            "and the report ranks it against no other lane's latency.</p>")


#: How to read a number, by its class (``metrics.class_of``), under every workload's tables.
CLASSES_NOTE = (
    '<p class="classes-note">Three kinds of numbers: <strong>exact</strong> ones are counted '
    "on the logical clock and repeat exactly run after run (entry counts, logical bytes, "
    "canonical full-snapshot sizes, cleanup counts and lags); "
    f"<strong>{TIMING_DEPENDENT}</strong> ones (marked) are physical and move with background "
    "threads (RocksDB's SST, physical and memtable bytes, flushes, compactions, write "
    "amplification, RocksDB's incremental checkpoint sizes, the heap's footprint under "
    "copy-on-write snapshots, the state under RocksDB's compaction filter, every count on a "
    "processing-time clock); <strong>timed</strong> ones "
    "(throughput, latency, durations, CPU, GC) are measured with the spread shown. Only "
    f"{EXACT} numbers may be compared exactly.</p>"
)


def not_applicable_table(run: Run) -> str:
    """The scenarios that were deliberately not run, with run.json's reason."""
    if not run.not_applicable:
        return "<p>Every strategy applied to every backend.</p>"
    rows = "".join(
        f"<tr><td>{escape(k.workload)}</td><td>{escape(k.backend)}</td>"
        f"<td>{escape(k.strategy)}</td><td>{escape(reason or MISSING)}</td></tr>"
        for k, reason in sorted(run.not_applicable.items())
    )
    return (
        "<table><thead><tr><th>workload</th><th>backend</th><th>strategy</th><th>reason</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def pretty_json(data: Any) -> str:
    """Deterministic, readable JSON for <pre> blocks (unknown objects fall back to str)."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def _scalar(value: Any, key: str = "") -> str:
    if value is None or value == "":
        return MISSING
    if key == "memory_bytes" and isinstance(value, int | float):
        return f"{iec_bytes(float(value))} ({int(value):,} bytes)"
    if key == "duration_s" and isinstance(value, int | float):
        return fmt_value(float(value) * 1e3, "ms")
    if isinstance(value, dict | list):
        return pretty_json(value)
    return str(value)


def value_cell(key: str, value: Any) -> str:
    """A <td> for one provenance value; multi-line values (nested JSON) go in a <pre>."""
    text = _scalar(value, key.rsplit(" ", 1)[-1])
    return f"<td><pre>{escape(text)}</pre></td>" if "\n" in text else f"<td>{escape(text)}</td>"


def kv_table(items: list[tuple[str, Any]], css: str = "kv") -> str:
    """A two-column key/value table; nested values are shown as JSON."""
    rows = "".join(
        f'<tr><th scope="row">{escape(key)}</th>{value_cell(key, value)}</tr>'
        for key, value in items
    )
    return f'<table class="{css}"><tbody>{rows}</tbody></table>'


def environment_items(meta: dict[str, Any]) -> list[tuple[str, Any]]:
    """Flatten run.json's provenance fields into (label, value) rows, in a fixed order."""
    items: list[tuple[str, Any]] = [
        (k, meta.get(k))
        for k in ("run_id", "created_utc", "duration_s", "git_commit", "spark_master")
    ]
    for section in ("machine", "versions"):
        block = meta.get(section)
        if isinstance(block, dict):
            items.extend((f"{section} {k}", v) for k, v in block.items())
        else:
            items.append((section, block))
    return items


def environment_table(meta: dict[str, Any]) -> str:
    """Machine, versions, git commit and master, then the run's config as JSON."""
    table = kv_table(environment_items(meta))
    config = meta.get("config")
    config_html = (
        f'<h3>Configuration</h3><pre class="json">{escape(pretty_json(config))}</pre>'
        if config is not None
        else "<h3>Configuration</h3><p>—</p>"
    )
    return table + config_html


def spec_block(meta: dict[str, Any]) -> str:
    """The exact workload spec(s) the run used, pretty-printed."""
    spec = meta.get("spec")
    if spec is None:
        return f"<p>{MISSING} (run.json has no spec)</p>"
    return f'<pre class="json" id="spec-json">{escape(pretty_json(spec))}</pre>'
