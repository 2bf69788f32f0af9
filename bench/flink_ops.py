"""Per-op rates of Flink's own backends and of statebench's, measured the same way in one run.

Shared by the pytest-benchmark suite (``bench/pytest/test_bench_flink.py``) and asv
(``bench/bench_flink.py``). Flink's rates come from the worker's in-JVM loop (JMH style: warm-up
rounds, then measured rounds of fixed wall time); statebench's from the same ops over the same
keys in Python, in rounds of fixed wall time after a warm-up. Ops: value update/get, list
add/get, map put/get/iterate (per entry); TTL off, on (Flink's default background cleanup: heap
incremental 5 per access, RocksDB compaction filter) and on without background cleanup.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

import backends as B
from backends.flink import FlinkWorker
from bench.fixtures import ttl_config

KEYS = 10_000
MAP_KEYS = 10
NOW = 1_000_000
OPS = ("value_update", "value_get", "list_add", "list_get", "map_put", "map_get", "map_iterate")
MODES = ("off", "on", "on_no_bg")
JVM_WARMUP, JVM_ROUNDS, JVM_ROUND_MS = 3, 5, 100
PY_WARMUP, PY_ROUNDS, PY_ROUND_S = 1, 3, 0.08


#: This suite's TTL modes as the shared fixtures' variants (the same TTL configurations).
VARIANT_OF_MODE = {"off": "plain", "on": "ttl", "on_no_bg": "ttl_nobg"}


def descs(mode: str) -> dict[str, B.StateDescriptor]:
    descs = {
        "value": B.ValueStateDescriptor("value", B.Types.LONG()),
        "list": B.ListStateDescriptor("list", B.Types.LONG()),
        "map": B.MapStateDescriptor("map", B.Types.LONG(), B.Types.LONG()),
    }
    cfg = ttl_config(VARIANT_OF_MODE[mode])
    if cfg is not None:
        for d in descs.values():
            d.enable_time_to_live(cfg)
    return descs


# ------------------------------------------------------------------------- Flink side
def flink_rates(worker: FlinkWorker, kind: str, mode: str) -> dict[str, list[float]]:
    """All ops of one (backend, TTL mode) as BENCH commands of one batch: ops/s per round."""
    worker.reset(kind)
    b = worker.batch().set_time(NOW)
    states = {n: b.register(d) for n, d in descs(mode).items()}
    for op in OPS:
        b.bench(states[op.split("_")[0]], op, keys=KEYS, warmup=JVM_WARMUP, rounds=JVM_ROUNDS,
                round_ms=JVM_ROUND_MS)
    return dict(zip(OPS, b.flush()))


# ------------------------------------------------------------------------- statebench side
def _fill(backend: B.KeyedStateBackend, states: dict, kind: str, keys: list[int]) -> None:
    for k in keys:
        backend.set_current_key(k)
        if kind == "value":
            states["value"].update(k)
        elif kind == "list":
            states["list"].update([k])
        else:
            for mk in range(MAP_KEYS):
                states["map"].put(mk, k)


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


def statebench_rates(kind: str, mode: str, tmp_path: Path) -> dict[str, list[float]]:
    """All ops of one (backend, TTL mode) on statebench, rounds as the JVM's: ops/s per round."""
    out = {}
    keys = list(range(KEYS))
    order = keys[:]
    random.Random(42).shuffle(order)
    chunks = [order[i:i + 256] for i in range(0, KEYS, 256)]
    for op in OPS:
        clock = B.ManualClock(NOW)
        options = {"path": tmp_path / f"sb-{kind}-{mode}-{op}"} if kind == "rocksdb" else {}
        backend = B.create_backend(kind, clock=clock, **options)
        try:
            made = descs(mode)
            states = {"value": backend.get_state(made["value"]),
                      "list": backend.get_list_state(made["list"]),
                      "map": backend.get_map_state(made["map"])}
            state_kind = op.split("_")[0]
            loop = _loop(backend, states, op)
            rates = []
            for rnd in range(PY_WARMUP + PY_ROUNDS):
                if rnd == 0 or op == "list_add":
                    _fill(backend, states, state_kind, keys)
                count, i = 0, 0
                start = time.perf_counter()
                while (elapsed := time.perf_counter() - start) < PY_ROUND_S:
                    count += loop(chunks[i])
                    i = (i + 1) % len(chunks)
                if rnd >= PY_WARMUP:
                    rates.append(count / elapsed)
            out[op] = rates
        finally:
            backend.close()
    return out



def rates_side_by_side(worker: FlinkWorker, kind: str, mode: str, tmp_path: Path
                       ) -> dict[str, dict[str, list[float]]]:
    """op -> {"flink": ops/s per round, "statebench": ops/s per round}: one (backend, TTL mode)
    measured on both sides back to back, so their ratio is a same-run number."""
    flink = flink_rates(worker, kind, mode)
    ours = statebench_rates(kind, mode, tmp_path)
    return {op: {"flink": flink[op], "statebench": ours[op]} for op in OPS}
