"""The Flink reference lanes of a workload run: their backend names, which cleanup strategies
apply to them (with Flink's reasons when not), and the up-front availability check.

Why here and not in the planner: these are facts about Flink (its heap backend has no
compactions, its RocksDB and ForSt backends silently skip incremental cleanup, ForSt refuses
canonical savepoints, it never built timer cleanup), and the planner only needs the names and
the reasons. Nothing here starts a JVM.

``flink-forst`` is ForSt (Flink 2.x's disaggregated state backend) through its synchronous keyed
backend, ForStSyncKeyedStateBackend (the V1 state API every lane drives), with its DB files on a
primary folder of its own, as ``state.backend.forst.sync.enforce-local: false`` sets it up.
``flink-forst-async`` runs ForSt's asynchronous backend, ForStKeyedStateBackend, through the
State V2 API under Flink's asynchronous execution controller (statebench.flink.ForStAsyncLane),
with the same folders; State V2 TTL is cleaned by the compaction filter only (FLINK-35268).
"""

from __future__ import annotations

from backends.flink.build import ensure_worker_built
from backends.flink.register import TIMER_REASON
from backends.strategies import parse_strategy

#: Lane backend name -> Flink backend kind of its worker.
LANE_KINDS: dict[str, str] = {"flink-heap": "heap", "flink-rocksdb": "rocksdb",
                              "flink-forst": "forst", "flink-forst-async": "forst-async"}

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


def is_lane(backend: str) -> bool:
    return backend in LANE_KINDS


def not_applicable_reason(lane: str, strategy: str) -> str | None:
    """None when ``strategy`` runs on Flink lane ``lane``, else Flink's reason why not.

    Unlike statebench's RocksDB, Flink's compaction filter reads the lane's TtlTimeProvider, so
    it runs under event time and simulated processing time too."""
    if lane not in LANE_KINDS:
        raise ValueError(f"unknown Flink lane '{lane}'; expected one of {', '.join(LANE_KINDS)}")
    name = parse_strategy(strategy).name
    kind = LANE_KINDS[lane]
    if name == "timer":
        return TIMER_REASON
    if name == "compaction_filter" and kind == "heap":
        return COMPACTION_ON_HEAP_REASON
    if name == "incremental" and kind == "rocksdb":
        return INCREMENTAL_ON_ROCKSDB_REASON
    if name == "incremental" and kind == "forst":
        return INCREMENTAL_ON_FORST_REASON
    if name == "full_snapshot" and kind == "forst":
        return FULL_SNAPSHOT_ON_FORST_REASON
    if name in ("incremental", "full_snapshot") and kind == "forst-async":
        return V2_TTL_REASON
    return None


V2_READ_AND_WRITE_REASON = (
    "State V2 refuses TTL with update type OnReadAndWrite ('OnReadAndWrite update type is not "
    "supported in state V2', Flink's V2 TtlStateFactory)"
)


def ttl_reason(lane: str, update_type: str | None) -> str | None:
    """Why lane ``lane`` cannot run a spec's TTL of ``update_type`` under any strategy (None:
    it can, or the spec has no TTL): State V2 has no OnReadAndWrite."""
    if lane not in LANE_KINDS:
        raise ValueError(f"unknown Flink lane '{lane}'; expected one of {', '.join(LANE_KINDS)}")
    if LANE_KINDS[lane] == "forst-async" and update_type == "OnReadAndWrite":
        return V2_READ_AND_WRITE_REASON
    return None


def check_available() -> None:
    """Raises FlinkUnavailableError naming what to install (the extra, a JDK 17) or why the
    worker does not compile; compiles it into the cache once, so tasks start without a race."""
    ensure_worker_built()
