"""Reducing and aggregating state: read path and the TTL-aware merge rules (§1.4, §1.8)."""

from __future__ import annotations

import pytest

import backends as B
from tests.state.helpers import ORW, RETURN, aggregating_desc, reducing_desc, ttl


def test_reducing_adds_and_expires(backend, clock) -> None:
    state = backend.get_reducing_state(reducing_desc(ttl(100)))
    backend.set_current_key(1)
    state.add(1)
    clock.set(50)
    state.add(2)  # result stamped at 50
    clock.set(149)
    assert state.get() == 3
    clock.set(150)
    assert state.get() is None


def test_reducing_expired_old_value_starts_fresh_under_never_return(backend, clock) -> None:
    state = backend.get_reducing_state(reducing_desc(ttl(100)))
    backend.set_current_key(1)
    state.add(10)
    clock.set(100)
    state.add(1)
    assert state.get() == 1


def test_reducing_expired_old_value_comes_back_under_return_expired(backend, clock) -> None:
    state = backend.get_reducing_state(reducing_desc(ttl(100, visibility=RETURN)))
    backend.set_current_key(1)
    state.add(10)
    clock.set(100)
    state.add(1)
    assert state.get() == 11
    clock.set(199)
    assert state.get() == 11  # re-stamped at 100


def test_reducing_function_object(backend) -> None:
    class Max(B.ReduceFunction):
        def reduce(self, a: int, b: int) -> int:
            return max(a, b)

    state = backend.get_reducing_state(B.ReducingStateDescriptor("mx", Max(), B.Types.LONG()))
    backend.set_current_key(1)
    for v in (3, 9, 4):
        state.add(v)
    assert state.get() == 9


def test_aggregating_rules(backend, clock) -> None:
    state = backend.get_aggregating_state(aggregating_desc(ttl(100)))
    backend.set_current_key(1)
    assert state.get() is None
    state.add(2)
    state.add(4)
    assert state.get() == 3.0
    clock.set(100)
    state.add(10)  # expired accumulator: a fresh one under NeverReturnExpired
    assert state.get() == 10.0


def test_aggregating_return_expired_merges_expired_accumulator(backend, clock) -> None:
    state = backend.get_aggregating_state(aggregating_desc(ttl(100, visibility=RETURN)))
    backend.set_current_key(1)
    state.add(2)
    clock.set(100)
    state.add(4)
    assert state.get() == 3.0


def test_aggregating_get_returns_none_when_expired_and_refreshes_on_read(backend, clock) -> None:
    state = backend.get_aggregating_state(aggregating_desc(ttl(100, update=ORW)))
    backend.set_current_key(1)
    state.add(2)
    clock.set(99)
    assert state.get() == 2.0
    clock.set(198)
    assert state.get() == 2.0
    clock.set(298)
    assert state.get() is None
    assert backend.physical_entries("a") == 0


def test_reducing_rejects_none_and_wrong_types(backend) -> None:
    state = backend.get_reducing_state(reducing_desc(ttl(100)))
    backend.set_current_key(1)
    with pytest.raises(TypeError):
        state.add(None)
    with pytest.raises(TypeError, match="LONG"):
        state.add("x")
