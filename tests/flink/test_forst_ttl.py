"""Does ForSt's TTL compaction filter remove expired entries, on each of ForSt's state APIs?

Flink cleans TTL state on ForSt only in compactions (FLINK-35268), and FLINK-40354 reports that
on the V2 (asynchronous) path the filter is never configured. The probe
(backends.flink.forst.ttl_probe) writes 1000 entries at logical time 0 and one fresh entry after
the TTL, flushes and compacts the state's column family, and reads everything back with
ReturnExpiredIfNotCleanedUp (which hides nothing). Measured on Flink 2.3.0: V1 (the
``flink-forst`` lane's ForStSyncKeyedStateBackend) drops all 1000 expired entries, V2
(ForStKeyedStateBackend under a StateExecutionController) drops none - FLINK-40354 reproduced.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backends.flink import FlinkWorker
from backends.flink.forst import ttl_probe
from tests.flink.conftest import start_worker

KEYS = 1000


@pytest.fixture(scope="module")
def worker() -> Iterator[FlinkWorker]:
    with start_worker("heap") as w:  # the probe opens ForSt backends of its own
        yield w


def test_v1_compaction_filter_removes_every_expired_entry(worker: FlinkWorker) -> None:
    probe = ttl_probe(worker, "sync", keys=KEYS, ttl_ms=1000)
    # everything was physically there before the compaction: the filter, not the flush, removed it
    assert probe.entries_before == KEYS + 1
    assert (probe.entries_after, probe.expired_readable, probe.fresh_readable) == (1, 0, True)
    assert probe.filter_works and probe.removed == KEYS


def test_v2_compaction_filter_is_never_configured_flink_40354(worker: FlinkWorker) -> None:
    """FLINK-40354 on the installed Flink: on the V2 path the same compaction keeps every
    expired entry, and every expired value still reads back. Should a Flink fix it, this test
    fails and the README's finding (notes: forst-readme.md) must be updated."""
    probe = ttl_probe(worker, "async", keys=KEYS, ttl_ms=1000)
    assert probe.entries_before == KEYS + 1
    assert worker.flink_version == "2.3.0", "re-establish FLINK-40354 on this Flink version"
    assert (probe.entries_after, probe.expired_readable, probe.fresh_readable) == (
        KEYS + 1, KEYS, True)
    assert probe.removed == 0 and not probe.filter_works


def test_the_probe_repeats_exactly(worker: FlinkWorker) -> None:
    """Logical clock, manual compaction: the same numbers every time, on both paths."""
    for path in ("sync", "async"):
        first = ttl_probe(worker, path, keys=200, ttl_ms=50)
        assert ttl_probe(worker, path, keys=200, ttl_ms=50) == first


@pytest.mark.parametrize("query_time", [1, 1000])
def test_v1_filter_works_whatever_its_time_query_interval(worker: FlinkWorker,
                                                          query_time: int) -> None:
    """queryTimeAfterNumEntries only says how often the filter reads the clock during a
    compaction; the whole compaction runs after the clock moved, so both remove everything."""
    probe = ttl_probe(worker, "sync", keys=300, ttl_ms=20,
                      query_time_after_num_entries=query_time)
    assert probe.filter_works, probe


def test_bad_probe_arguments_are_refused(worker: FlinkWorker) -> None:
    with pytest.raises(ValueError, match="expected one of sync, async"):
        ttl_probe(worker, "v3")
    with pytest.raises(ValueError, match="keys >= 1"):
        ttl_probe(worker, "sync", keys=0)
