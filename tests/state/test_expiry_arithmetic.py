"""The hot paths test `ts + ttl <= effective_now(now)`; it must equal Flink's clamped rule
`expiration_ts(ts, ttl) <= now` for every signed 64-bit timestamp, TTL and time."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from backends.ttl.expiry import INT64_MAX, effective_now, expiration_ts

INT64 = st.integers(min_value=-(1 << 63), max_value=INT64_MAX)


@given(ts=INT64, ttl=st.integers(min_value=1, max_value=INT64_MAX), now=INT64)
@example(ts=10, ttl=INT64_MAX, now=INT64_MAX)
@example(ts=10, ttl=INT64_MAX, now=INT64_MAX - 1)
@example(ts=0, ttl=INT64_MAX, now=INT64_MAX)
@example(ts=-5, ttl=100, now=95)
def test_fast_comparison_equals_flinks_clamped_rule(ts: int, ttl: int, now: int) -> None:
    assert (ts + ttl <= effective_now(now)) == (expiration_ts(ts, ttl) <= now)


def test_clamp_values() -> None:
    assert expiration_ts(10, INT64_MAX) == INT64_MAX
    assert expiration_ts(0, INT64_MAX) == INT64_MAX
    assert expiration_ts(-10, 100) == 90
