"""The workload-event family (opcodes 0x40-0x4F): statebench's keyed operator run inside the JVM.

Why a family of its own: a workload lane must cost Flink's per-op time plus a small transfer,
never a Python call per op. A task's events cross as fixed binary columns (numpy, one copy per
column) and one Java loop (``statebench.flink.Events``) applies them exactly as
``workloads/run/hotloop.py`` does, timing each record with the same log-linear buckets as
``workloads/run/metrics.py``. Layouts (big-endian, appended to the package docstring's protocol):

  0x40 EV_OPEN u8 value type (1 long, 2 string, 7 bytes), u8 state mask (1 value, 2 list, 4 map,
       8 reducing, 16 aggregating), i64 ttl ms (0 = off), u8 update, u8 visibility, u8 flags,
       i32 incremental size, u8 per record, i64 query time after num entries (REGISTER's
       fields), u8 clock (0 the record's ts, 1 scaled wall clock from EV_OPEN, 2 paced: the
       scaled wall clock from the first record or EV_WAIT, each record released once the clock
       reaches its ts, as workloads/run/pacing.py), f64 speedup, i64 start ms,
       i64 warm-up records, u8 verify expired reads, u8 latency histogram           --
  0x41 EV_APPLY i32 n, then columns of n: key i64, ts i64, op i8, value i64 (long) or
       value_size i32 (string/bytes), map_key i32                                   --
  0x42 EV_SAMPLE i64 now (i64 min = the lane's clock)
       [long live, long expired, long logical bytes, long expired logical bytes, long physical,
        list of double RocksDB stats (ROCKSDB_STATS order; empty on heap, NaN = none; ForSt's
        too: the same RocksDB statistics), list of long bytes on disk [local working folder,
        primary folder] (ForSt only, else empty), long now]
  0x43 EV_STATS   first waits for the asynchronous phase of the last EV_CHECKPOINT (the end of
                   input) and completes it, then
                  [long records, long post-warm-up records, long busy ns, long expired returned,
                   list of latency (bucket index, count) pairs, flattened, long paced records
                   released, long late ones, list of schedule lag (bucket, count) pairs,
                   list of EV_CHECKPOINT checkpoints, 8 longs each, flattened: id, bytes,
                   checkpointed bytes, sync ns, async ns, async thread CPU ns, wait ns (at its
                   barrier, for the previous one), bytes referred to in place (ForSt's file
                   reuse, part of checkpointed bytes; 0 elsewhere), long post-warm-up
                   records processed while an async phase ran, long their loop ns, long JVM
                   GC ms and long GC count since the warm-up ended (GarbageCollectorMXBean,
                   before that last wait), long the part of those GC ms inside the task's busy
                   windows (EV_APPLY loops, EV_CHECKPOINT's synchronous phase and wait)]
  0x44 EV_RESTORE  a fresh backend restored from the last checkpoint's handle (SNAPSHOT or
                   EV_CHECKPOINT, completed first), the lane's states registered again, then
                   disposed                                               long ns it took
  0x45 EV_WAIT i64 ts  paced: sleep until the lane's clock reaches ts (a barrier's time)  --
  0x46 EV_CHECKPOINT i64 checkpoint id, str folder, i32 max in flight: a checkpoint barrier in
       Flink's model. While `max in flight` checkpoints' asynchronous phases still run (1:
       Flink's default max concurrent checkpoints), waits for the oldest; then runs Flink's
       synchronous phase (backend.snapshot()) and hands the returned RunnableFuture (the
       asynchronous phase) to the backend's checkpoint thread, which runs them one after the
       other; the loop goes on meanwhile.              [long sync ns, long wait ns]
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

EV_OPEN, EV_APPLY, EV_SAMPLE, EV_STATS, EV_RESTORE, EV_WAIT = 0x40, 0x41, 0x42, 0x43, 0x44, 0x45
EV_CHECKPOINT = 0x46
VALUE_TYPES = {"long": 1, "string": 2, "bytes": 7}
STATE_BITS = {"value": 1, "list": 2, "map": 4, "reducing": 8, "aggregating": 16}
CLOCK_RECORD, CLOCK_WALL, CLOCK_PACED = 0, 1, 2
LANE_CLOCK = -(1 << 63)

_OPEN = struct.Struct(">BBBqBBBiBqBdqqBB")
_APPLY = struct.Struct(">Bi")
_SAMPLE = struct.Struct(">Bq")


@dataclass(frozen=True)
class LaneSpec:
    """What EV_OPEN needs: the operator's states and TTL (REGISTER's TTL fields), its clock."""

    value_type: str
    state_types: tuple[str, ...]
    ttl_fields: tuple[int, int, int, int, int, int, int]  # backends.flink.register.ttl_fields
    clock: int  # CLOCK_RECORD, CLOCK_WALL or CLOCK_PACED
    speedup: float
    start_ms: int
    warmup_records: int
    verify: bool
    latency: bool


def encode_open(spec: LaneSpec) -> bytes:
    if spec.value_type not in VALUE_TYPES:
        raise ValueError(f"value type {spec.value_type!r}: the Flink lane supports "
                         f"{', '.join(VALUE_TYPES)}")
    mask = 0
    for name in spec.state_types:
        if name not in STATE_BITS:
            raise ValueError(f"unknown state type {name!r}; expected one of "
                             f"{', '.join(STATE_BITS)}")
        mask |= STATE_BITS[name]
    return _OPEN.pack(EV_OPEN, VALUE_TYPES[spec.value_type], mask, *spec.ttl_fields,
                      spec.clock, float(spec.speedup),
                      spec.start_ms, spec.warmup_records, 1 if spec.verify else 0,
                      1 if spec.latency else 0)


def _column(batch: pa.RecordBatch, name: str, dtype: str) -> bytes:
    array = batch.column(name).to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(array, dtype=dtype).tobytes()


def encode_apply(batch: pa.RecordBatch, value_type: str, uses_map: bool) -> bytes:
    """EV_APPLY for a batch with the operator's event columns (one numpy copy per column)."""
    n = batch.num_rows
    parts = [_APPLY.pack(EV_APPLY, n), _column(batch, "key", ">i8"), _column(batch, "ts", ">i8"),
             _column(batch, "op", "i1")]
    if value_type == "long":
        parts.append(_column(batch, "value", ">i8"))
    else:
        parts.append(_column(batch, "value_size", ">i4"))
    parts.append(_column(batch, "map_key", ">i4") if uses_map else bytes(4 * n))
    return b"".join(parts)


