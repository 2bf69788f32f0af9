"""Bad input gets a clear error naming the problem, and never reaches storage."""

from __future__ import annotations

import pytest

import backends as B
from tests.state.helpers import list_desc, map_desc, ttl, value_desc


def test_unknown_backend_kind() -> None:
    with pytest.raises(ValueError, match="unknown backend kind 'mysql'"):
        B.create_backend("mysql")
    with pytest.raises(ValueError, match="unknown backend kind"):
        B.restore_backend("mysql", [])


def test_unknown_strategy() -> None:
    with pytest.raises(ValueError, match="unknown cleanup strategy 'lazy'"):
        B.parse_strategy("lazy")
    with pytest.raises(ValueError, match="cleanup_size"):
        B.parse_strategy("incremental(0, true)")


def test_unknown_backend_option() -> None:
    with pytest.raises(ValueError, match="unknown option"):
        B.create_backend("heap", colour="blue")


@pytest.mark.parametrize("value", ["1", 1.5, True, None.__class__, 2**64])
def test_wrong_value_type_for_long(backend, value: object) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    backend.set_current_key(1)
    with pytest.raises((TypeError, ValueError), match="LONG"):
        state.update(value)
    assert backend.physical_entries("v") == 0


def test_wrong_types_in_lists_maps_and_records(backend) -> None:
    lst = backend.get_list_state(list_desc(ttl(100)))
    mp = backend.get_map_state(map_desc(ttl(100)))
    row = B.Types.ROW_NAMED(["a"], [B.Types.LONG()])
    rec = backend.get_state(value_desc(None, name="rec", typ=row))
    backend.set_current_key(1)
    with pytest.raises(TypeError, match="LONG"):
        lst.add_all([1, "two"])
    assert list(lst.get()) == []  # nothing partially written
    with pytest.raises(TypeError, match="STRING"):
        mp.put(1, 1)
    with pytest.raises(TypeError, match="LONG"):
        mp.put("k", "v")
    with pytest.raises(TypeError, match="missing field 'a'"):
        rec.update({})
    with pytest.raises(TypeError, match="not declared"):
        rec.update({"a": 1, "b": 2})


@pytest.mark.parametrize("key", [1.5, None, ("t",), True])
def test_bad_keys(backend, key: object) -> None:
    with pytest.raises(TypeError, match="keys must be str, int or bytes"):
        backend.set_current_key(key)


def test_descriptor_validation() -> None:
    with pytest.raises(ValueError, match="state name"):
        B.ValueStateDescriptor("", B.Types.LONG())
    with pytest.raises(TypeError, match="Types"):
        B.ValueStateDescriptor("x", int)
    with pytest.raises(TypeError, match="reduce_fn"):
        B.ReducingStateDescriptor("x", 42, B.Types.LONG())
    with pytest.raises(TypeError, match="get_result"):
        B.AggregatingStateDescriptor("x", object(), B.Types.LONG())
    with pytest.raises(TypeError, match="StateTtlConfig"):
        B.ValueStateDescriptor("x", B.Types.LONG()).enable_time_to_live(100)


def test_wrong_descriptor_kind(backend) -> None:
    with pytest.raises(TypeError, match="list state descriptor"):
        backend.get_list_state(value_desc())


def test_key_outside_the_backend_key_group_range(make_backend, kind) -> None:
    backend = make_backend(kind, B.ManualClock(0), key_group_range=B.KeyGroupRange(0, 9))
    state = backend.get_state(value_desc())
    outside = next(k for k in range(1000) if backend.key_group(k) > 9)
    with pytest.raises(ValueError, match="outside"):
        backend.set_current_key(outside)
    inside = next(k for k in range(1000) if backend.key_group(k) <= 9)
    backend.set_current_key(inside)
    state.update(1)


def test_closed_backend(make_backend) -> None:
    backend = make_backend("heap")
    backend.close()
    with pytest.raises(RuntimeError, match="closed"):
        backend.get_state(value_desc())
