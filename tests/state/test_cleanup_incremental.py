"""Incremental cleanup (§2.2): heap's lazy global iterator; a reported no-op on RocksDB."""

from __future__ import annotations

from tests.state.helpers import list_desc, map_desc, ttl, value_desc


def fill(backend, state, n: int) -> None:
    for key in range(n):
        backend.set_current_key(key)
        state.update(key)


def test_each_access_examines_cleanup_size_entries(make_backend, clock) -> None:
    backend = make_backend("heap", clock)
    state = backend.get_state(value_desc(ttl(100, incremental=(5, False))))
    fill(backend, state, 20)  # each update also steps the iterator over unexpired entries
    clock.set(100)
    assert backend.physical_entries("v") == 20
    backend.set_current_key(1000)
    state.value()  # one access: at least 5 entries examined, all expired
    removed = backend.cleanup_counts()["v"]["incremental"]
    assert 5 <= removed < 20
    for _ in range(3):
        state.value()
    assert backend.physical_entries("v") == 0  # wrap-around reaches every entry


def test_runs_on_every_record_when_asked(make_backend, clock) -> None:
    backend = make_backend("heap", clock)
    state = backend.get_state(value_desc(ttl(100, incremental=(2, True))))
    fill(backend, state, 10)
    clock.set(100)
    for key in range(100, 105):
        backend.set_current_key(key)  # no state access at all
    assert backend.physical_entries("v") == 0
    assert backend.cleanup_counts()["v"]["incremental"] == 10


def test_not_on_every_record_unless_asked(make_backend, clock) -> None:
    backend = make_backend("heap", clock)
    state = backend.get_state(value_desc(ttl(100, incremental=(2, False))))
    fill(backend, state, 10)
    clock.set(100)
    for key in range(100, 105):
        backend.set_current_key(key)
    assert backend.physical_entries("v") == 10


def test_lists_and_maps_lose_expired_units_and_whole_containers(make_backend, clock) -> None:
    backend = make_backend("heap", clock)
    lst = backend.get_list_state(list_desc(ttl(100, incremental=(10, False))))
    mp = backend.get_map_state(map_desc(ttl(100, incremental=(10, False))))
    backend.set_current_key("partial")
    lst.add(1)
    mp.put("old", 1)
    backend.set_current_key("full")
    lst.add(1)
    mp.put("old", 1)
    clock.set(60)
    backend.set_current_key("partial")
    lst.add(2)
    mp.put("new", 2)
    clock.set(100)
    backend.set_current_key("other")
    assert list(lst.get()) == []
    assert dict(mp.items()) == {}
    raw_l, raw_m = backend.raw_state("l"), backend.raw_state("m")
    assert raw_l.ref_get("partial") == [(2, 60)]
    assert raw_l.ref_get("full") is None
    assert set(raw_m.ref_get("partial")) == {"new"}
    assert raw_m.ref_get("full") is None


def test_default_background_cleanup_is_incremental_on_heap(make_backend, clock) -> None:
    backend = make_backend("heap", clock)
    state = backend.get_state(value_desc(ttl(100, background=True)))
    fill(backend, state, 30)
    clock.set(100)
    backend.set_current_key("x")
    for _ in range(6):
        state.value()
    assert backend.physical_entries("v") == 0


def test_incremental_is_reported_not_applicable_on_rocksdb(make_backend, clock) -> None:
    backend = make_backend("rocksdb", clock)
    state = backend.get_state(value_desc(ttl(100, incremental=(5, True))))
    fill(backend, state, 10)
    clock.set(100)
    backend.set_current_key(1)
    state.update(1)
    assert backend.physical_entries("v") == 10  # nothing cleaned in the background
    assert any("incremental" in r for r in backend.not_applicable["v"])
