"""The Flink worker itself: protocol, TTL mapping, Flink's cleanups under the logical clock,
snapshots, key groups and the clear errors (missing extra, missing JDK, dying or hung JVM)."""

from __future__ import annotations

import numpy as np
import pytest

import backends as B
from backends.flink import (
    EVENT_TIME_REASON,
    TIMER_REASON,
    FlinkCommandError,
    FlinkUnavailableError,
    FlinkWorker,
    FlinkWorkerError,
    NotApplicableError,
    build,
    wire,
)
from backends.keygroups import key_group_for

NEVER = B.StateTtlConfig.StateVisibility.NeverReturnExpired
RETURN = B.StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp


def _value(name: str = "v", cfg: B.StateTtlConfig | None = None,
           typ: object = None) -> B.ValueStateDescriptor:
    desc = B.ValueStateDescriptor(name, typ or B.Types.LONG())
    if cfg is not None:
        desc.enable_time_to_live(cfg)
    return desc


def _ttl(ms: int = 100, visibility=NEVER) -> B.StateTtlConfig.Builder:
    return B.StateTtlConfig.new_builder(ms).set_state_visibility(visibility)


# ------------------------------------------------------------------------- protocol
def test_batch_returns_every_read_in_order_with_types(flink_heap) -> None:
    flink_heap.reset("heap", key_type="string")
    b = flink_heap.batch()
    v = b.register(_value("s", typ=B.Types.STRING()))
    m = b.register(B.MapStateDescriptor("m", B.Types.STRING(), B.Types.DOUBLE()))
    lst = b.register(B.ListStateDescriptor("l", B.Types.BOOLEAN()))
    b.set_key("ключ").value_get(v).value_update(v, "ü€").value_get(v)
    b.map_put_all(m, {"a": 1, "b": None}).map_items(m).map_contains(m, "b").map_get(m, "b")
    b.list_add_all(lst, [True, False]).list_get(lst).map_is_empty(m)
    assert b.flush() == [None, "ü€", [("a", 1.0), ("b", None)], True, None, [True, False],
                         False]
    assert flink_heap.last_batch_jvm_ns > 0


def test_failing_command_reports_its_index_and_keeps_earlier_ones(flink_heap) -> None:
    flink_heap.reset("heap")
    v = flink_heap.register(_value())
    b = flink_heap.batch().set_key(1).value_update(v, 5)
    b.raw(bytes([wire.SET_KEY]) + bytes([wire.T_STRING]) + (1).to_bytes(4, "big") + b"x")
    b.value_update(v, 6)
    with pytest.raises(FlinkCommandError, match="does not match the worker's long keys") as err:
        b.flush()
    assert err.value.index == 2
    assert flink_heap.batch().set_key(1).value_get(v).flush() == [5]  # the worker lives on


def test_vectorised_encoding_equals_recorded_ops(flink_rocksdb) -> None:
    flink_rocksdb.reset("rocksdb")
    v = flink_rocksdb.register(_value())
    keys, values = np.arange(1000), np.arange(1000) * 7 - 3
    flink_rocksdb.batch().raw(wire.encode_long_ops(wire.VALUE_UPDATE, v.sid, keys, values)).flush()
    got = flink_rocksdb.batch().raw(wire.encode_long_ops(wire.VALUE_GET, v.sid, keys),
                                    reads=len(keys)).flush()
    assert got == [int(x) for x in values]


def test_raw_and_recorded_reads_keep_their_order(flink_heap) -> None:
    flink_heap.reset("heap")
    v = flink_heap.register(_value())
    m = flink_heap.register(B.MapStateDescriptor("m", B.Types.LONG(), B.Types.LONG()))
    keys = np.arange(3)
    b = flink_heap.batch().raw(wire.encode_long_ops(wire.VALUE_UPDATE, v.sid, keys, keys + 10))
    b.set_key(0).map_put(m, 1, 2).map_items(m)
    b.raw(wire.encode_long_ops(wire.VALUE_GET, v.sid, keys), reads=3)
    b.raw(wire.encode_long_ops(wire.VALUE_GET, v.sid, keys[::-1]), reads=3)
    b.set_key(0).map_items(m).counts()
    assert b.flush() == [[(1, 2)], 10, 11, 12, 12, 11, 10, [(1, 2)],
                         {"entries": 4, "keys": {"v": 3, "m": 1}}]


def test_key_groups_match_statebench(flink_heap) -> None:
    """A worker owning key groups 0..63 of 128 accepts exactly the long keys that statebench
    places there (both use Flink's murmur hash of Long.hashCode)."""
    flink_heap.reset("heap", max_parallelism=128, key_group_range=B.KeyGroupRange(0, 63))
    v = flink_heap.register(_value())
    for key in range(-20, 60):
        b = flink_heap.batch().set_key(key).value_update(v, key)
        if key_group_for(key, 128) <= 63:
            b.flush()
        else:
            with pytest.raises(FlinkCommandError, match=r"[Kk]ey group"):
                b.flush()


