"""Snapshots of the `ttl_db` layout (every state in a TTL DB of its own, TTL 0: never expires)
restore into every backend and layout, full and incremental, adopted or copied."""

from __future__ import annotations

from pathlib import Path

import pytest

import backends as B
from tests.snapshot.util import descriptors, in_range, keys, populate, raw_dump, visible

TTL_DB = {"state_layout": "ttl_db"}
TARGETS = [("heap", None), ("rocksdb", None), ("rocksdb", TTL_DB)]


def _source(make_backend, clock, tmp_path: Path) -> tuple[B.KeyedStateBackend, dict, list]:
    b = make_backend("rocksdb", clock, path=tmp_path / "live", rocksdb_options=TTL_DB)
    descs, key_list = descriptors(), keys(300)
    populate(b, clock, descs, key_list)
    assert all(b.native_ttl_db(n) is not None for n in b.registered_state_names())
    return b, descs, key_list


@pytest.mark.parametrize("mode", ["full", "incremental"])
@pytest.mark.parametrize("kind,options", TARGETS)
def test_ttl_db_layout_round_trip(mode, kind, options, make_backend, clock, tmp_path):
    b, descs, key_list = _source(make_backend, clock, tmp_path)
    handle = b.snapshot(1, tmp_path / "chk", mode=mode)
    extra = {"path": tmp_path / "r"} if kind == "rocksdb" else {}
    if options is not None:
        extra["rocksdb_options"] = options
    r = B.restore_backend(kind, [handle], clock=clock, **extra)
    assert raw_dump(r) == raw_dump(b)
    assert visible(r, descs, key_list) == visible(b, descs, key_list)
    if kind == "rocksdb":  # registered: each state now in this backend's own layout
        in_ttl_dbs = [r.native_ttl_db(n) is not None for n in r.registered_state_names()]
        assert in_ttl_dbs == [options is not None] * len(in_ttl_dbs)
    r.close()


def test_ttl_db_layout_rescales_from_incremental_checkpoints(make_backend, clock, tmp_path):
    """Two old tasks' checkpoints into one new task: key groups are copied, not adopted."""
    maxp = 16
    descs, key_list = descriptors(), keys(300)
    handles, expected = [], {}
    for i in range(2):
        b = make_backend("rocksdb", clock, path=tmp_path / f"old{i}", max_parallelism=maxp,
                         key_group_range=B.KeyGroupRange.of_operator(i, 2, maxp),
                         rocksdb_options=TTL_DB)
        mine = in_range(b, key_list)
        populate(b, clock, descs, mine)
        handles.append(b.snapshot(1, tmp_path / f"chk{i}", mode="incremental"))
        expected.update(visible(b, descs, mine))
    r = B.restore_backend("rocksdb", handles, clock=clock, path=tmp_path / "r",
                          max_parallelism=maxp, rocksdb_options=TTL_DB)
    assert r.restore_stats.keys_restored > 0
    assert visible(r, descs, key_list) == expected
    r.close()
