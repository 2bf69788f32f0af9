"""The lanes' checkpoint model against a real Flink DataStream job over the same events.

``statebench.flink.RealJob`` runs the workload's ops in a KeyedProcessFunction on a local
MiniCluster with Flink's own checkpointing (``backends.flink.real_job``); these tests check that
it replays the events with the lanes' TTL semantics on a logical clock, that bad input is one
clear error, and that the timed check of the lanes' none/full_snapshot throughput ratios against
the real job's (``python -m workloads.run.checkpoint_model_check``, a benchmark command on the
issue's churn shape) can say DISAGREE.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.flink import FlinkUnavailableError
from backends.flink.build import ensure_worker_built
from backends.flink.errors import FlinkWorkerError
from backends.flink.real_job import EventFile, run_real_job
from tests.flink.conftest import fail_or_skip
from workloads.lanes.flink_task import close_idle_workers
from workloads.run import checkpoint_model_check as check
from workloads.run.checkpoint_model_check import (
    TOLERANCE,
    Comparison,
    _run_config,
    format_comparison,
    real_job_config,
    write_events,
)
from workloads.spec import load_spec


@pytest.fixture(scope="module", autouse=True)
def flink_available() -> Iterator[None]:
    try:
        ensure_worker_built()
    except FlinkUnavailableError as exc:
        fail_or_skip("the real Flink job", exc)
    yield
    close_idle_workers()  # the lanes keep one JVM per process between tasks


def _job(tmp: Path, spec: Any, lane: str, strategy: str) -> dict[str, Any]:
    tmp.mkdir()
    cfg = _run_config(spec, (lane,), 1, tmp, 1)
    events = tmp / "events.bin"
    facts = write_events(cfg, events)
    job = real_job_config(cfg, facts, lane, strategy, events, tmp / f"ckpt-{strategy}", 100)
    report = run_real_job(job)
    assert report["records"] == facts.events
    return report


def _last_completed(report: dict[str, Any]) -> dict[str, Any]:
    done = [c for c in report["checkpoints"] if c["status"] == "COMPLETED"]
    assert done, f"no completed checkpoint: {report}"
    return done[-1]


@pytest.mark.slow
def test_the_job_expires_state_on_the_records_logical_clock(tmp_path: Path) -> None:
    """40 logical seconds of sessions with a 1 s TTL, replayed in about a second of wall time:
    under full_snapshot the last checkpoint holds only the last TTL's sessions (a few % of
    none's), which only a TTL clock at the records' timestamps gives; on the wall clock most
    entries would still be alive."""
    spec = load_spec("sessions-churn").with_overrides(events=200_000, rate=5_000)
    none = _job(tmp_path / "none", spec, "flink-heap", "none")
    full = _job(tmp_path / "full", spec, "flink-heap", "full_snapshot")
    for report in (none, full):
        assert report["backend"] == "heap" and report["state_backend"] == "HashMapStateBackend"
        assert report["records_per_s"] > 0 and report["checkpoints_completed"] >= 1
        row = _last_completed(report)
        assert row["state_bytes"] > 0 and row["async_ms"] >= 0 and row["sync_ms"] >= 0
    assert _last_completed(full)["state_bytes"] < 0.2 * _last_completed(none)["state_bytes"]


def test_a_file_that_is_not_an_events_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "events.bin"
    bad.write_bytes(b"not events at all, just some bytes")
    spec = load_spec("sessions-churn").with_overrides(events=1_000)
    cfg = _run_config(spec, ("flink-heap",), 1, tmp_path, 1)
    good = tmp_path / "good.bin"
    facts = write_events(cfg, good)
    job = real_job_config(cfg, facts, "flink-heap", "none", bad, tmp_path / "ckpt")
    with pytest.raises(FlinkWorkerError, match=r"exit status 2: statebench real job: events "
                                               r"file .* is not a statebench events file"):
        run_real_job(job)


def test_a_truncated_events_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.bin"
    with EventFile(path) as out:
        out.append({"key": [1, 2], "ts": [0, 1], "op": [1, 0], "value": [0, 0],
                    "value_size": [8, 0], "map_key": [0, 0]})
    path.write_bytes(path.read_bytes()[:-5])
    spec = load_spec("sessions-churn").with_overrides(events=1_000)
    cfg = _run_config(spec, ("flink-heap",), 1, tmp_path, 1)
    facts = write_events(cfg, tmp_path / "good.bin")
    job = real_job_config(cfg, facts, "flink-heap", "none", path, tmp_path / "ckpt")
    with pytest.raises(FlinkWorkerError, match="says 2 events but holds 61 bytes"):
        run_real_job(job)


def _comparison(lane_ratio: float, real_ratio: float) -> Comparison:
    """A comparison of one lane whose sides' full_snapshot/none ratios are the given ones."""
    return Comparison("churn", 1000, lanes={"flink-heap": {
        "none": [100.0], "full_snapshot": [100.0 * lane_ratio]}}, real={"flink-heap": {
            "none": [100.0], "full_snapshot": [100.0 * real_ratio]}}, reports={"flink-heap": {
                "none": [{"checkpoints_during_records": 5}],
                "full_snapshot": [{"checkpoints_during_records": 5}]}})


