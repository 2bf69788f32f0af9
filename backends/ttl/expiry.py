"""The expiry rule, once (Flink's TtlUtils.expired; docs/ttl.md, "Flink's rules").

A unit last accessed at `ts` is expired at `now` exactly when `expiration_ts(ts, ttl) <= now`,
where `expiration_ts` clamps `ts + ttl` to INT64_MAX for ts > 0 as Flink does.

Every access path uses it in one fast form: it computes `cutoff = expiry_cutoff(now, ttl)` once
per access and asks `is_expired(ts, cutoff)` of each unit (`ts <= cutoff`). The clamp matters
only when the clock reads INT64_MAX (then every unit is expired), so `expiry_cutoff` turns that
reading into a cutoff above every int64 timestamp; tests/state/test_expiry_arithmetic.py proves
the fast form equal to the clamped rule for every int64 timestamp, TTL and time.

`is_expired` and `expiry_cutoff` are the only places the comparison and the cutoff are written.
The hot paths (the TTL states' reads, the incremental and timer cleanups, the container filters
below) call them by name and are built with `backends.ttl.inline.inline`, which compiles each
call into the rule's own expression: no copy of the comparison at a call site, and no call cost.
The container filters used by cleanups (incremental, timers, compaction and full-snapshot
filters) live here too, so a cleanup never re-codes the comparison.
"""
from __future__ import annotations

from typing import Any

from backends.ttl.inline import inline
from backends.types import INT64_MAX

# A clock reading of INT64_MAX means "after every expiration": cutoffs are computed from this
# instead, which exceeds every int64 timestamp by more than any int64 TTL.
_AFTER_EVERYTHING = 1 << 80


def expiration_ts(ts: int, ttl: int) -> int:
    """`ts + ttl`, clamped to INT64_MAX when ts > 0 (no clamp for ts <= 0), as Flink."""
    if ts > 0:
        return ts + min(INT64_MAX - ts, ttl)
    return ts + ttl


def is_expired(ts: int, cutoff: int) -> bool:
    """Whether a unit last accessed at `ts` is expired, given `cutoff = expiry_cutoff(now, ttl)`
    (a timer bucket's expiration time `t` has passed at `now` iff `is_expired(t,
    effective_now(now))`: a unit stamped `t` with a TTL of 0)."""
    return ts <= cutoff


def expiry_cutoff(now: int, ttl: int) -> int:
    """The newest last-access timestamp that is expired at `now`: a unit is expired iff its
    timestamp is <= this. Idempotent on an already effective `now` (see `effective_now`)."""
    return (_AFTER_EVERYTHING if now >= INT64_MAX else now) - ttl


def effective_now(now: int) -> int:
    """`now` as expiry sees it: `expiration <= effective_now(now)` for every clamped expiration
    that is due at `now` (a clock reading of INT64_MAX becomes a time after everything)."""
    return expiry_cutoff(now, 0)


@inline(is_expired)
def live_elements(elements: list, cutoff: int) -> list:
    """The unexpired elements of a stored list, in order (heap incremental and timer cleanup
    remove every expired element)."""
    return [e for e in elements if not is_expired(e[1], cutoff)]


@inline(is_expired)
def live_suffix(elements: list, cutoff: int) -> list:
    """A stored list without its leading run of expired elements (Flink's compaction and
    full-snapshot filters stop at the first unexpired element)."""
    for i, (_, ts) in enumerate(elements):
        if not is_expired(ts, cutoff):
            return elements if i == 0 else elements[i:]
    return []


@inline(is_expired)
def live_entries(entries: dict, cutoff: int) -> dict:
    """The unexpired entries of a stored map."""
    return {k: s for k, s in entries.items() if not is_expired(s[1], cutoff)}


@inline(is_expired)
def filter_container(shape: str, container: Any, ttl: int, now: int, prefix_only: bool) -> Any:
    """The unexpired part of a container at `now` (None when nothing is left); `prefix_only`
    keeps a list's elements after its first unexpired one (compaction/full-snapshot filters)."""
    cutoff = expiry_cutoff(now, ttl)
    if shape == "value":
        return None if is_expired(container[1], cutoff) else container
    if shape == "list":
        kept = live_suffix(container, cutoff) if prefix_only else live_elements(container, cutoff)
        return kept or None
    return live_entries(container, cutoff) or None


def count_units(shape: str, container: Any) -> int:
    """Units (values, list elements, map entries) a container holds: what cleanups count."""
    if container is None:
        return 0
    return 1 if shape == "value" else len(container)


def unit_timestamps(shape: str, container: Any) -> list[int]:
    """The last-access timestamps of a container's units (cleanup lag is measured per unit)."""
    if shape == "value":
        return [container[1]]
    units = container if shape == "list" else container.values()
    return [ts for _, ts in units]
