"""Both backends' raw states keep the raw-state contract (backends/storage/base.py), the one the
TTL layer, the cleanups and snapshots are written against, and store units as given."""

from __future__ import annotations

import pytest

import backends as B
from backends.storage.base import ABSENT, RAW_STATE_BY_SHAPE, RawState
from tests.state.helpers import list_desc, map_desc, ttl, value_desc

SHAPES = {"value": value_desc, "list": list_desc, "map": map_desc}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("with_ttl", [False, True])
def test_raw_states_satisfy_the_contract(backend, shape: str, with_ttl: bool) -> None:
    desc = SHAPES[shape](ttl(100) if with_ttl else None)
    getattr(backend, {"value": "get_state", "list": "get_list_state",
                      "map": "get_map_state"}[shape])(desc)
    raw = backend.raw_state(desc.name)
    assert isinstance(raw, RawState)
    assert isinstance(raw, RAW_STATE_BY_SHAPE[shape])
    others = set(RAW_STATE_BY_SHAPE) - {shape}
    assert raw.kind == shape and raw.spec.ttl_layout is with_ttl
    # The check can fail: a raw state of one shape is not one of the others.
    assert not any(isinstance(raw, RAW_STATE_BY_SHAPE[o]) for o in others)


def test_contract_rejects_what_misses_a_method() -> None:
    class HalfValue:
        name, kind, spec = "x", "value", None

        def value(self) -> None:
            """Only one method of the contract."""

    assert not isinstance(HalfValue(), RAW_STATE_BY_SHAPE["value"])


def test_units_round_trip_as_given(backend: B.KeyedStateBackend, clock: B.ManualClock) -> None:
    """Storage keeps what it is given, a TTL unit `(value, ts)` included, whatever the TTL."""
    backend.get_state(value_desc(ttl(100)))
    raw = backend.raw_state("v")
    backend.set_current_key("k")
    raw.update((5, 123))
    assert raw.value() == (5, 123)
    raw.clear()
    assert raw.value() is None
    backend.get_map_state(map_desc(ttl(100)))
    raw_map = backend.raw_state("m")
    assert raw_map.get("a") is ABSENT
    raw_map.put("a", (None, -4))
    assert raw_map.items() == [("a", (None, -4))]
