"""Flink's backends as workload lanes (``flink-heap``, ``flink-rocksdb``): the same metric rows as
statebench's operator, the same TTL semantics sample by sample, no expired value returned, the
strategies Flink does not have reported with Flink's reason, and the lane inside Spark executors.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import backends as B
from backends.flink import TIMER_REASON, FlinkWorker
from backends.flink.lanes import COMPACTION_ON_HEAP_REASON, INCREMENTAL_ON_ROCKSDB_REASON
from backends.flink.register import FLINK_COMPRESSIONS, rocksdb_configuration
from backends.rocksdb_options import COMPRESSIONS
from tests.flink.lanes_util import lane_session, per_task
from tests.runner.conftest import mixed_spec, small_spec, spark_session
from workloads.run.engines.inprocess import run_in_process
from workloads.run.metrics import CHECKPOINT_ASYNC_METRICS, CHECKPOINT_SUMMARY_METRICS
from workloads.run.plan import PlanError, RunConfig

ALL = ("heap", "flink-heap", "rocksdb", "flink-rocksdb")
PAIRS = (("heap", "flink-heap"), ("rocksdb", "flink-rocksdb"))
#: Rows statebench's backends have and Flink cannot give: Flink keeps no cleanup counters, so
#: no removal counts and no cleanup lag (``cleanup_removed_<m>``, ``cleanup_lag_<m>_<stat>_ms``).
NOT_FROM_FLINK = "cleanup_"


def _flink_can_give(metrics: set[str]) -> set[str]:
    return {m for m in metrics if not m.startswith(NOT_FROM_FLINK)}


#: Rows only Flink's lanes have: the JVM's garbage collection (a cause a gap can be put down to).
FLINK_ONLY = frozenset({"jvm_gc_ms", "jvm_gc_count"})
#: The checkpoint model's rows (issue 15): every Flink lane has them; statebench's operator
#: gains them separately, so the two sides are compared apart from them and Flink's must hold
#: whichever statebench's has.
MODEL = frozenset(CHECKPOINT_ASYNC_METRICS) | {m for m, _ in CHECKPOINT_SUMMARY_METRICS}

#: Flink's RocksDB checkpoints flush the memtables (statebench's full ones do not), and write
#: amplification has a row only once something was flushed.
NO_ROW_BEFORE_A_FLUSH = frozenset({"rocksdb_write_amp"})


@pytest.fixture(scope="module", autouse=True)
def flink_available() -> Iterator[None]:
    with lane_session():
        yield


def _metrics(rows: Any) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in rows.to_pylist():
        out.setdefault(r["scenario"], set()).add(r["metric"])
    return out


@pytest.fixture(scope="module")
def ycsb(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """ycsb-a, 3000 events, every strategy of the spec on all four backends, checkpoints on."""
    root = tmp_path_factory.mktemp("ycsb")
    cfg = RunConfig(small_spec("ycsb-a", events=3_000), backends=ALL,
                    checkpoint_root=str(root / "ckpt"), run_id="lane")
    return run_in_process(cfg)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Every state type and op, string payloads, event-time TTL: strategy none on all four."""
    root = tmp_path_factory.mktemp("mixed")
    cfg = RunConfig(mixed_spec(), backends=ALL, strategies=("none", "full_snapshot"),
                    checkpoint_root=str(root / "ckpt"), run_id="lane")
    return run_in_process(cfg)


def test_all_four_backends_produce_the_same_metrics(ycsb: Any) -> None:
    metrics = _metrics(ycsb.rows)
    for ours, flink in PAIRS:
        for strategy in ("none", "full_snapshot"):
            theirs = metrics[f"ycsb-a/{flink}/{strategy}"] - NO_ROW_BEFORE_A_FLUSH
            ours_ = metrics[f"ycsb-a/{ours}/{strategy}"] - NO_ROW_BEFORE_A_FLUSH
            assert theirs >= MODEL | FLINK_ONLY
            assert theirs - FLINK_ONLY - MODEL == _flink_can_give(ours_) - MODEL
            assert ours_ & MODEL <= theirs
            assert {"records_per_s", "latency_p99_us", "live_entries", "physical_bytes",
                    "checkpoint_bytes", "checkpoint_total_ms", "restore_ms"} <= theirs
    assert "ycsb-a/flink-heap/incremental(5, false)" in metrics
    assert "ycsb-a/flink-rocksdb/compaction_filter(1000)" in metrics  # Flink's filter: any clock


