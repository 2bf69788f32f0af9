"""List state: per-element TTL, lazy cleanup of a fully expired list, refresh rules (§1.6)."""

from __future__ import annotations

import pytest

from tests.state.helpers import ORW, RETURN, list_desc, stored_now, ttl


def test_per_element_expiry(backend, clock) -> None:
    state = backend.get_list_state(list_desc(ttl(100)))
    backend.set_current_key(1)
    state.add(1)
    clock.set(50)
    state.add_all([2, 3])
    clock.set(120)
    assert list(state.get()) == [2, 3]
    # OnCreateAndWrite: a partially expired read does not remove the expired element.
    assert backend.cleanup_counts()["l"]["read"] == 0
    assert stored_now(backend, list_desc()) == [1, 2, 3]


def test_fully_expired_list_is_cleared_only_when_iterated_to_the_end(backend, clock) -> None:
    state = backend.get_list_state(list_desc(ttl(100)))
    backend.set_current_key(1)
    state.add_all([1, 2])
    clock.set(200)
    view = state.get()
    assert backend.physical_entries("l") == 1  # lazy: nothing happened yet
    assert list(view) == []
    assert backend.physical_entries("l") == 0


def test_return_expired_yields_expired_elements_then_clears(backend, clock) -> None:
    state = backend.get_list_state(list_desc(ttl(100, visibility=RETURN)))
    backend.set_current_key(1)
    state.add_all([1, 2])
    clock.set(200)
    assert list(state.get()) == [1, 2]
    assert backend.physical_entries("l") == 0
    assert list(state.get()) == []


def test_on_read_and_write_rewrites_only_unexpired(backend, clock) -> None:
    state = backend.get_list_state(list_desc(ttl(100, update=ORW)))
    backend.set_current_key(1)
    state.add(1)
    clock.set(50)
    state.add(2)
    clock.set(120)
    assert list(state.get()) == [2]
    assert backend.cleanup_counts()["l"]["read"] == 1  # the expired element was dropped
    clock.set(219)  # the survivor was re-stamped at 120: still visible (its write was at 50)
    assert list(state.get()) == [2]
    assert stored_now(backend, list_desc()) == [2]


def test_orw_fully_expired_list_is_not_rewritten(backend, clock) -> None:
    state = backend.get_list_state(list_desc(ttl(100, update=ORW, visibility=RETURN)))
    backend.set_current_key(1)
    state.add(1)
    clock.set(150)
    assert list(state.get()) == [1]
    assert backend.physical_entries("l") == 0


def test_update_replaces_and_empty_update_clears(backend, clock) -> None:
    state = backend.get_list_state(list_desc(ttl(100)))
    backend.set_current_key("k")
    state.add_all([1, 2, 3])
    state.update([9])
    assert list(state.get()) == [9]
    state.update([])
    assert list(state.get()) == []
    assert backend.physical_entries("l") == 0


def test_missing_list_is_an_empty_iterable(backend) -> None:
    state = backend.get_list_state(list_desc(ttl(100)))
    backend.set_current_key("none")
    assert list(state.get()) == []


@pytest.mark.parametrize("call", ["add", "add_all", "update"])
def test_none_is_rejected(backend, call: str) -> None:
    state = backend.get_list_state(list_desc(ttl(100)))
    backend.set_current_key(1)
    arg = None if call == "add" else [1, None]
    with pytest.raises(TypeError, match="None"):
        getattr(state, call)(arg)
    if call != "add":
        with pytest.raises(TypeError, match="None"):
            getattr(state, call)(None)
    assert list(state.get()) == []


def test_variable_length_elements(backend, clock) -> None:
    from backends import Types

    state = backend.get_list_state(list_desc(ttl(100), typ=Types.STRING()))
    backend.set_current_key(1)
    state.add("a")
    clock.set(10)
    state.add_all(["", "ccc"])
    clock.set(100)
    assert list(state.get()) == ["", "ccc"]
