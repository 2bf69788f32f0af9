"""The operator family (opcodes 0x50-0x5F): workloads/operators' emulated Flink operators run by
the JVM worker against Flink's own keyed backend (``statebench.flink.Operators``).

Why a family of its own: the event family (``backends.flink.events``) applies key-value ops;
an operator kind turns Nexmark rows into its own state accesses, timers and outputs, so its
records cross as Nexmark columns and the Java side runs the operator. It shares the event
family's record loop bookkeeping: after OP_OPEN, EV_CHECKPOINT, EV_WAIT and EV_STATS measure
the operator's lane. Layouts (big-endian):

  0x50 OP_OPEN u8 kind (KINDS), the TTL fields of EV_OPEN (i64 ttl ms, u8 update, u8
       visibility, u8 flags, i32 incremental size, u8 per record, i64 query time after num
       entries), u8 clock (events.CLOCK_*), f64 speedup, i64 start ms, i64 warm-up records,
       u8 latency histogram, i64 out-of-orderness ms, i64 window ms, i64 slide ms, u8 aggregate
       (AGGS), u8 retention (a TTL is set: GroupAggFunction emits unchanged updates),
       i64 interval join's lower bound ms, i64 its upper bound ms, i32 Top-N's N, i64
       session gap ms                                                                     --
  0x51 OP_APPLY i32 n, then columns of n: key i64, ts i64, event type i8, person i64,
       auction i64, price i64, category i32, expires i64                                  --
  0x52 OP_SAMPLE i64 now (i64 min = the lane's clock): EV_SAMPLE's reply, live entries and
       logical bytes including the timers (32 bytes each: key, timestamp, TimeWindow) and on
       RocksDB physical bytes including the timers' column family, then long RocksDB's
       estimate-num-keys summed over the operator's column families, timers included (-1 on
       heap; what the flink-sql lane reports as estimated_entries)
  0x53 OP_FINISH  the final watermark (every timer fires), then with a TTL the reference run
       without TTL over the same input on a fresh heap backend in the same JVM
       [long outputs, long output digest (sum of output hashes mod 2^64), long timers
        registered, long timers fired, long changed outputs, long compared outputs (-1, -1
        without a TTL), long state accesses before the final watermark]

An output's hash (:func:`output_hash`) is FNV-1a over its changelog kind (``CHANGELOG``) and
values as 64-bit words, finalised with splitmix64's mixer; the Java side computes the same.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from backends.flink import events

OP_OPEN, OP_APPLY, OP_SAMPLE, OP_FINISH = 0x50, 0x51, 0x52, 0x53
#: The operator kinds the Java side runs, and their OP_OPEN codes.
KINDS = {"dedup": 0, "regular_join": 1, "tumbling_window": 2, "sliding_window": 3,
         "group_agg": 4, "interval_join": 5, "topn": 6, "session_window": 7}
AGGS = {"max": 0, "sum": 1, "count": 2}
CHANGELOG = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
LANE_CLOCK = -(1 << 63)

_OPEN = struct.Struct(">BBqBBBiBqBdqqBqqqBBqqiq")
_APPLY = struct.Struct(">Bi")
_SAMPLE = struct.Struct(">Bq")
_MASK = (1 << 64) - 1
_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
#: OP_APPLY's columns: (name, big-endian dtype).
COLUMNS = (("key", ">i8"), ("ts", ">i8"), ("event_type", "i1"), ("person_id", ">i8"),
           ("auction_id", ">i8"), ("price", ">i8"), ("category", ">i4"), ("expires_ms", ">i8"))


@dataclass(frozen=True)
class OperatorOpen:
    """What OP_OPEN needs: the kind and its parameters, the TTL (REGISTER's fields) and clock."""

    kind: str
    ttl_fields: tuple[int, int, int, int, int, int, int]  # backends.flink.register.ttl_fields
    clock: int
    speedup: float
    start_ms: int
    warmup_records: int
    latency: bool
    out_of_orderness_ms: int
    window_ms: int
    slide_ms: int
    agg: str
    retention: bool
    lower_ms: int = 0
    upper_ms: int = 0
    top_n: int = 1
    gap_ms: int = 1


def unsupported_reason(kind: str) -> str | None:
    """Why the Flink lanes cannot run operator ``kind`` (None: they can)."""
    if kind in KINDS:
        return None
    return (f"the Flink lanes run operator kinds {', '.join(KINDS)}, not '{kind}'; "
            "run it on heap or rocksdb")


def encode_open(spec: OperatorOpen) -> bytes:
    reason = unsupported_reason(spec.kind)
    if reason is not None:
        raise ValueError(reason)
    if spec.agg not in AGGS:
        raise ValueError(f"unknown aggregate {spec.agg!r}; expected {', '.join(AGGS)}")
    return _OPEN.pack(OP_OPEN, KINDS[spec.kind], *spec.ttl_fields, spec.clock,
                      float(spec.speedup), spec.start_ms, spec.warmup_records,
                      1 if spec.latency else 0, spec.out_of_orderness_ms, spec.window_ms,
                      spec.slide_ms, AGGS[spec.agg], 1 if spec.retention else 0,
                      spec.lower_ms, spec.upper_ms, spec.top_n, spec.gap_ms)


def encode_apply(batch: pa.RecordBatch) -> bytes:
    """OP_APPLY of an operator input batch (workloads.operators.input's columns)."""
    parts = [_APPLY.pack(OP_APPLY, batch.num_rows)]
    for name, dtype in COLUMNS:
        array = batch.column(name).to_numpy(zero_copy_only=False)
        parts.append(np.ascontiguousarray(array, dtype=dtype).tobytes())
    return b"".join(parts)


def encode_sample(now_ms: int | None) -> bytes:
    """OP_SAMPLE at logical time ``now_ms`` (None: the lane's own clock); decode the reply with
    ``backends.flink.events.decode_sample``."""
    return _SAMPLE.pack(OP_SAMPLE, LANE_CLOCK if now_ms is None else now_ms)


def decode_sample(result: Any) -> tuple[events.Sample, int | None]:
    """OP_SAMPLE's reply: the event lane's sample and RocksDB's entry estimate (None: heap)."""
    estimate = int(result[-1])
    return events.decode_sample(result[:-1]), None if estimate < 0 else estimate


def encode_finish() -> bytes:
    return bytes([OP_FINISH])


@dataclass(frozen=True)
class OperatorResult:
    """OP_FINISH's reply (changed/compared are None without a TTL)."""

    outputs: int
    digest: int
    timers_registered: int
    timers_fired: int
    changed: int | None
    compared: int | None
    accesses: int


def decode_finish(result: Any) -> OperatorResult:
    outputs, digest, registered, fired, changed, compared, accesses = result
    return OperatorResult(int(outputs), int(digest) & _MASK, int(registered), int(fired),
                          None if changed < 0 else int(changed),
                          None if compared < 0 else int(compared), int(accesses))


def output_hash(record: tuple[Any, ...]) -> int:
    """The 64-bit hash of one output record (changelog kind, then integer values)."""
    h = ((_FNV_OFFSET ^ CHANGELOG[record[0]]) * _FNV_PRIME) & _MASK
    for v in record[1:]:
        h = ((h ^ (int(v) & _MASK)) * _FNV_PRIME) & _MASK
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK
    return h ^ (h >> 31)


def output_digest(records: Iterable[tuple[Any, ...]]) -> tuple[int, int]:
    """(count, sum of hashes mod 2^64) of an output multiset: OP_FINISH's outputs and digest."""
    count = total = 0
    for record in records:
        count += 1
        total = (total + output_hash(record)) & _MASK
    return count, total
