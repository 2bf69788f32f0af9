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

from dataclasses import dataclass

from backends.flink.lanes import FILE_DEFAULT_CLEANUP, IN_MEMORY_DEFAULT_CLEANUP
from backends.strategies import COMPACTION_FILTER, parse_strategy


@dataclass(frozen=True)
class SqlBackend:
    """A Flink state backend a SQL job runs on, with what the lanes and the report ask of it
    (so nothing compares its name)."""

    #: Flink's name of it in the job's request (``SqlJob``: hashmap | rocksdb)
    name: str
    #: the one cleanup SQL's TTL gives on it (a strategy label, as statebench names it)
    cleanup: str
    #: whether that cleanup runs with any arguments (a backend configuration key, not SQL's)
    any_arguments: bool
    #: whether it takes the spec's ``[rocksdb]`` options and reports RocksDB's properties
    #: (an entry estimate among them; the HashMap backend exposes no state-size metric)
    rocksdb: bool


ROCKSDB = SqlBackend("rocksdb", FILE_DEFAULT_CLEANUP, any_arguments=True, rocksdb=True)
HASHMAP = SqlBackend("hashmap", IN_MEMORY_DEFAULT_CLEANUP, any_arguments=False, rocksdb=False)
#: Lane backend name -> the Flink state backend its SQL job runs on.
SQL_BACKENDS: dict[str, SqlBackend] = {"flink-sql": ROCKSDB, "flink-sql-heap": HASHMAP}
SQL_LANES: dict[str, str] = {lane: b.name for lane, b in SQL_BACKENDS.items()}
#: The ``[operator]`` kinds the SQL job has a query for (``SqlJob.query``).
SQL_KINDS = ("dedup", "regular_join", "tumbling_window", "sliding_window", "group_agg",
             "interval_join", "topn", "session_window")


def query_time_after_num_entries(strategy: str) -> int:
    """The compaction filter's ``queryTimeAfterNumEntries`` of a strategy (1000: Flink's)."""
    parsed = parse_strategy(strategy)
    if parsed.kind is COMPACTION_FILTER and parsed.args:
        return int(parsed.args[0])
    return 1000