def encode_sample(now_ms: int | None) -> bytes:
    """EV_SAMPLE at logical time ``now_ms`` (None: the lane's own, wall-clock-driven, clock)."""
    return _SAMPLE.pack(EV_SAMPLE, LANE_CLOCK if now_ms is None else now_ms)


def encode_wait(ts_ms: int) -> bytes:
    return _SAMPLE.pack(EV_WAIT, ts_ms)


def encode_checkpoint(checkpoint_id: int, folder: str, max_in_flight: int = 1) -> bytes:
    """EV_CHECKPOINT: checkpoint ``checkpoint_id`` into ``folder`` (asynchronous phase on the
    worker's checkpoint thread; at most ``max_in_flight`` of them running or queued)."""
    if max_in_flight < 1:
        raise ValueError(f"max checkpoints in flight must be >= 1, got {max_in_flight}")
    raw = str(folder).encode("utf-8")
    return (_SAMPLE.pack(EV_CHECKPOINT, checkpoint_id) + struct.pack(">I", len(raw)) + raw
            + struct.pack(">i", max_in_flight))


def decode_checkpoint(result: Any) -> tuple[float, float]:
    """EV_CHECKPOINT's reply: (synchronous ms, ms waited for the previous checkpoint)."""
    sync_ns, wait_ns = result
    return sync_ns / 1e6, wait_ns / 1e6