def test_flink_never_returns_an_expired_value_and_counts_every_record(ycsb: Any) -> None:
    rows = ycsb.rows.to_pylist()
    flink = {r["scenario"] for r in rows if "/flink-" in r["scenario"]
             and r["metric"] == "records"}
    assert len(flink) == 6  # heap: none, full_snapshot, incremental; rocksdb: none, fs, filter
    for scenario in flink:
        returned = per_task(ycsb.rows, scenario, "expired_returned")
        assert returned and set(returned.values()) == {0.0}
        assert per_task(ycsb.rows, scenario, "records")[(-1, 0)] == 3_000
        assert per_task(ycsb.rows, scenario, "records_per_s")[(-1, 0)] > 0


def test_strategies_flink_lacks_are_reported_with_flinks_reason(ycsb: Any) -> None:
    reasons = {(n.backend, n.strategy): n.reason for n in ycsb.not_applicable}
    assert reasons[("flink-heap", "timer")] == TIMER_REASON
    assert reasons[("flink-rocksdb", "timer")] == TIMER_REASON
    assert reasons[("flink-heap", "compaction_filter(1000)")] == COMPACTION_ON_HEAP_REASON
    assert reasons[("flink-rocksdb", "incremental(5, false)")] == INCREMENTAL_ON_ROCKSDB_REASON


@pytest.mark.parametrize("strategy", ["none", "full_snapshot"])
def test_flink_holds_the_same_live_and_expired_entries_as_statebench(mixed: Any,
                                                                       strategy: str) -> None:
    """Same TTL semantics, sample by sample, per task: read-time cleanup of every state type
    (value, list, map get/iterate/remove, reducing, aggregating) removes the same entries."""
    for ours, flink in PAIRS:
        for metric in ("live_entries", "expired_present_entries"):
            a = per_task(mixed.rows, f"mixed/{ours}/{strategy}", metric)
            b = per_task(mixed.rows, f"mixed/{flink}/{strategy}", metric)
            assert len(a) >= 20 and a == b, (ours, metric)
    assert any(v > 0 for v in per_task(mixed.rows, "mixed/flink-heap/none",
                                        "expired_present_entries").values())
    # RocksDB stores no containers: its units, and so its logical bytes, are statebench's
    assert (per_task(mixed.rows, f"mixed/rocksdb/{strategy}", "logical_bytes")
            == per_task(mixed.rows, f"mixed/flink-rocksdb/{strategy}", "logical_bytes"))
    # Flink's heap keeps a key's empty map after map iteration removed its expired entries
    # (TtlMapState's iterator removes entries, never the map): whole keys (8 bytes) more
    ours = per_task(mixed.rows, f"mixed/heap/{strategy}", "logical_bytes")
    theirs = per_task(mixed.rows, f"mixed/flink-heap/{strategy}", "logical_bytes")
    extra = [theirs[k] - ours[k] for k in ours]
    assert all(e >= 0 and e % 8 == 0 for e in extra) and any(extra)


