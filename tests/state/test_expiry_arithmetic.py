"""Every access path tests `is_expired(ts, expiry_cutoff(now, ttl))`, called or compiled inline
(backends/ttl/inline.py); both forms must equal Flink's clamped rule `expiration_ts(ts, ttl) <=
now` for every signed 64-bit timestamp, TTL and time, and the container filters must keep
exactly the unexpired units."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from backends.ttl.expiry import (
    effective_now,
    expiration_ts,
    expiry_cutoff,
    filter_container,
    is_expired,
    live_elements,
    live_entries,
    live_suffix,
)
from backends.ttl.inline import inline
from backends.types import INT64_MAX, INT64_MIN

INT64 = st.integers(min_value=INT64_MIN, max_value=INT64_MAX)
TTL = st.integers(min_value=1, max_value=INT64_MAX)


def flink_expired(ts: int, ttl: int, now: int) -> bool:
    return expiration_ts(ts, ttl) <= now


@inline(expiry_cutoff, is_expired)
def expired_compiled_inline(ts: int, ttl: int, now: int) -> bool:
    """The form the hot paths run (TtlValueStateNoHooks' read): both rules inlined."""
    return is_expired(ts, expiry_cutoff(now, ttl))


@given(ts=INT64, ttl=TTL, now=INT64)
@example(ts=10, ttl=INT64_MAX, now=INT64_MAX)
@example(ts=10, ttl=INT64_MAX, now=INT64_MAX - 1)
@example(ts=0, ttl=INT64_MAX, now=INT64_MAX)
@example(ts=INT64_MIN, ttl=1, now=INT64_MIN + 1)
@example(ts=-5, ttl=100, now=95)
def test_fast_forms_equal_flinks_clamped_rule(ts: int, ttl: int, now: int) -> None:
    expected = flink_expired(ts, ttl, now)
    assert is_expired(ts, expiry_cutoff(now, ttl)) == expected
    assert expired_compiled_inline(ts, ttl, now) == expected
    # A cutoff from an already effective time is the same (the snapshot writer passes one).
    assert expiry_cutoff(effective_now(now), ttl) == expiry_cutoff(now, ttl)


def test_clamp_values() -> None:
    assert expiration_ts(10, INT64_MAX) == INT64_MAX
    assert expiration_ts(0, INT64_MAX) == INT64_MAX
    assert expiration_ts(-10, 100) == 90
    assert expiry_cutoff(100, 30) == 70


UNITS = st.lists(st.tuples(st.integers(-5, 5), st.integers(-50, 50)), max_size=12)


@given(units=UNITS, ttl=st.integers(1, 40), now=st.integers(-60, 60))
def test_filters_keep_exactly_the_unexpired_units(units: list, ttl: int, now: int) -> None:
    cutoff = expiry_cutoff(now, ttl)
    live = [u for u in units if not flink_expired(u[1], ttl, now)]
    assert live_elements(units, cutoff) == live
    first_live = next((i for i, u in enumerate(units) if not flink_expired(u[1], ttl, now)),
                      len(units))
    assert live_suffix(units, cutoff) == units[first_live:]
    entries = dict(enumerate(units))
    assert live_entries(entries, cutoff) == {k: u for k, u in entries.items() if u in live}
    assert filter_container("list", units, ttl, now, prefix_only=False) == (live or None)
    assert filter_container("list", units, ttl, now, prefix_only=True) == (
        units[first_live:] or None)
    for unit in units:
        kept = filter_container("value", unit, ttl, now, prefix_only=False)
        assert kept == (None if flink_expired(unit[1], ttl, now) else unit)
