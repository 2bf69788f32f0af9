"""Flink SQL beside Spark on one operator workload: a table and one figure per workload that ran
on both a ``flink-sql`` lane (the query with ``table.exec.state.ttl``) and ``spark-sql`` (the
same query in Structured Streaming, its state evicted by watermark).

Why a section of its own: the two engines expire state by different rules (a TTL on processing
time against a watermark on event time) and measure it in different units (RocksDB's key
estimate against the state store's rows; a checkpoint's full state size against the checkpoint
folder's bytes). Each cell therefore names the engine's own metric, and the page never divides
one engine's number by the other's: the table puts them side by side, with their spread and
class, and says where a measure means something else on each side.

Agreement with the emulation (the last column): the spark-sql lane compares its query keeping
its state with the emulated operator without TTL over the same events, as multisets of output
rows (``emulation_changed_share``: the share of rows one side emitted and the other did not;
exact, from the events alone). The cell says "agree" when at most :data:`AGREEMENT_BAND` of
them differ and "differ" otherwise - the interval join differs by design where Flink's
operator skips the bids at ts <= lower_ms. Flink SQL's rows have no such number (the
emulation is Flink's operator): "—", not measured.

Two more agreements on Spark's rows, each a verdict where the two numbers are comparable and
"not comparable" or "not measured" with the reason where they are not:

* eviction changed (:func:`eviction_verdict`): Spark's share of outputs its watermark eviction
  changed (``ttl_changed_results``: the query against itself keeping its state) against the
  emulation's share its TTL changed, from statebench's own lanes on the same workload in the
  run (the baseline strategy's scenario first). Both are shares of the query's outputs, so
  they agree within :data:`AGREEMENT_BAND` (absolute) and differ beyond; a kind whose Spark
  state is never evicted (``state_evicted_by_watermark`` 0: group_agg) has no such share.
* state rows (:func:`state_verdict`): Spark's state store rows (``numRowsTotal``, peak)
  against the emulation's live entries (peak), only where one row and one entry stand for the
  same thing (:data:`SAME_STATE_UNIT`: a dedup's one per key on both sides), within
  :data:`AGREEMENT_BAND` of the emulation's; elsewhere the units differ and the cell says so
  (:data:`STATE_UNITS_DIFFER`).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from workloads.report.engines import OWN, engine_of
from workloads.report.figures import Chart, slug
from workloads.report.load import Run, ScenarioKey, backend_label
from workloads.report.stats import stat
from workloads.report.tables import scenario_cell, unit_of
from workloads.report.template import chart_html

#: Each side: Flink SQL's engine (its lanes: ``flink-sql``, ``flink-sql-heap``), and Spark's
#: lane that runs an ``[operator]`` spec's query (the lane registry's, ``workloads.lanes``).
FLINK_SQL = "flink-sql"
SPARK = "spark"
SPARK_SQL = "spark-sql"
#: The largest share of differing output rows at which Spark's outputs still "agree" with the
#: emulation's.
AGREEMENT_BAND = 0.05
AGREEMENT = "agrees with the emulation"
EVICTION_AGREEMENT = "eviction changed: agreement"
STATE_AGREEMENT = "state rows: agreement"
#: Operator kinds whose Spark state store row and emulated state entry are one unit, each with
#: what the unit is.
SAME_STATE_UNIT = {
    "dedup": ("one per (bidder, auction): Spark's deduplication keeps a row per key, the "
              "emulation's deduplicate-state one value per key"),
}
#: Why the other kinds' state rows are not comparable with the emulation's entries.
STATE_UNITS_DIFFER = (
    "not comparable: Spark counts its state store's rows (numRowsTotal) in its own operator's "
    "layout (a stream-stream join's stores on each side, a window's aggregate per key and "
    "window), the emulation counts Flink's state entries (a value, a list element, a map "
    "entry): different units")
#: Why a Spark query never evicted has no eviction-changed share.
NEVER_EVICTED = ("not comparable: Spark's watermark never evicts this query's state (its key "
                 "carries no event time), so nothing changes its outputs")
NO_EMULATION = ("not measured: no scenario of statebench's own lanes (the emulation) on this "
                "workload in the run")


@dataclass(frozen=True)
class Measure:
    """One column: what it stands for and each engine's metric for it."""

    title: str
    flink: str
    spark: str
    note: str = ""


