"""Facts about the Flink reference lanes: their backend names, Flink's reasons why a cleanup
strategy does not apply to one, the settings they read and the up-front availability check
(``workloads.lanes.flink`` decides with them what a lane runs).

Why apart from the lanes: these are facts about Flink (its heap backend has no
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

import os
import re

from backends.flink.build import ensure_worker_built
from backends.flink.register import forst_configuration, rocksdb_configuration

# Flink's reasons a strategy does not run on one of its backends: each strategy's own facts
# (``backends.strategies``: its FlinkCleanup), re-exported here where the lanes' facts are
from backends.strategies import (  # noqa: F401
    COMPACTION_ON_HEAP_REASON,
    FULL_SNAPSHOT_ON_FORST_REASON,
    INCREMENTAL_ON_FORST_REASON,
    INCREMENTAL_ON_ROCKSDB_REASON,
    V2_TTL_REASON,
)

#: Lane backend name -> Flink backend kind of its worker.
LANE_KINDS: dict[str, str] = {"flink-heap": "heap", "flink-rocksdb": "rocksdb",
                              "flink-forst": "forst", "flink-forst-async": "forst-async"}
#: The Flink backend kinds the real (MiniCluster) job runs (``backends.flink.real_job``).
REAL_JOB_KINDS = frozenset({"heap", "rocksdb"})
#: The Flink backend kinds that keep state in memory (a JVM's warm-up applies all its events).
IN_MEMORY_KINDS = frozenset({"heap"})
#: Flink's background cleanup when a TTL is set and no cleanup is chosen (``StateTtlConfig``'s
#: defaults since Flink 1.10, the one ``table.exec.state.ttl`` runs): incremental cleanup of
#: 5 entries per access in memory, RocksDB's compaction filter otherwise.
IN_MEMORY_DEFAULT_CLEANUP = "incremental(5, false)"
FILE_DEFAULT_CLEANUP = "compaction_filter"

#: The Flink backend kinds that are ForSt (a primary folder of their own, URI-named).
FORST_KINDS = frozenset({"forst", "forst-async"})
#: The Flink backend kinds driven through the State V2 API (no OnReadAndWrite TTL).
STATE_V2_KINDS = frozenset({"forst-async"})
#: The Flink backend kinds that read a spec's [rocksdb] table (RocksDB, and ForSt on it).
ROCKSDB_TABLE_KINDS = frozenset({"rocksdb", "forst", "forst-async"})
#: The Flink backend kinds whose files, and checkpoints in full mode too, follow RocksDB's SST
#: layout, which background flushes and compactions move: their full snapshots differ between
#: same-seed runs, where statebench's canonical full snapshots are identical (the report's
#: classes). ForSt's asynchronous backend is ForSt's files behind the State V2 API: the same.
FILE_LAYOUT_KINDS = frozenset({"rocksdb", "forst", "forst-async"})
#: Flink backend kind -> (run.json's key, the Flink configuration a spec's [rocksdb] table
#: becomes on it); ForSt's two lanes share one.
FLINK_CONFIGURATIONS = {"rocksdb": ("flink_rocksdb", rocksdb_configuration),
                        "forst": ("flink_forst", forst_configuration),
                        "forst-async": ("flink_forst", forst_configuration)}


def default_cleanup(lane: str) -> str:
    """Flink's default background cleanup on ``lane``'s backend (a TTL sweep's scenarios run
    it there: Flink has no timer cleanup)."""
    return (IN_MEMORY_DEFAULT_CLEANUP if LANE_KINDS[lane] in IN_MEMORY_KINDS
            else FILE_DEFAULT_CLEANUP)


V2_READ_AND_WRITE_REASON = (
    "State V2 refuses TTL with update type OnReadAndWrite ('OnReadAndWrite update type is not "
    "supported in state V2', Flink's V2 TtlStateFactory)"
)


#: Where flink-forst keeps its primary folder (``workloads.lanes.flink_task`` says what each
#: place means): "separate" (default) or "checkpoint".
FORST_PRIMARY_ENV = "STATEBENCH_FORST_PRIMARY"
FORST_PRIMARY_CHOICES = ("separate", "checkpoint")
#: Synthetic events a lane's JVM applies before its first heap task (RocksDB: a quarter).
WARMUP_EVENTS = 200_000
WARMUP_ENV = "STATEBENCH_FLINK_WARMUP_EVENTS"


def forst_primary() -> str:
    """The flink-forst primary folder's place (FORST_PRIMARY_ENV), checked: ValueError names
    the variable and its choices (exactly these: not empty, not upper case)."""
    text = os.environ.get(FORST_PRIMARY_ENV, "separate")
    if text not in FORST_PRIMARY_CHOICES:
        raise ValueError(f"{FORST_PRIMARY_ENV}={text!r}: expected one of "
                         f"{', '.join(FORST_PRIMARY_CHOICES)}")
    return text


def warmup_events_setting() -> int:
    """The warm-up events of WARMUP_ENV (default WARMUP_EVENTS), checked."""
    text = os.environ.get(WARMUP_ENV)
    try:
        n = WARMUP_EVENTS if text is None else int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"{WARMUP_ENV}={text!r}: expected a number of events >= 0")
    return n


#: Characters of a folder name that ForSt's file system quotes twice (anything a URI path
#: escapes): its primary folder ``/tmp/sp ace/x`` became the sibling ``/tmp/sp%20ace/x``.
_URI_QUOTED = re.compile(r"[^A-Za-z0-9/._~!$&'()*+,;=:@-]")


def settings_problem(lanes: tuple[str, ...],
                     folders: tuple[str | None, ...] = ()) -> str | None:
    """What is wrong with the settings the Flink lanes among ``lanes`` read (environment
    variables; ``folders``: where their state folders go), else None: checked before any work
    (a bad STATEBENCH_FORST_PRIMARY was a traceback after the other lanes' work, when the
    first flink-forst task read it)."""
    kinds = {LANE_KINDS[lane] for lane in lanes if lane in LANE_KINDS}
    checks = [warmup_events_setting] if kinds else []
    forst = sorted(lane for lane in lanes if LANE_KINDS.get(lane) in FORST_KINDS)
    if forst:
        checks.append(forst_primary)
    for check in checks:
        try:
            check()
        except ValueError as exc:
            return str(exc)
    for folder in folders if forst else ():
        if folder is not None and _URI_QUOTED.search(str(folder)):
            return (f"{', '.join(forst)}: ForSt names its primary folder by a URI and quotes "
                    f"it twice, so under {folder} (a space, '#', '%' or another character a "
                    "URI escapes) its files would go to another, percent-encoded folder; "
                    "set TMPDIR (and --checkpoint-dir) to a folder without such characters")
    return None


def check_available() -> None:
    """Raises FlinkUnavailableError naming what to install (the extra, a JDK 17) or why the
    worker does not compile; compiles it into the cache once, so tasks start without a race."""
    ensure_worker_built()
