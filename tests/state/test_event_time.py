"""EventTime TTL (a statebench extension): the clock is the record's timestamp."""

from __future__ import annotations

import backends as B
from tests.state.helpers import value_desc


def event_ttl(ttl_ms: int) -> B.StateTtlConfig:
    return B.StateTtlConfig.new_builder(ttl_ms).use_event_time().disable_cleanup_in_background() \
        .build()


def test_expiry_follows_record_timestamps_not_the_clock(backend, clock) -> None:
    state = backend.get_state(value_desc(event_ttl(100)))
    backend.set_current_key("k")
    backend.set_event_time(1_000)
    state.update(1)
    clock.set(10**9)  # processing time is irrelevant
    backend.set_event_time(1_099)
    assert state.value() == 1
    backend.set_event_time(1_100)
    assert state.value() is None


def test_processing_and_event_time_states_side_by_side(backend, clock) -> None:
    ev = backend.get_state(value_desc(event_ttl(100), name="ev"))
    pt = backend.get_state(value_desc(
        B.StateTtlConfig.new_builder(100).disable_cleanup_in_background().build(), name="pt"))
    backend.set_current_key("k")
    backend.set_event_time(0)
    ev.update(1)
    pt.update(1)
    clock.set(500)
    assert ev.value() == 1 and pt.value() is None


def test_timers_follow_event_time(backend) -> None:
    cfg = (B.StateTtlConfig.new_builder(100).use_event_time().cleanup_with_timers()
           .disable_cleanup_in_background().build())
    state = backend.get_state(value_desc(cfg))
    for i in range(5):
        backend.set_event_time(i * 50)
        backend.set_current_key(i)
        state.update(i)
    # Selecting key 4 at event time 200 fired the index: keys written at 0, 50, 100 expired.
    assert backend.physical_entries("v") == 2
    backend.set_event_time(260)
    backend.set_current_key("tick")
    assert backend.physical_entries("v") == 1
