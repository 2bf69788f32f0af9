"""Switching TTL on or off for restored data (Flink 2.x semantics: docs/ttl.md,
"Flink's rules", restore).

Enabling TTL stamps every unit with the clock's time at re-registration; disabling drops the
timestamps. Works on whole containers so both backends share it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backends.ttl.inline import inline
from backends.ttl.units import stamped


@inline(stamped)
def ttl_layout_transform(shape: str, to_ttl: bool, now: int) -> Callable[[Any], Any]:
    """A container -> container function adding or removing last-access timestamps."""
    if to_ttl:
        if shape == "value":
            return lambda c: stamped(c, now)
        if shape == "list":
            return lambda c: [stamped(e, now) for e in c]
        return lambda c: {k: stamped(v, now) for k, v in c.items()}
    if shape == "value":
        return lambda c: c[0]
    if shape == "list":
        return lambda c: [e for e, _ in c]
    return lambda c: {k: s[0] for k, s in c.items()}
