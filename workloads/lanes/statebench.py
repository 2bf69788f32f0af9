"""statebench's own lanes, ``heap`` (Python dicts) and ``rocksdb`` (``rocksdict``): the keyed
backends that follow Flink's TTL rules, fed each task's events by the run's engine.

What they run: key-value specs through :class:`~workloads.run.keyed_operator.KeyedOperator`, and
every ``[operator]`` kind through its Python emulation (``workloads.operators``). Which cleanup
strategies apply is a fact of the backend: incremental cleanup needs an in-memory iterator, the
compaction filter a RocksDB and a clock RocksDB reads (the wall clock).
"""

from __future__ import annotations

from typing import Any

from backends.storage.registry import STORAGE_BACKENDS, storage_backend
from backends.strategies import WALL_CLOCK, CleanupStrategy, parse_strategy
from workloads.lanes.base import STATEBENCH, Lane, RunView, TaskOperator
from workloads.operators import OPERATOR_CLASSES
from workloads.operators.task import OperatorTask
from workloads.run.config import OperatorConfig, wall_clock_driven
from workloads.run.keyed_operator import KeyedOperator


def statebench_cleanup_reason(kind: str, strategy: CleanupStrategy,
                              wall_clock: bool = True) -> str | None:
    """Why ``strategy`` cannot run on statebench's backend ``kind`` on a clock that is
    (``wall_clock``) or is not driven by the wall clock (None: it can): the strategy's needs
    (``backends.strategies``) against what the backend offers (``backends.storage.registry``)."""
    backend = storage_backend(kind)
    registered = strategy.kind
    foreign = registered.foreign_reason(STATEBENCH)
    if foreign is not None:
        return foreign
    offered = backend.capabilities | ({WALL_CLOCK} if wall_clock else frozenset())
    return registered.statebench_reason(offered, backend.title)


def operator_kind_reason(kind: str) -> str | None:
    """Why statebench's lanes cannot run an ``[operator]`` of ``kind`` (None: it is emulated)."""
    if kind in OPERATOR_CLASSES:
        return None
    return (f"operator kind '{kind}' is not emulated yet; emulated kinds: "
            f"{', '.join(OPERATOR_CLASSES)}")


class StatebenchLane(Lane):
    """``heap`` or ``rocksdb``: a task lane run in Python by either engine."""

    engine = STATEBENCH
    runs_tasks = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.summary = f"statebench's {name} backend (Flink's TTL rules, in Python)"
        backend = storage_backend(name)
        self.records_per_s = backend.records_per_s
        self.operator_records_per_s = backend.operator_records_per_s
        self.background_compactions = backend.background_compactions
        self.copy_on_write_sizes = backend.copy_on_write_sizes

    def rocksdb_options(self, run: RunView) -> tuple[tuple[str, Any], ...]:
        if not storage_backend(self.name).takes_rocksdb_options:
            return ()
        return tuple(sorted(run.planned_rocksdb_options.items()))

    def spec_reason(self, run: RunView) -> str | None:
        op = run.spec.operator
        return None if op is None else operator_kind_reason(op.kind)

    def strategy_reason(self, run: RunView, label: str) -> str | None:
        wall = wall_clock_driven(run.spec.state.time_characteristic, label)
        return statebench_cleanup_reason(self.name, parse_strategy(self.cleanup_of(run, label)),
                                         wall)

    def task_operator(self, cfg: OperatorConfig, task: int, attempt: int,
                      attempt_id: int | None) -> TaskOperator:
        if cfg.operator is None:
            return KeyedOperator(cfg, task, attempt, attempt_id)
        reason = operator_kind_reason(cfg.operator.kind)  # type: ignore[attr-defined]
        if reason is not None:
            raise ValueError(reason)
        return OperatorTask(cfg, task, attempt, attempt_id)


STATEBENCH_LANES: tuple[Lane, ...] = tuple(StatebenchLane(kind) for kind in STORAGE_BACKENDS)
