"""Cleanup strategies: the registry of :class:`~backends.cleanup.strategy.Strategy` objects,
asked by everything that runs, plans or reports one, so that nothing else decides by a
strategy's name (model: Flink's ``StateTtlConfig.CleanupStrategies``, and ``workloads.lanes``).

A run names a strategy by its text form (:class:`CleanupStrategy`: "none",
"incremental(10, true)", "compaction_filter(1000)", "timer(100)", ...); :func:`parse_strategy`
checks it against the registered strategy's parameters.

Adding a strategy is one module defining its :class:`Strategy` (``backends.cleanup.strategy``;
a new mechanism beside it) and one registration: a line in :data:`BUILTIN`, or
:func:`register` (a test's throwaway one). Flink's facts about the strategies it has are here
because they are each strategy's own; ``backends.flink.lanes`` re-exports them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from backends.cleanup.spark_event_timer import SPARK_EVENT_TIMER
from backends.cleanup.strategy import (
    COMPACTIONS,
    ENTRY_ITERATOR,
    WALL_CLOCK,
    FlinkCleanup,
    Param,
    Strategy,
)
from backends.registry import Registry
from backends.ttl_config import (
    DEFAULT_INCREMENTAL_CLEANUP_SIZE,
    DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES,
    StateTtlConfig,
)

# ------------------------------------------------------------------ Flink's facts, per strategy
TIMER_REASON = (
    "Flink has no timer-based TTL cleanup: it was considered for FLIP-25 and never built "
    "(Flink cleans up on read, incrementally on heap, in full snapshots and in RocksDB "
    "compactions), so the 'timer' strategy has no Flink lane"
)
COMPACTION_ON_HEAP_REASON = (
    "Flink's compaction filter (cleanupInRocksdbCompactFilter) runs inside RocksDB compactions; "
    "Flink's heap backend has none and ignores it"
)
INCREMENTAL_ON_ROCKSDB_REASON = (
    "Flink's incremental cleanup (cleanupIncrementally) walks the heap backend's in-memory state "
    "tables; Flink's RocksDB backend has none and silently skips it"
)
INCREMENTAL_ON_FORST_REASON = (
    "Flink's incremental cleanup (cleanupIncrementally) walks the heap backend's in-memory state "
    "tables; ForSt, like RocksDB, has none and silently skips it (ForSt cleans TTL state only in "
    "compactions, FLINK-35268)"
)
V2_TTL_REASON = (
    "State V2 TTL supports only the compaction filter (FLINK-35268): ForSt's asynchronous "
    "backend has no incremental or full-snapshot cleanup, so the setting is not applied"
)
FULL_SNAPSHOT_ON_FORST_REASON = (
    "Flink's full-snapshot cleanup (cleanupFullSnapshot) filters expired entries while a full "
    "snapshot is written key by key; ForSt's checkpoints are native copies of its files and it "
    "refuses canonical savepoints ('Canonical savepoints are not supported by ForSt State "
    "Backend'), so the setting never runs"
)


@dataclass(frozen=True)
class CleanupStrategy:
    """One cleanup strategy with its arguments; `label` is its canonical text form."""

    name: str
    args: tuple = ()

    @property
    def kind(self) -> Strategy:
        """Its registered :class:`Strategy`."""
        return strategy(self.name)

    @property
    def label(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}({', '.join(_fmt(a) for a in self.args)})"

    @property
    def description(self) -> str:
        return self.kind.doc

    def configure(self, builder: StateTtlConfig.Builder) -> StateTtlConfig.Builder:
        """Turn this strategy, and only it, on (read-time cleanup always happens); the built
        config remembers which registered strategy made it (``backends.flink.register`` refuses
        one without a Flink configuration)."""
        builder.disable_cleanup_in_background()
        kind = self.kind
        if kind.build is not None:
            kind.build(builder, self.args)
        builder.registered_as(self.name)
        return builder


def _fmt(arg: object) -> str:
    return str(arg).lower() if isinstance(arg, bool) else str(arg)


# ------------------------------------------------------------------ the built-in strategies
NONE = Strategy(
    "none", "read-time cleanup only: an expired value is deleted when it is read",
    ttl_free=True, flink=FlinkCleanup())
FULL_SNAPSHOT = Strategy(
    "full_snapshot", "expired entries are left out of full snapshots; local state is untouched",
    build=lambda b, args: b.cleanup_full_snapshot(),
    flink=FlinkCleanup({"forst": FULL_SNAPSHOT_ON_FORST_REASON, "forst-async": V2_TTL_REASON}),
    mechanism="full_snapshot", title="full snapshot")
INCREMENTAL = Strategy(
    "incremental",
    "heap only: a lazy global iterator checks cleanup_size entries on every state access "
    "(and on every record if run_cleanup_for_every_record)",
    params=(Param("cleanup_size", int, DEFAULT_INCREMENTAL_CLEANUP_SIZE, 1, knob="size"),
            Param("run_cleanup_for_every_record", bool, False, knob="per_record")),
    build=lambda b, args: b.cleanup_incrementally(*args),
    requires={ENTRY_ITERATOR: "incremental cleanup needs an in-memory entry iterator; "
                              "{backend} has none (Flink silently skips it there)"},
    flink=FlinkCleanup({"rocksdb": INCREMENTAL_ON_ROCKSDB_REASON,
                        "forst": INCREMENTAL_ON_FORST_REASON, "forst-async": V2_TTL_REASON}),
    mechanism="incremental", title="incremental")
COMPACTION_FILTER = Strategy(
    "compaction_filter",
    "RocksDB only: RocksDB's native TTL compaction drops expired entries inside its own "
    "compactions (wall clock, 1 s granularity)",
    params=(Param("query_time_after_num_entries", int, DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES, 0,
                  knob="query_time_after_num_entries"),
            Param("periodic_compaction_ms", int, None, 0, knob="periodic_compaction_ms")),
    build=lambda b, args: b.cleanup_in_rocksdb_compact_filter(*args),
    requires={COMPACTIONS: "the compaction filter runs inside RocksDB compactions; {backend} "
                           "has none",
              WALL_CLOCK: "RocksDB's TTL compaction reads the wall clock; it needs SystemClock "
                          "or ScaledClock, not a manual or event-time clock"},
    reads_wall_clock=True,
    flink=FlinkCleanup({"heap": COMPACTION_ON_HEAP_REASON}),
    mechanism="compaction_filter", title="compaction filter")
TIMER = Strategy(
    "timer", "an expiry-ordered index removes entries as soon as the clock passes their expiry",
    params=(Param("granularity_ms", int, None, 0, knob="granularity_ms"),),
    build=lambda b, args: b.cleanup_with_timers(*args),
    flink_refusal=TIMER_REASON, mechanism="timer", title="timer")
SPARK_WATERMARK = Strategy(
    "spark_watermark",
    "spark-sql only: Spark's built-in stateful operators evict state by watermark (the "
    "spec's out-of-orderness as the delay; a join's time bound, a window's end), no TTL",
    engine="spark", ttl_free=True)
SPARK_NO_TTL = Strategy("spark_no_ttl", "spark-tws only: Spark state without TTL, kept forever",
                        engine="spark", ttl_free=True)
SPARK_TTL = Strategy(
    "spark_ttl",
    "spark-tws only: Spark's ttlDurationMs on every state variable: reads hide expired "
    "units, a sweep at the end of every micro-batch deletes them", engine="spark")
SPARK_TIMER = Strategy(
    "spark_timer",
    "spark-tws only: a processing-time timer per key, re-registered when a batch writes the "
    "key, clears the key's state when it fires (what Spark users wrote before TTL)",
    engine="spark")

#: The strategies statebench ships, in the order ``--help`` and errors list them.
BUILTIN: tuple[Strategy, ...] = (NONE, FULL_SNAPSHOT, INCREMENTAL, COMPACTION_FILTER, TIMER,
                                 SPARK_WATERMARK, SPARK_NO_TTL, SPARK_TTL, SPARK_TIMER,
                                 SPARK_EVENT_TIMER)
#: The baseline every comparison measures the others against: read-time cleanup only.
BASELINE = NONE.name
_NAME = re.compile(r"^[a-z_]+$")


def _check(found: Strategy) -> None:
    if not _NAME.match(found.name):
        raise ValueError(f"strategy name {found.name!r}: lower-case letters and '_' only")


REGISTRY: Registry[Strategy] = Registry(
    "strategy", lambda name, known: f"unknown cleanup strategy '{name}'; known: {known}",
    _check)
REGISTRY.builtin(BUILTIN)
#: Strategy name -> its :class:`Strategy`, in registration order (read-only).
STRATEGIES: Mapping[str, Strategy] = REGISTRY.items
#: Add a strategy (ValueError for a name taken or not of the text form's characters).
register = REGISTRY.register
#: Remove a throwaway strategy; built-in ones stay.
unregister = REGISTRY.unregister
#: The registered strategy ``name``; ValueError names the known ones.
strategy = REGISTRY.get


def strategy_of_label(label: str) -> Strategy | None:
    """The registered strategy a scenario label runs (a text form, or a sweep's label such as
    ``incremental(size=20)``), by the name before its parenthesis; None for a label of no
    registered strategy (a TTL sweep's ``ttl(ms=50)``)."""
    return STRATEGIES.get(label.split("(", 1)[0].strip())


def mechanism_title(mechanism: str) -> str:
    """How the report names a cleanup mechanism: the strategy's title whose counter it is,
    "on read" for read-time cleanup (every strategy's)."""
    found = next((s for s in STRATEGIES.values() if s.mechanism == mechanism), None)
    return "on read" if found is None else found.title


_TEXT = re.compile(r"^\s*([a-z_]+)\s*(?:\((.*)\))?\s*$")


def parse_strategy(text: str) -> CleanupStrategy:
    """Parse a strategy's text form; ValueError names the unknown strategy or bad argument."""
    if not isinstance(text, str):
        raise ValueError(f"cleanup strategy must be a string, got {text!r}")
    match = _TEXT.match(text)
    if not match or match.group(1) not in STRATEGIES:
        raise ValueError(
            f"unknown cleanup strategy '{text}'; known: {', '.join(STRATEGIES)}"
        )
    name, raw_args = match.group(1), match.group(2)
    parts = [p for p in raw_args.split(",")] if raw_args and raw_args.strip() else []
    return CleanupStrategy(name, STRATEGIES[name].parse_args(parts))


__all__ = ["BASELINE", "BUILTIN", "COMPACTIONS", "ENTRY_ITERATOR", "STRATEGIES",
           "WALL_CLOCK", "CleanupStrategy", "FlinkCleanup", "Param", "Strategy",
           "mechanism_title", "parse_strategy", "register", "strategy", "strategy_of_label",
           "unregister"]
