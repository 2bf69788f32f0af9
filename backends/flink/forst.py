"""ForSt's TTL compaction filter, probed on both of ForSt's state APIs (FLINK-40354).

Why a probe and not only a lane: Flink cleans TTL state on ForSt only inside compactions
(FLINK-35268: State V2 TTL supports only the compaction filter), and FLINK-40354 reports that on
the V2 (asynchronous) path the filter is never configured, so expired state is never removed.
Whether that holds for the installed Flink is a fact about its jar, so the worker answers it
(``statebench.flink.ForStTtlProbe``): a value state with TTL gets expired and fresh entries under
the logical clock, then a flush and a manual compaction (RocksDB's compactRange, which runs
compaction filters); ReturnExpiredIfNotCleanedUp hides nothing on read, so every expired value
that still reads back, and every entry still in the column family, was not removed.

The V1 path is ForStSyncKeyedStateBackend, as the ``flink-forst`` lane runs it; the V2 path is
ForStKeyedStateBackend driven through a StateExecutionController over its StateExecutor, as
Flink's own ForSt tests drive it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from backends import tempdirs
from backends.flink import wire
from backends.flink.worker import FlinkWorker

PATHS = {"sync": 1, "async": 2}
_PROBE = struct.Struct(">BBiq")


@dataclass(frozen=True)
class TtlProbe:
    """One probe's outcome: entries physically in the state's column family before and after
    the manual compaction, expired values still readable after it, and whether the fresh value
    (written after the others expired) still reads back."""

    path: str
    keys: int
    entries_before: int
    entries_after: int
    expired_readable: int
    fresh_readable: bool

    @property
    def removed(self) -> int:
        """Entries the compaction dropped."""
        return self.entries_before - self.entries_after

    @property
    def filter_works(self) -> bool:
        """Every expired entry removed, the fresh one kept."""
        return self.entries_after == 1 and self.expired_readable == 0 and self.fresh_readable


def ttl_probe(worker: FlinkWorker, path: str, keys: int = 1000, ttl_ms: int = 1000,
              query_time_after_num_entries: int = 1,
              folder: str | os.PathLike | None = None) -> TtlProbe:
    """Runs the probe on ForSt's `path` ("sync": V1, "async": V2) in `worker`'s JVM (its own
    backend, in `folder`: a working folder and a separate primary folder; default a temporary
    folder, removed afterwards). The worker's own backend is left alone."""
    if path not in PATHS:
        raise ValueError(f"ForSt path {path!r}: expected one of {', '.join(PATHS)}")
    if keys < 1 or ttl_ms < 1:
        raise ValueError(f"the probe needs keys >= 1 and ttl_ms >= 1, got {keys}, {ttl_ms}")
    with tempdirs.temp_dir("statebench-forst-probe-", dir=folder) as tmp:  # owner-tagged
        buf = bytearray(_PROBE.pack(wire.FORST_TTL_PROBE, PATHS[path], keys, ttl_ms))
        wire.put_str(buf, str(Path(tmp) / "local"))
        wire.put_str(buf, str(Path(tmp) / "primary"))
        buf += struct.pack(">q", query_time_after_num_entries)
        [result] = worker.send(bytes(buf))
    before, after, readable, fresh = result
    return TtlProbe(path, keys, int(before), int(after), int(readable), bool(fresh))
