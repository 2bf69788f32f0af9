"""A TTL state's stored unit: `(user_value, last_access_ts)`, built in one place.

Flink wraps every value a TTL state writes with `TtlUtils.wrapWithTs(value, ts)` into a
`TtlValue`; statebench's unit is a 2-tuple (the cheapest Python object with two slots, and what
both backends' codecs read and write: RocksDB stores the timestamp first, as Flink). `stamped` is
the one place it is built: every write, refresh and TTL migration calls it, and the hot paths are
compiled with it inlined (`backends.ttl.inline.inline`), so the tuple costs no call.
"""

from __future__ import annotations

from typing import Any


def stamped(value: Any, ts: int) -> tuple[Any, int]:
    """The stored unit of `value` last accessed at `ts` (Flink's TtlUtils.wrapWithTs)."""
    return (value, ts)
