"""One JVM running Flink's keyed state backend, driven in batches over its stdin/stdout.

Why a process per worker and batches: a JVM call per state op would cost more than Flink's own
op (Flink heap does millions of ops/s), so ops are recorded into a `Batch` and cross in one frame;
the reply carries every read's visible result in order. Every read has a deadline, and a dead or
hung JVM becomes a FlinkWorkerError carrying the tail of its stderr, so a caller never hangs.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not on Windows; the pipes then keep their default size
    fcntl = None  # type: ignore[assignment]

import contextlib

from backends import tempdirs
from backends.descriptors import StateDescriptor
from backends.flink import wire
from backends.flink.build import MAIN_CLASS, ensure_worker_built
from backends.flink.errors import FlinkCommandError, FlinkWorkerError
from backends.flink.register import (
    FORST_PRIMARY_DIR,
    FlinkState,
    encode_register,
    forst_configuration,
    rocksdb_configuration,
)
from backends.keygroups import KeyGroupRange

KINDS = ("heap", "rocksdb", "forst", "forst-async")
#: OPEN_BACKEND's kind byte per backend kind ("forst-async": ForSt's V2 backend, served through
#: the event family only, statebench.flink.ForStAsyncLane).
_KIND_CODES = {"heap": 0, "rocksdb": 1, "forst": 2, "forst-async": 3}
_FORST_KINDS = ("forst", "forst-async")
KEY_TYPES = {"long": wire.T_LONG, "string": wire.T_STRING}
JVM_OPTIONS = (
    "-XX:+UseSerialGC",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
)
ROCKSDB_PROPERTIES = ("rocksdb.estimate-num-keys", "rocksdb.cur-size-all-mem-tables",
                      "rocksdb.total-sst-files-size")
#: A task's JVM (the lanes' workers and the real job): a young generation small enough that a
#: task of a second meets several collections. At the default third of a 1 GB heap a heap task
#: of 1.5 M records met zero or one collection of 350-430 ms (copying the state it had built),
#: and its rate moved 2x with that; at 96 MB it meets three or four of about 110 ms each, in
#: every repetition. Each new entry is still copied once, so the collector's total work stays.
TASK_JVM_OPTIONS = ("-Xmn96m",)
_LEN = struct.Struct(">I")
_HEAD = struct.Struct(">Bqi")
_Q = struct.Struct(">Bq")
_BH = struct.Struct(">BH")
_OPEN = struct.Struct(">BBBiii")
_OPEN_TAIL = struct.Struct(">qqBi")
_BENCH_TAIL = struct.Struct(">iiiiiB")
_H = struct.Struct(">H")
_STDERR_TAIL = 4000
MAX_FRAME = 1 << 30


def die_with_parent() -> Callable[[], None] | None:
    """Linux: a ``preexec_fn`` that has the kernel SIGKILL the JVM when the Python process that
    started it dies. A Spark task's Python worker is SIGKILLed when its job is cancelled; its
    JVM would otherwise run on as an orphan, still writing checkpoints into folders being
    removed. Only from the main thread: the signal follows the thread that forked."""
    if (not sys.platform.startswith("linux")
            or threading.current_thread() is not threading.main_thread()):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def arm() -> None:
        prctl(pr_set_pdeathsig, signal.SIGKILL)

    return arm


def _widen_pipes(proc: subprocess.Popen) -> None:
    """Linux: grow both pipes to pipe-max-size (1 MB by default), so a batch crosses in a few
    writes instead of one 64 KB chunk per context switch; silently kept elsewhere."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setsize is None:
        return
    try:
        size = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    except (OSError, ValueError):
        size = 1 << 20
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            fcntl.fcntl(stream.fileno(), setsize, min(size, 1 << 24))


