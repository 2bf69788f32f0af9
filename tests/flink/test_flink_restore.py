"""Restore across: a statebench canonical snapshot loaded into Flink's heap and RocksDB backends
shows exactly what statebench's own restore shows, at every expiry boundary afterwards."""

from __future__ import annotations

import random

import pytest

import backends as B
from backends.flink.restore import load_statebench_snapshot

NEVER = B.StateTtlConfig.StateVisibility.NeverReturnExpired
RETURN = B.StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
TTL = 100


def _descs(visibility, key_type) -> list[B.StateDescriptor]:
    cfg = (B.StateTtlConfig.new_builder(TTL).set_state_visibility(visibility)
           .disable_cleanup_in_background().build())
    value = B.ValueStateDescriptor("v", B.Types.LONG())
    mapping = B.MapStateDescriptor("m", key_type, B.Types.DOUBLE())
    value.enable_time_to_live(cfg)
    mapping.enable_time_to_live(cfg)
    return [value, mapping]


def _write_snapshot(tmp_path, keys, user_keys, visibility) -> tuple[str, int]:
    clock = B.ManualClock(0)
    backend = B.create_backend("heap", clock=clock)
    v_desc, m_desc = _descs(visibility, B.Types.STRING() if isinstance(user_keys[0], str)
                            else B.Types.LONG())
    v, m = backend.get_state(v_desc), backend.get_map_state(m_desc)
    rng = random.Random(5)
    for _ in range(400):
        clock.advance(rng.choice((0, 1, 2, 7)))
        backend.set_current_key(rng.choice(keys))
        if rng.random() < 0.5:
            v.update(rng.randrange(1000))
        else:
            m.put(rng.choice(user_keys), rng.choice((0.5, None, -3.0)))
    handle = backend.snapshot(1, tmp_path / "snap")
    now = clock.now()
    backend.close()
    return str(handle), now


def _probe_times(now: int) -> list[int]:
    """Every ms from the oldest possible expiry to past the newest: every boundary is hit."""
    return list(range(now - 5, now + TTL + 2))


@pytest.mark.parametrize("visibility", [NEVER, RETURN], ids=["never", "return"])
@pytest.mark.parametrize("key_type", ["long", "string"])
def test_statebench_snapshot_loads_into_flink(tmp_path, flink_heap, flink_rocksdb, visibility,
                                              key_type) -> None:
    keys = [3, -8, 11, 1 << 35, 0] if key_type == "long" else ["a", "ü", "", "key-4"]
    user_keys = ["x", "y", "z"] if key_type == "long" else [1, 2, 3]
    snap, now = _write_snapshot(tmp_path, keys, user_keys, visibility)
    probes = _probe_times(now)

    clock = B.ManualClock(now)
    restored = B.restore_backend("heap", [snap], clock=clock)
    v_desc, m_desc = _descs(visibility, B.Types.STRING() if isinstance(user_keys[0], str)
                            else B.Types.LONG())
    v, m = restored.get_state(v_desc), restored.get_map_state(m_desc)
    expected = []
    for t in probes:  # reads clean up expired units on both sides, in the same order
        clock.set(t)
        for k in keys:
            restored.set_current_key(k)
            expected.append((t, k, v.value(), sorted(m.items(), key=lambda kv: kv[0])))
    restored.close()
    assert any(e[2] is not None for e in expected) and any(e[2] is None for e in expected)

    for kind, worker in (("heap", flink_heap), ("rocksdb", flink_rocksdb)):
        worker.reset(kind, key_type=key_type)
        states = load_statebench_snapshot(worker, snap, _descs(visibility, m_desc.key_type_info),
                                          now=now)
        b = worker.batch()
        for t in probes:
            b.set_time(t)
            for k in keys:
                b.set_key(k).value_get(states["v"]).map_items(states["m"])
        got = b.flush()
        pairs = [(got[2 * i], sorted(got[2 * i + 1], key=lambda kv: kv[0]))
                 for i in range(len(got) // 2)]
        assert pairs == [(e[2], e[3]) for e in expected], kind


def test_corrupt_snapshot_is_refused_before_flink_sees_it(tmp_path, flink_heap) -> None:
    snap, _ = _write_snapshot(tmp_path, [1, 2], ["x"], NEVER)
    victim = next(p for p in (tmp_path / "snap").rglob("*.arrow"))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    flink_heap.reset("heap")
    with pytest.raises(B.CorruptSnapshotError):
        load_statebench_snapshot(flink_heap, snap, _descs(NEVER, B.Types.STRING()))


def test_list_state_is_refused_with_the_scope(tmp_path, flink_heap) -> None:
    backend = B.create_backend("heap", clock=B.ManualClock(0))
    desc = B.ListStateDescriptor("l", B.Types.LONG())
    backend.set_current_key(1)
    backend.get_list_state(desc).add(1)
    snap = backend.snapshot(1, tmp_path / "s")
    backend.close()
    flink_heap.reset("heap")
    with pytest.raises(ValueError, match="covers value and map states"):
        load_statebench_snapshot(flink_heap, snap, [desc])