# ------------------------------------------------------------------------- TTL mapping
def test_timer_and_event_time_are_not_applicable(flink_heap) -> None:
    flink_heap.reset("heap")
    with pytest.raises(NotApplicableError) as err:
        flink_heap.register(_value(cfg=_ttl().cleanup_with_timers(0).build()))
    assert str(err.value) == TIMER_REASON and "FLIP-25" in TIMER_REASON
    with pytest.raises(NotApplicableError) as err:
        flink_heap.register(_value(cfg=_ttl().use_event_time().build()))
    assert str(err.value) == EVENT_TIME_REASON


def test_compaction_filter_query_time_is_per_backend(flink_rocksdb) -> None:
    flink_rocksdb.reset("rocksdb", query_time_after_num_entries=1000)
    with pytest.raises(ValueError, match="query_time_after_num_entries=5"):
        flink_rocksdb.register(_value(cfg=_ttl().cleanup_in_rocksdb_compact_filter(5).build()))
    with pytest.raises(ValueError, match="function= one of sum, max, min"):
        flink_rocksdb.register(B.ReducingStateDescriptor("r", lambda a, b: a, B.Types.LONG()))


def test_compaction_filter_runs_on_the_logical_clock(flink_rocksdb) -> None:
    """Flink's FlinkCompactionFilter asks the worker's TtlTimeProvider: after the logical clock
    passes the TTL, a manual compaction drops every entry (visible under ReturnExpired), while a
    state without background cleanup keeps them all."""
    flink_rocksdb.reset("rocksdb")
    filtered = flink_rocksdb.register(
        _value("f", _ttl(100, RETURN).cleanup_in_rocksdb_compact_filter(1000).build()))
    kept = flink_rocksdb.register(
        _value("k", _ttl(100, RETURN).disable_cleanup_in_background().build()))
    b = flink_rocksdb.batch().set_time(0)
    for key in range(50):
        b.set_key(key).value_update(filtered, key).value_update(kept, key)
    b.set_time(99).flush_memtables().compact().counts()
    b.set_time(100).flush_memtables().compact().counts()
    b.set_key(7).value_get(filtered).value_get(kept)
    before, after, f7, k7 = b.flush()
    assert before["keys"] == {"f": 50, "k": 50}
    assert after["keys"] == {"f": 0, "k": 50}
    assert (f7, k7) == (None, 7)


def test_heap_incremental_cleanup_runs_on_access_only(flink_heap) -> None:
    """Flink's incremental cleanup removes expired entries only when the state is accessed, and
    (Flink 2.3's TtlIncrementalCleanup) stops an access's walk at the first empty batch its
    state-table visitor returns, so it removes far fewer than cleanupSize entries per access on
    a sparsely filled table: 30 accesses x 10 remove well under 300 of 1000 expired keys."""
    flink_heap.reset("heap")
    v = flink_heap.register(_value(cfg=_ttl(100).cleanup_incrementally(10, False).build()))
    b = flink_heap.batch().set_time(0)
    for key in range(1000):
        b.set_key(key).value_update(v, key)
    b.set_time(100).counts().counts()
    for _ in range(30):
        b.set_key(10**9).value_get(v)
    b.counts()
    results = b.flush()
    first, idle, last = results[0], results[1], results[-1]
    assert results[2:-1] == [None] * 30
    assert first["keys"]["v"] == idle["keys"]["v"] == 1000  # no access, no cleanup
    removed = first["keys"]["v"] - last["keys"]["v"]
    assert 0 < removed < 150


# ------------------------------------------------------------------------- snapshots
@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
def test_full_snapshot_cleanup_shrinks_flinks_snapshot(kind, flink_heap, flink_rocksdb,
                                                       tmp_path) -> None:
    worker = flink_heap if kind == "heap" else flink_rocksdb
    sizes = {}
    for cleanup in (False, True):
        worker.reset(kind)
        builder = _ttl(100).disable_cleanup_in_background()
        if cleanup:
            builder.cleanup_full_snapshot()
        v = worker.register(_value(cfg=builder.build()))
        b = worker.batch().set_time(0)
        for key in range(2000):
            b.set_key(key).value_update(v, key)
        b.set_time(100)
        b.snapshot(1, tmp_path / f"{kind}-{cleanup}", savepoint=kind == "rocksdb")
        (snap,) = b.flush()
        assert snap["sync_ms"] >= 0 and snap["async_ms"] >= 0
        assert any((tmp_path / f"{kind}-{cleanup}").rglob("*"))
        sizes[cleanup] = snap["bytes"]
    assert sizes[True] * 5 < sizes[False]


