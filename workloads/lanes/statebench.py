"""statebench's own lanes, ``heap`` (Python dicts) and ``rocksdb`` (``rocksdict``): the keyed
backends that follow Flink's TTL rules, fed each task's events by the run's engine.

What they run: key-value specs through :class:`~workloads.run.keyed_operator.KeyedOperator`, and
every ``[operator]`` kind through its Python emulation (``workloads.operators``). Which cleanup
strategies apply is a fact of the backend: incremental cleanup needs an in-memory iterator, the
compaction filter a RocksDB and a clock RocksDB reads (the wall clock).
"""

from __future__ import annotations

from backends import BACKEND_KINDS
from backends.strategies import CleanupStrategy, parse_strategy
from workloads.lanes.base import Lane, RunView, TaskOperator, foreign_strategy_reason
from workloads.operators import OPERATOR_CLASSES
from workloads.operators.task import OperatorTask
from workloads.run.config import OperatorConfig, wall_clock_driven
from workloads.run.keyed_operator import KeyedOperator

INCREMENTAL_ON_ROCKSDB_REASON = (
    "incremental cleanup needs an in-memory entry iterator; RocksDB has none "
    "(Flink silently skips it there)")
COMPACTION_ON_HEAP_REASON = "the compaction filter runs inside RocksDB compactions; heap has none"
COMPACTION_CLOCK_REASON = (
    "RocksDB's TTL compaction reads the wall clock; it needs SystemClock or ScaledClock, not a "
    "manual or event-time clock")
#: Whole-job records/s per task slot (key-value specs, ``[operator]`` specs): the slowest shipped
#: workload of each, rounded down (docs/guide.md, "The estimate's rates").
RECORDS_PER_S = {"heap": (100_000.0, 30_000.0), "rocksdb": (50_000.0, 30_000.0)}


def statebench_cleanup_reason(kind: str, strategy: CleanupStrategy,
                   wall_clock: bool = True) -> str | None:
    """Why ``strategy`` cannot run on statebench's backend ``kind`` on a clock that is
    (``wall_clock``) or is not driven by the wall clock (None: it can)."""
    if kind not in BACKEND_KINDS:
        raise ValueError(
            f"unknown backend kind '{kind}'; expected one of {', '.join(BACKEND_KINDS)}")
    foreign = foreign_strategy_reason("statebench", strategy.name)
    if foreign is not None:
        return foreign
    if strategy.name == "incremental" and kind == "rocksdb":
        return INCREMENTAL_ON_ROCKSDB_REASON
    if strategy.name == "compaction_filter":
        if kind == "heap":
            return COMPACTION_ON_HEAP_REASON
        if not wall_clock:
            return COMPACTION_CLOCK_REASON
    return None


def operator_kind_reason(kind: str) -> str | None:
    """Why statebench's lanes cannot run an ``[operator]`` of ``kind`` (None: it is emulated)."""
    if kind in OPERATOR_CLASSES:
        return None
    return (f"operator kind '{kind}' is not emulated yet; emulated kinds: "
            f"{', '.join(OPERATOR_CLASSES)}")


class StatebenchLane(Lane):
    """``heap`` or ``rocksdb``: a task lane run in Python by either engine."""

    engine = "statebench"
    runs_tasks = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.summary = f"statebench's {name} backend (Flink's TTL rules, in Python)"
        self.records_per_s, self.operator_records_per_s = RECORDS_PER_S[name]

    def spec_reason(self, run: RunView) -> str | None:
        op = run.spec.operator
        return None if op is None else operator_kind_reason(op.kind)

    def strategy_reason(self, run: RunView, label: str) -> str | None:
        wall = wall_clock_driven(run.spec.state.time_characteristic, label)
        return statebench_cleanup_reason(self.name, parse_strategy(run.cleanup_of(label)), wall)

    def task_operator(self, cfg: OperatorConfig, task: int, attempt: int,
                      attempt_id: int | None) -> TaskOperator:
        if cfg.operator is None:
            return KeyedOperator(cfg, task, attempt, attempt_id)
        reason = operator_kind_reason(cfg.operator.kind)  # type: ignore[attr-defined]
        if reason is not None:
            raise ValueError(reason)
        return OperatorTask(cfg, task, attempt, attempt_id)


STATEBENCH_LANES: tuple[Lane, ...] = tuple(StatebenchLane(kind) for kind in BACKEND_KINDS)
