"""Deterministic state builders and exact state dumps for the snapshot tests."""

from __future__ import annotations

import random
from typing import Any

import backends as B

TTL_MS = 1_000


def ttl_config_with(full_snapshot: bool = False, ttl_ms: int = TTL_MS) -> B.StateTtlConfig:
    builder = B.StateTtlConfig.new_builder(ttl_ms).disable_cleanup_in_background()
    if full_snapshot:
        builder.cleanup_full_snapshot()
    return builder.build()


def descriptors(ttl: bool = True, full_snapshot: bool = False) -> dict[str, B.StateDescriptor]:
    """One state of every shape: value (LONG), list (STRING), map (INT -> DOUBLE, None values),
    reducing and a record value state."""
    v = B.ValueStateDescriptor("v", B.Types.LONG())
    lst = B.ListStateDescriptor("l", B.Types.STRING())
    m = B.MapStateDescriptor("m", B.Types.INT(), B.Types.DOUBLE())
    r = B.ReducingStateDescriptor("r", lambda a, b: a + b, B.Types.LONG())
    rec = B.ValueStateDescriptor("rec", B.Types.ROW_NAMED(["id", "name"],
                                                         [B.Types.INT(), B.Types.STRING()]))
    out = {"v": v, "l": lst, "m": m, "r": r, "rec": rec}
    if ttl:
        for name in ("v", "l", "m", "r"):
            out[name].enable_time_to_live(ttl_config_with(full_snapshot))
    return out


def keys(n: int, mixed: bool = True) -> list[Any]:
    """int keys, and with `mixed` also str and bytes keys (a state whose keys mix types)."""
    if not mixed:
        return list(range(n))
    return [k if k % 3 == 0 else (f"user-{k}" if k % 3 == 1 else f"b{k}".encode())
            for k in range(n)]


def populate(backend: B.KeyedStateBackend, clock: B.ManualClock, descs: dict, key_list: list,
             seed: int = 7) -> None:
    """Write every state for every key, the clock moving 1 ms per key (distinct timestamps)."""
    rnd = random.Random(seed)
    v = backend.get_state(descs["v"])
    lst = backend.get_list_state(descs["l"])
    m = backend.get_map_state(descs["m"])
    r = backend.get_reducing_state(descs["r"])
    rec = backend.get_state(descs["rec"])
    for i, key in enumerate(key_list):
        clock.advance(1)
        backend.set_current_key(key)
        v.update(rnd.randrange(-(1 << 40), 1 << 40))
        lst.add_all([f"e{i}-{j}" for j in range(i % 4 + 1)])
        m.put_all({j: (None if j == 2 else rnd.random()) for j in range(i % 3 + 1)})
        r.add(i)
        if i % 2:
            rec.update({"id": i, "name": f"n{i}"})


def raw_dump(backend: B.KeyedStateBackend) -> dict[str, dict]:
    """Every state's physical containers (with timestamps): what a restore must reproduce."""
    return {name: {key: container for _, key, container in backend.raw_state(name).iter_entries()}
            for name in backend.registered_state_names()}


def visible(backend: B.KeyedStateBackend, descs: dict, key_list: list) -> dict:
    """What the state API returns for every key (states registered with `descs`)."""
    v = backend.get_state(descs["v"])
    lst = backend.get_list_state(descs["l"])
    m = backend.get_map_state(descs["m"])
    r = backend.get_reducing_state(descs["r"])
    rec = backend.get_state(descs["rec"])
    out = {}
    for key in key_list:
        backend.set_current_key(key)
        out[key] = (v.value(), list(lst.get()), sorted(m.items()), r.get(), rec.value())
    return out


def in_range(backend: B.KeyedStateBackend, key_list: list) -> list:
    return [k for k in key_list if backend.key_group(k) in backend.key_group_range]
