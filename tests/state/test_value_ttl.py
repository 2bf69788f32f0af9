"""Value state TTL on both backends: expiry boundary, clamp, update types, visibility (§1.2-1.5)."""

from __future__ import annotations

import pytest

import backends as B
from tests.state.helpers import NEVER, ORW, RETURN, ttl, value_desc

INT64_MAX = (1 << 63) - 1


def test_boundary_last_access_plus_ttl_is_expired(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    backend.set_current_key("k")
    state.update(7)
    clock.set(99)
    assert state.value() == 7
    clock.set(100)
    assert state.value() is None
    assert backend.physical_entries("v") == 0


def test_update_refreshes_timestamp(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    backend.set_current_key(1)
    state.update(1)
    clock.set(60)
    state.update(2)
    clock.set(159)
    assert state.value() == 2
    clock.set(160)
    assert state.value() is None


def test_on_create_and_write_reads_do_not_refresh(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    backend.set_current_key(1)
    state.update(1)
    clock.set(50)
    assert state.value() == 1
    clock.set(100)
    assert state.value() is None


def test_on_read_and_write_refreshes_unexpired_reads(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100, update=ORW)))
    backend.set_current_key(1)
    state.update(1)
    clock.set(50)
    assert state.value() == 1
    clock.set(149)
    assert state.value() == 1
    clock.set(248)
    assert state.value() == 1
    clock.set(348)
    assert state.value() is None


def test_return_expired_returns_once_then_storage_is_cleared(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100, visibility=RETURN)))
    backend.set_current_key(1)
    state.update(5)
    clock.set(100)
    assert backend.physical_entries("v") == 1
    assert state.value() == 5
    assert backend.physical_entries("v") == 0
    assert state.value() is None


def test_never_return_expired_deletes_on_read(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100, visibility=NEVER)))
    backend.set_current_key(1)
    state.update(5)
    clock.set(500)
    assert backend.physical_entries("v") == 1
    assert state.value() is None
    assert backend.physical_entries("v") == 0
    assert backend.cleanup_counts()["v"]["read"] == 1


def test_expired_read_under_orw_is_not_refreshed(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100, update=ORW, visibility=RETURN)))
    backend.set_current_key(1)
    state.update(5)
    clock.set(100)
    assert state.value() == 5  # returned once, not re-stamped
    assert state.value() is None


def test_overflow_clamp_never_expires(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(INT64_MAX)))
    backend.set_current_key(1)
    clock.set(10)
    state.update(3)
    clock.set(INT64_MAX - 1)
    assert state.value() == 3
    clock.set(INT64_MAX)  # clamped expiry INT64_MAX <= now: expired, exactly as Flink
    assert state.value() is None


def test_clamp_not_applied_for_non_positive_timestamps(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    backend.set_current_key(1)
    clock.set(-50)
    state.update(3)
    clock.set(49)
    assert state.value() == 3
    clock.set(50)
    assert state.value() is None


def test_update_none_clears_and_clear_removes(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    backend.set_current_key(1)
    state.update(5)
    state.update(None)
    assert state.value() is None
    assert backend.physical_entries("v") == 0
    state.update(6)
    state.clear()
    assert state.value() is None


def test_keys_are_independent(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    for key in ("a", 1, b"x"):
        backend.set_current_key(key)
        state.update(len(str(key)))
    clock.set(50)
    backend.set_current_key("a")
    state.update(10)
    clock.set(120)
    assert state.value() == 10
    backend.set_current_key(1)
    assert state.value() is None
    assert backend.physical_entries("v") == 2


def test_no_current_key(backend) -> None:
    state = backend.get_state(value_desc(ttl(100)))
    with pytest.raises(B.NoCurrentKeyError):
        state.value()
    with pytest.raises(B.NoCurrentKeyError):
        state.update(1)
    plain = backend.get_state(value_desc(None, name="plain"))
    with pytest.raises(B.NoCurrentKeyError):
        plain.update(1)


def test_string_and_record_values(backend, clock) -> None:
    row = B.Types.ROW_NAMED(["id", "name", "score"],
                            [B.Types.LONG(), B.Types.STRING(), B.Types.DOUBLE()])
    s = backend.get_state(value_desc(ttl(100), name="s", typ=B.Types.STRING()))
    r = backend.get_state(value_desc(ttl(100), name="r", typ=row))
    backend.set_current_key("k")
    s.update("héllo")
    r.update({"id": 1, "name": None, "score": 2})
    assert s.value() == "héllo"
    assert r.value() == {"id": 1, "name": None, "score": 2.0}


class _TickClock:
    """A clock of the caller's own (any object with now() -> int ms), not one of statebench's."""

    def __init__(self) -> None:
        self.ms = 0

    def now(self) -> int:
        return self.ms


@pytest.mark.parametrize("typ", [B.Types.LONG(), B.Types.STRING()])
def test_any_clock_object_stamps_writes(make_backend, kind, typ) -> None:
    clock = _TickClock()
    backend = make_backend(kind, clock)
    state = backend.get_state(value_desc(ttl(100), typ=typ))
    backend.set_current_key("k")
    clock.ms = 40
    value = 3 if typ == B.Types.LONG() else "x"
    state.update(value)
    clock.ms = 139
    assert state.value() == value
    clock.ms = 140  # written at 40: expired at 40 + 100
    assert state.value() is None
