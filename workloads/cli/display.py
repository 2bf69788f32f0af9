"""What the CLI prints about a run: one line for an error that arrives as many (a Flink
command's Java stack, a Spark task's), and the summary table of a run's numbers.

Errors: a failed command in a Flink lane's worker carries the whole Java stack (70 lines for a
checkpoint folder that became unwritable), and its first line is Flink's outermost wrapper
("Could not flush to file and close the file system output stream ...") rather than the cause.
The cause is the deepest ``Caused by:``; when it is a file that could not be opened, the folder
is what the user can act on. The full text stays available behind ``--verbose``.

The summary table: one row per backend and strategy, each number from the shared summaries
(``workloads.results.summaries``, the report's headline numbers too). A lane that measures its
state or its checkpoints in its own terms (Spark's state store rows, its checkpoint folder)
shows what it measured, named, instead of "-": "-" says only that nothing was measured.
"""

from __future__ import annotations

import os
import re
from typing import Any

_CAUSE = re.compile(r"^Caused by: (?P<type>[\w.$]+)(?::\s*(?P<msg>.*))?$")
_FILE = re.compile(r"^(?P<path>/.*?) \((?P<why>[^()]*)\)$")


def _short_type(java_type: str) -> str:
    return java_type.rsplit(".", 1)[-1]


def flink_summary(text: str) -> str:
    """The one line of a Flink worker error: its root cause, and the folder when the cause is
    a file that could not be written or opened."""
    lines = [line.strip() for line in text.strip().splitlines()]
    first = lines[0] if lines else "unknown error"
    causes = [m for m in (_CAUSE.match(line) for line in lines) if m is not None]
    if not causes:
        return first
    root = causes[-1]
    message = (root["msg"] or "").strip()
    found = _FILE.match(message)
    if found is not None:
        folder = os.path.dirname(found["path"])
        return f"Flink could not write into {folder} ({found['why']})"
    return f"Flink failed: {_short_type(root['type'])}" + (f": {message}" if message else "")


# ------------------------------------------------------------------------------------------------
# The summary table a run prints (``statebench run``, ``statebench compare``)
# ------------------------------------------------------------------------------------------------

#: One column of the summary table: its header and what it shows, in order of preference per
#: scenario: (metric, unit as ``workloads.report.fmt`` formats it, the name a number takes
#: when it is not the column's own quantity, "" for the column's own). A lane that measures
#: its state or its checkpoints otherwise (Spark's state store rows, its checkpoint folder)
#: shows what it measured under that name rather than "-" (not measured).
SummaryColumn = tuple[str, tuple[tuple[str, str, str], ...]]

#: Notes printed under the table for the named quantities it shows.
QUANTITY_NOTES = {
    "state rows": "state rows: Spark's state store rows (numRowsTotal), peak over its "
                  "micro-batches; not entries",
    "est. entries": "est. entries: RocksDB's estimate of its keys (a Flink SQL job), peak; "
                    "counts overwritten and expired entries until a compaction drops them",
    "physical": "physical: the state's physical bytes, peak (no entry count)",
    "folder": "folder: the state store's files in Spark's checkpoint (state/**: changelogs "
              "and snapshots) after a micro-batch, median; not one checkpoint's size",
}


def summary_columns() -> tuple[SummaryColumn, ...]:
    """The table's columns (throughput, p99 latency, peak state, checkpoint size)."""
    from workloads.results.summaries import STORED_ENTRIES

    return (
        ("records/s", (("records_per_s", "", ""),)),
        ("p99 latency", (("latency_p99_us", "us", ""),)),
        ("peak state", ((STORED_ENTRIES, "entries", ""), ("state_rows", "rows", "state rows"),
                        ("estimated_entries", "entries", "est. entries"),
                        ("physical_bytes", "bytes", "physical"))),
        ("ckpt bytes", (("checkpoint_bytes", "bytes", ""),
                        ("checkpoint_dir_bytes", "bytes", "folder"))),
    )


def _number(value: float, unit: str) -> str:
    """A summary cell as the report writes the number (a duration in us, ms or s: SI prefixes
    on a unit of time read "259.00 kus" and "2.79 Mus")."""
    from workloads.report.fmt import fmt_value

    return fmt_value(float(value), unit).replace("\u00b5s", "us")  # ASCII on any terminal


def summary_rows(outcome: Any) -> list[dict[str, Any]]:
    """Per backend x strategy of the run's workload: each column's cell (the headline of the
    first of its metrics the scenario measured: median of repetitions, peak over logical time,
    median over checkpoints, each repetition apart), "-" where none was measured; and the
    not-applicable ones with their reason."""
    from workloads.results.summaries import summaries

    stats = summaries(outcome.rows)
    name = outcome.config.spec.name
    columns = summary_columns()
    out: list[dict[str, Any]] = [
        {"backend": n.backend, "strategy": n.strategy, "not_applicable": n.reason, "cells": {}}
        for n in outcome.not_applicable
    ]
    for key, metrics in stats.items():
        if key.workload != name:
            continue
        cells: dict[str, tuple[str, str]] = {}
        for header, choices in columns:
            found = next(((metrics[m], unit, named) for m, unit, named in choices
                          if m in metrics), None)
            cells[header] = (("-", "") if found is None else
                             (_number(found[0].center, found[1])
                              + (f" {found[2]}" if found[2] else ""), found[2]))
        out.append({"backend": key.backend, "strategy": key.strategy, "not_applicable": None,
                    "cells": cells})
    order = {b: i for i, b in enumerate(outcome.config.backends)}
    sorder = {s: i for i, s in enumerate(outcome.config.strategy_labels)}
    return sorted(out, key=lambda r: (order.get(r["backend"], 99),
                                      sorder.get(r["strategy"], 99)))


def summary_table(outcome: Any) -> str:
    """The run's summary table, a title line first and, under it, what each named quantity
    is (a real engine's lane measures its state and checkpoints in its own terms)."""
    columns = summary_columns()
    header = ("backend", "strategy", *(title for title, _ in columns))
    lines: list[tuple[str, ...]] = [header]
    named: set[str] = set()
    for r in summary_rows(outcome):
        if r["not_applicable"]:
            lines.append((r["backend"], r["strategy"], "not applicable",
                          *("" for _ in columns[1:])))
            continue
        cells = [r["cells"][title] for title, _ in columns]
        named.update(quantity for _, quantity in cells if quantity)
        lines.append((r["backend"], r["strategy"], *(text for text, _ in cells)))
    completion = getattr(outcome, "completion", None)
    shown = {(row[0], row[1]) for row in lines}
    for backend, strategy, round_index, _ in (completion.failed if completion else ()):
        if (backend, strategy) not in shown:  # a scenario whose every round failed
            shown.add((backend, strategy))
            which = "warm-up" if round_index < 0 else f"round {round_index}"
            lines.append((backend, strategy, f"failed in {which}",
                          *("" for _ in columns[1:])))
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(header))]
    spec = outcome.config.spec
    events = f"{outcome.facts.events} events"
    if spec.operator is not None:  # the events asked for, and what reached the operator
        from workloads.operators.input import generated_events

        events = (f"{generated_events(spec)} events ({outcome.facts.events} reached the "
                  "operator)")
    title = f"{spec.name}: {events}, {outcome.engine}, parallelism {outcome.config.parallelism}"
    body = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in lines]
    body.insert(1, "  ".join("-" * w for w in widths))
    notes = [QUANTITY_NOTES[q] for q in QUANTITY_NOTES if q in named]
    return "\n".join([title, *body, *notes])
