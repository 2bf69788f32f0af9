"""Differential test: random seeded operation sequences on heap and RocksDB must give identical
visible results (every read), identical physical entry counts and identical cleanup counts."""

from __future__ import annotations

import random
from typing import Any

import pytest

import backends as B
from tests.state.helpers import (
    NEVER,
    OCW,
    ORW,
    RETURN,
    aggregating_desc,
    list_desc,
    map_desc,
    reducing_desc,
    ttl,
    value_desc,
)

CONFIGS = [
    ("none-ocw-never", dict(update=OCW, visibility=NEVER)),
    ("none-orw-return", dict(update=ORW, visibility=RETURN)),
    ("timers-orw-never", dict(update=ORW, visibility=NEVER, timers=0)),
    ("timers-g7-ocw-return", dict(update=OCW, visibility=RETURN, timers=7)),
    ("plain", None),
]


def _descriptors(cfg_kwargs: dict | None) -> list:
    cfg = None if cfg_kwargs is None else ttl(50, **cfg_kwargs)
    return [
        value_desc(cfg, typ=B.Types.STRING()),
        list_desc(cfg),
        map_desc(cfg, key_type=B.Types.INT(), value_type=B.Types.DOUBLE()),
        reducing_desc(cfg),
        aggregating_desc(cfg),
    ]


def _run(backend: B.KeyedStateBackend, clock: B.ManualClock, cfg_kwargs: dict | None,
         seed: int, steps: int) -> list[Any]:
    rng = random.Random(seed)
    v, lst, m, r, a = _descriptors(cfg_kwargs)
    v, lst, m = backend.get_state(v), backend.get_list_state(lst), backend.get_map_state(m)
    r, a = backend.get_reducing_state(r), backend.get_aggregating_state(a)
    keys = ["a", "b", 3, 4, b"k5", -6, "ü"]
    out: list[Any] = []
    for step in range(steps):
        clock.advance(rng.choice((0, 0, 1, 3, 10, 40)))
        backend.set_current_key(rng.choice(keys))
        op = rng.randrange(18)
        if op == 0:
            v.update(rng.choice(["", "x", "yy", None]))
        elif op == 1:
            out.append(("v", step, v.value()))
        elif op == 2:
            v.clear()
        elif op == 3:
            lst.add(rng.randrange(-5, 5))
        elif op == 4:
            lst.add_all([rng.randrange(100) for _ in range(rng.randrange(3))])
        elif op == 5:
            out.append(("l", step, list(lst.get())))
        elif op == 6:
            lst.update([rng.randrange(9) for _ in range(rng.randrange(3))])
        elif op == 7:
            m.put(rng.randrange(4), rng.choice([1.5, None, -2.0]))
        elif op == 8:
            out.append(("mg", step, m.get(rng.randrange(4))))
        elif op == 9:
            out.append(("mc", step, m.contains(rng.randrange(4))))
        elif op == 10:
            out.append(("mi", step, sorted(m.items(), key=lambda kv: kv[0])))
        elif op == 11:
            m.remove(rng.randrange(4))
        elif op == 12:
            out.append(("me", step, m.is_empty()))
        elif op == 13:
            m.put_all({rng.randrange(4): float(step) for _ in range(2)})
        elif op == 14:
            r.add(rng.randrange(10))
        elif op == 15:
            out.append(("r", step, r.get()))
        elif op == 16:
            a.add(rng.randrange(10))
        else:
            out.append(("a", step, a.get()))
        if step % 97 == 0:
            backend.fire_timers()
            out.append(("phys", step, [backend.physical_entries(n) for n in "vlmra"]))
    out.append(("final", [backend.physical_entries(n) for n in "vlmra"]))
    out.append(("cleanup", {n: {k: c[k] for k in ("read", "timer", "incremental")}
                            for n, c in backend.cleanup_counts().items()}))
    return out


@pytest.mark.parametrize(("label", "cfg_kwargs"), CONFIGS, ids=[c[0] for c in CONFIGS])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_heap_and_rocksdb_agree(make_backend, label: str, cfg_kwargs: dict | None,
                                seed: int) -> None:
    results = {}
    for kind in ("heap", "rocksdb"):
        clock = B.ManualClock(0)
        results[kind] = _run(make_backend(kind, clock), clock, cfg_kwargs, seed, 1500)
    assert results["heap"] == results["rocksdb"]
    reads = [r for r in results["heap"] if r[0] in ("v", "l", "mg", "r", "a")]
    assert any(r[2] not in (None, [], ()) for r in reads)  # the sequence really read data
    assert any(r[2] in (None, []) for r in reads)  # ... and saw expiry or absence


def test_runs_are_deterministic(make_backend) -> None:
    first = _run(make_backend("heap", c1 := B.ManualClock(0)), c1, CONFIGS[1][1], 9, 800)
    second = _run(make_backend("heap", c2 := B.ManualClock(0)), c2, CONFIGS[1][1], 9, 800)
    assert first == second