@pytest.fixture(scope="module")
def churn(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """sessions-churn, 3000 events: incremental checkpoints (RocksDB) and their restore, one
    checkpoint in flight: Flink's incremental snapshot reuses the SST files of the last
    checkpoint confirmed when its synchronous phase runs, so with a queue (checkpoint 2's
    barrier before checkpoint 1 completed) it uploads them again, as a real Flink job with
    max-concurrent-checkpoints > 1 would."""
    root = tmp_path_factory.mktemp("churn")
    spec = small_spec("sessions-churn", events=3_000).with_overrides(
        checkpoints__max_in_flight=1)
    cfg = RunConfig(spec, backends=ALL,
                    strategies=("none",), checkpoint_root=str(root / "ckpt"), run_id="lane")
    return run_in_process(cfg)


def test_incremental_checkpoints_upload_less_and_restore(churn: Any) -> None:
    for ours, flink in PAIRS:
        for metric in ("live_entries", "expired_present_entries"):
            assert (per_task(churn.rows, f"sessions-churn/{ours}/none", metric)
                    == per_task(churn.rows, f"sessions-churn/{flink}/none", metric))
    scenario = "sessions-churn/flink-rocksdb/none"
    full = per_task(churn.rows, scenario, "checkpoint_bytes")
    uploaded = per_task(churn.rows, scenario, "checkpoint_uploaded_bytes")
    assert uploaded[(-1, 2)] < full[(-1, 2)]  # checkpoint 2 reuses checkpoint 1's SST files
    # restored from checkpoint 2, whose shared files are checkpoint 1's uploads
    assert per_task(churn.rows, scenario, "restore_ms")[(-1, 2)] > 0


def test_the_specs_write_buffer_size_reaches_flinks_rocksdb(tmp_path: Path) -> None:
    """A spec's [rocksdb] write_buffer_size applies to Flink's lane as to statebench's (its
    memtables shrink with it); run.json says which options the lane got."""
    spec = small_spec("sessions-churn", events=6_000)
    peak: dict[int | None, dict[str, float]] = {}
    for size in (None, 65_536):
        out = run_in_process(RunConfig(
            spec.with_overrides(rocksdb__write_buffer_size=size), backends=("flink-rocksdb",),
            strategies=("none",), checkpoint_root=str(tmp_path / f"ckpt-{size}"),
            run_id=f"wb{size}"))
        peak[size] = {
            metric: max(v for (task, _), v in per_task(
                out.rows, "sessions-churn/flink-rocksdb/none", metric).items() if task == -1)
            for metric in ("rocksdb_memtable_bytes",)}
        assert out.config.describe()["flink_rocksdb"] == (
            {} if size is None else {"state.backend.rocksdb.writebuffer.size": "65536b"})
    # Flink's memtables (their arenas: write_buffer_size / 8 per block) follow the option
    assert peak[65_536]["rocksdb_memtable_bytes"] < peak[None]["rocksdb_memtable_bytes"] / 4


def _cf_options(db: Path, column_family: str) -> dict[str, str]:
    """The options RocksDB itself wrote for one column family (its newest OPTIONS file)."""
    text = sorted(db.rglob("OPTIONS-*"), key=lambda p: int(p.name.split("-")[1]))[-1].read_text()
    section = text.split(f'[CFOptions "{column_family}"]', 1)[1].split("\n[", 1)[0]
    return dict(line.strip().split("=", 1) for line in section.splitlines() if "=" in line)


def test_every_rocksdb_option_of_a_spec_reaches_flinks_rocksdb(tmp_path: Path) -> None:
    """RocksDB's own OPTIONS file shows the spec's table applied to Flink's column families
    (through Flink's configuration, and a RocksDBOptionsFactory for the L0 trigger)."""
    options = {"write_buffer_size": 1 << 20, "max_write_buffer_number": 3,
               "target_file_size_base": 2 << 20, "level0_file_num_compaction_trigger": 7,
               "compression": "lz4", "block_cache_size": 4 << 20}
    with FlinkWorker("rocksdb", path=tmp_path, rocksdb_options=options) as worker:
        batch = worker.batch().set_time(1)
        batch.register(B.ValueStateDescriptor("v", B.Types.LONG()))
        batch.flush()
        got = _cf_options(tmp_path, "v")
    assert (got["write_buffer_size"], got["max_write_buffer_number"],
            got["target_file_size_base"], got["level0_file_num_compaction_trigger"],
            got["compression_per_level"]) == ("1048576", "3", "2097152", "7", "kLZ4Compression")
    with pytest.raises(ValueError, match="no Flink equivalent"):
        rocksdb_configuration({"state_layout": "ttl_db"})
    assert set(FLINK_COMPRESSIONS) == set(COMPRESSIONS)  # every spec value has Flink's name


def test_processing_time_is_paced_like_statebench(tmp_path: Path) -> None:
    """ProcessingTime: records released at their time on one scaled wall clock, the schedule
    lag reported, the same rows as statebench's operator."""
    spec = mixed_spec(time_characteristic="ProcessingTime")
    out = run_in_process(RunConfig(spec, backends=("heap", "flink-heap", "flink-rocksdb"),
                                   strategies=("none",), time_speedup=2_000.0, run_id="pt"))
    metrics = _metrics(out.rows)
    assert {"schedule_lag_p99_ms", "late_records_share"} <= metrics["mixed/flink-heap/none"]
    # no checkpoints here: no checkpoint model rows either
    assert (metrics["mixed/flink-heap/none"] - FLINK_ONLY
            == _flink_can_give(metrics["mixed/heap/none"]))
    for backend in ("flink-heap", "flink-rocksdb"):
        rows = per_task(out.rows, f"mixed/{backend}/none", "expired_returned")
        assert set(rows.values()) == {0.0}
        assert per_task(out.rows, f"mixed/{backend}/none", "records")[(-1, 0)] == 12_000


def test_on_read_and_write_refreshes_like_statebench(tmp_path: Path) -> None:
    spec = mixed_spec(update_type="OnReadAndWrite")
    out = run_in_process(RunConfig(spec, backends=("heap", "flink-heap"), strategies=("none",),
                                   checkpoint_root=str(tmp_path / "ckpt"), run_id="rw"))
    for metric in ("live_entries", "expired_present_entries"):
        assert (per_task(out.rows, "mixed/heap/none", metric)
                == per_task(out.rows, "mixed/flink-heap/none", metric))
    assert per_task(out.rows, "mixed/flink-heap/none", "expired_returned")[(-1, 0)] == 0


def test_the_expired_read_check_sees_flink_return_expired_values(tmp_path: Path) -> None:
    """ReturnExpiredIfNotCleanedUp: Flink hands back expired values, and the lane counts them
    (the check that must stay 0 under NeverReturnExpired can fail)."""
    spec = mixed_spec(visibility="ReturnExpiredIfNotCleanedUp")
    out = run_in_process(RunConfig(spec, backends=("flink-heap",), strategies=("none",),
                                   run_id="rx"))
    assert per_task(out.rows, "mixed/flink-heap/none", "expired_returned")[(-1, 0)] > 0


def test_unknown_backend_names_the_flink_lanes() -> None:
    with pytest.raises(PlanError, match="flink-heap, flink-rocksdb"):
        RunConfig(small_spec(events=1_000), backends=("flink",))


def test_a_missing_jdk_fails_the_run_up_front(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PlanError, match="JDK 17"):
        RunConfig(small_spec(events=1_000), backends=("heap", "flink-rocksdb"))


@pytest.mark.spark
def test_the_lanes_run_inside_spark_executors(tmp_path: Path) -> None:
    from workloads.run.engines.spark import run_spark

    def config(name: str) -> RunConfig:
        # one task: one executor Python worker and its JVM per scenario keeps the test short
        return RunConfig(small_spec("ycsb-a", events=3_000), parallelism=1,
                         backends=("flink-heap", "flink-rocksdb"), strategies=("none",),
                         checkpoint_root=str(tmp_path / name), run_id="lane")

    for spark in spark_session("local[2,2]"):
        out = run_spark(config("spark"), spark)
    here = run_in_process(config("here"))
    for backend in ("flink-heap", "flink-rocksdb"):
        scenario = f"ycsb-a/{backend}/none"
        assert per_task(out.rows, scenario, "restore_ms")[(0, 2)] > 0
        for metric in ("records", "live_entries", "expired_present_entries", "logical_bytes",
                       "expired_present_bytes", "checkpoint_bytes", "expired_returned"):
            got = per_task(out.rows, scenario, metric)
            assert got and got == per_task(here.rows, scenario, metric), (scenario, metric)