def test_incremental_rocksdb_checkpoint_uploads_only_new_files(flink_rocksdb, tmp_path) -> None:
    flink_rocksdb.reset("rocksdb", incremental_checkpoints=True)
    v = flink_rocksdb.register(_value())
    snaps = []
    for cid in (1, 2):
        b = flink_rocksdb.batch()
        for key in range(cid * 1000, cid * 1000 + 1000):
            b.set_key(key).value_update(v, key)
        b.snapshot(cid, tmp_path / "chk")
        snaps += b.flush()
    assert snaps[1]["bytes"] > snaps[0]["bytes"]
    assert snaps[1]["checkpointed_bytes"] < snaps[1]["bytes"]


def test_native_libraries_unpack_into_the_workers_own_folder(flink_rocksdb) -> None:
    """RocksDB unpacks its 13 MB native library into java.io.tmpdir and deletes it only on a
    clean exit; a JVM killed with its parent left one in /tmp each time. In the worker's own
    folder it goes with the folder, however the JVM ends."""
    flink_rocksdb.reset("rocksdb")
    flink_rocksdb.register(_value())
    assert list(flink_rocksdb._tmp.glob("librocksdbjni*.so"))


# ------------------------------------------------------------------------- clear errors
def test_missing_extra_names_the_pip_command(monkeypatch) -> None:
    monkeypatch.setattr(build, "DISTRIBUTION", "apache-flink-libraries-absent")
    with pytest.raises(FlinkUnavailableError, match=r"pip install 'statebench\[flink\]'"):
        build.find_flink_jar()


def test_missing_jdk_names_what_to_install(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FlinkUnavailableError, match="openjdk-17-jdk-headless"):
        build.find_jdk()


def test_jvm_dying_at_start_reports_its_stderr() -> None:
    with pytest.raises(FlinkWorkerError, match="Initial heap size set to a larger value"):
        FlinkWorker("heap", java_options=["-Xms64m", "-Xmx8m"])


def test_hung_worker_times_out_instead_of_hanging() -> None:
    with FlinkWorker("heap", timeout_s=2) as worker:
        v = worker.register(_value())
        with pytest.raises(FlinkWorkerError, match="no reply within 2 s"):
            worker.batch().bench(v, "value_get", keys=10, warmup=0, rounds=1,
                                 round_ms=60_000).flush()
        with pytest.raises(FlinkWorkerError):
            worker.batch().set_key(1).flush()  # the killed JVM stays an error, not a hang


def test_bench_measures_several_states_side_by_side() -> None:
    """Bench's rounds: every state gets one iteration per round, so each state has as many
    measured values as rounds and as many warm-up values as the others, between min_warmup and
    warmup; one state alone still answers with its own dict."""
    with FlinkWorker("heap") as worker:
        b = worker.batch()
        plain = b.register(_value("plain"))
        ttl = b.register(_value("ttl", B.StateTtlConfig.new_builder(60_000).build()))
        b.bench([plain, ttl], "value_update", keys=100, min_warmup=3, warmup=4, rounds=2,
                round_ms=1)
        one = b.bench(plain, "value_get", keys=100, warmup=0, rounds=1, round_ms=1)
        (both, single) = one.flush()
    assert len(both) == 2
    for r in both:
        assert len(r["rates"]) == len(r["cpu_rates"]) == 2
        assert 3 <= len(r["warmup"]) <= 4
        assert all(x > 0 for x in r["rates"])
    assert len(both[0]["warmup"]) == len(both[1]["warmup"])  # warmed up in the same rounds
    assert isinstance(single, dict) and len(single["rates"]) == 1 and single["warmup"] == []


def test_bench_warms_up_alone_and_resumes_where_it_stopped() -> None:
    """rounds=0 warms up without a measured iteration; a resumed bench measures the states as
    the last one left them, without refilling them; a resume with nothing to resume, or over
    other keys, is an error naming the problem."""
    with FlinkWorker("heap") as worker:
        v = worker.register(_value("early"))
        with pytest.raises(FlinkWorkerError, match="resumed benchmark needs a run"):
            worker.batch().bench(v, "value_get", keys=100, warmup=0, rounds=1, round_ms=1,
                                 resume=True).flush()
    with FlinkWorker("heap") as worker:
        b = worker.batch()
        v = b.register(_value("v"))
        b.flush()
        (warm,) = worker.batch().bench(v, "value_update", keys=100, min_warmup=3, warmup=4,
                                       rounds=0, round_ms=1).flush()
        assert warm["rates"] == [] and 3 <= len(warm["warmup"]) <= 4
        (more,) = worker.batch().bench(v, "value_update", keys=100, warmup=0, rounds=2,
                                       round_ms=1, resume=True).flush()
        assert len(more["rates"]) == 2 and more["warmup"] == [] and more["steady"]
        assert worker.batch().set_key(7).value_get(v).flush()[0] is not None  # still filled
        with pytest.raises(FlinkWorkerError, match="over the same 50 keys"):
            worker.batch().bench(v, "value_get", keys=50, warmup=0, rounds=1, round_ms=1,
                                 resume=True).flush()
