"""Raw keyed storage: what each backend physically keeps, with no TTL logic.

Every backend offers the same three raw state shapes for the *current key* (value, list, map),
holding "stored" objects that the layer above chooses: the user value itself for a plain state,
or `(value, last_access_ts)` for a TTL state. The heap keeps stored objects as they are; RocksDB
turns them into bytes with a codec (Flink's layout: 8-byte big-endian timestamp first). TTL is a
decorator over these shapes (backends/ttl), written once for both backends, as Flink's ttl package
decorates any backend's internal state.

Besides current-key access each raw state offers:
- by-reference access (`current_ref()`, `ref_*`), so cleanup mechanisms can revisit an entry later
  without making its key current;
- bulk access (`iter_entries` by key-group range, `load`), for snapshots, restore and metrics.
"""
