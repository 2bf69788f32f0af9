"""TTL as one layer over any backend's raw storage (Flink's runtime/state/ttl, in Python).

A TTL state stores `(user_value, last_access_ts)` units in the backend's raw state and applies
Flink's rules on every access (docs/ttl.md, "Flink's rules"). Each rule is written
once: the expiry rule with its overflow clamp in `expiry.py`; the stored unit (Flink's
wrapWithTs) in `units.py`; `inline.py` compiles the hot paths with both inlined, from their one
definition, so no call site re-codes them and none pays a call; the read path (delete-on-read
under both visibilities, refresh on read for OnReadAndWrite), per-element list and per-entry
map TTL and the reducing/aggregating merge rule in `states.py`; switching TTL on or off for
restored data in `migration.py`; what a state derives from its config in `context.py`.
"""
