"""Run a real Flink DataStream job over a file of events: the check of the lanes' checkpoint model.

Why: the ``flink-heap`` / ``flink-rocksdb`` lanes drive Flink's keyed backends directly and run
the checkpoint phases themselves, so whether their strategy ratios hold is a claim about a
model. ``statebench.flink.RealJob`` (compiled with the worker, ``build.py``) lets Flink do all
of it on a local MiniCluster: a sequence source reads the events file this module writes, keyBy
key, a KeyedProcessFunction replays each op on the same states with the same StateTtlConfig as
the lanes (its TTL clock at each record's timestamp, as the lanes'), Flink's own periodic
checkpoints (on the wall clock) into a real folder, a discarding sink. This module only knows
events and Flink's settings; turning a workload spec into them is
``workloads.run.checkpoint_model_check``.

The events file (never pickle): the 8 ASCII bytes ``SBEVENTS``, then little-endian i64 count,
i32 record size (33), i32 version (1), then one packed little-endian record per event:
key i64, ts i64, op i8, value i64, value_size i32, map_key i32.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from backends import tempdirs
from backends.flink.build import ensure_worker_built
from backends.flink.events import STATE_BITS, VALUE_TYPES
from backends.flink.jvm_job import run_job_jvm
from backends.flink.lanes import REAL_JOB_KINDS
from backends.flink.worker import JVM_OPTIONS, TASK_JVM_OPTIONS

MAIN = "statebench.flink.RealJob"
MAGIC = b"SBEVENTS"
VERSION = 1
RECORD_DTYPE = np.dtype([("key", "<i8"), ("ts", "<i8"), ("op", "i1"), ("value", "<i8"),
                         ("value_size", "<i4"), ("map_key", "<i4")])
_HEADER = struct.Struct("<8sqii")
assert RECORD_DTYPE.itemsize == 33
#: A job is given this long beyond nothing: a stuck MiniCluster must not hang a test forever.
DEFAULT_TIMEOUT_S = 900.0


class EventFile:
    """Writes the events file in chunks (bounded memory), then patches the count in."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.count = 0
        self._out = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self._out.write(_HEADER.pack(MAGIC, 0, RECORD_DTYPE.itemsize, VERSION))

    def append(self, columns: Mapping[str, Any]) -> None:
        """One chunk of events: a mapping of the six column names to equal-length arrays."""
        n = len(columns["key"])
        rows = np.empty(n, dtype=RECORD_DTYPE)
        for name in RECORD_DTYPE.names or ():
            rows[name] = np.asarray(columns[name])
        rows.tofile(self._out)
        self.count += n

    def close(self) -> None:
        if self._out.closed:
            return
        self._out.seek(0)
        self._out.write(_HEADER.pack(MAGIC, self.count, RECORD_DTYPE.itemsize, VERSION))
        self._out.close()

    def __enter__(self) -> EventFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class RealJobConfig:
    """One job: the events, the backend, the TTL fields and Flink's checkpointing.

    ``ttl_fields`` are ``backends.flink.register.ttl_fields`` (what the lanes send to the worker),
    ``rocksdb_conf`` Flink configuration keys (``backends.flink.register.rocksdb_configuration``).
    """

    events: Path
    kind: str  # "heap" or "rocksdb"
    checkpoint_dir: Path
    value_type: str
    state_types: tuple[str, ...]
    ttl_fields: tuple[int, int, int, int, int, int, int]
    start_ms: int = 0
    #: warm-up records of each keyed subtask, in subtask order (one value: every subtask)
    warmup_records: tuple[int, ...] = (0,)
    checkpoint_interval_ms: int = 500
    incremental: bool = False
    parallelism: int = 1
    max_parallelism: int = 128
    periodic_compaction_ms: int | None = None
    rocksdb_conf: Mapping[str, str] = field(default_factory=dict)
    heap_mb: int = 1024
    timeout_s: float = DEFAULT_TIMEOUT_S

    def arguments(self) -> list[str]:
        """The Java program's command line (after the main class)."""
        if self.kind not in REAL_JOB_KINDS:
            raise ValueError(f"backend kind {self.kind!r}: the real job runs heap or rocksdb")
        if self.value_type not in VALUE_TYPES:
            raise ValueError(f"value type {self.value_type!r}: the real job supports "
                             f"{', '.join(VALUE_TYPES)}")
        mask = 0
        for name in self.state_types:
            if name not in STATE_BITS:
                raise ValueError(f"unknown state type {name!r}")
            mask |= STATE_BITS[name]
        ttl_ms, update, visibility, flags, inc_size, per_record, query = self.ttl_fields
        args = {
            "--events": self.events, "--backend": self.kind,
            "--checkpoint-dir": self.checkpoint_dir, "--parallelism": self.parallelism,
            "--max-parallelism": self.max_parallelism,
            "--checkpoint-interval-ms": self.checkpoint_interval_ms,
            "--incremental": str(self.incremental).lower(), "--start-ms": self.start_ms,
            "--value-type": VALUE_TYPES[self.value_type], "--state-mask": mask,
            "--ttl-ms": ttl_ms, "--update": update, "--visibility": visibility,
            "--flags": flags, "--incremental-size": inc_size,
            "--incremental-per-record": str(bool(per_record)).lower(),
            "--query-time": query or 1000,
            "--warmup-records": ",".join(str(int(w)) for w in self.warmup_records),
        }
        if self.periodic_compaction_ms is not None:
            args["--periodic-compaction-ms"] = self.periodic_compaction_ms
        out = [str(x) for pair in args.items() for x in pair]
        for key, value in self.rocksdb_conf.items():
            out += ["--conf", f"{key}={value}"]
        return out


def run_real_job(cfg: RealJobConfig, java_options: Iterable[str] = ()) -> dict[str, Any]:
    """Run one job in a fresh JVM (the lanes' JVM options and heap) and return its report: the
    keyed function's records/s (first to last record, and after the warm-up), checkpoint
    counts and Flink's own per-checkpoint statistics (sizes, sync/async/alignment ms), and the
    JVM's GC ms and CPU seconds (the causes a gap between strategies can be put down to)."""
    build = ensure_worker_built()
    cfg.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    # the MiniCluster's own temporary files (RocksDB's working folders, blobs, the RPC system's
    # jars) in an owner-tagged folder of this job, removed after it, not left in /tmp
    local = Path(tempdirs.make("statebench-real-job-", dir=cfg.checkpoint_dir.parent))
    # the lanes' task JVM's heap (FlinkWorker, TASK_JVM_OPTIONS): like for like
    cmd = [build.java, f"-Xms{cfg.heap_mb}m", f"-Xmx{cfg.heap_mb}m", f"-Djava.io.tmpdir={local}",
           *JVM_OPTIONS, *TASK_JVM_OPTIONS, *java_options, "-cp", build.classpath, MAIN,
           *cfg.arguments(),
           "--conf", f"io.tmp.dirs={local}"]
    return run_job_jvm(
        cmd, local, cfg.timeout_s,
        timed_out=(f"the real Flink job ({cfg.kind}) did not finish within {cfg.timeout_s:.0f} s "
                   "and was stopped"),
        failed=f"the real Flink job ({cfg.kind})", tag="statebench real job")
