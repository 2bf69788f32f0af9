"""Map state: per-entry TTL, contains == get, iteration cleanup, is_empty ignores TTL (§1.7)."""

from __future__ import annotations

from tests.state.helpers import ORW, RETURN, map_desc, stored_now, ttl


def test_per_entry_expiry_and_get_removes_only_that_entry(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100)))
    backend.set_current_key(1)
    state.put("a", 1)
    clock.set(50)
    state.put("b", 2)
    clock.set(100)
    assert state.get("a") is None
    assert state.get("b") == 2
    assert backend.cleanup_counts()["m"]["read"] == 1
    assert stored_now(backend, map_desc()) == {"b": 2}


def test_contains_behaves_like_get(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100, update=ORW)))
    backend.set_current_key(1)
    state.put("a", 1)
    clock.set(90)
    assert state.contains("a")  # refreshes on OnReadAndWrite
    clock.set(189)
    assert state.contains("a")
    clock.set(289)
    assert not state.contains("a")
    assert backend.physical_entries("m") == 0


def test_null_values(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100)))
    backend.set_current_key(1)
    state.put("n", None)
    assert state.contains("n")
    assert state.get("n") is None
    clock.set(100)
    assert not state.contains("n")


def test_null_value_expired_under_return_expired(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100, visibility=RETURN)))
    backend.set_current_key(1)
    state.put("n", None)
    clock.set(100)
    assert state.contains("n")  # found once, then removed
    assert not state.contains("n")


def test_iteration_skips_and_removes_expired(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100)))
    backend.set_current_key(1)
    state.put_all({"a": 1, "b": 2})
    clock.set(50)
    state.put("c", 3)
    clock.set(120)
    assert dict(state.items()) == {"c": 3}
    assert backend.cleanup_counts()["m"]["read"] == 2
    assert sorted(state.keys()) == ["c"]
    assert list(state.values()) == [3]
    assert stored_now(backend, map_desc()) == {"c": 3}


def test_iteration_return_expired_yields_once(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100, visibility=RETURN)))
    backend.set_current_key(1)
    state.put_all({"a": 1, "b": 2})
    clock.set(100)
    assert dict(state.items()) == {"a": 1, "b": 2}
    assert dict(state.items()) == {}


def test_iteration_refreshes_on_read_and_write(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100, update=ORW)))
    backend.set_current_key(1)
    state.put("a", 1)
    clock.set(80)
    assert dict(state.items()) == {"a": 1}
    clock.set(179)
    assert state.get("a") == 1


def test_is_empty_ignores_ttl(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100)))
    backend.set_current_key(1)
    assert state.is_empty()
    state.put("a", 1)
    clock.set(500)
    assert not state.is_empty()  # expired but not cleaned up
    assert dict(state.items()) == {}
    assert state.is_empty()


def test_put_all_uses_one_timestamp_and_remove(backend, clock) -> None:
    state = backend.get_map_state(map_desc(ttl(100)))
    backend.set_current_key(1)
    clock.set(7)
    state.put_all({"a": 1, "b": 2})
    clock.set(106)
    assert dict(state.items()) == {"a": 1, "b": 2}
    clock.set(107)  # both stamped 7: visible up to 106, expired at 107
    assert dict(state.items()) == {}
    state.put_all({"a": 1, "b": 2})
    state.remove("a")
    assert state.get("a") is None
    state.put_all(None)
    state.clear()
    assert state.is_empty()
    assert backend.physical_entries("m") == 0


def test_map_counts_once_per_key(backend) -> None:
    state = backend.get_map_state(map_desc(ttl(100)))
    for key in range(3):
        backend.set_current_key(key)
        state.put_all({"x": 1, "y": 2, "z": 3})
    assert backend.physical_entries("m") == 3