MEASURES = (
    Measure("state (peak)", "estimated_entries", "state_rows",
            "Flink: RocksDB's estimate-num-keys over the job's column families (counts "
            "overwritten and expired entries until a compaction drops them; none on HashMap); "
            "Spark: the state store's rows (numRowsTotal)"),
    Measure("checkpoint", "checkpoint_bytes", "checkpoint_dir_bytes",
            "median over checkpoints. Flink: a completed checkpoint's full state size; Spark: the "
            "state store's files in its checkpoint after a batch (state/**: changelogs and "
            "snapshots)"),
    Measure("throughput", "records_per_s", "records_per_s",
            "the operator's input records over the job's busy time on both sides"),
    Measure("latency", "latency_p99_us", "batch_duration_p50_ms",
            "Flink: p99 of each output row's delay behind the paced clock; Spark: the median "
            "micro-batch's duration (Spark emits per batch)"),
    Measure("outputs", "operator_outputs", "operator_outputs",
            "rows the query emitted (Flink's changelog rows, Spark's sink rows)"),
    Measure("outputs changed", "ttl_changed_results", "ttl_changed_results",
            "the share of outputs the expiry changed against the same query keeping its state"),
    Measure(AGREEMENT, "emulation_changed_share", "emulation_changed_share",
            "Spark: the share of output rows that differ between its query keeping its state "
            "and the emulated operator without TTL (a dedup's first rows, group_agg's final "
            f"value per key); agree within {AGREEMENT_BAND:.0%}, else differ. Flink SQL: none"),
    Measure(EVICTION_AGREEMENT, "", "ttl_changed_results",
            "Spark: the share of outputs its watermark eviction changed against the share the "
            "emulation's TTL changed (statebench's lanes in this run); agree within "
            f"{AGREEMENT_BAND:.0%} points, else differ; a query whose state is never evicted "
            "has none. Flink SQL: none"),
    Measure(STATE_AGREEMENT, "", "state_rows",
            "Spark: its state store's peak rows against the emulation's peak live entries, "
            f"where a row and an entry are one unit (a dedup's key): agree within "
            f"{AGREEMENT_BAND:.0%} of the emulation's, else differ; elsewhere not comparable "
            "(different units). Flink SQL: none"),
)


def agreement_verdict(changed: float, compared: float) -> str:
    """"agree" when at most :data:`AGREEMENT_BAND` of the compared rows differ, else
    "differ" (nothing compared: agree, both sides emitted nothing)."""
    return "agree" if changed <= AGREEMENT_BAND * compared else "differ"


def _agreement_cell(run: Run, key: ScenarioKey, cell: str) -> str:
    """The agreement cell with its verdict (none where the lane compared nothing)."""
    changed = stat(run, key, "emulation_changed_outputs")
    compared = stat(run, key, "emulation_compared_outputs")
    if changed is None or compared is None:
        return cell
    verdict = agreement_verdict(changed.center, compared.center)
    klass = "same" if verdict == "agree" else "different"
    return cell.replace("</td>", f'<br><span class="{klass}" data-verdict="{verdict}">'
                                 f"{verdict} ({changed.center:,.0f} of "
                                 f"{compared.center:,.0f} rows)</span></td>", 1)


def eviction_verdict(spark_share: float, emulation_share: float) -> str:
    """"agree" when Spark's eviction-changed share is within :data:`AGREEMENT_BAND` (absolute)
    of the emulation's TTL-changed share, else "differ"."""
    return "agree" if abs(spark_share - emulation_share) <= AGREEMENT_BAND else "differ"


def state_verdict(spark_rows: float, emulation_entries: float) -> str:
    """"agree" when Spark's peak state rows are within :data:`AGREEMENT_BAND` of the
    emulation's peak live entries (both nothing: agree), else "differ"."""
    return ("agree" if abs(spark_rows - emulation_entries) <= AGREEMENT_BAND * emulation_entries
            else "differ")


