"""Flink's own per-op rates beside statebench's, and the JVM lane's protocol overhead.

Run: `python -m pytest bench/pytest/test_bench_flink.py`. Flink's rates come from the worker's
in-JVM loop (JMH style: warm-up rounds, then measured rounds of fixed wall time; median); the
same ops run on statebench's backends in the same test, the same way, so the ratios
statebench/Flink are same-run numbers. Ops: value update/get, list add/get, map put/get/iterate
(per entry); TTL off, on (Flink's default background cleanup: heap incremental 5 per access,
RocksDB compaction filter) and on without background cleanup. The saved JSON's extra_info holds
every rate, every ratio, and each side's relative cost of TTL (rate with TTL / rate without).

The protocol test sends the same ops as one pre-encoded batch from Python and compares the
per-op time with Flink's own loop: the lane's overhead (transfer + decode) should be at most 25%
of Flink's per-op time (reported, not asserted: a speed target on a shared machine).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import backends as B
from backends.flink import FlinkUnavailableError, FlinkWorker, wire

KEYS = 10_000
MAP_KEYS = 10
NOW = 1_000_000
TTL_MS = 3_600_000
OPS = ("value_update", "value_get", "list_add", "list_get", "map_put", "map_get", "map_iterate")
MODES = ("off", "on", "on_no_bg")
JVM_WARMUP, JVM_ROUNDS, JVM_ROUND_MS = 3, 5, 100
PY_WARMUP, PY_ROUNDS, PY_ROUND_S = 1, 3, 0.08
BATCH_OPS = 50_000
OVERHEAD_TARGET = 0.25
PAIRS = 7


def _ttl(mode: str) -> B.StateTtlConfig | None:
    if mode == "off":
        return None
    builder = B.StateTtlConfig.new_builder(TTL_MS)
    if mode == "on_no_bg":
        builder.disable_cleanup_in_background()
    return builder.build()


def _descs(mode: str) -> dict[str, B.StateDescriptor]:
    descs = {
        "value": B.ValueStateDescriptor("value", B.Types.LONG()),
        "list": B.ListStateDescriptor("list", B.Types.LONG()),
        "map": B.MapStateDescriptor("map", B.Types.LONG(), B.Types.LONG()),
    }
    cfg = _ttl(mode)
    if cfg is not None:
        for d in descs.values():
            d.enable_time_to_live(cfg)
    return descs


def _start(kind: str) -> FlinkWorker:
    try:
        return FlinkWorker(kind)
    except FlinkUnavailableError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def workers() -> Iterator[dict[str, FlinkWorker]]:
    made = {kind: _start(kind) for kind in ("heap", "rocksdb")}
    yield made
    for w in made.values():
        w.close()


# ------------------------------------------------------------------------- Flink side
def flink_rates(worker: FlinkWorker, kind: str, mode: str) -> dict[str, list[float]]:
    """All ops of one (backend, TTL mode) as BENCH commands of one batch: ops/s per round."""
    worker.reset(kind)
    b = worker.batch().set_time(NOW)
    states = {n: b.register(d) for n, d in _descs(mode).items()}
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


def statebench_rates(kind: str, mode: str, tmp_path: Any) -> dict[str, list[float]]:
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
            descs = _descs(mode)
            states = {"value": backend.get_state(descs["value"]),
                      "list": backend.get_list_state(descs["list"]),
                      "map": backend.get_map_state(descs["map"])}
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


# ------------------------------------------------------------------------- tests
@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
def test_per_op_rates_statebench_vs_flink(benchmark, workers, kind, tmp_path) -> None:
    rows: dict[str, dict[str, Any]] = {}

    def measure() -> None:
        for mode in MODES:
            flink = flink_rates(workers[kind], kind, mode)
            ours = statebench_rates(kind, mode, tmp_path)
            for op in OPS:
                f, s = statistics.median(flink[op]), statistics.median(ours[op])
                rows[f"{op}/{mode}"] = {
                    "flink_ops_per_s": round(f), "statebench_ops_per_s": round(s),
                    "flink_spread": [round(min(flink[op])), round(max(flink[op]))],
                    "statebench_spread": [round(min(ours[op])), round(max(ours[op]))],
                    "statebench_over_flink": round(s / f, 4),
                }

    benchmark.pedantic(measure, rounds=1, iterations=1)
    relative = {}
    for op in OPS:
        for mode in ("on", "on_no_bg"):
            on, off = rows[f"{op}/{mode}"], rows[f"{op}/off"]
            f_rel = on["flink_ops_per_s"] / off["flink_ops_per_s"]
            s_rel = on["statebench_ops_per_s"] / off["statebench_ops_per_s"]
            relative[f"{op}/{mode}"] = {
                "flink_ttl_over_off": round(f_rel, 3), "statebench_ttl_over_off": round(s_rel, 3),
                "within_1_5x": 1 / 1.5 <= s_rel / f_rel <= 1.5,
            }
    benchmark.extra_info.update(flink_backend=kind, keys=KEYS, flink_rates=rows,
                                relative_cost_of_ttl=relative,
                                jvm_rounds=[JVM_WARMUP, JVM_ROUNDS, JVM_ROUND_MS],
                                python_rounds=[PY_WARMUP, PY_ROUNDS, PY_ROUND_S])
    print(f"\n[flink {kind}] op/mode: flink ops/s, statebench ops/s, statebench/flink")
    for name, row in rows.items():
        print(f"  {name:24s} {row['flink_ops_per_s']:>11,} {row['statebench_ops_per_s']:>11,}"
              f"  {row['statebench_over_flink']:.3f}")
    assert len(rows) == len(OPS) * len(MODES)
    assert all(r["flink_ops_per_s"] > 0 and r["statebench_ops_per_s"] > 0 for r in rows.values())


@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
@pytest.mark.parametrize("mode", ["off", "on"])
def test_protocol_overhead_batch_vs_jvm_loop(benchmark, workers, kind, mode) -> None:
    """Value update and get sent as one pre-encoded batch of BATCH_OPS (SET_KEY + op) vs the
    JVM's own loop over the same keys: overhead = (batch time per op - loop time per op) / loop
    time per op, per back-to-back pair; the median pair is reported with the spread."""
    worker = workers[kind]
    worker.reset(kind)
    b = worker.batch().set_time(NOW)
    state = b.register(_descs(mode)["value"])
    b.flush()
    rng = np.random.default_rng(7)
    keys = rng.integers(0, KEYS, BATCH_OPS)
    values = rng.integers(0, 1_000_000, BATCH_OPS)
    result: dict[str, Any] = {}

    def measure() -> None:
        for op, opcode in (("value_update", wire.VALUE_UPDATE), ("value_get", wire.VALUE_GET)):
            t0 = time.perf_counter()
            payload = wire.encode_long_ops(opcode, state.sid,
                                           keys, values if op == "value_update" else None)
            encode_s = time.perf_counter() - t0
            reads = BATCH_OPS if op == "value_get" else 0
            worker.batch().bench(state, op, keys=KEYS, warmup=JVM_WARMUP, rounds=1,
                                 round_ms=JVM_ROUND_MS).flush()  # fills the state, warms the JIT
            for _ in range(2):
                worker.batch().raw(payload, reads=reads).flush()  # warms the batch path
            loop_s, batch_s, jvm_s, pair = [], [], [], []
            for _ in range(PAIRS):  # paired: loop and batch back to back, against load drift
                (rates,) = worker.batch().bench(state, op, keys=KEYS, warmup=0, rounds=1,
                                                round_ms=JVM_ROUND_MS).flush()
                t0 = time.perf_counter()
                got = worker.batch().raw(payload, reads=reads).flush()
                batch_s.append((time.perf_counter() - t0) / BATCH_OPS)
                assert len(got) == reads
                loop_s.append(1 / rates[0])
                jvm_s.append(worker.last_batch_jvm_ns / 1e9 / BATCH_OPS)
                pair.append((batch_s[-1] - loop_s[-1]) / loop_s[-1])
            overhead = statistics.median(pair)
            result[op] = {
                "flink_loop_ns_per_op": round(statistics.median(loop_s) * 1e9, 1),
                "batch_ns_per_op": round(statistics.median(batch_s) * 1e9, 1),
                "jvm_side_ns_per_op": round(statistics.median(jvm_s) * 1e9, 1),
                "python_encode_ns_per_op": round(encode_s / BATCH_OPS * 1e9, 1),
                "overhead_over_flink": round(overhead, 3),
                "overhead_spread": [round(min(pair), 3), round(max(pair), 3)],
                "meets_25pct_target": overhead <= OVERHEAD_TARGET,
            }

    benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update(flink_backend=kind, ttl=mode, batch_ops=BATCH_OPS,
                                protocol_overhead=result)
    print(f"\n[flink {kind} ttl={mode}] {result}")
    assert set(result) == {"value_update", "value_get"}
