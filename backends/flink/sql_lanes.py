"""Facts about the ``flink-sql`` lanes: their names, the operator kinds the SQL job has a query
for, and the cleanup SQL's TTL configures (``workloads.lanes.flink_sql`` decides with them what
a lane runs). Nothing here starts a JVM.

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


def query_time_after_num_entries(strategy: str) -> int:
    """The compaction filter's ``queryTimeAfterNumEntries`` of a strategy (1000: Flink's)."""
    parsed = parse_strategy(strategy)
    if parsed.name == "compaction_filter" and parsed.args:
        return int(parsed.args[0])
    return 1000