def encode_stats() -> bytes:
    return bytes([EV_STATS])


def encode_restore() -> bytes:
    return bytes([EV_RESTORE])


#: What EV_SAMPLE reports of RocksDB, in its order (the keys of statebench's rocksdb_stats()).
ROCKSDB_STATS = ("flushes", "compactions", "compaction_bytes_read", "compaction_bytes_written",
                 "write_amplification", "sst_files", "sst_bytes", "memtable_bytes")


@dataclass(frozen=True)
class Sample:
    live: int
    expired: int
    logical_bytes: int
    expired_bytes: int
    physical_bytes: int
    rocksdb: dict[str, float | None]  # ROCKSDB_STATS; {} on heap, None where there is none yet
    now_ms: int
    #: ForSt: bytes of the files in its local working folder and on its primary folder
    local_bytes: int | None = None
    primary_bytes: int | None = None


def decode_sample(result: Any) -> Sample:
    live, expired, logical, expired_bytes, physical, rocks, storage, now = result
    stats = {k: (None if v != v else v) for k, v in zip(ROCKSDB_STATS, rocks)}  # NaN -> None
    local, primary = (int(storage[0]), int(storage[1])) if storage else (None, None)
    return Sample(int(live), int(expired), int(logical), int(expired_bytes), int(physical),
                  stats, int(now), local, primary)


@dataclass(frozen=True)
class AsyncCheckpoint:
    """One EV_CHECKPOINT as it completed: sizes, and its phases' times in ms (sync on the task
    thread, async wall and CPU on the checkpoint thread, the task's wait at its barrier for the
    previous checkpoint)."""

    id: int
    bytes: int
    checkpointed_bytes: int
    sync_ms: float
    async_ms: float
    async_cpu_ms: float
    wait_ms: float
    #: ForSt: the part of checkpointed_bytes referred to in place on its primary folder (file
    #: reuse, not written by this checkpoint); 0 elsewhere
    in_place_bytes: int = 0


@dataclass(frozen=True)
class LaneStats:
    """The Java loop's measurements: records, post-warm-up records and busy ns, expired values
    returned, the latency histogram's non-empty buckets, and when paced the records released,
    the late ones and the schedule lag's buckets (clock ms stored as ms * 1e6)."""

    records: int
    post_records: int
    busy_ns: int
    expired_returned: int
    buckets: list[tuple[int, int]]
    released: int
    late: int
    lag_buckets: list[tuple[int, int]]
    checkpoints: list[AsyncCheckpoint]
    during_async_records: int
    during_async_ns: int
    gc_ms: int
    gc_count: int
    #: of gc_ms, the pauses inside the task's busy windows (its loops, synchronous phases and
    #: barrier waits); the others stopped it while it waited for input
    gc_in_busy_ms: int = 0

    @property
    def gc_outside_busy_ns(self) -> int:
        """GC pause ns after the warm-up that fell outside the busy windows: a Flink task is
        never idle, so every pause stops it; the lanes charge these to its busy time."""
        return max(0, self.gc_ms - self.gc_in_busy_ms) * 1_000_000


def _pairs(flat: list[int]) -> list[tuple[int, int]]:
    return [(int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat), 2)]


def decode_stats(result: Any) -> LaneStats:
    (records, post, busy, bad, flat, released, late, lags, ckpts, during, during_ns, gc_ms,
     gc_count, gc_in_busy_ms) = result
    checkpoints = [
        AsyncCheckpoint(int(c[0]), int(c[1]), int(c[2]), c[3] / 1e6, c[4] / 1e6, c[5] / 1e6,
                        c[6] / 1e6, int(c[7]))
        for c in (ckpts[i:i + 8] for i in range(0, len(ckpts), 8))]
    return LaneStats(int(records), int(post), int(busy), int(bad), _pairs(flat), int(released),
                     int(late), _pairs(lags), checkpoints, int(during), int(during_ns),
                     int(gc_ms), int(gc_count), int(gc_in_busy_ms))
