"""Seeded fixtures shared by every benchmark, shaped like apache/flink-benchmarks.

flink-benchmarks pre-fills SETUP_KEYS, draws new keys from a disjoint NEW_KEYS pool, map keys from
0..9 and values from a pool of random numbers, all pre-shuffled so the loop itself only indexes.
Sizes follow the anchors (docs/performance.md, "The anchors": 100 k pre-filled keys) so ratios
compare with Flink's.
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import dataclass, field
from typing import Any

import backends as B
from backends.storage.registry import storage_backend

SEED = 20261122
SETUP_KEY_COUNT = 100_000
NEW_KEY_COUNT = 200_000
#: Overrides any suite's operations per benchmark call (JMH's OperationsPerInvocation).
OPS_ENV = "STATEBENCH_BENCH_OPS"


def ops_per_call(default: int) -> int:
    """Operations per benchmark call: $STATEBENCH_BENCH_OPS where set, else the suite's own."""
    return int(os.environ.get(OPS_ENV, default))


#: As the anchors (docs/performance.md): 100 k operations over the 100 k pre-filled keys.
OPS_PER_CALL = ops_per_call(100_000)
MAP_KEY_COUNT = 10
TTL_MS = 3_600_000  # 1 hour, as the anchors: nothing expires during a benchmark
VARIANTS = ("plain", "ttl", "ttl_nobg")


@dataclass
class Pools:
    """Pre-shuffled keys and values; the same for every backend and variant of a run."""

    setup_keys: list[int]
    new_keys: list[int]
    op_keys: list[int]
    values: list[int]
    map_keys: list[int]
    ops: int = OPS_PER_CALL

    @classmethod
    def make(cls, seed: int = SEED, setup: int = SETUP_KEY_COUNT, ops: int = OPS_PER_CALL) -> Pools:
        rng = random.Random(seed)
        setup_keys = list(range(setup))
        new_keys = list(range(setup, setup + NEW_KEY_COUNT))
        rng.shuffle(setup_keys)
        rng.shuffle(new_keys)
        # Existing keys are drawn with replacement over all setup keys (docs/performance.md, "The
        # anchors": 200 k operations over 100 k distinct keys), so the working set is the whole
        # state.
        op_keys = rng.choices(setup_keys, k=ops)
        values = [rng.randrange(1_000_000) for _ in range(ops)]
        map_keys = [rng.randrange(MAP_KEY_COUNT) for _ in range(ops)]
        return cls(setup_keys, new_keys, op_keys, values, map_keys, ops)

    def pick_keys(self, fresh: bool = False) -> list[int]:
        """Keys of one benchmark call: existing ones, or distinct never-written ones."""
        if fresh:
            if self.ops > len(self.new_keys):
                raise ValueError(f"at most {len(self.new_keys)} fresh keys per call")
            return self.new_keys[: self.ops]
        return self.op_keys


def ttl_config_for(variant: str) -> B.StateTtlConfig | None:
    if variant == "plain":
        return None
    builder = B.StateTtlConfig.new_builder(TTL_MS)
    if variant == "ttl_nobg":
        builder.disable_cleanup_in_background()
    elif variant != "ttl":
        raise ValueError(f"unknown benchmark variant '{variant}'; expected one of {VARIANTS}")
    return builder.build()


def _sum(a: int, b: int) -> int:
    return a + b


def descriptors(variant: str) -> dict[str, B.StateDescriptor]:
    cfg = ttl_config_for(variant)
    descs: dict[str, B.StateDescriptor] = {
        "value": B.ValueStateDescriptor("value", B.Types.LONG()),
        "list": B.ListStateDescriptor("list", B.Types.LONG()),
        "map": B.MapStateDescriptor("map", B.Types.LONG(), B.Types.DOUBLE()),
        "reducing": B.ReducingStateDescriptor("reducing", _sum, B.Types.LONG()),
    }
    if cfg is not None:
        for desc in descs.values():
            desc.enable_time_to_live(cfg)
    return descs


@dataclass
class StateFixture:
    """One pre-filled backend with the four benchmark states registered."""

    kind: str
    variant: str
    backend: Any
    clock: B.ManualClock
    states: dict[str, Any] = field(default_factory=dict)
    tmp: Any = None

    def close(self) -> None:
        self.backend.close()
        if self.tmp is not None:
            self.tmp.cleanup()


def make_state_fixture(kind: str, variant: str, pools: Pools,
                       root: str | None = None) -> StateFixture:
    """A backend of `kind` with every setup key holding a value, a 1-element list, a 10-entry
    map and a reducing value (flink-benchmarks' setup). RocksDB's folder is made under `root`
    (the system's temporary folder unless given)."""
    clock = B.ManualClock(1_000_000)
    tmp = (tempfile.TemporaryDirectory(prefix="statebench-bench-", dir=root)
           if storage_backend(kind).keeps_files else None)
    options = {"path": tmp.name} if tmp is not None else {}
    backend = B.create_backend(kind, clock=clock, **options)
    fx = StateFixture(kind, variant, backend, clock, tmp=tmp)
    descs = descriptors(variant)
    fx.states = {
        "value": backend.get_state(descs["value"]),
        "list": backend.get_list_state(descs["list"]),
        "map": backend.get_map_state(descs["map"]),
        "reducing": backend.get_reducing_state(descs["reducing"]),
    }
    rng = random.Random(SEED + 1)
    entries = {mk: rng.random() for mk in range(MAP_KEY_COUNT)}
    value, lst, mp, red = (fx.states[n] for n in ("value", "list", "map", "reducing"))
    for key in pools.setup_keys:
        backend.set_current_key(key)
        value.update(key)
        lst.add(key)
        mp.put_all(entries)
        red.add(key)
    backend.flush()  # RocksDB's memtables to SST files (a no-op on heap)
    return fx