def _operator_kind(run: Run, workload: str) -> str | None:
    """The workload's operator kind, from the run's spec (None: not an operator spec)."""
    spec = run.meta.get("spec") or {}
    if spec.get("name") not in (None, workload):
        return None
    return (spec.get("operator") or {}).get("kind")


def _emulation_stat(run: Run, workload: str, metric: str) -> float | None:
    """The emulation's ``metric`` on the workload: statebench's own lanes' scenarios, the
    baseline strategy's first (read-time cleanup only), else the first that has it."""
    from backends.strategies import BASELINE

    keys = _keys(run, workload, OWN)
    keys.sort(key=lambda k: k.strategy != BASELINE)
    for key in keys:
        found = stat(run, key, metric)
        if found is not None:
            return found.center
    return None


def _verdict_cell(cell: str, verdict: str, text: str) -> str:
    klass = "same" if verdict == "agree" else "different"
    return cell.replace("</td>", f'<br><span class="{klass}" data-verdict="{verdict}">'
                                 f"{verdict} ({escape(text)})</span></td>", 1)


def _reason_cell(cell: str, reason: str) -> str:
    verdict = reason.split(":", 1)[0]
    return cell.replace("</td>", f'<br><span class="na" data-verdict="{escape(verdict)}">'
                                 f"{escape(reason)}</span></td>", 1)


def _eviction_cell(run: Run, key: ScenarioKey, cell: str) -> str:
    """Spark's eviction-changed share against the emulation's TTL-changed share."""
    spark = stat(run, key, "ttl_changed_results")
    evicted = stat(run, key, "state_evicted_by_watermark")
    if spark is None:
        if evicted is not None and evicted.center == 0:
            return _reason_cell(cell, NEVER_EVICTED)
        return cell
    emulation = _emulation_stat(run, key.workload, "ttl_changed_results")
    if emulation is None:
        return _reason_cell(cell, NO_EMULATION)
    verdict = eviction_verdict(spark.center, emulation)
    return _verdict_cell(cell, verdict, f"Spark {spark.center:.1%}, emulation {emulation:.1%}")


def _state_cell(run: Run, key: ScenarioKey, cell: str) -> str:
    """Spark's peak state rows against the emulation's peak live entries, where comparable."""
    spark = stat(run, key, "state_rows")
    if spark is None:
        return cell
    kind = _operator_kind(run, key.workload)
    if kind not in SAME_STATE_UNIT:
        return _reason_cell(cell, STATE_UNITS_DIFFER)
    emulation = _emulation_stat(run, key.workload, "live_entries")
    if emulation is None:
        return _reason_cell(cell, NO_EMULATION)
    verdict = state_verdict(spark.center, emulation)
    return _verdict_cell(cell, verdict, f"Spark {spark.center:,.0f} rows, emulation "
                                        f"{emulation:,.0f} entries; {SAME_STATE_UNIT[kind]}")


def _keys(run: Run, workload: str, side: str) -> list[ScenarioKey]:
    """The scenarios of one side: Flink SQL's engine's lanes, or the ``spark-sql`` lane."""
    def on_side(backend: str) -> bool:
        return backend == SPARK_SQL if side == SPARK else engine_of(backend) == side

    return [k for k in run.scenarios(workload)
            if on_side(k.backend) and k not in run.not_applicable]


def _metric(key: ScenarioKey, measure: Measure) -> str:
    return measure.spark if engine_of(key.backend) == SPARK else measure.flink


#: The Spark-only agreement cells beyond the outputs': measure title -> its cell maker.
_SPARK_AGREEMENTS = {EVICTION_AGREEMENT: _eviction_cell, STATE_AGREEMENT: _state_cell}


