"""Read a run directory into per-scenario, per-metric sample arrays.

The rows table is tidy and may hold per-task rows, task=-1 totals, or both.  Everything
downstream (tables, plots, findings, diffs) wants exactly one job-wide number per step, so this
module groups them by scenario and metric; how rows collapse to one value per step (the task=-1
total, else the tasks combined), each repetition apart, is
``workloads.results.summaries.samples_of``, shared with the CLI and asv.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from backends.strategies import BUILTIN
from workloads.report.engines import backend_label, is_reference
from workloads.report.metrics import spec_for
from workloads.results.completion import NOT_RUN, incomplete
from workloads.results.summaries import (
    NOT_APPLICABLE,
    STORED_ENTRIES,
    Samples,
    ScenarioKey,
    samples_of,
    stored_entries,
)

__all__ = ["Run", "RunFolderError", "Samples", "ScenarioKey", "backend_label", "check_run_folder",
           "is_reference", "load_run", "ordered", "read_meta", "with_references"]

#: Preferred display orders; anything else found in a run is appended alphabetically.
STRATEGY_ORDER = tuple(s.name for s in BUILTIN if s.engine is None)  # the shared ones
BACKEND_ORDER = ("heap", "flink-heap", "rocksdb", "flink-rocksdb")
#: A Flink lane named after the statebench backend it mirrors (``flink-heap`` beside ``heap``):
#: only the order of a table's rows follows the name; the engine is the lane registry's
#: (``workloads.report.engines``).
REFERENCE_PREFIX = "flink-"


def with_references(backends: list[str]) -> list[str]:
    """Each Flink lane right after the statebench backend it mirrors (heap, flink-heap,
    rocksdb, flink-rocksdb) whatever order the run's config listed them in."""
    lanes = [b for b in backends if b.startswith(REFERENCE_PREFIX)]
    out = [b for b in backends if not b.startswith(REFERENCE_PREFIX)]
    for lane in lanes:
        mirror = lane[len(REFERENCE_PREFIX):]
        out.insert(out.index(mirror) + 1 if mirror in out else len(out), lane)
    return out

_REQUIRED = ("workload", "backend", "strategy", "metric", "value")
_OPTIONAL_DEFAULTS: dict[str, Any] = {"task": -1, "step": 0, "logical_time_ms": -1, "unit": ""}


