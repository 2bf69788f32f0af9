"""Incremental cleanup (§2.2): heap's lazy global iterator; a reported no-op on RocksDB."""

from __future__ import annotations

from tests.state.helpers import list_desc, map_desc, stored_now, ttl, value_desc


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
    counts = backend.cleanup_counts()
    assert counts["l"]["incremental"] == 2 and counts["m"]["incremental"] == 2
    assert counts["l"]["read"] == 0 and counts["m"]["read"] == 0
    # "full" lost its only unit and is gone; "partial" kept its unexpired one.
    assert backend.physical_entries("l") == 1 and backend.physical_entries("m") == 1
    backend.set_current_key("partial")
    assert stored_now(backend, list_desc()) == [2]
    assert stored_now(backend, map_desc()) == {"new": 2}


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


def test_every_visited_map_is_replaced_by_a_copy_as_flink(make_backend, clock) -> None:
    """Flink's TtlMapState.getUnexpiredOrNull returns a new map for every map its incremental
    cleanup visits, expired entries or not, and the cleanup stores it: the copy is Flink's
    cost of the step. Lists and values are left as they are when nothing in them expired."""
    backend = make_backend("heap", clock)
    mp = backend.get_map_state(map_desc(ttl(100, incremental=(2, False))))
    lst = backend.get_list_state(list_desc(ttl(100, incremental=(2, False))))
    for key in ("a", "b"):
        backend.set_current_key(key)
        mp.put("x", 1)
        lst.add(1)
    tables = {name: raw.table for name, raw in backend.raw_states()}
    before = {name: dict(table) for name, table in tables.items()}
    assert len(before["m"]) == len(before["l"]) == 2
    clock.set(50)  # nothing expired
    backend.set_current_key("c")
    mp.get("x")  # one step each: visits both keys
    lst.get()
    for key, old in before["m"].items():
        assert tables["m"][key] == old and tables["m"][key] is not old
    for key, old in before["l"].items():
        assert tables["l"][key] is old
    assert backend.cleanup_counts()["m"]["incremental"] == 0