def test_the_checkpoint_model_check_can_say_disagree(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The lanes' none/full_snapshot ratios against the real job's is a timed check of minutes
    (``python -m workloads.run.checkpoint_model_check``, docs/checkpoints.md), run as a
    benchmark command, not in every CI run; here its verdict, both ways: a lane 2x off the real
    job's ratio reads DISAGREE and the command exits 1, one within TOLERANCE exits 0."""
    assert _comparison(1.0, 2.0).disagreeing() == ["flink-heap"]
    assert _comparison(1.0, TOLERANCE * 0.99).disagreeing() == []
    assert "DISAGREE" in format_comparison(_comparison(2.0, 1.0))
    for ratio, status in ((2.0, 1), (1.2, 0)):
        monkeypatch.setattr(check, "compare", lambda *a, r=ratio, **k: _comparison(1.0, r))
        assert check.main(["--lanes", "flink-heap"]) == status
        assert ("DISAGREE" in capsys.readouterr().out) == (status == 1)


@pytest.mark.parametrize(("lane", "strategy", "flags", "query", "incremental"), [
    ("flink-heap", "none", 1, 1000, False),
    ("flink-heap", "full_snapshot", 3, 1000, False),
    ("flink-heap", "incremental(3, true)", 5, 1000, False),
    ("flink-rocksdb", "compaction_filter(500)", 9, 500, True),
])
def test_the_job_gets_the_lanes_ttl_and_checkpoint_settings(
        tmp_path: Path, lane: str, strategy: str, flags: int, query: int,
        incremental: bool) -> None:
    """The StateTtlConfig fields, the compaction filter's per-backend query interval and the
    checkpoint mode reach the job's command line as the lane opens its worker with them (flags:
    1 no background cleanup, 2 full snapshot, 4 incremental, 8 compaction filter: every
    strategy turns Flink's default background cleanup off but its own)."""
    spec = load_spec("sessions-churn").with_overrides(events=1_000)
    cfg = _run_config(spec, (lane,), 1, tmp_path, 1)
    facts = write_events(cfg, tmp_path / "events.bin")
    job = real_job_config(cfg, facts, lane, strategy, tmp_path / "events.bin", tmp_path / "c")
    args = dict(zip(job.arguments()[::2], job.arguments()[1::2], strict=False))
    assert args["--ttl-ms"] == "1000" and args["--flags"] == str(flags)
    assert args["--query-time"] == str(query)
    assert args["--incremental"] == str(incremental).lower()  # the spec's mode, RocksDB only
    assert args["--checkpoint-interval-ms"] == str(spec.checkpoints.interval_ms)  # as wall ms
    assert args["--state-mask"] == "7" and args["--value-type"] == "2"  # value, list, map; str
    assert args["--warmup-records"] == str(int(facts.events * 0.1))
