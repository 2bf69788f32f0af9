"""Flink's expiry arithmetic (flink-ttl-facts §1.2) and container filtering used by cleanups."""

from __future__ import annotations

from typing import Any

INT64_MAX = (1 << 63) - 1
# Returned by `effective_now` when the clock reads INT64_MAX: every clamped expiry is <= it.
NOW_INFINITY = 1 << 80


def expiration_ts(ts: int, ttl: int) -> int:
    """`ts + ttl`, clamped to INT64_MAX when ts > 0 (no clamp for ts <= 0), as Flink."""
    if ts > 0:
        return ts + min(INT64_MAX - ts, ttl)
    return ts + ttl


def effective_now(now: int) -> int:
    """A `now` against which the unclamped test `ts + ttl <= now` equals Flink's clamped one.

    The clamp only matters when now == INT64_MAX (then every entry with ts > 0 is expired);
    hot paths compare `ts + ttl <= now` after passing now through this.
    """
    return NOW_INFINITY if now >= INT64_MAX else now


def filter_list(elements: list, ttl: int, now: int, prefix_only: bool) -> list:
    """Unexpired elements of a stored list. `prefix_only` drops only a leading expired run
    (Flink's compaction and full-snapshot filters); otherwise every expired element goes."""
    if prefix_only:
        for i, (_, ts) in enumerate(elements):
            if ts + ttl > now:
                return elements if i == 0 else elements[i:]
        return []
    return [e for e in elements if e[1] + ttl > now]


def filter_map(entries: dict, ttl: int, now: int) -> dict:
    return {k: s for k, s in entries.items() if s[1] + ttl > now}


def filter_container(shape: str, container: Any, ttl: int, now: int, prefix_only: bool) -> Any:
    """The unexpired part of a container (None when nothing is left); `now` must be effective."""
    if shape == "value":
        return None if container[1] + ttl <= now else container
    if shape == "list":
        kept = filter_list(container, ttl, now, prefix_only)
        return kept or None
    kept_map = filter_map(container, ttl, now)
    return kept_map or None


def count_units(shape: str, container: Any) -> int:
    """Units (values, list elements, map entries) a container holds: what cleanups count."""
    if container is None:
        return 0
    return 1 if shape == "value" else len(container)