def _table(run: Run, workload: str, keys: list[ScenarioKey]) -> str:
    head = ('<thead><tr><th scope="col">lane</th><th scope="col">strategy</th>'
            + "".join(f'<th scope="col" title="{escape(m.note)}">{escape(m.title)}</th>'
                      for m in MEASURES) + "</tr></thead>")
    rows = []
    for key in keys:
        cells = []
        for m in MEASURES:
            metric = _metric(key, m)
            if not metric:  # a measure this side has no number for
                cells.append("<td>—</td>")
                continue
            cell = scenario_cell(run, key, metric)
            spark_side = engine_of(key.backend) == SPARK
            if m.title == AGREEMENT and spark_side:
                cell = _agreement_cell(run, key, cell)
            elif m.title in _SPARK_AGREEMENTS and spark_side:
                cell = _SPARK_AGREEMENTS[m.title](run, key, cell)
            cells.append(cell.replace("</td>", f"<br><small>{escape(metric)}</small></td>", 1))
        rows.append(f'<tr data-backend="{escape(key.backend)}" '
                    f'data-strategy="{escape(key.strategy)}"><td>'
                    f'{escape(backend_label(key.backend))}</td><th scope="row">'
                    f'{escape(key.strategy)}</th>{"".join(cells)}</tr>')
    notes = "".join(f"<li><strong>{escape(m.title)}</strong>: {escape(m.note)}</li>"
                    for m in MEASURES)
    return (f'<div class="scroll"><table class="stats" data-workload="{escape(workload)}" '
            f'data-group="cross_engine">{head}<tbody>{"".join(rows)}</tbody></table></div>'
            f"<ul class=\"measure-notes\">{notes}</ul>")


#: Each engine's bar colour on the figure (its legend entry names it).
ENGINE_COLOURS = {FLINK_SQL: ("Flink SQL", "#1f77b4"), SPARK: ("Spark", "#ff7f0e")}


def _figure(run: Run, workload: str, keys: list[ScenarioKey]) -> Chart:
    """One panel per measure, a bar per lane and strategy, each engine's bars a trace of its
    own (so the legend names the engines), each panel's y axis titled with its units."""
    # the latencies measure different things; the agreement is Spark's only
    shown = [m for m in MEASURES
             if m.title not in ("latency", AGREEMENT, EVICTION_AGREEMENT, STATE_AGREEMENT)]
    fig = make_subplots(rows=1, cols=len(shown), subplot_titles=[m.title for m in shown],
                        horizontal_spacing=0.08)
    labels = {k: f"{k.backend}<br>{k.strategy}" for k in keys}
    for col, m in enumerate(shown, start=1):
        units = []
        for engine, (name, colour) in ENGINE_COLOURS.items():
            mine = [k for k in keys if (engine_of(k.backend) == SPARK) == (engine == SPARK)]
            found = [stat(run, k, _metric(k, m)) for k in mine]
            units += [unit_of(run, _metric(k, m)) for k, s in zip(mine, found) if s is not None]
            fig.add_trace(go.Bar(x=[labels[k] for k in mine],
                                 y=[None if s is None else s.center for s in found],
                                 name=name, legendgroup=engine, showlegend=col == 1,
                                 marker_color=colour), row=1, col=col)
        fig.update_yaxes(title_text=" / ".join(dict.fromkeys(units)) or "value",
                         automargin=True, row=1, col=col)
    fig.update_xaxes(title_text="lane, strategy", automargin=True)
    fig.update_layout(height=380, margin={"t": 40, "b": 80}, showlegend=True,
                      legend={"title": {"text": "engine"}}, template="plotly_white")
    return Chart(f"cross-engine-{slug(workload)}", f"{workload}: Flink SQL and Spark",
                 "Each engine's own measure (the table names them), each panel in its units.",
                 fig, sorted({k.strategy for k in keys}))


def cross_engine_html(run: Run) -> str | None:
    """The section for every workload with both a Flink SQL and a Spark SQL scenario that ran
    (None when there is none)."""
    parts = []
    for workload in run.workloads:
        flink, spark = _keys(run, workload, FLINK_SQL), _keys(run, workload, SPARK)
        if not flink or not spark:
            continue
        keys = flink + spark
        parts.append(f"<h3>{escape(workload)}</h3>"
                     "<p>Flink SQL expires state by <code>table.exec.state.ttl</code> (processing "
                     "time, its backend's background cleanup); Spark evicts it when the "
                     "watermark passes (event time). Each cell is the engine's own number; no "
                     f"cell divides one by the other.</p>{_table(run, workload, keys)}"
                     f"{chart_html(_figure(run, workload, keys))}")
    return "\n".join(parts) if parts else None

