"""Turning TTL on or off for an existing state is not an error (Flink 2.x, §2.4)."""

from __future__ import annotations

import backends as B
from tests.state.helpers import list_desc, map_desc, ttl, value_desc


def test_enabling_ttl_stamps_existing_values_with_now(backend, clock) -> None:
    plain = backend.get_state(value_desc())
    backend.set_current_key("k")
    plain.update(5)
    clock.set(1_000)
    with_ttl = backend.get_state(value_desc(ttl(100)))
    assert with_ttl.value() == 5
    clock.set(1_099)
    assert with_ttl.value() == 5
    clock.set(1_100)
    assert with_ttl.value() is None


def test_disabling_ttl_drops_timestamps(backend, clock) -> None:
    lst = backend.get_list_state(list_desc(ttl(100)))
    mp = backend.get_map_state(map_desc(ttl(100)))
    backend.set_current_key("k")
    lst.add_all([1, 2])
    mp.put("a", None)
    lst2 = backend.get_list_state(list_desc())
    mp2 = backend.get_map_state(map_desc())
    clock.set(10_000)
    assert list(lst2.get()) == [1, 2]
    assert mp2.contains("a") and mp2.get("a") is None


def test_changing_only_the_ttl_value_keeps_timestamps(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    backend.set_current_key("k")
    state.update(1)
    longer = backend.get_state(value_desc(ttl(1_000)))
    clock.set(500)
    assert longer.value() == 1
    clock.set(1_000)
    assert longer.value() is None


def test_incompatible_type_change_raises(backend) -> None:
    backend.get_state(value_desc(name="x", typ=B.Types.STRING()))
    try:
        backend.get_state(value_desc(name="x", typ=B.Types.LONG()))
    except B.StateMigrationError as err:
        assert "'x'" in str(err)
    else:
        raise AssertionError("expected StateMigrationError")


def test_widening_migrates(backend) -> None:
    narrow = backend.get_state(value_desc(name="x", typ=B.Types.INT()))
    backend.set_current_key(1)
    narrow.update(3)
    wide = backend.get_state(value_desc(name="x", typ=B.Types.DOUBLE()))
    assert wide.value() == 3.0 and isinstance(wide.value(), float)