class Batch:
    """Records commands and sends them as one frame on flush().

    Reads (value_get, list_get, map_get, map_contains, map_items, map_keys, map_values,
    map_is_empty, reducing_get, aggregating_get, counts, properties, snapshot, bench) each add one
    result; flush() returns the results in order, decoded to Python values as statebench returns
    them (an empty list state reads as [], map items as (key, value) tuples).
    """

    def __init__(self, worker: FlinkWorker) -> None:
        self._worker = worker
        self._buf = bytearray()
        self._post: list[Any] = []  # per result: None or a function normalising it
        self._reads = 0  # results of raw() commands recorded after the last _post entry

    def __len__(self) -> int:
        return len(self._buf)

    # -- control ------------------------------------------------------------------------------
    def set_time(self, ms: int) -> Batch:
        self._buf += _Q.pack(wire.SET_TIME, ms)
        return self

    def set_key(self, key: int | str) -> Batch:
        self._buf.append(wire.SET_KEY)
        wire.put_value(self._buf, key, self._worker.key_code)
        return self

    def register(self, desc: StateDescriptor, function: str | None = None) -> FlinkState:
        """Registers a statebench descriptor (TTL mapped onto StateTtlConfig); reducing and
        aggregating states name their Java function (reducing: sum/max/min, aggregating:
        sum/count). Returns the handle for the state ops."""
        w = self._worker
        return encode_register(self._buf, w.new_state_id(), desc, function,
                               w.query_time_after_num_entries, w.periodic_compaction_ms)

    def compact(self) -> Batch:
        self._buf.append(wire.COMPACT)
        return self

    def flush_memtables(self) -> Batch:
        self._buf.append(wire.FLUSH)
        return self

    def counts(self) -> Batch:
        """Result: {"entries": numKeyValueStateEntries(), "keys": {state: keys holding it}}."""
        self._buf.append(wire.COUNTS)
        self._expect(lambda r: {"entries": r[0], "keys": r[1]})
        return self

    def properties(self, names: Iterable[str] = ROCKSDB_PROPERTIES) -> Batch:
        """Result: {state: {property: int}} from RocksDB's column families ({} on heap)."""
        names = list(names)
        self._buf.append(wire.PROPERTIES)
        self._buf += struct.pack(">i", len(names))
        for n in names:
            wire.put_str(self._buf, n)
        self._expect(None)
        return self

    def snapshot(self, checkpoint_id: int, folder: str | os.PathLike,
                 savepoint: bool = False) -> Batch:
        """Flink's own snapshot() (or a canonical savepoint) into `folder`. Result: dict with
        bytes, checkpointed_bytes (uploaded, as Flink's handle counts it), sync_ms, async_ms, and
        in_place_bytes: on ForSt, the part of checkpointed_bytes it refers to in place on its
        primary folder instead of copying (file reuse: ForSt does it when the primary folder
        lies under `folder`/shared, Flink's primary-dir: checkpoint-dir); 0 elsewhere."""
        self._buf += _Q.pack(wire.SNAPSHOT, checkpoint_id)
        wire.put_str(self._buf, str(folder))
        self._buf.append(1 if savepoint else 0)
        self._expect(lambda r: {"bytes": r[0], "checkpointed_bytes": r[1],
                                     "sync_ms": r[2] / 1e6, "async_ms": r[3] / 1e6,
                                     "in_place_bytes": r[4]})
        return self

    def bench(self, state: FlinkState | Sequence[FlinkState], op: str, keys: int = 20_000,
              warmup: int = 2, rounds: int = 5, round_ms: int = 100,
              min_warmup: int = 2, resume: bool = False) -> Batch:
        """Flink's own per-op rate loop inside the JVM (statebench.flink.Bench): warm-up rounds
        (at least `min_warmup`, then until steady, at most `warmup`), then `rounds` measured
        rounds of `round_ms` per state (0: warm up only). Several states are measured side by
        side, one iteration each per round. `resume` goes on from the last bench of this JVM
        (same states and keys): no refill, flush, compaction or full collection first, so its
        rounds continue that run's. Result: one dict per state (rates, cpu_rates, warmup,
        steady), or that dict alone when one state was given."""
        many = not isinstance(state, FlinkState)
        states = list(state) if many else [state]
        self._buf.append(wire.BENCH)
        wire.put_str(self._buf, op)
        self._buf += _H.pack(len(states))
        for s in states:
            self._buf += _H.pack(s.sid)
        self._buf += _BENCH_TAIL.pack(keys, min_warmup, warmup, rounds, round_ms, int(resume))
        self._expect(None if many else (lambda r: r[0]))
        return self

    def raw(self, encoded: bytes, reads: int = 0) -> Batch:
        """Pre-encoded commands (e.g. wire.encode_long_ops) producing `reads` results."""
        self._buf += encoded
        if reads:
            self._flush_raw_reads()
            self._reads = reads  # kept as a count: a 50k-get batch needs no 50k-long list
        return self

    def _expect(self, post: Any) -> None:
        """One more result, normalised by `post` unless it is None."""
        self._flush_raw_reads()
        self._post.append(post)

    def _flush_raw_reads(self) -> None:
        if self._reads:
            self._post.extend([None] * self._reads)
            self._reads = 0

    # -- state ops ----------------------------------------------------------------------------
    def _op(self, opcode: int, state: FlinkState) -> None:
        self._buf += _BH.pack(opcode, state.sid)

    def _read(self, opcode: int, state: FlinkState, post: Any = None) -> Batch:
        self._op(opcode, state)
        self._expect(post)
        return self

    def clear(self, state: FlinkState) -> Batch:
        self._op(wire.CLEAR, state)
        return self

    def value_get(self, state: FlinkState) -> Batch:
        return self._read(wire.VALUE_GET, state)

    def value_update(self, state: FlinkState, value: Any) -> Batch:
        self._op(wire.VALUE_UPDATE, state)
        wire.put_value(self._buf, value, state.value_code)
        return self

    def list_get(self, state: FlinkState) -> Batch:
        return self._read(wire.LIST_GET, state, lambda r: [] if r is None else r)

    def list_add(self, state: FlinkState, value: Any) -> Batch:
        self._op(wire.LIST_ADD, state)
        wire.put_value(self._buf, value, state.value_code)
        return self

    def list_add_all(self, state: FlinkState, values: Iterable[Any]) -> Batch:
        self._op(wire.LIST_ADD_ALL, state)
        wire.put_list(self._buf, values, state.value_code)
        return self

    def list_update(self, state: FlinkState, values: Iterable[Any]) -> Batch:
        self._op(wire.LIST_UPDATE, state)
        wire.put_list(self._buf, values, state.value_code)
        return self

    def map_get(self, state: FlinkState, key: Any) -> Batch:
        self._read(wire.MAP_GET, state)
        wire.put_value(self._buf, key, state.key_code)
        return self

    def map_put(self, state: FlinkState, key: Any, value: Any) -> Batch:
        self._op(wire.MAP_PUT, state)
        wire.put_value(self._buf, key, state.key_code)
        wire.put_value(self._buf, value, state.value_code)
        return self

    def map_put_all(self, state: FlinkState, mapping: Mapping[Any, Any]) -> Batch:
        self._op(wire.MAP_PUT_ALL, state)
        wire.put_map(self._buf, mapping, state.key_code, state.value_code)
        return self

    def map_remove(self, state: FlinkState, key: Any) -> Batch:
        self._op(wire.MAP_REMOVE, state)
        wire.put_value(self._buf, key, state.key_code)
        return self

    def map_contains(self, state: FlinkState, key: Any) -> Batch:
        self._read(wire.MAP_CONTAINS, state)
        wire.put_value(self._buf, key, state.key_code)
        return self

    def map_items(self, state: FlinkState) -> Batch:
        return self._read(wire.MAP_ENTRIES, state, lambda r: [tuple(p) for p in r])

    def map_keys(self, state: FlinkState) -> Batch:
        return self._read(wire.MAP_KEYS, state)

    def map_values(self, state: FlinkState) -> Batch:
        return self._read(wire.MAP_VALUES, state)

    def map_is_empty(self, state: FlinkState) -> Batch:
        return self._read(wire.MAP_IS_EMPTY, state)

    def reducing_get(self, state: FlinkState) -> Batch:
        return self._read(wire.REDUCING_GET, state)

    def reducing_add(self, state: FlinkState, value: Any) -> Batch:
        self._op(wire.REDUCING_ADD, state)
        wire.put_value(self._buf, value, state.value_code)
        return self

    def aggregating_get(self, state: FlinkState) -> Batch:
        return self._read(wire.AGG_GET, state)

    def aggregating_add(self, state: FlinkState, value: Any) -> Batch:
        self._op(wire.AGG_ADD, state)
        wire.put_value(self._buf, value, state.value_code)
        return self

    def flush(self) -> list[Any]:
        """Sends the recorded commands as one frame; returns the results in order."""
        payload, post, reads = bytes(self._buf), self._post, self._reads + len(self._post)
        self._buf, self._post, self._reads = bytearray(), [], 0
        raw = self._worker.send(payload)
        if len(raw) != reads:
            raise FlinkWorkerError(f"worker returned {len(raw)} results for {reads} reads")
        if not any(post):  # plain results (e.g. one raw batch of gets): no per-result pass
            return raw
        post += [None] * (reads - len(post))
        return [r if p is None else p(r) for r, p in zip(raw, post)]


