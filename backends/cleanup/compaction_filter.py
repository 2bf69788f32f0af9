"""The RocksDB compaction-filter cleanup, built on RocksDB's native TTL mode.

rocksdict exposes no compaction-filter hook, so statebench cannot run Flink's FlinkCompactionFilter.
It opens each such state in a DB of its own with `AccessType.with_ttl(seconds)`: RocksDB stamps
every write with the wall-clock second and its compactions drop entries whose write time + ttl
has passed, with no Python per entry. Differences from Flink, also listed in docs/ttl.md:
- whole-second granularity, on the wall clock (a ScaledClock's speedup shortens the RocksDB TTL
  to ceil(ttl_ms / 1000 / speedup) real seconds);
- the last access it sees is the last *write*: OnCreateAndWrite matches; OnReadAndWrite matches
  because a refreshing read is a write;
- a list is one RocksDB value, dropped whole when its newest element expires (Flink trims the
  expired prefix of a list);
- RocksDB reads the clock per entry, so `query_time_after_num_entries` has no effect;
- periodic compaction is run by statebench (a manual compaction every period, checked every
  4096 records), as rocksdict does not expose RocksDB's periodic_compaction_seconds;
- what the filter removed comes from RocksDB's `rocksdb.compaction.key.drop.user` statistic
  (RocksDB keys: values, whole lists, single map entries).
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

DROP_STAT = "rocksdb.compaction.key.drop.user"
_STAT_LINE = re.compile(rf"^{re.escape(DROP_STAT)} COUNT : (\d+)", re.M)
CHECK_EVERY_RECORDS = 4096


def native_ttl_seconds(ttl_ms: int, speedup: float) -> int:
    """RocksDB TTL in whole real seconds for a TTL of `ttl_ms` clock milliseconds."""
    return max(1, math.ceil(ttl_ms / 1000.0 / speedup))


def dropped_by_filter(options: Any) -> int:
    """Entries RocksDB's TTL compaction dropped so far in the DB opened with `options`."""
    text = options.get_statistics() or ""
    match = _STAT_LINE.search(text)
    return int(match.group(1)) if match else 0


class PeriodicCompaction:
    """Compacts a native-TTL DB every `period_s` real seconds so cold expired data goes away."""

    def __init__(self, db: Any, period_ms: int, speedup: float) -> None:
        self._db = db
        self._period_s = period_ms / 1000.0 / speedup
        self._calls = 0
        self._last = time.monotonic()

    def __call__(self) -> None:
        self._calls += 1
        if self._calls % CHECK_EVERY_RECORDS:
            return
        now = time.monotonic()
        if now - self._last >= self._period_s:
            self._last = now
            self._db.compact_range(None, None)
