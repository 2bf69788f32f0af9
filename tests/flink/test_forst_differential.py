"""ForSt in the differential oracle: the seeded random operation sequences of
test_flink_differential give identical visible results (every read, in order) on ForSt's
synchronous backend (the ``flink-forst`` lane's) and on Flink's RocksDB backend, and, where no
background cleanup runs, identical physical counts.

Why against flink-rocksdb: test_flink_differential already ties flink-rocksdb to statebench's
heap and rocksdb backends on the same programs, so equality here closes the chain to every lane.
Covered as there: all five state types, both update types and visibilities, clock steps on
exact expiry boundaries, long and string keys, read-time cleanup only, Flink's default
background cleanup (the compaction filter under the logical clock, with manual compactions in
the sequence; ReturnExpiredIfNotCleanedUp is left out there, as in test_flink_differential:
which expired entries are present depends on the cleanup), per-record incremental cleanup
(which ForSt, like RocksDB, silently skips) and no TTL.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import backends as B
from backends.flink import FlinkWorker
from tests.flink.conftest import start_worker
from tests.flink.oplang import descriptors, generate, run_flink
from tests.flink.test_flink_differential import (
    CASES,
    LONG_KEYS,
    SEEDS,
    STEPS,
    STRING_KEYS,
    ttl_config,
)


@pytest.fixture(scope="module")
def flink_forst() -> Iterator[FlinkWorker]:
    with start_worker("forst") as worker:
        yield worker


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_forst_matches_flink_rocksdb(case, seed, flink_forst, flink_rocksdb) -> None:
    _, update, visibility, cleanup, key_type = case
    cfg = None if update is None else ttl_config(update, visibility, cleanup)
    keys = LONG_KEYS if key_type == "long" else STRING_KEYS
    read_time_only = cleanup == "none"
    prog = generate(seed, STEPS, keys, with_counts=read_time_only, with_is_empty=read_time_only)
    flink_forst.reset("forst", key_type=key_type)
    flink_rocksdb.reset("rocksdb", key_type=key_type)
    got = run_flink(flink_forst, descriptors(cfg), prog)
    want = run_flink(flink_rocksdb, descriptors(cfg), prog)
    assert len(got) == len(want)
    for i, (x, y) in enumerate(zip(got, want)):
        assert x == y, f"read #{i}: flink-forst {x!r} != flink-rocksdb {y!r}"
    # not vacuous: data read back, absence or expiry seen, exact boundaries hit
    assert any(r not in (None, [], False, True) for r in got)
    assert any(r in (None, []) for r in got)
    assert prog.boundary_hits > 50


def test_compaction_with_the_filter_removes_what_rocksdb_removes(flink_forst,
                                                                  flink_rocksdb) -> None:
    """The default background cleanup on both: after a manual compaction past the TTL the
    physical counts agree (the V1 filter is configured on ForSt, as on RocksDB)."""
    cfg = B.StateTtlConfig.new_builder(50).build()
    descs = descriptors(cfg)
    counts = {}
    for kind, worker in (("forst", flink_forst), ("rocksdb", flink_rocksdb)):
        worker.reset(kind)
        states = {n: worker.register(d, {"r": "sum", "a": "sum"}.get(n))
                  for n, d in descs.items()}
        b = worker.batch().set_time(0)
        for k in range(200):
            b.set_key(k).value_update(states["v"], str(k)).list_add(states["l"], k)
        b.set_time(1_000).set_key(999).value_update(states["v"], "fresh")
        b.flush_memtables().counts().compact().counts()
        before, after = b.flush()
        counts[kind] = (before["keys"], after["keys"])
    assert counts["forst"] == counts["rocksdb"]
    before, after = counts["forst"]
    assert (before["v"], before["l"]) == (201, 200)
    assert (after["v"], after["l"]) == (1, 0)
