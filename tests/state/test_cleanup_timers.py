"""Timer (expiry-index) cleanup on both backends: exact removal as the clock passes expiry."""

from __future__ import annotations

from backends.types import INT64_MAX
from tests.state.helpers import ORW, list_desc, map_desc, ttl, value_desc


def test_values_removed_exactly_at_expiry(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100, timers=0)))
    for key in range(10):
        clock.set(key * 10)
        backend.set_current_key(key)
        state.update(key)
    clock.set(139)  # keys written at 0..30 expired (expiry 100..139 <= 139)
    backend.set_current_key("tick")
    assert backend.physical_entries("v") == 6
    assert backend.cleanup_counts()["v"]["timer"] == 4


def test_rewritten_value_is_not_removed_by_its_stale_timer(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100, timers=0)))
    backend.set_current_key("k")
    state.update(1)
    clock.set(90)
    state.update(2)
    clock.set(150)
    assert backend.fire_timers() == 0
    assert state.value() == 2
    clock.set(190)
    backend.fire_timers()
    assert backend.physical_entries("v") == 0


def test_read_refresh_registers_a_new_timer(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100, update=ORW, timers=0)))
    backend.set_current_key("k")
    state.update(1)
    clock.set(80)
    assert state.value() == 1
    clock.set(150)
    backend.fire_timers()
    assert backend.physical_entries("v") == 1
    clock.set(180)
    backend.fire_timers()
    assert backend.physical_entries("v") == 0


def test_granularity_never_removes_early(backend, clock) -> None:
    state = backend.get_state(value_desc(ttl(100, timers=50)))
    backend.set_current_key("k")
    clock.set(1)
    state.update(1)  # expires at 101, bucket 150
    clock.set(120)
    backend.fire_timers()
    assert backend.physical_entries("v") == 1
    clock.set(150)
    backend.fire_timers()
    assert backend.physical_entries("v") == 0


def test_list_elements_and_map_entries(backend, clock) -> None:
    lst = backend.get_list_state(list_desc(ttl(100, timers=0)))
    mp = backend.get_map_state(map_desc(ttl(100, timers=0)))
    backend.set_current_key("k")
    lst.add(1)
    mp.put("a", 1)
    clock.set(50)
    lst.add(2)
    mp.put("b", 2)
    clock.set(100)
    backend.fire_timers()
    counts = backend.cleanup_counts()
    assert counts["l"]["timer"] == 1 and counts["m"]["timer"] == 1  # only the expired units
    assert list(lst.get()) == [2] and dict(mp.items()) == {"b": 2}
    clock.set(150)
    backend.fire_timers()
    assert backend.physical_entries("l") == 0
    assert backend.physical_entries("m") == 0
    counts = backend.cleanup_counts()
    assert counts["l"]["timer"] == 2 and counts["m"]["timer"] == 2


def test_a_clock_at_int64_max_reaches_a_bucket_rounded_past_it(backend, clock) -> None:
    """Expiration INT64_MAX - 5 rounds up past INT64_MAX with g = 100; the bucket is clamped,
    so the per-record check (raw clock vs the earliest bucket) still fires at the last tick."""
    state = backend.get_state(value_desc(ttl(100, timers=100)))
    backend.set_current_key("k")
    clock.set(INT64_MAX - 105)
    state.update(1)  # expires at INT64_MAX - 5
    clock.set(INT64_MAX)
    backend.set_current_key("other")  # the per-record check, no explicit fire_timers()
    assert backend.physical_entries("v") == 0
    assert backend.cleanup_counts()["v"]["timer"] == 1
