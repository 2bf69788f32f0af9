"""Flink's keyed backends as lanes: ``flink-heap`` (HashMapStateBackend), ``flink-rocksdb``,
``flink-forst`` (ForSt's synchronous backend) and ``flink-forst-async`` (ForSt under State V2):
a JVM worker per task, fed each task's events by the run's engine
(``workloads.lanes.flink_task``; ``[operator]`` kinds through
``workloads.lanes.flink_operator_task``
on flink-heap and flink-rocksdb).

Which strategies apply is Flink's own behaviour, each reason naming what Flink does
(``backends.flink.lanes`` keeps the facts): its heap backend has no compactions, its RocksDB and
ForSt backends silently skip incremental cleanup, ForSt refuses canonical savepoints, State V2
cleans TTL state only by the compaction filter and refuses OnReadAndWrite, Flink never built
timer cleanup. Unlike statebench's RocksDB, Flink's compaction filter reads the lane's
TtlTimeProvider, so it runs under event time and simulated processing time too.
"""

from __future__ import annotations

import tempfile
from typing import Any

from backends.flink import lanes as facts
from backends.flink.operators import unsupported_reason
from backends.strategies import parse_strategy
from workloads.lanes.base import FLINK, Lane, RunView, TaskOperator
from workloads.lanes.flink_operator_task import FlinkOperatorLane
from workloads.lanes.flink_task import FlinkLaneOperator
from workloads.limits import flink_lane_problem
from workloads.run.config import OperatorConfig

#: Whole-job records/s per task slot (key-value specs, ``[operator]`` specs), measured as
#: statebench's own lanes' (docs/guide.md, "The estimate's rates"); ForSt's synchronous backend
#: as RocksDB, ForSt under State V2 at a tenth of it.
RECORDS_PER_S = {"flink-heap": (100_000.0, 30_000.0), "flink-rocksdb": (35_000.0, 30_000.0),
                 "flink-forst": (35_000.0, 30_000.0), "flink-forst-async": (5_000.0, 5_000.0)}
#: The Flink lanes that run ``[operator]`` kinds (ForSt's are not wired to the operator family).
OPERATOR_LANES = ("flink-heap", "flink-rocksdb")


def flink_cleanup_reason(lane: str, strategy: str) -> str | None:
    """None when ``strategy`` runs on Flink lane ``lane``, else Flink's reason why not: the
    strategy's own Flink configuration (``backends.strategies``); a strategy without one is
    refused, never run as ``none``."""
    if lane not in facts.LANE_KINDS:
        raise ValueError(f"unknown Flink lane '{lane}'; expected one of "
                         f"{', '.join(facts.LANE_KINDS)}")
    registered = parse_strategy(strategy).kind
    foreign = registered.foreign_reason(FLINK)
    if foreign is not None:
        return foreign
    return registered.flink_reason(facts.LANE_KINDS[lane])


def ttl_reason(lane: str, update_type: str | None) -> str | None:
    """Why lane ``lane`` cannot run a spec's TTL of ``update_type`` under any strategy (None:
    it can, or the spec has no TTL): State V2 has no OnReadAndWrite."""
    if lane not in facts.LANE_KINDS:
        raise ValueError(f"unknown Flink lane '{lane}'; expected one of "
                         f"{', '.join(facts.LANE_KINDS)}")
    if update_type == "OnReadAndWrite" and facts.LANE_KINDS[lane] in facts.STATE_V2_KINDS:
        return facts.V2_READ_AND_WRITE_REASON
    return None


def operator_reason(lane: str, kind: str) -> str | None:
    """Why Flink lane ``lane`` cannot run an ``[operator]`` spec of ``kind`` (None: it can)."""
    if lane not in OPERATOR_LANES:
        return (f"backend '{lane}': operator kinds run on {' and '.join(OPERATOR_LANES)} only "
                f"([operator] kind = '{kind}'): ForSt's backends (flink-forst, flink-forst-async)"
                " are not wired to the operator family; run it on flink-rocksdb")
    reason = unsupported_reason(kind)
    return None if reason is None else f"backend '{lane}': {reason} ([operator] kind = '{kind}')"


class FlinkLane(Lane):
    """One of Flink's keyed backends, driven op by op in a kept JVM per Python worker."""

    engine = FLINK
    runs_tasks = True
    keeps_state = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.summary = f"Flink's {facts.LANE_KINDS[name]} keyed backend in a JVM worker"
        self.records_per_s, self.operator_records_per_s = RECORDS_PER_S[name]
        self.job_start_s = 1.0  # a kept JVM per worker; its first job also starts it
        self.background_compactions = facts.LANE_KINDS[name] in facts.FILE_LAYOUT_KINDS
        self.layout_checkpoints = facts.LANE_KINDS[name] in facts.FILE_LAYOUT_KINDS

    def rocksdb_options(self, run: RunView) -> tuple[tuple[str, Any], ...]:
        if facts.LANE_KINDS[self.name] not in facts.ROCKSDB_TABLE_KINDS:
            return ()
        return tuple(sorted(run.spec.rocksdb.options().items()))

    def engine_configuration(self, run: RunView) -> dict[str, Any]:
        found = facts.FLINK_CONFIGURATIONS.get(facts.LANE_KINDS[self.name])
        if found is None:
            return {}
        key, configuration = found
        return {key: configuration(run.spec.rocksdb.options())}

    def spec_reason(self, run: RunView) -> str | None:
        op = run.spec.operator
        return None if op is None else operator_reason(self.name, op.kind)

    def ttl_sweep_cleanup(self) -> str | None:
        # Flink never built timer cleanup: a TTL sweep runs Flink's default background cleanup
        # of the backend, as table.exec.state.ttl does on the real job
        return facts.default_cleanup(self.name)

    def strategy_reason(self, run: RunView, label: str) -> str | None:
        reason = flink_cleanup_reason(self.name, self.cleanup_of(run, label))
        if reason is None and run.spec.state.ttl_ms is not None:
            reason = ttl_reason(self.name, run.spec.state.update_type)
        return reason

    def check(self, run: RunView) -> str | None:
        try:  # the extra, a JDK 17, the worker compiled once for every task
            facts.check_available()
        except RuntimeError as exc:
            return str(exc)
        problem = facts.settings_problem(  # the environment's and folders' too
            (self.name,), (run.local_dir or tempfile.gettempdir(), run.checkpoint_root))
        if problem is not None or self.spec_reason(run) is not None:
            return problem
        for label in run.strategy_labels:  # numbers the wire and Flink cannot carry
            if self.strategy_reason(run, label) is None:
                problem = flink_lane_problem(self.name, self.cleanup_of(run, label))
                if problem is not None:
                    return problem
        return None

    def task_operator(self, cfg: OperatorConfig, task: int, attempt: int,
                      attempt_id: int | None) -> TaskOperator:
        reason = flink_cleanup_reason(self.name, cfg.configured_cleanup)
        if reason is not None:
            raise RuntimeError(f"{cfg.scenario.label}: {reason}; the runner should have skipped it")
        if cfg.operator is None:
            return FlinkLaneOperator(cfg, task, attempt, attempt_id)
        reason = operator_reason(self.name, cfg.operator.kind)  # type: ignore[attr-defined]
        if reason is not None:
            raise ValueError(reason)
        return FlinkOperatorLane(cfg, task, attempt, attempt_id)


FLINK_LANES: tuple[Lane, ...] = tuple(FlinkLane(name) for name in facts.LANE_KINDS)
