"""Flink's own keyed state backends as statebench reference lanes and conformance oracle.

One JVM worker per `FlinkWorker` runs Flink 2.x's HeapKeyedStateBackend,
RocksDBKeyedStateBackend or ForSt's ForStSyncKeyedStateBackend, built directly (as
apache/flink-benchmarks does), with a TtlTimeProvider
whose time the caller sets: a logical, processing-time TTL clock that Flink's RocksDB compaction
filter reads too. The Java source ships in `backends/flink/java` and is compiled with `javac`
(JDK 17) against the installed `apache-flink-libraries` jar on first use, then cached
(`backends.flink.build`). Install: `pip install 'statebench[flink]'` and a JDK 17.

    with FlinkWorker("rocksdb") as w:
        v = w.register(desc)                      # a statebench descriptor, TTL included
        b = w.batch()
        b.set_time(100).set_key(7).value_update(v, 1).value_get(v)
        assert b.flush() == [1]

Restore across: `load_statebench_snapshot(worker, snapshot, descriptors)` writes a statebench
canonical snapshot's value/map units into Flink's backend with their stored timestamps
(backends.flink.restore says why this direction and not Flink savepoint -> statebench).

Protocol (all integers big-endian; version 1)
---------------------------------------------
Python writes request frames to the JVM's stdin, the JVM answers each with one reply frame on
its stdout (stdout carries nothing else: System.out is redirected to stderr).

Request frame:  u32 length | commands...       (a batch: commands run in order)
Command:        u8 opcode | arguments           (per opcode, below)
Reply frame:    u32 length | u8 status | i64 jvm_nanos | body
    status 0:   i32 count | count tagged values (one per result-producing command, in order)
    status 1:   i32 index of the failing command | str message (Java exception and stack);
                the commands before it were applied, the rest of the batch was not.
On start the JVM sends one status-0 frame: [long protocol version, str Flink version].

str:           u32 byte length | UTF-8 bytes
tagged value:  u8 tag | payload: 0 null | 1 long i64 | 2 str | 3 double f64 | 4 bool u8 |
               5 list: u32 n, n values | 6 map: u32 n, n (key value) pairs
type codes (REGISTER, OPEN_BACKEND key type): the tags 1 long, 2 string, 3 double, 4 bool.

Control family (0x01-0x1F)                                         result
  0x01 OPEN_BACKEND u8 kind (0 heap, 1 rocksdb, 2 forst), u8 key type, i32 max parallelism,
       i32 first key group, i32 last key group, str RocksDB/ForSt (working) folder,
       i64 query_time_after_num_entries, i64 periodic compaction ms (-1 = Flink's default),
       u8 incremental checkpoints, i32 n, n x (str key, str value): Flink configuration of
       the RocksDB backend (backends.flink.register.rocksdb_configuration) or of ForSt
       (forst_configuration, plus state.backend.forst.primary-dir: its primary folder)
                                                                         -- (closes the old one)
  0x02 SET_TIME i64 ms (the TtlTimeProvider's time)                      --
  0x03 SET_KEY tagged value (long or string, as opened)                  --
  0x04 REGISTER u16 state id, u8 kind (1 value, 2 list, 3 map, 4 reducing, 5 aggregating),
       str name, u8 value type, u8 map key type, u8 function (reducing 1 sum, 3 max, 4 min;
       aggregating 1 sum, 2 count), i64 ttl ms (0 = no TTL), u8 update (1 OnCreateAndWrite,
       2 OnReadAndWrite), u8 visibility (1 NeverReturnExpired, 2 ReturnExpiredIfNotCleanedUp),
       u8 flags (1 disableCleanupInBackground, 2 cleanupFullSnapshot, 4 cleanupIncrementally,
       8 cleanupInRocksdbCompactFilter), i32 incremental size, u8 per record,
       i64 query time after num entries                                  --
  0x05 COMPACT (RocksDB: compactState of every state; heap: nothing)    --
  0x06 COUNTS                                  [long numKeyValueStateEntries, map name->keys]
  0x07 SNAPSHOT i64 checkpoint id, str folder, u8 type (0 checkpoint, 1 canonical savepoint)
              [long bytes, long checkpointed bytes, long sync ns, async ns, long in place bytes]
  0x08 BENCH str op, u16 n, n u16 state ids, i32 keys, i32 min warm-up rounds, i32 warm-up
       rounds, i32 rounds, i32 round ms, u8 resume (1: go on from this JVM's last BENCH)
      per state: map rates, cpu_rates, warmup (ops/s), bool steady, ops and cpu_starts_ns (per
      measured iteration), cpu_clock_ns (the process CPU clock when the run returned)
  0x09 CLOSE (dispose the backend and exit after this frame)           --
  0x0A FLUSH (RocksDB memtables of every state)                        --
  0x0B PROPERTIES i32 n, n str RocksDB property names      map state -> map property -> long
  0x0C FORST_TTL_PROBE u8 path (1 sync/V1, 2 async/V2), i32 keys, i64 ttl ms, str working
       folder, str primary folder, i64 query time after num entries (its own backend; see
       backends.flink.forst)      [long entries before, long after, long expired readable, bool]
State-operation family (0x20-0x3F): u16 state id, then
  0x20 CLEAR | 0x21 VALUE_GET -> value | 0x22 VALUE_UPDATE value (null clears)
  0x23 LIST_GET -> list or null | 0x24 LIST_ADD value | 0x25 LIST_ADD_ALL list |
  0x26 LIST_UPDATE list
  0x27 MAP_GET key -> value | 0x28 MAP_PUT key value | 0x29 MAP_PUT_ALL map |
  0x2A MAP_REMOVE key | 0x2B MAP_CONTAINS key -> bool | 0x2C MAP_ENTRIES -> list of [k, v] |
  0x2D MAP_KEYS -> list | 0x2E MAP_VALUES -> list | 0x2F MAP_IS_EMPTY -> bool
  0x30 REDUCING_GET -> value | 0x31 REDUCING_ADD value | 0x32 AGG_GET -> value |
  0x33 AGG_ADD value
Workload-event family (0x40-0x4F, statebench.flink.Events; layouts in backends.flink.events):
  0x40 EV_OPEN | 0x41 EV_APPLY (a batch of events as binary columns) | 0x42 EV_SAMPLE |
  0x43 EV_STATS | 0x44 EV_RESTORE | 0x45 EV_WAIT | 0x46 EV_CHECKPOINT (a checkpoint barrier in
  Flink's model: sync phase on the task thread, Flink's RunnableFuture on the backend's
  checkpoint thread while the loop goes on). The workload runner's lanes `flink-heap` /
  `flink-rocksdb` (workloads/lanes/flink_task.py, backends.flink.lanes) drive it. SNAPSHOT stays
  synchronous (both phases on the calling thread), after any EV_CHECKPOINT in flight completed.
Opcodes 0x50-0xFF are free for further families: the Java side registers a CommandFamily for
an opcode range (Worker.register).
"""

from __future__ import annotations

from backends.flink import build, wire
from backends.flink.build import find_flink_jar, find_jdk
from backends.flink.errors import (
    FlinkCommandError,
    FlinkUnavailableError,
    FlinkWorkerError,
    NotApplicableError,
)
from backends.flink.register import EVENT_TIME_REASON, TIMER_REASON, FlinkState
from backends.flink.restore import load_statebench_snapshot
from backends.flink.worker import ROCKSDB_PROPERTIES, Batch, FlinkWorker

__all__ = [
    "EVENT_TIME_REASON",
    "ROCKSDB_PROPERTIES",
    "TIMER_REASON",
    "Batch",
    "FlinkCommandError",
    "FlinkState",
    "FlinkUnavailableError",
    "FlinkWorker",
    "FlinkWorkerError",
    "NotApplicableError",
    "build",
    "find_flink_jar",
    "find_jdk",
    "load_statebench_snapshot",
    "wire",
]
