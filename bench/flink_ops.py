"""Per-op rates of Flink's own backends and of statebench's, measured as JMH and pyperf measure.

Shared by the pytest-benchmark suite (``bench/pytest/test_bench_flink.py``, the lean protocol),
asv (``bench/bench_flink.py``, the full protocol) and the command line (``python -m bench.perop``).

* **Flink** (JMH's way): every fork is a fresh JVM worker; inside it each op warms up in
  iterations of the protocol's length until two consecutive rates are within 5% (at most
  ``jvm_warmup`` of them), then runs ``jvm_iterations`` measured iterations
  (``Bench.java``).
* **statebench** (pyperf's way): every worker is a fresh interpreter (a subprocess);
  inside it each op's loop count is calibrated so that one value takes at least
  ``py_min_value_s`` (pyperf: 100 ms), then ``py_warmup`` values are dropped and ``py_values``
  kept.
* Both sides run the same ops over the same 100 k keys (performance-anchors.md); on RocksDB every
  op starts on a flushed, compacted DB (reads from SST files, as after a compaction in
  performance-anchors.md; no background compaction left running into the measured values, whose
  CPU time they would otherwise carry by chance); forks and
  workers of every TTL mode are interleaved (fork 1 of off, on, on_no_bg, then fork 2 ...), so a
  change of load on a shared machine lands on every mode alike instead of on one.

Each value is recorded twice: by wall clock (JMH's and pyperf's measure) and by the process's
CPU time (which a shared machine's descheduling does not inflate; the headline, see
bench/perop.py). A process's CPU time includes its helper threads: the JVM's GC and JIT threads,
RocksDB's flush and compaction threads on both sides.

Ops: value update/get, list add/get, map put/get/iterate (per entry); TTL off, on (Flink's
default background cleanup: heap incremental 5 per access, RocksDB compaction filter) and on
without background cleanup.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import backends as B
from bench.fixtures import ttl_config_for

KEYS = 100_000
MAP_KEYS = 10
NOW = 1_000_000
CHUNK = 256
OPS = ("value_update", "value_get", "list_add", "list_get", "map_put", "map_get", "map_iterate")
MODES = ("off", "on", "on_no_bg")
KINDS = ("heap", "rocksdb")
#: The environment variable that picks the protocol of the pytest-benchmark suite.
PROTOCOL_ENV = "STATEBENCH_PEROP_PROTOCOL"


@dataclass(frozen=True)
class Protocol:
    """How many processes, iterations and seconds each side gets."""

    name: str
    forks: int  # fresh JVMs per (backend, TTL mode)
    jvm_warmup: int  # at most this many warm-up iterations (fewer once steady)
    jvm_iterations: int
    jvm_iteration_ms: int
    workers: int  # fresh interpreters per (backend, TTL mode)
    py_warmup: int
    py_values: int
    py_min_value_s: float
    keys: int = KEYS


#: JMH's shape at a size a 2-core machine can afford: 3 forks (as flink-benchmarks), warm-up
#: until steady, 5 measured 1 s iterations; pyperf's 100 ms values from 6 fresh interpreters.
FULL = Protocol("full", forks=3, jvm_warmup=6, jvm_iterations=5, jvm_iteration_ms=1000,
                workers=6, py_warmup=1, py_values=3, py_min_value_s=0.1)
#: CI's: fewer processes and shorter JVM iterations; the intervals widen to match, so verdicts
#: turn undecided rather than flip.
LEAN = Protocol("lean", forks=2, jvm_warmup=4, jvm_iterations=3, jvm_iteration_ms=300,
                workers=2, py_warmup=1, py_values=4, py_min_value_s=0.1)
PROTOCOLS = {p.name: p for p in (LEAN, FULL)}


def protocol_from_env(default: str = "lean") -> Protocol:
    """The protocol named by $STATEBENCH_PEROP_PROTOCOL (lean or full)."""
    name = os.environ.get(PROTOCOL_ENV, default).strip().lower()
    if name not in PROTOCOLS:
        raise ValueError(f"${PROTOCOL_ENV}='{name}' is not a protocol; expected one of "
                         f"{sorted(PROTOCOLS)}")
    return PROTOCOLS[name]


#: This suite's TTL modes as the shared fixtures' variants (the same TTL configurations).
VARIANT_OF_MODE = {"off": "plain", "on": "ttl", "on_no_bg": "ttl_nobg"}


def descs(mode: str) -> dict[str, B.StateDescriptor]:
    made = {
        "value": B.ValueStateDescriptor("value", B.Types.LONG()),
        "list": B.ListStateDescriptor("list", B.Types.LONG()),
        "map": B.MapStateDescriptor("map", B.Types.LONG(), B.Types.LONG()),
    }
    cfg = ttl_config_for(VARIANT_OF_MODE[mode])
    if cfg is not None:
        for d in made.values():
            d.enable_time_to_live(cfg)
    return made


@dataclass
class OpRun:
    """One process's values of one op: rates (ops/s) by wall clock and by CPU time."""

    rates: list[float]
    cpu_rates: list[float]
    warmup: list[float]
    steady: bool
    shortest_s: float


