"""Cleanup strategies as named, comparable things a run selects and reports on.

Each strategy is one object that knows how to configure a StateTtlConfig builder in isolation
(background defaults off, only its own mechanism on) and whether it applies to a backend kind.
A strategy that cannot apply (incremental on RocksDB, the compaction filter on heap or on a clock
that is not wall-clock driven) is reported as not applicable rather than silently run.
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

    def not_applicable_reason(
        self, backend_kind: str, wall_clock_driven: bool = True
    ) -> str | None:
        """None when the strategy runs on that backend and clock, else why it cannot."""
        if backend_kind not in BACKEND_KINDS:
            raise ValueError(
                f"unknown backend kind '{backend_kind}'; expected one of {', '.join(BACKEND_KINDS)}"
            )
        if self.name == "incremental" and backend_kind == "rocksdb":
            return (
                "incremental cleanup needs an in-memory entry iterator; RocksDB has none "
                "(Flink silently skips it there)"
            )
        if self.name == "compaction_filter":
            if backend_kind == "heap":
                return "the compaction filter runs inside RocksDB compactions; heap has none"
            if not wall_clock_driven:
                return (
                    "RocksDB's TTL compaction reads the wall clock; it needs SystemClock or "
                    "ScaledClock, not a manual or event-time clock"
                )
        return None


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
