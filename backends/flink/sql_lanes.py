"""The ``flink-sql`` lanes of a run: their names, which specs and cleanup strategies they run,
and Flink's reasons when they cannot. Nothing here starts a JVM.

Why apart from ``backends.flink.lanes``: those lanes drive a keyed backend op by op, for any
spec; these run the ``[operator]``'s query itself as a Flink SQL job
(``backends.flink.sql_job``), so they only run operator specs of the kinds the job has a query
for, and SQL fixes the cleanup: ``table.exec.state.ttl`` always configures the backend's
default background cleanup (the planner's state TTL config keeps it on), which is RocksDB's
compaction filter and the HashMap backend's incremental cleanup of 5 entries per access.
"""

from __future__ import annotations

from backends.strategies import parse_strategy

#: Lane backend name -> the Flink state backend its SQL job runs on.
SQL_LANES: dict[str, str] = {"flink-sql": "rocksdb", "flink-sql-heap": "hashmap"}
#: The ``[operator]`` kinds the SQL job has a query for (``SqlJob.query``).
SQL_KINDS = ("dedup", "regular_join", "tumbling_window", "group_agg")
#: The one strategy SQL's TTL gives on each backend (its label, as statebench names it).
SQL_CLEANUP = {"rocksdb": "compaction_filter", "hashmap": "incremental(5, false)"}


def is_sql_lane(backend: str) -> bool:
    return backend in SQL_LANES


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


def not_applicable_reason(lane: str, strategy: str, has_ttl: bool,
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
    if ttl_sweep and has_ttl:
        return None
    parsed = parse_strategy(strategy)
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


def query_time_after_num_entries(strategy: str) -> int:
    """The compaction filter's ``queryTimeAfterNumEntries`` of a strategy (1000: Flink's)."""
    parsed = parse_strategy(strategy)
    if parsed.name == "compaction_filter" and parsed.args:
        return int(parsed.args[0])
    return 1000