@dataclass
class Run:
    """A loaded run: metadata plus samples keyed by scenario and metric name."""

    run_dir: Path
    meta: dict[str, Any]
    samples: dict[ScenarioKey, dict[str, Samples]] = field(default_factory=dict)
    not_applicable: dict[ScenarioKey, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    workloads: list[str] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    strategies: list[str] = field(default_factory=list)
    #: "incomplete run: N of M scenarios finished (...)" when run.json says the run stopped
    #: before every job finished (``workloads.results.completion``), else None
    incomplete: str | None = None

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id") or self.run_dir.name)

    def get(self, key: ScenarioKey, metric: str) -> Samples | None:
        """Samples for ``metric`` in ``key`` or None when the run did not record it."""
        return self.samples.get(key, {}).get(metric)

    def scenarios(self, workload: str | None = None) -> list[ScenarioKey]:
        """All scenarios (applicable or not) in display order, optionally for one workload."""
        keys = set(self.samples) | set(self.not_applicable)
        wanted = [k for k in keys if workload is None or k.workload == workload]
        return sorted(wanted, key=self._sort_key)

    def _sort_key(self, key: ScenarioKey) -> tuple[int, int, int]:
        return (
            _index(self.workloads, key.workload),
            _index(self.backends, key.backend),
            _index(self.strategies, key.strategy),
        )


def _index(items: list[str], item: str) -> int:
    return items.index(item) if item in items else len(items)


def ordered(found: set[str], preferred: tuple[str, ...]) -> list[str]:
    """Preferred names first (in their first-seen order), then the rest alphabetically.

    A parameterised label such as "incremental(5, false)" sorts with its base name, so the
    canonical strategy order survives runs that record strategy arguments.
    """
    prefs = list(dict.fromkeys(preferred))

    def rank(name: str) -> tuple[int, str]:
        base = name.split("(", 1)[0].strip()
        for candidate in (name, base):
            if candidate in prefs:
                return prefs.index(candidate), name
        return len(prefs), name

    return sorted(found, key=rank)


def _names(value: Any) -> tuple[str, ...]:
    """Names from a config list that may hold strings or {"name": ...} tables."""
    if not isinstance(value, list):
        return ()
    names = []
    for item in value:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            names.append(item["name"])
    return tuple(names)


def read_meta(run_dir: Path) -> dict[str, Any]:
    """run.json as a dict; a missing or unreadable file degrades to {} (the report says so)."""
    path = run_dir / "run.json"
    if not path.exists():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {"run_json": meta}


class RunFolderError(ValueError):
    """A folder that is not a complete statebench run; the message says what is missing or
    wrong, in one line (``report`` and ``diff`` print it instead of a traceback)."""


def _rows_table(run_dir: Path) -> pa.Table:
    """rows.parquet, or a :class:`RunFolderError` naming exactly what is wrong with it."""
    if not run_dir.exists():
        raise RunFolderError(f"{run_dir}: not a statebench run folder: no such folder")
    if not run_dir.is_dir():
        raise RunFolderError(f"{run_dir}: not a folder (give a run folder, results/<run-id>)")
    path = run_dir / "rows.parquet"
    if not path.is_file():
        raise RunFolderError(f"{run_dir}: not a statebench run folder: rows.parquet is missing")
    size = path.stat().st_size
    if size < 12:  # "PAR1" + footer length + "PAR1": a run killed while writing its rows
        raise RunFolderError(f"{path}: incomplete, {size} bytes (the run was interrupted while "
                             "writing it; run it again)")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RunFolderError(f"{path}: not a readable Parquet file ({first})") from None
    missing = [c for c in _REQUIRED if c not in table.column_names]
    if missing:
        raise RunFolderError(
            f"{path}: not statebench metric rows: missing column(s) {', '.join(missing)} "
            f"(has {', '.join(table.column_names) or 'no columns'})")
    return table


def check_run_folder(run_dir: str | Path) -> Path:
    """A complete run folder (rows.parquet readable with the metric columns, run.json a JSON
    object), else a :class:`RunFolderError` saying what is missing or wrong."""
    run_dir = Path(run_dir)
    _rows_table(run_dir)
    meta = run_dir / "run.json"
    if not meta.is_file():
        raise RunFolderError(f"{run_dir}: incomplete run folder: run.json is missing (a "
                             "complete run writes it last)")
    try:
        doc = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunFolderError(f"{meta}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise RunFolderError(f"{meta}: expected a JSON object, got {type(doc).__name__}")
    return run_dir


def _columns(run_dir: Path) -> dict[str, list[Any]]:
    table = _rows_table(run_dir)
    n = table.num_rows
    cols = {c: table.column(c).to_pylist() for c in _REQUIRED}
    for name, default in _OPTIONAL_DEFAULTS.items():
        if name in table.column_names:
            cols[name] = [default if v is None else v for v in table.column(name).to_pylist()]
        else:
            cols[name] = [default] * n
    return cols


def _not_applicable_reasons(meta: dict[str, Any]) -> dict[tuple[str, str], str]:
    reasons: dict[tuple[str, str], str] = {}
    entries = meta.get("not_applicable") or []
    if not isinstance(entries, list):
        return reasons
    for item in entries:
        if isinstance(item, dict) and "backend" in item and "strategy" in item:
            reasons[(str(item["backend"]), str(item["strategy"]))] = str(item.get("reason", ""))
    return reasons


def load_run(run_dir: str | Path) -> Run:
    """Load ``run_dir``/rows.parquet and run.json.

    Rows with a null/NaN value are dropped (they carry no measurement).  Scenarios flagged
    ``not_applicable`` keep only their reason (from run.json, or "" if it gives none).
    """
    run_dir = Path(run_dir)
    meta = read_meta(run_dir)
    cols = _columns(run_dir)
    reasons = _not_applicable_reasons(meta)
    run = Run(run_dir=run_dir, meta=meta)

    grouped: dict[tuple[ScenarioKey, str], list[tuple[int, int, int, float]]] = defaultdict(list)
    seen: set[ScenarioKey] = set()
    for w, b, s, m, v, task, step, t, unit in zip(
        cols["workload"],
        cols["backend"],
        cols["strategy"],
        cols["metric"],
        cols["value"],
        cols["task"],
        cols["step"],
        cols["logical_time_ms"],
        cols["unit"],
    ):
        key = ScenarioKey(str(w), str(b), str(s))
        seen.add(key)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if m == NOT_APPLICABLE:
            if v:
                run.not_applicable[key] = reasons.get((key.backend, key.strategy), "")
            continue
        run.units.setdefault(str(m), str(unit) or spec_for(str(m)).unit)
        grouped[(key, str(m))].append((int(task), int(step), int(t), float(v)))

    for (key, metric), rows in grouped.items():
        if key in run.not_applicable:
            continue
        run.samples.setdefault(key, {})[metric] = samples_of(metric, run.units[metric], rows)

    # A scenario whose rows were all null still ran: keep it so every cell shows "—".
    for key in seen - set(run.not_applicable):
        run.samples.setdefault(key, {})

    for metrics in run.samples.values():
        stored = stored_entries(metrics)
        if stored is not None:
            metrics[STORED_ENTRIES] = stored
            run.units.setdefault(STORED_ENTRIES, stored.unit)

    # run.json may list a not-applicable pair without the run writing a flag row for it; say so
    # rather than leave the scenario out silently.
    for workload in {k.workload for k in run.samples}:
        for (backend, strategy), reason in reasons.items():
            key = ScenarioKey(workload, backend, strategy)
            if key not in run.samples:
                run.not_applicable.setdefault(key, reason)

    # an incomplete run: the scenarios it never ran read "not run", not missing in silence;
    # one whose job failed in its engine, before any round finished, reads why
    stopped = incomplete(meta)
    if stopped is not None:
        run.incomplete = stopped.line()
        for failure in stopped.failed:
            key = ScenarioKey(failure.workload, failure.backend, failure.strategy)
            if key not in run.samples:
                run.not_applicable.setdefault(key, failure.reason())
        for left in stopped.unfinished:
            key = ScenarioKey(left.workload, left.backend, left.strategy)
            if key not in run.samples:
                run.not_applicable.setdefault(key, NOT_RUN)

    keys = set(run.samples) | set(run.not_applicable)
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    run.workloads = sorted({k.workload for k in keys})
    run.backends = with_references(ordered(
        {k.backend for k in keys}, _names(config.get("backends")) + BACKEND_ORDER
    ))
    run.strategies = ordered(
        {k.strategy for k in keys}, _names(config.get("strategies")) + STRATEGY_ORDER
    )
    return run