# ------------------------------------------------------------------------- Flink side
def flink_fork(kind: str, mode: str, protocol: Protocol,
               ops: tuple[str, ...] = OPS) -> dict[str, OpRun]:
    """One fork: a fresh JVM worker measuring `ops` of one (backend, TTL mode).

    `measure` forks once per op, as JMH forks per benchmark: in one JVM the code HotSpot compiles
    for an op depends on the ops measured before it (profile pollution), which moved Flink's heap
    TTL value update between 2.6 M and 8.5 M ops/s within one run."""
    from backends.flink import FlinkWorker

    wanted = {op.split("_")[0] for op in ops}
    with FlinkWorker(kind) as worker:
        b = worker.batch().set_time(NOW)
        states = {n: b.register(d) for n, d in descs(mode).items() if n in wanted}
        for op in ops:
            b.bench(states[op.split("_")[0]], op, keys=protocol.keys, warmup=protocol.jvm_warmup,
                    rounds=protocol.jvm_iterations, round_ms=protocol.jvm_iteration_ms)
        results = b.flush()
    return {op: OpRun(list(r["rates"]), list(r["cpu_rates"]), list(r["warmup"]),
                      bool(r["steady"]), protocol.jvm_iteration_ms / 1000)
            for op, r in zip(ops, results)}


# ------------------------------------------------------------------------- statebench side
def _fill(backend: B.KeyedStateBackend, states: dict, kind: str, keys: Iterable[int]) -> None:
    for k in keys:
        backend.set_current_key(k)
        if kind == "value":
            states["value"].update(k)
        elif kind == "list":
            states["list"].update([k])
        else:
            states["map"].put_all(dict.fromkeys(range(MAP_KEYS), k))


def _loop(backend: B.KeyedStateBackend, states: dict, op: str) -> Callable[[list[int]], int]:
    """One op per key of `chunk` (map_iterate: one per entry), as the JVM's Bench.one()."""
    sk = backend.set_current_key
    v, lst, m = states["value"], states["list"], states["map"]

    def value_update(chunk):
        for k in chunk:
            sk(k)
            v.update(k)
        return len(chunk)

    def value_get(chunk):
        for k in chunk:
            sk(k)
            v.value()
        return len(chunk)

    def list_add(chunk):
        for k in chunk:
            sk(k)
            lst.add(k)
        return len(chunk)

    def list_get(chunk):
        for k in chunk:
            sk(k)
            for _ in lst.get():
                pass
        return len(chunk)

    def map_put(chunk):
        for i, k in enumerate(chunk):
            sk(k)
            m.put(i % MAP_KEYS, k)
        return len(chunk)

    def map_get(chunk):
        for i, k in enumerate(chunk):
            sk(k)
            m.get(i % MAP_KEYS)
        return len(chunk)

    def map_iterate(chunk):
        n = 0
        for k in chunk:
            sk(k)
            for _ in m.items():
                n += 1
        return n

    return locals()[op]


def _timed(loop: Callable[[list[int]], int], chunks: list[list[int]], start_at: int,
           loops: int) -> tuple[int, float, float]:
    """`loops` chunks from `start_at`: (ops, wall seconds, process CPU seconds)."""
    n_chunks = len(chunks)
    count = 0
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    for i in range(start_at, start_at + loops):
        count += loop(chunks[i % n_chunks])
    wall = time.perf_counter() - t0
    return count, wall, time.process_time() - cpu0


class _Backend:
    """One statebench backend with the three benchmark states, filled per state kind on
    demand (a worker fills each kind once; list ops refill, see statebench_op)."""

    def __init__(self, kind: str, mode: str, keys: list[int], tmp: Path) -> None:
        options = {"path": tmp / f"sb-{kind}-{mode}"} if kind == "rocksdb" else {}
        self.backend = B.create_backend(kind, clock=B.ManualClock(NOW), **options)
        made = descs(mode)
        self.states = {"value": self.backend.get_state(made["value"]),
                       "list": self.backend.get_list_state(made["list"]),
                       "map": self.backend.get_map_state(made["map"])}
        self.keys = keys
        self.filled: set[str] = set()

    def fill(self, state_kind: str, again: bool = False) -> None:
        if again or state_kind not in self.filled:
            _fill(self.backend, self.states, state_kind, self.keys)
            self.filled.add(state_kind)


