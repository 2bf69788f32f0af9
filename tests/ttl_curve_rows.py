"""The state-vs-TTL curve read straight from a run's finalized rows (task -1 job totals), apart
from the report's reader (``workloads.report.ttl_curve``), so the tests can check the report's
curve against it: per ``ttl(ms=V)`` scenario, ``live_entries`` peak over the samples,
``checkpoint_bytes`` peak over the checkpoints and ``ttl_changed_results`` of repetition 0."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

_LABEL = re.compile(r"^ttl\(ms=(\d+)\)$")


@dataclass(frozen=True)
class TtlPoint:
    """One TTL of the sweep on one backend."""

    backend: str
    ttl_ms: int
    peak_live_entries: float
    peak_checkpoint_bytes: float | None
    ttl_changed_results: float


def ttl_curve(rows: pa.Table) -> list[TtlPoint]:
    """The sweep's points, by backend then TTL (scenarios other than ``ttl(ms=V)`` skipped)."""
    totals = rows.filter(pc.equal(rows.column("task"), -1))
    by: dict[tuple[str, str, str], list[float]] = {}
    for backend, strategy, metric, step, value in zip(
            *(totals.column(c).to_pylist()
              for c in ("backend", "strategy", "metric", "step", "value"))):
        if metric == "ttl_changed_results" and step != 0:
            continue
        by.setdefault((backend, strategy, metric), []).append(value)
    points = []
    for backend, strategy in sorted({(b, s) for b, s, _ in by}):
        match = _LABEL.match(strategy)
        if match is None:
            continue

        def peak(metric: str, backend: str = backend, strategy: str = strategy) -> float | None:
            values = by.get((backend, strategy, metric))
            return max(values) if values else None

        points.append(TtlPoint(backend, int(match.group(1)), peak("live_entries") or 0.0,
                               peak("checkpoint_bytes"), peak("ttl_changed_results") or 0.0))
    return sorted(points, key=lambda p: (p.backend, p.ttl_ms))
