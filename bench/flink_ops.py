"""Per-op rates of Flink's own backends and of statebench's, measured as JMH and pyperf measure.

Shared by the pytest-benchmark suite (``bench/pytest/test_bench_flink.py``, the quick protocol),
asv (``bench/bench_flink.py``: its own smaller quick protocol, the full one on request, see
``bench.asv_protocol``) and the command line (``python -m bench.perop``).

* **Flink** (JMH's way): every fork is a fresh JVM worker for one (backend, op), as JMH forks per
  benchmark; its heap is sized up front (-Xms = -Xmx), so the collector's work does not change
  as the heap grows. Inside it the op warms up for at least ``jvm_warmup_min`` rounds, then
  until steady (at most ``jvm_warmup``), then runs ``jvm_iterations`` measured rounds
  (``Bench.java``).
* **statebench** (pyperf's way): every worker is a fresh interpreter (a subprocess) for one
  backend and one kind of state (value, list, map), filled in it; inside it each op's loop count
  is calibrated so that one value takes at least ``py_min_value_s`` (pyperf: 100 ms), then
  ``py_warmup`` rounds are dropped and ``py_values`` kept. Reads run before writes. A fresh
  process per state kind, as a fresh JVM per Flink op: in a worker that had run the other
  kinds' ops first, the same value get moved by more than 2x from one process to the next,
  because what a process allocated and freed before decides where its state's objects lie
  (docs/measurements.md, "Per-op protocol").
* **The TTL modes.** What TTL costs is a ratio of two modes' rates (off, on, and on without
  background cleanup). A statebench worker holds the op's state once per mode in one backend,
  and every round measures each mode once, in an order rotated each round, so a worker's ratio
  of mean rates cancels what the machine and the round's position did. A Flink fork holds one
  state (see `flink_forks`: HotSpot compiles a shared loop for the mix of states it has seen);
  the i-th forks of an op's three modes are alive together and take turns, one measured
  iteration each per round in a rotated order, so they make a pair as a worker's modes do
  (separate processes minutes apart moved the same ratios by up to 2x: docs/measurements.md,
  "Per-op protocol").
* Both sides run the same ops over the same 100 k keys (docs/performance.md, "The anchors"); on
  RocksDB every op starts on a flushed, compacted DB (reads from SST files, as after a compaction
  in the anchors; no background compaction left running into the measured values, whose CPU
  time they would otherwise carry by chance).

* **The machine gate** (bench/machine_gate.py): a short probe before every measured round and
  after each of its values; a round the probe found the machine slow in is taken again (at most
  as many times as there are measured rounds per process), so a neighbour's burst does not pick
  which rounds a median stands on. After every measured round the gate's cache probe takes one
  reading (a larger dict, about 25 MB: how much of the shared L3 the neighbours left), kept
  with the round (`OpRun.cache`): it retakes nothing, it says under what cache pressure a
  median was measured.

Each value is recorded twice: by wall clock (JMH's and pyperf's measure) and by the process's
CPU time (which a shared machine's descheduling does not inflate; the headline, see
bench/perop.py). A process's CPU time includes its helper threads: the JVM's GC and JIT threads,
RocksDB's flush and compaction threads on both sides.

Ops: value update/get, list add/get, map put/get/iterate (per entry); TTL off, on (Flink's
default background cleanup: heap incremental 5 per access, RocksDB compaction filter) and on
without background cleanup.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import backends as B
from backends.storage.registry import storage_backend
from bench.fixtures import ttl_config_for
from bench.machine_gate import MachineGate

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
    """How many processes, rounds and seconds each side gets."""

    name: str
    forks: int  # fresh JVMs per (backend, op)
    jvm_warmup_min: int  # warm-up rounds before the steadiness check may end the warm-up
    jvm_warmup: int  # at most this many warm-up rounds
    jvm_iterations: int  # measured rounds
    jvm_iteration_ms: int
    workers: int  # fresh interpreters per backend
    py_warmup: int
    py_values: int
    py_min_value_s: float
    keys: int = KEYS
    #: whether the machine gate waits for the machine and retakes slow rounds (False: it still
    #: probes and counts the slow rounds it keeps, but never waits or retakes)
    retake: bool = True
    #: the ops measured (all of OPS but in CI's protocol)
    ops: tuple[str, ...] = OPS


#: JMH's shape at a size a 2-core machine can afford: 3 forks per (op, TTL mode) (as
#: flink-benchmarks), warm-up of at least 3 s, then until steady; 5 measured 1 s iterations;
#: pyperf's 100 ms values from 6 fresh interpreters, 6 rounds (two full rotations of the modes).
FULL = Protocol("full", forks=3, jvm_warmup_min=3, jvm_warmup=8, jvm_iterations=5,
                jvm_iteration_ms=1000, workers=6, py_warmup=1, py_values=6, py_min_value_s=0.1)
#: The docs' tables': shorter rounds. Three forks per (op, mode): a fork of one state repeats
#: within a few percent without TTL (Flink's heap value update: 21-22 M) and by up to 2x with
#: it (2.1-4.7 M, JIT and collector timing); the forks' ratios are what a verdict stands on.
#: The warm-up gives a state at least 2 s (HotSpot's last compilation of Flink's heap TTL value
#: update came after 1.5-2.2 s from a cold start; a state still climbing is flagged not
#: steady). Three statebench workers per state kind. Nine measured rounds a process (three full
#: rotations of the modes): with three, the spread of the forks' ratios was all round-to-round
#: noise, and rounds cost no JVM start, fill or warm-up. More processes (``WIDE``) also give a
#: cell's t interval more degrees of freedom.
LEAN = Protocol("lean", forks=3, jvm_warmup_min=8, jvm_warmup=12, jvm_iterations=9,
                jvm_iteration_ms=250, workers=3, py_warmup=1, py_values=9, py_min_value_s=0.1)
#: Lean's rounds with twice the processes a side: what the per-op table's repeatability bar
#: (24 of 28 verdicts over three back-to-back runs) needs on a machine whose L3 neighbours move
#: the cells between runs, as ``python -m bench.perop predict`` fitted to three lean runs says:
#: with three processes a side, Welch's t has a few degrees of freedom and each run's own
#: spread estimate swings, so a cell decided in one run is not in the next. About twice lean's
#: time (docs/performance.md, "What the verdicts can reach").
WIDE = replace(LEAN, name="wide", forks=6, workers=6)
#: The default of CI's test: the same measurement at the smallest size that still
#: pairs every mode in every round position (two forks and two workers, three rounds), over
#: 20 k keys, and a machine gate that counts slow rounds but neither waits nor retakes (its
#: numbers decide nothing; under a neighbour's load, waits and retakes were most of its time).
#: It proves the suite runs end to end and that its document keeps its rules (every rate,
#: every round, a verdict per cell that follows from its interval); its verdicts are not the
#: docs' (those come from ``python -m bench.perop run --protocol lean``, three runs of it
#: compared). Why not the lean or full protocol in CI and asv: docs/performance.md gives their
#: times.
QUICK = Protocol("quick", forks=2, jvm_warmup_min=3, jvm_warmup=6, jvm_iterations=3,
                 jvm_iteration_ms=250, workers=2, py_warmup=1, py_values=3, py_min_value_s=0.02,
                 keys=20_000, retake=False)
#: CI's: the quick protocol on one op of each state kind (a read, a write, an iteration). CI
#: checks the suite end to end and its document's rules, which need no more ops; the 28 cells
#: are asv's (quick) and the docs' (lean). A Flink (backend, op) is three JVMs per fork, so the
#: JVMs, most of the suite's time, fall from 84 to 36.
CI = replace(QUICK, name="ci", ops=("value_get", "list_add", "map_iterate"))
PROTOCOLS = {p.name: p for p in (CI, QUICK, LEAN, WIDE, FULL)}


def protocol_from_env(default: str = "quick") -> Protocol:
    """The protocol named by $STATEBENCH_PEROP_PROTOCOL (ci, quick, lean, wide or full)."""
    name = os.environ.get(PROTOCOL_ENV, default).strip().lower()
    if name not in PROTOCOLS:
        raise ValueError(f"${PROTOCOL_ENV}='{name}' is not a protocol; expected one of "
                         f"{sorted(PROTOCOLS)}")
    return PROTOCOLS[name]


#: This suite's TTL modes as the shared fixtures' variants (the same TTL configurations).
VARIANT_OF_MODE = {"off": "plain", "on": "ttl", "on_no_bg": "ttl_nobg"}


def descs(mode: str) -> dict[str, B.StateDescriptor]:
    """The benchmark's value, list and map states for one TTL mode, named by it (the three modes
    share one backend)."""
    made = {
        "value": B.ValueStateDescriptor(f"value_{mode}", B.Types.LONG()),
        "list": B.ListStateDescriptor(f"list_{mode}", B.Types.LONG()),
        "map": B.MapStateDescriptor(f"map_{mode}", B.Types.LONG(), B.Types.LONG()),
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
    retaken: int = 0  # measured rounds the machine gate took again (bench/machine_gate.py)
    slow_kept: int = 0  # rounds kept although the gate found the machine slow
    #: the cache probe's reading after each kept measured round (ops/s; bench/machine_gate.py)
    cache: list[float] = field(default_factory=list)


def rotated_modes(n: int) -> tuple[str, ...]:
    """The TTL modes in the order of round (or fork) `n`: rotated by one each time, so over
    len(MODES) of them each mode has been measured in every position."""
    k = n % len(MODES)
    return MODES[k:] + MODES[:k]


# ------------------------------------------------------------------------- Flink side
#: A bench fork's heap, sized up front (-Xms = -Xmx).
FORK_HEAP_MB = 1024


def flink_forks(kind: str, op: str, protocol: Protocol, n: int = 0,
                gate: MachineGate | None = None) -> dict[str, OpRun]:
    """The `n`-th forks of one op: a fresh JVM worker per TTL mode, each holding that mode's
    one state, as JMH forks per benchmark and flink-benchmarks' state benchmarks hold one
    state. The three JVMs live together: each warms up in turn, then their measured iterations
    interleave, one iteration per JVM per round in an order rotated each round (as a
    statebench worker's rounds), so the ratio of two modes' mean rates cancels what the
    machine did while they ran.

    * One state per JVM, not the three modes side by side in one: HotSpot compiles a call site
      for the receiver types its profile has seen, so a fork that measured the plain state and
      the TTL states through one loop compiled code for both, in whichever order its rounds
      reached the compiler, and ran slower and less steadily than in forks of its own
      (docs/measurements.md, "Per-op protocol"). (Python's interpreter shows no such effect:
      statebench's workers keep the modes side by side.) For the same reason the JVMs are fresh
      per op: in one JVM the code compiled for an op depends on the ops measured before it.
    * Interleaved, not one JVM after the other: forks run back to back, seconds apart, measured
      Flink's heap value get with TTL at 2.2-7.1 M ops/s within one run while the same fork ran
      at 7.6-7.9 M on a quiet machine. A neighbour's load slows the memory-bound TTL op more
      than the plain one, so back-to-back ratios moved 0.12-0.28 where interleaved rounds give
      each mode the same moments. The idle JVMs wait on their pipes; what an idle JVM's own
      threads still do is charged to its last iteration (`charged_cpu_rates`).
    * On RocksDB the measured iterations start on empty memtables. A JVM's writes slow down as
      its memtable grows (Flink's RocksDB value update: 0.9 M ops/s into a fresh memtable, 0.4
      M after 1.5 s) and speed up again after a flush, and the warm-up left each JVM at a
      different point of that cycle: entries with TTL are larger, so their memtable flushed
      sooner: the median of Flink's RocksDB map put with TTL over without was 0.91-1.36 in
      nine runs (mostly at or above 1), and 0.94-0.99 in three runs with the flush.
      statebench's worker flushes its memtables (one per state) at the same point.
    * `gate` (this process's machine gate) probes the machine before the round and after each
      turn: a round in which the machine ran slow is taken again, at most jvm_iterations times
      per fork group; the retaken turns' spans are left out of every rate."""
    from contextlib import ExitStack

    from backends.flink import FlinkWorker

    modes = rotated_modes(n)
    with ExitStack() as stack:
        workers, states, warm = {}, {}, {}
        for mode in modes:
            workers[mode] = stack.enter_context(FlinkWorker(kind, heap_mb=FORK_HEAP_MB))
            b = workers[mode].batch().set_time(NOW)
            states[mode] = b.register(descs(mode)[op.split("_")[0]])
            b.flush()
        for mode in modes:
            (warm[mode],) = workers[mode].batch().bench(
                states[mode], op, keys=protocol.keys, min_warmup=protocol.jvm_warmup_min,
                warmup=protocol.jvm_warmup, rounds=0,
                round_ms=protocol.jvm_iteration_ms).flush()
        for mode in modes:  # RocksDB: every memtable empty, the modes' writes start level
            workers[mode].batch().flush_memtables().flush()

        def resumed(mode: str, rounds: int) -> dict[str, Any]:
            (got,) = workers[mode].batch().bench(
                states[mode], op, keys=protocol.keys, warmup=0, rounds=rounds,
                round_ms=protocol.jvm_iteration_ms, resume=True).flush()
            return got

        rates: dict[str, list[float]] = {m: [] for m in modes}
        ops: dict[str, list[int]] = {m: [] for m in modes}
        clocks: dict[str, list[int]] = {m: [] for m in modes}
        kept: list[bool] = []  # per turn of every JVM (all take one turn per round)
        cache: list[float] = []  # the cache probe after each kept round
        gate = gate if gate is not None else MachineGate(protocol.keys)
        before = (gate.counts.retaken, gate.counts.slow_kept)
        retakes, r = (protocol.jvm_iterations if protocol.retake else 0), 0
        while r < protocol.jvm_iterations:
            fast = gate.wait() if protocol.retake else gate.check()
            turns = {}
            for mode in rotated_modes(n + r):
                turns[mode] = resumed(mode, 1)
                ops[mode] += turns[mode]["ops"]
                clocks[mode] += turns[mode]["cpu_starts_ns"]
                fast = gate.check() and fast
            level = gate.cache_probe()
            keep = gate.settle(fast, retakes > 0)
            kept.append(keep)
            if keep:
                for mode, got in turns.items():
                    rates[mode] += got["rates"]
                cache.append(level)
                r += 1
            else:
                retakes -= 1
        for mode in modes:  # each JVM's CPU clock once every JVM has had its last turn
            clocks[mode].append(resumed(mode, 0)["cpu_clock_ns"])
    retaken = gate.counts.retaken - before[0]
    slow_kept = gate.counts.slow_kept - before[1]
    return {m: OpRun(rates[m], list(itertools.compress(charged_cpu_rates(ops[m], clocks[m]),
                                                        kept)),
                     list(warm[m]["warmup"]), bool(warm[m]["steady"]),
                     protocol.jvm_iteration_ms / 1000, retaken, slow_kept, list(cache))
            for m in MODES}


def charged_cpu_rates(ops: list[int], clocks_ns: list[int]) -> list[float]:
    """Ops per CPU second of interleaved iterations, each charged with all its process spent
    from its start to the start of the process's next iteration (`clocks_ns` holds one more
    clock than `ops`: the process's CPU clock after the last round). Between its turns a JVM's
    main thread waits on its pipe, so what it spends there is what its iteration left running:
    RocksDB's flushes and compactions (with TTL on, the compaction filter's work) run on after
    the writes that caused them, into the other JVMs' turns, and would otherwise be charged to
    no one."""
    if len(clocks_ns) != len(ops) + 1:
        raise ValueError(f"{len(ops)} iterations need {len(ops) + 1} clocks, got "
                         f"{len(clocks_ns)}")
    spans = [b - a for a, b in itertools.pairwise(clocks_ns)]
    if any(s <= 0 for s in spans):
        raise ValueError(f"a process's CPU clock must advance between iterations: {clocks_ns}")
    return [n * 1e9 / s for n, s in zip(ops, spans)]


# ------------------------------------------------------------------------- statebench side
def _fill(backend: B.KeyedStateBackend, state: Any, kind: str, keys: Iterable[int]) -> None:
    for k in keys:
        backend.set_current_key(k)
        if kind == "value":
            state.update(k)
        elif kind == "list":
            state.update([k])
        else:
            state.put_all(dict.fromkeys(range(MAP_KEYS), k))


def _loop(backend: B.KeyedStateBackend, state: Any, op: str) -> Callable[[list[int]], int]:
    """One op per key of `chunk` (map_iterate: one per entry), as the JVM's Bench.one()."""
    sk = backend.set_current_key

    def value_update(chunk):
        for k in chunk:
            sk(k)
            state.update(k)
        return len(chunk)

    def value_get(chunk):
        for k in chunk:
            sk(k)
            state.value()
        return len(chunk)

    def list_add(chunk):
        for k in chunk:
            sk(k)
            state.add(k)
        return len(chunk)

    def list_get(chunk):
        for k in chunk:
            sk(k)
            for _ in state.get():
                pass
        return len(chunk)

    def map_put(chunk):
        for i, k in enumerate(chunk):
            sk(k)
            state.put(i % MAP_KEYS, k)
        return len(chunk)

    def map_get(chunk):
        for i, k in enumerate(chunk):
            sk(k)
            state.get(i % MAP_KEYS)
        return len(chunk)

    def map_iterate(chunk):
        n = 0
        for k in chunk:
            sk(k)
            for _ in state.items():
                n += 1
        return n

    return locals()[op]


def _chunks(keys: list[int]) -> list[list[int]]:
    """The keys in the suite's seeded shuffled order (the JVM's Bench uses the same seed), cut
    into the loops' chunks."""
    order = keys[:]
    random.Random(42).shuffle(order)
    return [order[i:i + CHUNK] for i in range(0, len(order), CHUNK)]


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
    """One statebench backend with one kind of benchmark state (value, list or map) for every
    TTL mode, as the JVM's fork holds them, filled once."""

    def __init__(self, kind: str, state_kind: str, keys: list[int], tmp: Path) -> None:
        options = storage_backend(kind).options(tmp / f"sb-{kind}", None)
        self.backend = B.create_backend(kind, clock=B.ManualClock(NOW), **options)
        getter = {"value": self.backend.get_state, "list": self.backend.get_list_state,
                  "map": self.backend.get_map_state}[state_kind]
        self.states = {mode: getter(descs(mode)[state_kind]) for mode in MODES}
        self.keys = keys
        for mode in MODES:
            _fill(self.backend, self.states[mode], state_kind, keys)


def _calibrated(loop: Callable[[list[int]], int], chunks: list[list[int]],
                min_value_s: float) -> tuple[int, int]:
    """pyperf's calibration: double the loop count until one value takes at least
    `min_value_s`. Returns (loops, chunks used)."""
    loops, pos = 1, 0
    while True:
        _, wall, _ = _timed(loop, chunks, pos, loops)
        pos += loops
        if wall >= min_value_s:
            return loops, pos
        loops *= 2


def statebench_op(sb: _Backend, op: str, protocol: Protocol,
                  gate: MachineGate | None = None) -> dict[str, OpRun]:
    """One op in this process on every TTL mode, pyperf's way: each mode's loop count calibrated
    so that one value takes at least py_min_value_s, then rounds of one value per mode (order
    rotated each round), the first py_warmup rounds dropped. The states hold one value / one
    element / ten entries per key when the first op starts, as the JVM's Bench; the worker runs
    the reads first, so each read op sees the layout the fill left. (The JVM refills before
    each list_add iteration because a 1 s iteration adds ~20 elements per key; a value here adds
    well under one per key, so lists stay bounded without it.) `gate` retakes a measured round
    in which the machine ran slow, at most py_values times per op."""
    chunks = _chunks(sb.keys)
    # RocksDB: every op starts on a flushed, compacted DB, as the JVM's (heap: nothing)
    sb.backend.compact()
    fns = {mode: _loop(sb.backend, sb.states[mode], op) for mode in MODES}
    loops, pos = {}, {}
    for mode in MODES:
        loops[mode], pos[mode] = _calibrated(fns[mode], chunks, protocol.py_min_value_s)
    runs = {mode: OpRun([], [], [], True, float("inf")) for mode in MODES}
    gate = gate if gate is not None else MachineGate(len(sb.keys))
    before = (gate.counts.retaken, gate.counts.slow_kept)
    retakes, rnd = (protocol.py_values if protocol.retake else 0), 0
    while rnd < protocol.py_warmup + protocol.py_values:
        measured = rnd >= protocol.py_warmup
        if rnd == protocol.py_warmup:
            sb.backend.flush()  # RocksDB: measured rounds start on empty memtables, as the JVMs'
        fast = (gate.wait() if protocol.retake else gate.check()) if measured else True
        taken = []
        for mode in rotated_modes(rnd):
            taken.append((mode, *_timed(fns[mode], chunks, pos[mode], loops[mode])))
            pos[mode] += loops[mode]
            if measured:
                fast = gate.check() and fast
        level = gate.cache_probe() if measured else 0.0
        if measured and not gate.settle(fast, retakes > 0):
            retakes -= 1
            continue
        for mode, count, wall, cpu in taken:
            run = runs[mode]
            if not measured:
                run.warmup.append(count / wall)
                continue
            run.rates.append(count / wall)
            run.cpu_rates.append(count / cpu if cpu > 0 else count / wall)
            run.cache.append(level)
            run.shortest_s = min(run.shortest_s, wall)
        rnd += 1
    for run in runs.values():
        run.retaken = gate.counts.retaken - before[0]
        run.slow_kept = gate.counts.slow_kept - before[1]
    return runs


#: The machine probe's name in a worker's result (beside the ops).
PROBE = "machine_probe"


def machine_probe(keys: list[int], protocol: Protocol) -> list[float]:
    """CPU-time rates of a plain dict update loop over the suite's keys in its shuffled order
    (no statebench code), `py_values` values of at least `py_min_value_s`, taken first thing in
    a fresh worker: how fast this machine ran Python's dict work at the time, so that a median's
    move between runs can be set beside the machine's own. (Taken again at the end of a worker
    that had filled and dropped its states, the same loop ran slower: the new dict's tuples
    land in the freed, scattered memory; docs/measurements.md, "Per-op protocol".)"""
    chunks = _chunks(keys)
    d = dict.fromkeys(keys, (0, NOW))

    def update(chunk: list[int]) -> int:
        for k in chunk:
            d[k] = (k, NOW)
        return len(chunk)

    loops, pos = _calibrated(update, chunks, protocol.py_min_value_s)
    rates = []
    for _ in range(protocol.py_values):
        count, wall, cpu = _timed(update, chunks, pos, loops)
        pos += loops
        rates.append(count / cpu if cpu > 0 else count / wall)
    return rates


#: A worker's ops per state kind, reads first: a write reorders the state in memory (a new
#: tuple per update lands wherever the allocator has room), and a read measured after it would
#: read a layout that depends on how many writes the calibration happened to choose.
OPS_OF_STATE = {"value": ("value_get", "value_update"), "list": ("list_get", "list_add"),
                "map": ("map_get", "map_iterate", "map_put")}


def state_ops(protocol: Protocol) -> dict[str, tuple[str, ...]]:
    """The protocol's ops by state kind (:data:`OPS_OF_STATE`'s order), kinds without one left
    out: a worker per kind listed."""
    found = {kind: tuple(op for op in ops if op in protocol.ops)
             for kind, ops in OPS_OF_STATE.items()}
    return {kind: ops for kind, ops in found.items() if ops}


#: The gate's reference speed in a worker's result (beside the ops and the probe).
GATE_REFERENCE = "gate_reference"


def statebench_worker(kind: str, state_kind: str, protocol: dict,
                      reference: float = 0.0) -> dict[str, Any]:
    """Body of one worker process: the machine probe, then the ops of one state kind of one
    backend on every TTL mode, on states filled in this process. Its machine gate starts from
    `reference`, the best the earlier workers saw. Arguments and result are plain data (it
    crosses a process boundary): {op: {mode: OpRun as a dict}, PROBE: [ops/s],
    GATE_REFERENCE: ops/s}."""
    proto = Protocol(**{**protocol, "ops": tuple(protocol["ops"])})  # JSON made it a list
    keys = list(range(proto.keys))
    out: dict[str, Any] = {PROBE: machine_probe(keys, proto)}
    gate = MachineGate(proto.keys, reference)
    with tempfile.TemporaryDirectory(prefix="statebench-perop-") as tmp:
        sb = _Backend(kind, state_kind, keys, Path(tmp))
        try:
            for op in state_ops(proto)[state_kind]:
                out[op] = {mode: asdict(r)
                           for mode, r in statebench_op(sb, op, proto, gate).items()}
        finally:
            sb.backend.close()
    out[GATE_REFERENCE] = gate.reference
    return out


def statebench_process(kind: str, state_kind: str, protocol: Protocol,
                       reference: float = 0.0) -> dict[str, Any]:
    """One worker: a fresh interpreter, as pyperf's worker processes, for one state kind (a
    fresh heap for every state, as a fresh JVM for every Flink op). It gets this process's
    sys.path (as multiprocessing's "spawn" would, without re-importing a __main__ that asv or
    pytest owns) and answers with JSON on stdout: {op: {mode: OpRun}, PROBE: [ops/s],
    GATE_REFERENCE: ops/s}."""
    request = json.dumps({"kind": kind, "state_kind": state_kind, "protocol": asdict(protocol),
                          "reference": reference})
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
        raise RuntimeError(f"the statebench per-op worker ({kind}, {state_kind} state) exited "
                           f"with {proc.returncode}: {tail[0]}")
    got = json.loads(proc.stdout)
    return {op: ({mode: OpRun(**r) for mode, r in modes.items()}
                 if op not in (PROBE, GATE_REFERENCE) else modes)
            for op, modes in got.items()}


def _worker_main() -> None:
    """Entry point of a worker process: a request on stdin, the OpRuns as JSON on stdout."""
    req = json.loads(sys.stdin.read())
    json.dump(statebench_worker(req["kind"], req["state_kind"], req["protocol"],
                                req.get("reference", 0.0)), sys.stdout)


# ------------------------------------------------------------------------- the suite
#: (side, backend, TTL mode, op) -> one OpRun per fork / worker. The i-th OpRuns of two modes
#: of one (side, backend, op) are a pair: one statebench worker, or Flink forks taking turns.
Measurements = dict[tuple[str, str, str, str], list[OpRun]]


def measure(protocol: Protocol, kinds: Iterable[str] = KINDS,
            progress: Callable[[str], None] | None = None
            ) -> tuple[Measurements, list[list[float]]]:
    """Every (backend, TTL mode, op) on both sides, forks and workers of the two sides
    interleaved, and each worker's machine probe rates. Raises FlinkUnavailableError when
    Flink's lanes cannot run here."""
    from backends.flink.lanes import check_available

    check_available()
    out: Measurements = {}
    probes: list[list[float]] = []
    gate = MachineGate(protocol.keys)  # this process's, between the forks' turns
    worker_reference = 0.0  # the best gate reference a worker has seen
    for kind in kinds:
        for i in range(max(protocol.forks, protocol.workers)):
            if i < protocol.forks:
                for op in protocol.ops:
                    # the i-th forks of an op's modes: alive together, measured in turn
                    for mode, run in flink_forks(kind, op, protocol, i, gate).items():
                        out.setdefault(("flink", kind, mode, op), []).append(run)
            if i < protocol.workers:
                for state_kind in state_ops(protocol):
                    got = statebench_process(kind, state_kind, protocol, worker_reference)
                    probes.append(got.pop(PROBE))
                    worker_reference = max(worker_reference, got.pop(GATE_REFERENCE))
                    for op, modes in got.items():
                        for mode, run in modes.items():
                            out.setdefault(("statebench", kind, mode, op), []).append(run)
            if progress is not None:
                progress(f"{kind} round {i + 1}")
    return out, probes


def protocol_json(protocol: Protocol) -> dict[str, Any]:
    return asdict(protocol)
