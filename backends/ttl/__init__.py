"""TTL as one layer over any backend's raw storage (Flink's runtime/state/ttl, in Python).

A TTL state stores `(user_value, last_access_ts)` units in the backend's raw state and applies
Flink's rules on every access: expiry at `last_access + ttl <= now` (with the overflow clamp),
delete-on-read under both visibilities, refresh on read for OnReadAndWrite, per-element TTL for
lists and per-entry TTL for maps, and the reducing/aggregating merge rules.
"""
