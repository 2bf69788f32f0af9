"""Knob sweeps: one cleanup strategy run at several values of one of its knobs, as an axis of a
comparison (``statebench compare --sweep "incremental(size=1,5,20,100)"``).

Why labels of their own: a swept scenario's strategy column says which knob value it ran with
(``incremental(size=20)``), so the report can draw a line over the knob; the operator still
configures the strategy from its canonical text (``incremental(20, false)``,
``backends.parse_strategy``). :class:`Sweep` keeps both, and run.json records
``{"strategy", "knob", "values", "labels"}`` (``workloads.report.runinfo.sweep`` reads it).

Knobs (the others keep their defaults, ``backends.ttl_config``): incremental ``size`` and
``per_record`` (0 or 1), compaction_filter ``query_time_after_num_entries`` and
``periodic_compaction_ms`` (the filter's periodic compaction), timer ``granularity_ms``.

``ttl(ms=V1,V2,...)`` sweeps the TTL itself (state size against
``ttl_changed_results``, the curve a SQL user picks ``table.exec.state.ttl`` from): scenario
``ttl(ms=V)`` runs the spec with ``state.ttl_ms = V`` and the ``timer`` cleanup (expired state
removed at expiry, so its stored entries are its live ones), beside the baseline ``none`` at the
spec's own TTL. Lanes: statebench's ``heap`` and ``rocksdb`` run it with ``timer``; Flink never
built timer cleanup, so ``flink-heap`` and ``flink-rocksdb`` run each TTL with Flink's default
background cleanup of their backend (``Lane.ttl_sweep_cleanup``: incremental on the heap, the
compaction filter on RocksDB), and the ``flink-sql`` lanes as ``table.exec.state.ttl``, which
runs the same; ``spark-sql`` refuses its scenarios (no state TTL). Where Flink's state TTL does
not reach the operator (the windows, the interval join: ``workloads.operators.flink_ttl``) the
curve is flat on every lane, as Flink's is, and the report says so
(``workloads.report.ttl_curve.flat_curve``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from backends.strategies import STRATEGIES, TIMER, CleanupStrategy, parse_strategy


class SweepError(ValueError):
    """A sweep text that does not name a strategy, a knob of it and numbers for the knob."""


#: The pseudo-strategy of a TTL sweep and the cleanup strategy its scenarios run.
TTL_SWEEP = "ttl"
TTL_SWEEP_CLEANUP = TIMER.name


def knobs() -> dict[str, tuple[str, ...]]:
    """Strategy -> the knobs a sweep can vary (each registered strategy's own parameters,
    ``backends.strategies``), and the TTL sweep's ``ms``."""
    out = {name: found.knobs for name, found in STRATEGIES.items() if found.knobs}
    out[TTL_SWEEP] = ("ms",)
    return out


def knob_text(strategy: str, knob: str, value: int) -> str:
    """The canonical text of ``strategy`` with ``knob`` at ``value`` (the TTL sweep's: its
    cleanup)."""
    if strategy == TTL_SWEEP:
        return TTL_SWEEP_CLEANUP
    found = STRATEGIES[strategy]
    return CleanupStrategy(found.name, found.knob_args(knob, value)).label


_TEXT = re.compile(r"^\s*([a-z_]+)\s*\(\s*([a-z_]+)\s*=\s*([^)]*)\)\s*$")


@dataclass(frozen=True)
class Sweep:
    """One knob of one strategy at several values (in the order given)."""

    strategy: str
    knob: str
    values: tuple[int, ...]

    @property
    def text(self) -> str:
        """The sweep as ``--sweep`` takes it (:func:`parse_sweep` of it is this sweep): what a
        re-run of a stored configuration passes on."""
        return f"{self.strategy}({self.knob}={','.join(map(str, self.values))})"

    def scenario_note(self, label: str) -> str | None:
        """What swept scenario ``label`` runs, for a reason that names it (a lane refuses the
        cleanup, not the label): e.g. "ttl(ms=50) is a TTL sweep's scenario, the 'timer'
        cleanup at state.ttl_ms = 50"; None for a label not of this sweep."""
        strategies = dict(self.strategies)
        if label not in strategies:
            return None
        if self.strategy == TTL_SWEEP:
            return (f"{label} is a TTL sweep's scenario, the '{strategies[label]}' cleanup "
                    f"(on Flink's lanes, Flink's default one) at state.ttl_ms = "
                    f"{self.ttl_of(label)}")
        return f"{label} is a sweep's scenario, '{strategies[label]}'"

    @property
    def labels(self) -> tuple[str, ...]:
        """The swept scenarios' strategy labels, e.g. ``incremental(size=20)``."""
        return tuple(f"{self.strategy}({self.knob}={v})" for v in self.values)

    @property
    def strategies(self) -> tuple[tuple[str, str], ...]:
        """(label, canonical strategy text) per value."""
        return tuple((label, parse_strategy(knob_text(self.strategy, self.knob, v)).label)
                     for label, v in zip(self.labels, self.values))

    def ttl_of(self, label: str) -> int | None:
        """A TTL sweep's ``state.ttl_ms`` for scenario ``label`` (None: not one of its)."""
        if self.strategy != TTL_SWEEP:
            return None
        return dict(zip(self.labels, self.values)).get(label)

    def as_dict(self) -> dict[str, Any]:
        """What run.json records under "sweep"."""
        return {"strategy": self.strategy, "knob": self.knob, "values": list(self.values),
                "labels": list(self.labels)}


def parse_sweep(text: str) -> Sweep:
    """``strategy(knob=v1,v2,...)`` -> :class:`Sweep`; SweepError names what is wrong."""
    match = _TEXT.match(text) if isinstance(text, str) else None
    if match is None:
        raise SweepError(
            f"sweep {text!r} must look like strategy(knob=v1,v2,...), e.g. "
            "incremental(size=1,5,20,100)")
    strategy, knob, raw = match.groups()
    known = knobs()
    if strategy not in known:
        raise SweepError(f"sweep: strategy {strategy!r} has no knob to sweep; one of "
                         f"{', '.join(known)}")
    if knob not in known[strategy]:
        raise SweepError(f"sweep: {strategy} has no knob {knob!r}; one of "
                         f"{', '.join(known[strategy])}")
    values: list[int] = []
    for part in raw.split(","):
        try:
            value = int(part.strip())
        except ValueError:
            raise SweepError(f"sweep: {knob} value {part.strip()!r} is not an integer") from None
        if value in values:
            raise SweepError(f"sweep: {knob} value {value} is given twice")
        values.append(value)
    if len(values) < 2:
        raise SweepError(f"sweep: {knob} needs at least two values to sweep, got {values}")
    if strategy == TTL_SWEEP:  # each value becomes state.ttl_ms: that field's own check
        from workloads import limits

        for value in values:
            problem = limits.POSITIVE_TIME_MS.problem(value)
            if problem is not None:
                raise SweepError(f"sweep: ttl ms value {problem} (each value is a "
                                 "scenario's state.ttl_ms)")
    if (strategy != TTL_SWEEP and STRATEGIES[strategy].knob_param(knob).type is bool
            and not set(values) <= {0, 1}):
        raise SweepError(f"sweep: {knob} values are 0 (false) or 1 (true), got {values}")
    sweep = Sweep(strategy, knob, tuple(values))
    try:  # each value must make a valid strategy (e.g. size >= 1)
        sweep.strategies  # noqa: B018
    except ValueError as exc:
        raise SweepError(f"sweep {text.strip()}: {exc}") from None
    return sweep
