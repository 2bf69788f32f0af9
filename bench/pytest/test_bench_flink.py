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

import statistics
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from backends.flink import FlinkUnavailableError, FlinkWorker, wire
from bench.flink_ops import (
    JVM_ROUND_MS,
    JVM_ROUNDS,
    JVM_WARMUP,
    KEYS,
    MODES,
    NOW,
    OPS,
    PY_ROUND_S,
    PY_ROUNDS,
    PY_WARMUP,
    descs,
    rates_side_by_side,
)

BATCH_OPS = 50_000
OVERHEAD_TARGET = 0.25
PAIRS = 7


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


# ------------------------------------------------------------------------- tests
@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
def test_per_op_rates_statebench_vs_flink(benchmark, workers, kind, tmp_path) -> None:
    rows: dict[str, dict[str, Any]] = {}

    def measure() -> None:
        for mode in MODES:
            both = rates_side_by_side(workers[kind], kind, mode, tmp_path)
            for op in OPS:
                flink, ours = both[op]["flink"], both[op]["statebench"]
                f, s = statistics.median(flink), statistics.median(ours)
                rows[f"{op}/{mode}"] = {
                    "flink_ops_per_s": round(f), "statebench_ops_per_s": round(s),
                    "flink_spread": [round(min(flink)), round(max(flink))],
                    "statebench_spread": [round(min(ours)), round(max(ours))],
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
    state = b.register(descs(mode)["value"])
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
