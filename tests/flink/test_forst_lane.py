"""The ``flink-forst`` lane: ForSt's synchronous keyed backend as a workload lane beside
``flink-rocksdb``: the same rows plus ForSt's own (bytes on disk locally and on the primary
folder, checkpoint bytes referenced), the same TTL semantics sample by sample, the strategies
ForSt lacks reported with ForSt's reason, a spec's [rocksdb] options applied under ForSt's keys,
a timed restore from the last checkpoint, and the lane inside Spark executors.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import backends as B
from backends.flink import TIMER_REASON, FlinkCommandError, FlinkWorker
from backends.flink.lanes import (
    FULL_SNAPSHOT_ON_FORST_REASON,
    INCREMENTAL_ON_FORST_REASON,
)
from backends.flink.register import FORST_CONFIG_KEYS, ROCKSDB_CONFIG_KEYS, forst_configuration
from tests.flink.lanes_util import lane_session, per_task
from tests.runner.conftest import mixed_spec, small_spec, spark_session
from workloads.lanes.flink import flink_cleanup_reason as not_applicable_reason
from workloads.lanes.flink_task import (
    FORST_PRIMARY_ENV,
    forst_primary,
)
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import RunConfig

LANES = ("flink-rocksdb", "flink-forst")
#: Rows only ForSt's lane has.
FORST_ONLY = frozenset({"physical_local_bytes", "physical_primary_bytes",
                        "checkpoint_referenced_bytes"})


@pytest.fixture(scope="module", autouse=True)
def flink_available() -> Iterator[None]:
    with lane_session():
        yield


def _metrics(rows: Any, scenario: str) -> set[str]:
    return {r["metric"] for r in rows.to_pylist() if r["scenario"] == scenario}


@pytest.fixture(scope="module")
def churn(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """sessions-churn, 6000 events, incremental checkpoints: every spec strategy on both."""
    root = tmp_path_factory.mktemp("churn")
    # one checkpoint in flight: an incremental snapshot reuses the files of the last checkpoint
    # confirmed when its synchronous phase runs (see test_flink_lane's churn)
    spec = small_spec("sessions-churn", events=6_000).with_overrides(
        checkpoints__max_in_flight=1)
    cfg = RunConfig(spec, backends=LANES,
                    checkpoint_root=str(root / "ckpt"), run_id="forst")
    return run_in_process(cfg)


def test_forst_gives_rocksdbs_rows_and_its_own(churn: Any) -> None:
    for strategy in ("none", "compaction_filter(1000)"):
        forst = _metrics(churn.rows, f"sessions-churn/flink-forst/{strategy}")
        rocks = _metrics(churn.rows, f"sessions-churn/flink-rocksdb/{strategy}")
        assert forst - FORST_ONLY == rocks
        assert forst >= FORST_ONLY
        assert {"records_per_s", "latency_p99_us", "live_entries", "physical_bytes",
                "checkpoint_bytes", "checkpoint_total_ms", "restore_ms",
                "rocksdb_sst_bytes"} <= forst


def test_forst_holds_the_same_entries_as_rocksdb(churn: Any) -> None:
    """Same TTL semantics sample by sample (event time, read-time cleanup): same live and
    expired-present entries and logical bytes (ForSt's units are RocksDB's); never an expired
    value returned."""
    for metric in ("live_entries", "expired_present_entries", "logical_bytes",
                   "expired_present_bytes"):
        a = per_task(churn.rows, "sessions-churn/flink-forst/none", metric)
        b = per_task(churn.rows, "sessions-churn/flink-rocksdb/none", metric)
        assert len(a) >= 10 and a == b, metric
    assert any(v > 0 for v in per_task(churn.rows, "sessions-churn/flink-forst/none",
                                        "expired_present_entries").values())
    for strategy in ("none", "compaction_filter(1000)"):
        scenario = f"sessions-churn/flink-forst/{strategy}"
        assert set(per_task(churn.rows, scenario, "expired_returned").values()) == {0.0}
        assert per_task(churn.rows, scenario, "records")[(-1, 0)] == 6_000


def test_forst_keeps_its_files_on_the_primary_folder(churn: Any) -> None:
    """The DB's SST files are on the primary folder, the working folder holds the rest; the
    checkpoints refer to earlier uploads (incremental mode) and the restore is timed."""
    scenario = "sessions-churn/flink-forst/none"
    primary = per_task(churn.rows, scenario, "physical_primary_bytes")
    local = per_task(churn.rows, scenario, "physical_local_bytes")
    sst = per_task(churn.rows, scenario, "rocksdb_sst_bytes")
    assert primary.keys() == local.keys()
    flushed = [k for k, v in sst.items() if k[0] >= 0 and v > 0]
    assert flushed and all(primary[k] >= sst[k] for k in flushed)
    full = per_task(churn.rows, scenario, "checkpoint_bytes")
    uploaded = per_task(churn.rows, scenario, "checkpoint_uploaded_bytes")
    referenced = per_task(churn.rows, scenario, "checkpoint_referenced_bytes")
    assert referenced and all(referenced[k] == full[k] - uploaded[k] for k in referenced)
    assert any(v > 0 for v in referenced.values())  # checkpoint 2 refers to checkpoint 1's files
    assert per_task(churn.rows, scenario, "restore_ms")[(-1, 2)] > 0


def test_strategies_forst_lacks_are_reported_with_forsts_reason(churn: Any) -> None:
    reasons = {(n.backend, n.strategy): n.reason for n in churn.not_applicable}
    assert reasons[("flink-forst", "timer")] == TIMER_REASON
    assert reasons[("flink-forst", "incremental(5, false)")] == INCREMENTAL_ON_FORST_REASON
    assert reasons[("flink-forst", "full_snapshot")] == FULL_SNAPSHOT_ON_FORST_REASON
    assert ("flink-rocksdb", "full_snapshot") not in reasons
    assert not_applicable_reason("flink-forst", "compaction_filter(1000, 60000)") is None
    assert not_applicable_reason("flink-forst", "none") is None


def test_forst_refuses_canonical_savepoints(tmp_path: Path) -> None:
    """Why full_snapshot is not applicable: the only snapshot that would filter expired
    entries is a canonical savepoint, and ForSt refuses it."""
    with FlinkWorker("forst") as worker:
        v = worker.register(B.ValueStateDescriptor("v", B.Types.LONG()))
        worker.batch().set_time(1).set_key(1).value_update(v, 1).flush()
        [ckpt] = worker.batch().snapshot(1, tmp_path / "c").flush()
        assert ckpt["bytes"] > 0
        with pytest.raises(FlinkCommandError, match="Canonical savepoints are not supported"):
            worker.batch().snapshot(2, tmp_path / "s", savepoint=True).flush()


def _cf_options(folder: Path, column_family: str) -> dict[str, str]:
    """The options ForSt itself wrote for one column family: its newest OPTIONS file (ForSt's
    file mapping names every file by a UUID, so it is found by its contents)."""
    marker = f'[CFOptions "{column_family}"]'.encode()
    files = [p for p in folder.rglob("*") if p.is_file() and marker in p.read_bytes()]
    text = max(files, key=lambda p: p.stat().st_mtime_ns).read_text()
    section = text.split(marker.decode(), 1)[1].split("\n[", 1)[0]
    return dict(line.strip().split("=", 1) for line in section.splitlines() if "=" in line)


def test_every_rocksdb_option_of_a_spec_reaches_forst(tmp_path: Path) -> None:
    """ForSt's own OPTIONS file (in its working folder) shows the spec's [rocksdb] table
    applied under ForSt's keys (and an options factory for the L0 trigger); the flushed SST
    file is on the separate primary folder."""
    options = {"write_buffer_size": 1 << 20, "max_write_buffer_number": 3,
               "target_file_size_base": 2 << 20, "level0_file_num_compaction_trigger": 7,
               "compression": "lz4", "block_cache_size": 4 << 20}
    local, primary = tmp_path / "local", tmp_path / "primary"
    with FlinkWorker("forst", path=local, primary_path=primary,
                     rocksdb_options=options) as worker:
        v = worker.register(B.ValueStateDescriptor("v", B.Types.LONG()))
        b = worker.batch().set_time(1)
        for k in range(100):
            b.set_key(k).value_update(v, k)
        [props] = b.flush_memtables().properties(["rocksdb.total-sst-files-size"]).flush()
        got = _cf_options(local, "v")
        on_primary = sum(p.stat().st_size for p in primary.rglob("*") if p.is_file())
    assert (got["write_buffer_size"], got["max_write_buffer_number"],
            got["target_file_size_base"], got["level0_file_num_compaction_trigger"],
            got["compression_per_level"]) == ("1048576", "3", "2097152", "7", "kLZ4Compression")
    sst = props["v"]["rocksdb.total-sst-files-size"]
    assert sst > 0 and on_primary == sst  # the primary folder holds exactly the SST file
    assert set(FORST_CONFIG_KEYS) == set(ROCKSDB_CONFIG_KEYS)  # every option has a mapping
    with pytest.raises(ValueError, match="no Flink equivalent"):
        forst_configuration({"state_layout": "ttl_db"})
    with pytest.raises(ValueError, match="primary_path is ForSt's"):
        FlinkWorker("rocksdb", primary_path=primary)


def test_forst_holds_what_rocksdb_holds_on_every_state_type(tmp_path: Path) -> None:
    """Every state type and op, string payloads, full checkpoints (ForSt's native full
    snapshot strategy): the same live and expired entries as flink-rocksdb."""
    out = run_in_process(RunConfig(mixed_spec(), backends=LANES, strategies=("none",),
                                   checkpoint_root=str(tmp_path / "ckpt"), run_id="mixed"))
    for metric in ("live_entries", "expired_present_entries", "logical_bytes"):
        a = per_task(out.rows, "mixed/flink-forst/none", metric)
        assert len(a) >= 20 and a == per_task(out.rows, "mixed/flink-rocksdb/none", metric)
    referenced = per_task(out.rows, "mixed/flink-forst/none", "checkpoint_referenced_bytes")
    assert referenced and set(referenced.values()) == {0.0}  # full mode: everything uploaded


@pytest.mark.spark
def test_the_forst_lane_runs_inside_spark_executors(tmp_path: Path) -> None:
    from workloads.run.engines.spark import run_spark

    def config(name: str) -> RunConfig:
        return RunConfig(small_spec("sessions-churn", events=3_000), parallelism=1,
                         backends=("flink-forst",), strategies=("none",),
                         checkpoint_root=str(tmp_path / name), run_id="forst")

    for spark in spark_session("local[2,2]"):
        out = run_spark(config("spark"), spark)
    here = run_in_process(config("here"))
    scenario = "sessions-churn/flink-forst/none"
    assert per_task(out.rows, scenario, "restore_ms")[(0, 2)] > 0
    assert any(v > 0 for v in per_task(out.rows, scenario, "physical_primary_bytes").values())
    for metric in ("records", "live_entries", "expired_present_entries", "logical_bytes",
                   "expired_returned"):
        got = per_task(out.rows, scenario, metric)
        assert got and got == per_task(here.rows, scenario, metric), metric


def _bytes_under(folder: Path, leave_out: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*")
               if p.is_file() and leave_out not in p.parents)


@pytest.mark.parametrize("primary_under_checkpoint", [True, False])
def test_forst_refers_to_its_files_when_the_primary_is_under_the_checkpoint(
        tmp_path: Path, primary_under_checkpoint: bool) -> None:
    """ForSt's fast checkpoints: with its primary folder under the checkpoint's shared folder
    (Flink's primary-dir: checkpoint-dir), an incremental checkpoint refers to the DB's SST files
    in place and writes little more than metadata; with a separate primary folder (the lane's)
    it copies them. Flink's checkpointed size counts the new files either way."""
    checkpoints = tmp_path / "ckpt"
    primary = (checkpoints / "shared" / "primary" if primary_under_checkpoint
               else tmp_path / "primary")
    with FlinkWorker("forst", path=tmp_path / "local", primary_path=primary,
                     incremental_checkpoints=True) as worker:
        v = worker.register(B.ValueStateDescriptor("v", B.Types.LONG()))
        taken = []
        for checkpoint in (1, 2):
            b = worker.batch().set_time(checkpoint)
            for k in range(5_000):
                b.set_key(checkpoint * 100_000 + k).value_update(v, k)
            b.flush_memtables().flush()
            [result] = worker.batch().snapshot(checkpoint, checkpoints).flush()
            taken.append(result)
        written = _bytes_under(checkpoints, primary)
    new_files = sum(c["checkpointed_bytes"] for c in taken)
    in_place = sum(c["in_place_bytes"] for c in taken)
    if primary_under_checkpoint:
        assert 0 < in_place <= new_files
        assert written < new_files - in_place + 64_000  # only metadata besides the copies
        assert written < new_files / 3
    else:
        assert in_place == 0
        assert written >= new_files


def test_the_primary_folder_under_the_checkpoint_folder(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """STATEBENCH_FORST_PRIMARY=checkpoint: the lane's ForSt keeps its DB under the task's
    checkpoint folder (Flink's primary-dir: checkpoint-dir), its checkpoints upload a fraction
    of their size and refer to the rest; the state is the same as with a separate folder."""
    spec = small_spec("sessions-churn", events=6_000).with_overrides(
        checkpoints__max_in_flight=1)
    outs = {}
    for place in ("separate", "checkpoint"):
        monkeypatch.setenv(FORST_PRIMARY_ENV, place)
        outs[place] = run_in_process(RunConfig(
            spec, backends=("flink-forst",), strategies=("none",),
            checkpoint_root=str(tmp_path / place), run_id=place))
    scenario = "sessions-churn/flink-forst/none"
    for metric in ("live_entries", "expired_present_entries", "checkpoint_bytes"):
        assert (per_task(outs["checkpoint"].rows, scenario, metric)
                == per_task(outs["separate"].rows, scenario, metric)), metric
    full = per_task(outs["checkpoint"].rows, scenario, "checkpoint_bytes")
    uploaded = per_task(outs["checkpoint"].rows, scenario, "checkpoint_uploaded_bytes")
    separate = per_task(outs["separate"].rows, scenario, "checkpoint_uploaded_bytes")
    assert all(uploaded[key] < separate[key] for key in full)
    assert sum(uploaded.values()) < sum(full.values()) / 2  # (the metadata is uploaded)
    assert per_task(outs["checkpoint"].rows, scenario, "restore_ms")[(-1, 2)] > 0
    monkeypatch.setenv(FORST_PRIMARY_ENV, "s3")
    with pytest.raises(ValueError, match="expected one of separate, checkpoint"):
        forst_primary()


def test_the_compaction_filters_periodic_compaction_reaches_forst(tmp_path: Path) -> None:
    """compaction_filter(query, periodic_ms): Flink sets the period per backend; ForSt's own
    OPTIONS file shows it on the state's column family (periodic_compaction_seconds)."""
    ttl = (B.StateTtlConfig.new_builder(1_000)
           .cleanup_in_rocksdb_compact_filter(500, 3_600_000).build())
    desc = B.ValueStateDescriptor("v", B.Types.LONG())
    desc.enable_time_to_live(ttl)
    local = tmp_path / "local"
    with FlinkWorker("forst", path=local, primary_path=tmp_path / "primary",
                     query_time_after_num_entries=500,
                     periodic_compaction_ms=3_600_000) as worker:
        worker.register(desc)
        got = _cf_options(local, "v")
    assert got["periodic_compaction_seconds"] == "3600"
