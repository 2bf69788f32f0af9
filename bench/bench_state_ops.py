"""asv: time per state operation, backend x TTL variant, as apache/flink-benchmarks.

Each `time_op` call runs ASV_OPS operations (set_current_key + the state call) over keys drawn
from a pre-filled state; asv reports seconds per call, so lower is better. The raw baseline of
the same op (plain dict / raw rocksdict with the same bytes) is its own benchmark, so the graphs
show both lines and their ratio is visible per commit.
"""

from __future__ import annotations

import os
from typing import Any

from .fixtures import VARIANTS, Pools, make_state_fixture
from .state_ops import OPS, RAW, RAW_FIXTURES

ASV_SETUP_KEYS = 20_000
ASV_OPS = 5_000
_CACHE: dict[tuple, Any] = {}


def shared_pools() -> Pools:
    """The seeded pools of this process (one per process: every parameter set draws the same
    keys and values; bench_ratios.py uses them too)."""
    if "pools" not in _CACHE:
        _CACHE["pools"] = Pools.make(setup=ASV_SETUP_KEYS, ops=ASV_OPS)
    return _CACHE["pools"]


def state_fixture(kind: str, variant: str) -> Any:
    """Pre-filled fixtures are built once per process and reused across parameters: the
    benchmarks mutate them as flink-benchmarks' do, which is what a long-running state sees.
    A RocksDB fixture's folder goes in the working directory, a temporary one asv makes for
    each benchmark and removes after it: under asv's forkserver (asv.conf.json) a benchmark's
    process ends with os._exit, where no finalizer runs to remove a folder of its own."""
    key = ("state", kind, variant)
    if key not in _CACHE:
        _CACHE[key] = make_state_fixture(kind, variant, shared_pools(), root=os.getcwd())
    return _CACHE[key]


def raw_fixture(kind: str) -> Any:
    """The raw store of `kind` (dicts or a raw rocksdict), built once per process, in the
    working directory as state_fixture's."""
    key = ("raw", kind)
    if key not in _CACHE:
        _CACHE[key] = RAW_FIXTURES[kind](shared_pools(), root=os.getcwd())
    return _CACHE[key]


class StateOps:
    """Seconds per ASV_OPS operations of the statebench state API."""

    params = (["heap", "rocksdb"], list(VARIANTS), list(OPS))
    param_names = ["backend", "ttl", "op"]
    number = 1
    repeat = (3, 10, 20.0)
    warmup_time = 0.05
    version = "state-ops-1"

    def setup(self, backend: str, ttl: str, op: str) -> None:
        self.fx = state_fixture(backend, ttl)
        self.pools = shared_pools()
        self.fn = OPS[op]

    def time_op(self, backend: str, ttl: str, op: str) -> None:
        self.fn(self.fx, self.pools)


class RawBaselines:
    """Seconds per ASV_OPS operations of the raw dict / raw rocksdict loop doing the same work."""

    params = (["heap", "rocksdb"], list(OPS))
    param_names = ["backend", "op"]
    number = 1
    repeat = (3, 10, 20.0)
    warmup_time = 0.05
    version = "raw-ops-1"

    def setup(self, backend: str, op: str) -> None:
        self.fx = raw_fixture(backend)
        self.pools = shared_pools()
        self.fn = RAW[backend][op]

    def time_op(self, backend: str, op: str) -> None:
        self.fn(self.fx, self.pools)