class FlinkWorker:
    """A JVM with one Flink keyed state backend (heap, RocksDB or ForSt) under a logical TTL
    clock.

    Keys are all longs or all strings (`key_type`), as Flink's key serializer is one type.
    `max_parallelism` and `key_group_range` mean what they mean for statebench's backends.
    RocksDB options that Flink 2.x sets per backend: `query_time_after_num_entries` and
    `periodic_compaction_ms` of the compaction filter, `incremental_checkpoints`, and
    `rocksdb_options` (statebench's RocksDB option names, as a spec's [rocksdb] table: see
    `spec.rocksdb_configuration`; on ForSt the same options under ForSt's keys,
    `register.forst_configuration`). ForSt ("forst": its synchronous, V1 keyed backend) keeps its
    working folder at `path` and its DB files on a primary folder of its own, `primary_path`
    (default: a fresh folder beside `path`'s default; any Flink file system URI is passed on).
    `reset()` opens a fresh backend in the same JVM (tests share one
    JVM per module). Use as a context manager, or call close().
    """

    def __init__(self, kind: str = "heap", *, key_type: str = "long", max_parallelism: int = 128,
                 key_group_range: KeyGroupRange | tuple[int, int] | None = None,
                 path: str | os.PathLike | None = None, query_time_after_num_entries: int = 1000,
                 periodic_compaction_ms: int | None = None,
                 rocksdb_options: Mapping[str, Any] | None = None,
                 incremental_checkpoints: bool = False,
                 primary_path: str | os.PathLike | None = None, timeout_s: float = 120.0,
                 startup_timeout_s: float = 120.0, heap_mb: int = 1024,
                 java_options: Iterable[str] = ()) -> None:
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen | None = None
        # owner-tagged and locked (backends.tempdirs): swept once this process is gone, however
        # it ends (a Spark worker is killed without running atexit)
        build = ensure_worker_built()  # first: a failed build leaves no folder behind
        self._tmp = Path(tempdirs.make("statebench-flink-"))
        self._stderr = open(self._tmp / "stderr.log", "w+b")  # noqa: SIM115 - closed in close()
        self.last_batch_jvm_ns = 0
        # sized up front (-Xms = -Xmx) as a TaskManager's heap: a heap that grows as it goes
        # moves the collector's work from one task of a kept JVM to the next
        # java.io.tmpdir in the owner-tagged folder: RocksDB and ForSt unpack their 13 MB native
        # libraries there, and a JVM killed with its parent never runs their deleteOnExit
        cmd = [build.java, f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m", f"-Djava.io.tmpdir={self._tmp}",
               *JVM_OPTIONS, *java_options,
               "-cp", build.classpath, MAIN_CLASS]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, bufsize=0,
                                      preexec_fn=die_with_parent())
        _widen_pipes(self._proc)
        try:
            hello = self._receive(time.monotonic() + startup_timeout_s)
            self.protocol_version, self.flink_version = hello
            self.reset(kind, key_type=key_type, max_parallelism=max_parallelism,
                       key_group_range=key_group_range, path=path,
                       query_time_after_num_entries=query_time_after_num_entries,
                       periodic_compaction_ms=periodic_compaction_ms,
                       rocksdb_options=rocksdb_options,
                       incremental_checkpoints=incremental_checkpoints,
                       primary_path=primary_path)
        except BaseException:
            self.close()
            raise

    def reset(self, kind: str = "heap", *, key_type: str = "long", max_parallelism: int = 128,
              key_group_range: KeyGroupRange | tuple[int, int] | None = None,
              path: str | os.PathLike | None = None, query_time_after_num_entries: int = 1000,
              periodic_compaction_ms: int | None = None,
              rocksdb_options: Mapping[str, Any] | None = None,
              incremental_checkpoints: bool = False,
              primary_path: str | os.PathLike | None = None) -> None:
        """Disposes the current backend and opens a new, empty one (time 0, no states)."""
        if kind not in KINDS:
            raise ValueError(f"unknown Flink backend kind '{kind}'; expected one of {KINDS}")
        if key_type not in KEY_TYPES:
            raise ValueError(f"key_type must be one of {tuple(KEY_TYPES)}, got {key_type!r}")
        if max_parallelism < 1:
            raise ValueError(f"max_parallelism must be >= 1, got {max_parallelism}")
        if key_group_range is None:
            start, end = 0, max_parallelism - 1
        elif isinstance(key_group_range, KeyGroupRange):
            start, end = key_group_range.start, key_group_range.end
        else:
            start, end = key_group_range
        if not 0 <= start <= end < max_parallelism:
            raise ValueError(
                f"key group range {start}..{end} is not inside 0..{max_parallelism - 1}")
        if query_time_after_num_entries < 0:
            raise ValueError("query_time_after_num_entries must be >= 0")
        self.kind = kind
        self.key_code = KEY_TYPES[key_type]
        self.query_time_after_num_entries = query_time_after_num_entries
        self.periodic_compaction_ms = periodic_compaction_ms
        self._next_sid = 0
        if primary_path is not None and kind not in _FORST_KINDS:
            raise ValueError(f"primary_path is ForSt's primary folder; the {kind} backend has none")
        if path is None:
            path = self._tmp / f"db-{time.monotonic_ns()}"
        buf = bytearray(_OPEN.pack(wire.OPEN_BACKEND, _KIND_CODES[kind],
                                   self.key_code, max_parallelism, start, end))
        wire.put_str(buf, str(path))
        if kind in _FORST_KINDS:
            conf = forst_configuration(dict(rocksdb_options or {}))
            conf[FORST_PRIMARY_DIR] = str(primary_path if primary_path is not None
                                          else self._tmp / f"primary-{time.monotonic_ns()}")
        else:
            conf = rocksdb_configuration(dict(rocksdb_options or {}))
        buf += _OPEN_TAIL.pack(query_time_after_num_entries,
                               -1 if periodic_compaction_ms is None else periodic_compaction_ms,
                               1 if incremental_checkpoints else 0, len(conf))
        for key, value in conf.items():
            wire.put_str(buf, key)
            wire.put_str(buf, value)
        self.send(bytes(buf))

    def batch(self) -> Batch:
        return Batch(self)

    def new_state_id(self) -> int:
        """The next state id of this backend (ids are the worker's handles for its states)."""
        sid = self._next_sid
        self._next_sid += 1
        return sid

    def register(self, desc: StateDescriptor, function: str | None = None) -> FlinkState:
        """Registers one state right away (its own small batch)."""
        b = self.batch()
        state = b.register(desc, function)
        b.flush()
        return state

    # -- frames -------------------------------------------------------------------------------
    def send(self, payload: bytes) -> list[Any]:
        """One request frame out, one reply frame in; raises on a failed command."""
        proc = self._proc
        if proc is None:
            raise FlinkWorkerError("the Flink worker is closed")
        try:
            proc.stdin.write(_LEN.pack(len(payload)) + payload)
        except (BrokenPipeError, OSError) as exc:
            raise self._died(f"writing a batch failed ({exc})") from None
        return self._receive(time.monotonic() + self.timeout_s)

    def _receive(self, deadline: float) -> list[Any]:
        header = self._read_exact(4, deadline)
        (length,) = _LEN.unpack(header)
        if length > MAX_FRAME:
            # not a frame: the JVM wrote text to stdout (e.g. "Error occurred during
            # initialization of VM"); show it instead of waiting for 1 GB that never comes
            stray = header + self._drain(time.monotonic() + 2.0)
            self._kill()
            raise self._died("wrote text instead of a frame to stdout: "
                             + stray.decode("utf-8", "replace").strip())
        frame = memoryview(self._read_exact(length, deadline))
        status, nanos, count = _HEAD.unpack_from(frame, 0)
        self.last_batch_jvm_ns = nanos
        pos = _HEAD.size
        if status != 0:
            n = struct.unpack_from(">i", frame, pos)[0]
            message = bytes(frame[pos + 4:pos + 4 + n]).decode("utf-8", "replace")
            first = message.splitlines()[0] if message else "unknown error"
            raise FlinkCommandError(
                f"command {count} of the batch failed in Flink: {first}\n{message}", count)
        if count >= 64 and len(frame) - pos == 9 * count:
            longs = wire.all_longs(frame[pos:], count)
            if longs is not None:
                return longs
        out = []
        for _ in range(count):
            value, pos = wire.get_value(frame, pos)
            out.append(value)
        return out

    def _read_exact(self, n: int, deadline: float) -> bytes:
        fd = self._proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise self._died(f"no reply within {self.timeout_s:.0f} s (the JVM was killed)")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise self._died("the JVM closed its output")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _drain(self, deadline: float) -> bytes:
        """Whatever the JVM still writes to stdout until EOF or the deadline."""
        fd, chunks = self._proc.stdout.fileno(), []
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        return b"".join(chunks)

    def stderr_tail(self) -> str:
        try:
            self._stderr.flush()
            size = os.path.getsize(self._stderr.name)
            with open(self._stderr.name, "rb") as f:
                f.seek(max(0, size - _STDERR_TAIL))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _died(self, what: str) -> FlinkWorkerError:
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        status = f"exit code {code}" if code is not None else "still running"
        if code is not None and code < 0:  # Popen's -N: signal N ended it (9: killed)
            with contextlib.suppress(ValueError):
                status += f", killed by {signal.Signals(-code).name}"
        tail = self.stderr_tail().strip()  # the first line is the error's one line
        return FlinkWorkerError(f"Flink worker JVM: {what} ({status})"
                                + (f"\nTail of its stderr:\n{tail}" if tail else ""))

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()

    @property
    def pid(self) -> int:
        """The JVM's process id (for the JDK's own tools: jcmd, jfr)."""
        if self._proc is None:
            raise FlinkWorkerError("the Flink worker JVM is not running")
        return self._proc.pid

    def close(self) -> None:
        """Asks the JVM to dispose the backend and exit; kills it if it does not within 30 s."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.poll() is None:
                    proc.stdin.write(_LEN.pack(1) + bytes([wire.CLOSE]))
                    proc.stdin.close()
                proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()
        if not self._stderr.closed:
            self._stderr.close()
        tempdirs.remove(self._tmp)

    def __enter__(self) -> FlinkWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_proc", None) is not None:
            self._kill()