def statebench_op(sb: _Backend, op: str, protocol: Protocol) -> OpRun:
    """One op in this process, pyperf's way: calibrate the loop count so that one value takes
    at least py_min_value_s, drop py_warmup values, keep py_values. The state holds one value /
    one element / ten entries per key when the op starts, as the JVM's Bench.setup(). (The JVM
    refills before each list_add iteration because a 1 s iteration adds ~20 elements per key;
    a value here adds well under one per key, so lists stay bounded without it.)"""
    order = sb.keys[:]
    random.Random(42).shuffle(order)
    chunks = [order[i:i + CHUNK] for i in range(0, len(order), CHUNK)]
    state_kind = op.split("_")[0]
    sb.fill(state_kind, again=state_kind == "list")  # list_add lengthens the lists
    # RocksDB: every op starts on a flushed, compacted DB, as the JVM's (heap: nothing)
    sb.backend.compact()
    loop = _loop(sb.backend, sb.states, op)
    loops, pos = 1, 0
    while True:  # pyperf's calibration: double the loops until one value is long enough
        _, wall, _ = _timed(loop, chunks, pos, loops)
        pos += loops
        if wall >= protocol.py_min_value_s:
            break
        loops *= 2
    run = OpRun([], [], [], True, float("inf"))
    for value in range(protocol.py_warmup + protocol.py_values):
        count, wall, cpu = _timed(loop, chunks, pos, loops)
        pos += loops
        if value < protocol.py_warmup:
            run.warmup.append(count / wall)
            continue
        run.rates.append(count / wall)
        run.cpu_rates.append(count / cpu if cpu > 0 else count / wall)
        run.shortest_s = min(run.shortest_s, wall)
    return run


def statebench_worker(kind: str, mode: str, protocol: dict) -> dict[str, dict]:
    """Body of one worker process: every op of one (backend, TTL mode). Arguments and result
    are plain data (it crosses a process boundary)."""
    proto = Protocol(**protocol)
    with tempfile.TemporaryDirectory(prefix="statebench-perop-") as tmp:
        sb = _Backend(kind, mode, list(range(proto.keys)), Path(tmp))
        try:
            return {op: asdict(statebench_op(sb, op, proto)) for op in OPS}
        finally:
            sb.backend.close()


def statebench_process(kind: str, mode: str, protocol: Protocol) -> dict[str, OpRun]:
    """One worker: a fresh interpreter, as pyperf's worker processes. It gets this process's
    sys.path (as multiprocessing's "spawn" would, without re-importing a __main__ that asv or
    pytest owns) and answers with JSON on stdout."""
    request = json.dumps({"kind": kind, "mode": mode, "protocol": asdict(protocol)})
    code = ("import json, os, sys; sys.path[:0] = json.loads(os.environ['STATEBENCH_PEROP_PATH']);"
            " from bench.flink_ops import _worker_main; _worker_main()")
    # asv imports this package through its own finder, not sys.path: the package's parent goes
    # last, so the installed statebench (asv's build of the commit) still comes first
    path = [*sys.path, str(Path(__file__).resolve().parent.parent)]
    env = {**os.environ, "STATEBENCH_PEROP_PATH": json.dumps(path)}
    proc = subprocess.run([sys.executable, "-c", code], input=request, capture_output=True,
                          text=True, env=env, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the statebench per-op worker ({kind}, TTL {mode}) exited with "
                           f"{proc.returncode}: {tail[0]}")
    return {op: OpRun(**r) for op, r in json.loads(proc.stdout).items()}


def _worker_main() -> None:
    """Entry point of a worker process: a request on stdin, the OpRuns as JSON on stdout."""
    req = json.loads(sys.stdin.read())
    json.dump(statebench_worker(req["kind"], req["mode"], req["protocol"]), sys.stdout)


# ------------------------------------------------------------------------- the suite
#: (side, backend, TTL mode, op) -> one OpRun per fork / worker.
Measurements = dict[tuple[str, str, str, str], list[OpRun]]


def measure(protocol: Protocol, kinds: Iterable[str] = KINDS,
            progress: Callable[[str], None] | None = None) -> Measurements:
    """Every (backend, TTL mode, op) on both sides, forks and workers interleaved over the TTL
    modes. Raises FlinkUnavailableError when Flink's lanes cannot run here."""
    from backends.flink.lanes import check_available

    check_available()
    out: Measurements = {}
    for kind in kinds:
        for i in range(max(protocol.forks, protocol.workers)):
            for mode in MODES:
                if i < protocol.forks:
                    for one in OPS:
                        for op, run in flink_fork(kind, mode, protocol, (one,)).items():
                            out.setdefault(("flink", kind, mode, op), []).append(run)
                if i < protocol.workers:
                    for op, run in statebench_process(kind, mode, protocol).items():
                        out.setdefault(("statebench", kind, mode, op), []).append(run)
                if progress is not None:
                    progress(f"{kind} {mode} round {i + 1}")
    return out


def protocol_json(protocol: Protocol) -> dict[str, Any]:
    return asdict(protocol)
