"""The ``flink-sql`` lanes (``flink-sql`` on RocksDB, ``flink-sql-heap`` on HashMap): the
``[operator]``'s query as one real Flink SQL job per scenario x repetition
(``workloads.lanes.flink_sql_job``), reading its own source, so they run whole jobs.

What they run is what SQL lets a user set: the query of an operator kind the job has
(``backends.flink.sql_lanes.SQL_KINDS``), and ``table.exec.state.ttl``, which always configures
the backend's default background cleanup (the planner's state TTL config keeps it on): RocksDB's
compaction filter, the HashMap backend's incremental cleanup of 5 entries per access.
"""

from __future__ import annotations

import pyarrow as pa

from backends.flink.sql_lanes import SQL_CLEANUP, SQL_KINDS, SQL_LANES
from backends.strategies import parse_strategy
from workloads.lanes.base import Lane, RunView, foreign_strategy_reason
from workloads.lanes.flink_sql_job import run_sql_scenario
from workloads.run.config import DataFacts, OperatorConfig


def spec_problem(lane: str, operator_kind: str | None) -> str | None:
    """Why ``lane`` cannot run a spec with this ``[operator]`` kind (None: no operator table)
    at all, else None."""
    if operator_kind is None:
        return (f"backend '{lane}' runs an [operator] spec's query as a Flink SQL job; this spec "
                "is raw key-value traffic (no [operator] table), which has no SQL query - run "
                "it on flink-heap or flink-rocksdb")
    if operator_kind not in SQL_KINDS:
        return (f"backend '{lane}': the Flink SQL job has no query for [operator] kind "
                f"'{operator_kind}' (it runs {', '.join(SQL_KINDS)})")
    return None


def cleanup_reason(lane: str, strategy: str, has_ttl: bool,
                   ttl_sweep: bool = False) -> str | None:
    """None when ``strategy`` is what a SQL job on ``lane`` runs, else why it cannot.

    Without a TTL only ``none`` runs (``table.exec.state.ttl`` = 0). With one, SQL's cleanup
    is the backend's default background cleanup and nothing else: ``compaction_filter`` (any
    ``queryTimeAfterNumEntries``: it is the backend's configuration key) on RocksDB,
    ``incremental(5, false)`` (SQL's fixed default) on HashMap.

    A TTL sweep's scenario (``ttl_sweep``: ``--sweep "ttl(ms=...)"``) is the TTL itself, which
    is what a SQL user sets (``table.exec.state.ttl``): the SQL job runs it, with SQL's own
    cleanup, whatever cleanup the emulated lanes pair with it (``workloads.run.sweep``)."""
    if lane not in SQL_LANES:
        raise ValueError(f"unknown Flink SQL lane '{lane}'; expected one of {', '.join(SQL_LANES)}")
    parsed = parse_strategy(strategy)
    foreign = foreign_strategy_reason("flink-sql", parsed.name)
    if foreign is not None:
        return foreign
    if ttl_sweep and has_ttl:
        return None
    if not has_ttl:
        return None if parsed.name == "none" else "without a TTL only 'none' runs"
    backend = SQL_LANES[lane]
    if backend == "rocksdb" and parsed.name == "compaction_filter":
        return None
    if backend == "hashmap" and parsed.label == parse_strategy(SQL_CLEANUP["hashmap"]).label:
        return None
    return (f"Flink SQL's table.exec.state.ttl always runs its backend's default background "
            f"cleanup ({SQL_CLEANUP[backend]} on {backend}) and no other; '{parsed.label}' "
            "cannot be configured in SQL")


class FlinkSqlLane(Lane):
    """A real Flink SQL job per scenario x repetition, on the paced clock."""

    engine = "flink-sql"
    runs_tasks = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.summary = f"the [operator]'s query as a real Flink SQL job on {SQL_LANES[name]}"
        #: what table.exec.state.ttl runs on this backend: a run naming no strategy runs it
        self.own_strategies = (SQL_CLEANUP[SQL_LANES[name]],)

    def spec_reason(self, run: RunView) -> str | None:
        op = run.spec.operator
        return spec_problem(self.name, None if op is None else op.kind)

    def strategy_reason(self, run: RunView, label: str) -> str | None:
        return cleanup_reason(self.name, run.cleanup_of(label), run.ttl_of(label) is not None,
                              ttl_sweep=run.ttl_sweep_of(label) is not None)

    def check(self, run: RunView) -> str | None:
        """The job compiles (the extra's jars and a JDK 17), when this lane runs the spec."""
        if self.spec_reason(run) is not None:
            return None
        from backends.flink.sql_job import ensure_sql_job_built

        try:
            ensure_sql_job_built()
        except RuntimeError as exc:
            return str(exc)
        return None

    def run_job(self, run: RunView, cfg: OperatorConfig, facts: DataFacts) -> pa.Table:
        return run_sql_scenario(run, cfg, facts)


FLINK_SQL_LANES: tuple[Lane, ...] = tuple(FlinkSqlLane(name) for name in SQL_LANES)
