"""States without TTL: the same API, no timestamps stored."""

from __future__ import annotations

import pytest

from tests.state.helpers import aggregating_desc, list_desc, map_desc, reducing_desc, value_desc


def test_value_list_map_reducing_aggregating(backend, clock) -> None:
    v = backend.get_state(value_desc())
    lst = backend.get_list_state(list_desc())
    m = backend.get_map_state(map_desc())
    r = backend.get_reducing_state(reducing_desc())
    a = backend.get_aggregating_state(aggregating_desc())
    backend.set_current_key("k")
    v.update(1)
    lst.add(1)
    lst.add_all([2, 3])
    m.put_all({"a": 1, "b": None})
    r.add(2)
    r.add(5)
    a.add(1)
    a.add(2)
    clock.set(10**12)  # no TTL: time does not matter
    assert v.value() == 1
    assert list(lst.get()) == [1, 2, 3]
    assert m.get("a") == 1 and m.get("b") is None and m.contains("b")
    assert sorted(m.keys()) == ["a", "b"]
    assert r.get() == 7
    assert a.get() == 1.5
    lst.update([])
    m.remove("a")
    m.remove("b")
    assert m.is_empty()
    assert backend.physical_entries("l") == 0 and backend.physical_entries("m") == 0


def test_same_descriptor_gives_the_same_state_object(backend) -> None:
    desc = value_desc()
    assert backend.get_state(desc) is backend.get_state(desc)


def test_a_name_keeps_its_kind(backend) -> None:
    import backends as B

    backend.get_state(value_desc(name="x"))
    with pytest.raises(B.StateMigrationError, match="'x'"):
        backend.get_list_state(list_desc(name="x"))
