"""Cleanup strategies as named, comparable things a run selects and reports on.

Each strategy is one object that knows how to configure a StateTtlConfig builder in isolation
(background defaults off, only its own mechanism on).
A strategy that cannot apply to a lane (incremental on RocksDB, the compaction filter on heap or on
a clock that is not wall-clock driven) is reported as not applicable rather than silently run;
each lane says which (``workloads.lanes``).
Text forms: "none", "full_snapshot", "incremental", "incremental(10, true)", "compaction_filter",
"compaction_filter(1000)", "timer", "timer(100)".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from backends.ttl_config import (
    DEFAULT_INCREMENTAL_CLEANUP_SIZE,
    DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES,
    StateTtlConfig,
)

#: statebench's own backends (the one list: create_backend and the planner read it here)
BACKEND_KINDS = ("heap", "rocksdb")


@dataclass(frozen=True)
class CleanupStrategy:
    """One cleanup mechanism with its parameters; `label` is its canonical text form."""

    name: str
    args: tuple = ()

    @property
    def label(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}({', '.join(_fmt(a) for a in self.args)})"

    @property
    def description(self) -> str:
        return STRATEGY_DOCS[self.name]

    def configure(self, builder: StateTtlConfig.Builder) -> StateTtlConfig.Builder:
        """Turn this strategy, and only it, on (read-time cleanup always happens)."""
        builder.disable_cleanup_in_background()
        if self.name == "full_snapshot":
            builder.cleanup_full_snapshot()
        elif self.name == "incremental":
            builder.cleanup_incrementally(*self.args)
        elif self.name == "compaction_filter":
            builder.cleanup_in_rocksdb_compact_filter(*self.args)
        elif self.name == "timer":
            builder.cleanup_with_timers(*self.args)
        return builder


def _fmt(arg: object) -> str:
    return str(arg).lower() if isinstance(arg, bool) else str(arg)


STRATEGY_DOCS: dict[str, str] = {
    "none": "read-time cleanup only: an expired value is deleted when it is read",
    "full_snapshot": "expired entries are left out of full snapshots; local state is untouched",
    "incremental": (
        "heap only: a lazy global iterator checks cleanup_size entries on every state access "
        "(and on every record if run_cleanup_for_every_record)"
    ),
    "compaction_filter": (
        "RocksDB only: RocksDB's native TTL compaction drops expired entries inside its own "
        "compactions (wall clock, 1 s granularity)"
    ),
    "timer": "an expiry-ordered index removes entries as soon as the clock passes their expiry",
    "spark_watermark": (
        "spark-sql only: Spark's built-in stateful operators evict state by watermark (the "
        "spec's out-of-orderness as the delay; a join's time bound, a window's end), no TTL"
    ),
    "spark_no_ttl": "spark-tws only: Spark state without TTL, kept forever",
    "spark_ttl": (
        "spark-tws only: Spark's ttlDurationMs on every state variable: reads hide expired "
        "units, a sweep at the end of every micro-batch deletes them"
    ),
    "spark_timer": (
        "spark-tws only: a processing-time timer per key, re-registered when a batch writes the "
        "key, clears the key's state when it fires (what Spark users wrote before TTL)"
    ),
}



def _parse_bool(text: str, what: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise ValueError(f"{what}: expected true or false, got '{text}'")


def _parse_int(text: str, what: str, minimum: int) -> int:
    try:
        val = int(text.strip())
    except ValueError:
        raise ValueError(f"{what}: expected an integer, got '{text}'") from None
    if val < minimum:
        raise ValueError(f"{what}: must be >= {minimum}, got {val}")
    return val


def _args_incremental(parts: list[str]) -> tuple:
    if len(parts) > 2:
        raise ValueError("incremental takes (cleanup_size, run_cleanup_for_every_record)")
    size = (
        _parse_int(parts[0], "incremental cleanup_size", 1)
        if parts
        else DEFAULT_INCREMENTAL_CLEANUP_SIZE
    )
    per_record = (
        _parse_bool(parts[1], "incremental run_cleanup_for_every_record")
        if len(parts) > 1
        else False
    )
    return (size, per_record)


def _args_compaction(parts: list[str]) -> tuple:
    if len(parts) > 2:
        raise ValueError(
            "compaction_filter takes (query_time_after_num_entries, periodic_compaction_ms)"
        )
    query = (
        _parse_int(parts[0], "compaction_filter query_time_after_num_entries", 0)
        if parts
        else DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES
    )
    if len(parts) > 1:
        return (query, _parse_int(parts[1], "compaction_filter periodic_compaction_ms", 0))
    return (query,)


def _args_timer(parts: list[str]) -> tuple:
    if len(parts) > 1:
        raise ValueError("timer takes (granularity_ms)")
    return (_parse_int(parts[0], "timer granularity_ms", 0),) if parts else ()


def _args_none(name: str) -> Callable[[list[str]], tuple]:
    def parse(parts: list[str]) -> tuple:
        if parts:
            raise ValueError(f"{name} takes no arguments")
        return ()

    return parse


_ARG_PARSERS: dict[str, Callable[[list[str]], tuple]] = {
    "none": _args_none("none"),
    "full_snapshot": _args_none("full_snapshot"),
    "incremental": _args_incremental,
    "compaction_filter": _args_compaction,
    "timer": _args_timer,
    "spark_watermark": _args_none("spark_watermark"),
    "spark_no_ttl": _args_none("spark_no_ttl"),
    "spark_ttl": _args_none("spark_ttl"),
    "spark_timer": _args_none("spark_timer"),
}
STRATEGY_NAMES = tuple(_ARG_PARSERS)
_TEXT = re.compile(r"^\s*([a-z_]+)\s*(?:\((.*)\))?\s*$")


def parse_strategy(text: str) -> CleanupStrategy:
    """Parse a strategy's text form; ValueError names the unknown strategy or bad argument."""
    if not isinstance(text, str):
        raise ValueError(f"cleanup strategy must be a string, got {text!r}")
    match = _TEXT.match(text)
    if not match or match.group(1) not in _ARG_PARSERS:
        raise ValueError(
            f"unknown cleanup strategy '{text}'; known: {', '.join(STRATEGY_NAMES)}"
        )
    name, raw_args = match.group(1), match.group(2)
    parts = [p for p in raw_args.split(",")] if raw_args and raw_args.strip() else []
    return CleanupStrategy(name, _ARG_PARSERS[name](parts))
