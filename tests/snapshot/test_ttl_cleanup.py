"""Full-snapshot TTL cleanup (flink-ttl-facts §2.1): expired units stay out of the snapshot only."""

from __future__ import annotations

import pytest

import backends as B
from tests.snapshot.util import TTL_MS, raw_dump, ttl_config_with

N = 200


def _fill(backend: B.KeyedStateBackend, clock: B.ManualClock, full_snapshot: bool) -> dict:
    cfg = ttl_config_with(full_snapshot)
    descs = {"v": B.ValueStateDescriptor("v", B.Types.LONG()),
             "m": B.MapStateDescriptor("m", B.Types.STRING(), B.Types.LONG()),
             "l": B.ListStateDescriptor("l", B.Types.LONG())}
    for d in descs.values():
        d.enable_time_to_live(cfg)
    v, m = backend.get_state(descs["v"]), backend.get_map_state(descs["m"])
    for k in range(N):  # key k written at t = k
        clock.set(k)
        backend.set_current_key(k)
        v.update(k)
        m.put("old", k)
        clock.set(k + N)
        m.put("new", k)
    lst = backend.get_list_state(descs["l"])
    backend.set_current_key("list")
    for t, x in ((0, 1), (900, 2), (2, 3)):  # expired, alive, expired-after-alive
        clock.set(t)
        lst.add(x)
    return descs


def test_expired_units_are_left_out_and_local_state_untouched(kind, make_backend, clock,
                                                              tmp_path):
    b = make_backend(kind, clock)
    _fill(b, clock, full_snapshot=True)
    before = raw_dump(b)
    clock.set(TTL_MS + N // 2)  # values/old entries of keys < N/2 (written at t = k) expired
    handle = b.snapshot(1, tmp_path)
    stats = handle.stats
    expired_values = N // 2 + 1  # keys 0..N/2: k + ttl <= now
    assert stats.entries_filtered_per_state == {"v": expired_values, "m": expired_values, "l": 1}
    assert stats.entries_filtered == 2 * expired_values + 1
    assert stats.bytes_filtered > 0
    assert b.cleanup_counts()["v"]["full_snapshot"] == expired_values
    assert raw_dump(b) == before  # local state is not cleaned
    restored = B.restore_backend("heap", [handle], clock=clock)
    got = raw_dump(restored)
    assert sorted(got["v"]) == list(range(N // 2 + 1, N))
    assert all(set(c) == ({"old", "new"} if k > N // 2 else {"new"}) for k, c in got["m"].items())
    assert len(got["m"]) == N
    # only the leading expired run of a list goes (Flink's "stop on first included")
    assert [e for e, _ in got["l"]["list"]] == [2, 3]
    restored.close()


def test_no_filtering_without_the_strategy(kind, make_backend, clock, tmp_path):
    b = make_backend(kind, clock)
    _fill(b, clock, full_snapshot=False)
    clock.set(TTL_MS + N)
    handle = b.snapshot(1, tmp_path)
    assert handle.stats.entries_filtered == 0 and handle.stats.bytes_filtered == 0
    restored = B.restore_backend("heap", [handle], clock=clock)
    assert raw_dump(restored) == raw_dump(b)
    restored.close()


def test_unregistered_restored_state_is_not_filtered(make_backend, clock, tmp_path):
    """The TTL config is the running job's, not the snapshot's: unregistered, nothing is known."""
    b = make_backend("heap", clock)
    _fill(b, clock, full_snapshot=True)
    clock.set(10 * TTL_MS)
    restored = B.restore_backend("heap", [b.snapshot(1, tmp_path / "a")], clock=clock)
    assert restored.snapshot(2, tmp_path / "b").stats.entries_filtered == 0
    restored.close()


def test_event_time_states_filter_by_event_time(kind, make_backend, clock, tmp_path):
    cfg = (B.StateTtlConfig.new_builder(100).disable_cleanup_in_background()
           .set_ttl_time_characteristic(B.StateTtlConfig.TtlTimeCharacteristic.EventTime)
           .cleanup_full_snapshot().build())
    desc = B.ValueStateDescriptor("ev", B.Types.LONG())
    desc.enable_time_to_live(cfg)
    b = make_backend(kind, clock)
    v = b.get_state(desc)
    for k in range(10):
        b.set_event_time(k * 10)
        b.set_current_key(k)
        v.update(k)
    clock.set(10**9)  # processing time is irrelevant for an event-time state
    b.set_event_time(150)  # keys written at event time <= 50 expired
    assert b.snapshot(1, tmp_path).stats.entries_filtered == 6


def test_incremental_checkpoint_reports_not_applicable(make_backend, clock, tmp_path):
    b = make_backend("rocksdb", clock)
    _fill(b, clock, full_snapshot=True)
    clock.set(10 * TTL_MS)
    stats = b.snapshot(1, tmp_path, mode="incremental").stats
    assert stats.entries_filtered == 0
    assert set(stats.not_applicable) == {"v", "m", "l"}
    assert "not applicable to incremental" in stats.not_applicable["v"]
    assert any("incremental" in r for r in b.not_applicable["v"])
    restored = B.restore_backend("rocksdb", [tmp_path / "chk-1"], clock=clock,
                                 path=tmp_path / "r")
    assert restored.physical_entries("v") == N  # everything was uploaded as is
    restored.close()


def test_heap_incremental_is_a_full_snapshot_and_says_so(make_backend, clock, tmp_path):
    b = make_backend("heap", clock)
    _fill(b, clock, full_snapshot=True)
    clock.set(TTL_MS + N // 2)
    handle = b.snapshot(1, tmp_path, mode="incremental")
    assert handle.mode == "full" and handle.stats.mode == "full"
    assert "full snapshots only" in handle.stats.notes[0]
    assert handle.stats.entries_filtered > 0
    with pytest.raises(ValueError, match="retained_checkpoints"):
        b.snapshot(2, tmp_path, retained_checkpoints=3)
