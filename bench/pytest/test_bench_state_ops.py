"""Micro-benchmarks of every state operation, flink-benchmarks style, each beside its raw baseline.

Run: `python -m pytest bench/pytest/test_bench_state_ops.py --benchmark-only`. One benchmark
call is one loop of STATE_OPS_PER_CALL operations over pre-shuffled keys (JMH's
@OperationsPerInvocation); the summary printed at the end and the saved JSON carry the ratio of
each state benchmark to the raw dict / raw rocksdict loop measured in the same run.

Its 88 benchmarks run in every CI run, so a call is 20 k operations over the 100 k pre-filled
keys, not the anchors' 100 k (test_bench_targets.py keeps those, and its ratios are the docs'):
a call then touches about 18 k distinct keys instead of 63 k, the same ones in every round, on
both the state's side and the raw loop's. $STATEBENCH_BENCH_OPS=100000 runs the anchors' size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.fixtures import VARIANTS, Pools, make_state_fixture, ops_per_call
from bench.state_ops import OPS, RAW, RAW_FIXTURES

KINDS = ("heap", "rocksdb")
ROUNDS = 5
#: Operations per call (module docstring).
STATE_OPS_PER_CALL = ops_per_call(20_000)


@pytest.fixture(scope="module")
def pools() -> Pools:
    return Pools.make(ops=STATE_OPS_PER_CALL)


@pytest.fixture(scope="module")
def state_fixtures(pools: Pools) -> Iterator[dict[tuple[str, str], Any]]:
    made: dict[tuple[str, str], Any] = {}

    def get(kind: str, variant: str) -> Any:
        if (kind, variant) not in made:
            made[(kind, variant)] = make_state_fixture(kind, variant, pools)
        return made[(kind, variant)]

    yield get
    for fx in made.values():
        fx.close()


@pytest.fixture(scope="module")
def raw_fixtures(pools: Pools) -> Iterator[Any]:
    made: dict[str, Any] = {}

    def get(kind: str) -> Any:
        if kind not in made:
            made[kind] = RAW_FIXTURES[kind](pools)
        return made[kind]

    yield get
    for fx in made.values():
        fx.close()


def _run(benchmark: Any, fn: Any, target: Any, pools: Pools, info: dict) -> None:
    units = fn(target, pools)  # warm-up call, also gives the unit count
    benchmark.extra_info.update(info, units=units)
    result = benchmark.pedantic(fn, args=(target, pools), rounds=ROUNDS, iterations=1)
    assert result == units


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("kind", KINDS)
def test_raw_baseline(benchmark: Any, raw_fixtures: Any, pools: Pools, kind: str,
                      op: str) -> None:
    benchmark.group = f"{kind}:{op}"
    _run(benchmark, RAW[kind][op], raw_fixtures(kind), pools,
         {"kind": kind, "variant": "raw", "op": op})


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", KINDS)
def test_state_op(benchmark: Any, state_fixtures: Any, pools: Pools, kind: str, variant: str,
                  op: str) -> None:
    benchmark.group = f"{kind}:{op}"
    _run(benchmark, OPS[op], state_fixtures(kind, variant), pools,
         {"kind": kind, "variant": variant, "op": op})
