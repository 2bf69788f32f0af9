"""Background cleanup mechanisms beside read-time cleanup: incremental (heap), timers (expiry
index, both backends), the RocksDB compaction filter (native TTL compaction) and the full-snapshot
filter. Each counts the units it removed in the state's CleanupCounters."""
