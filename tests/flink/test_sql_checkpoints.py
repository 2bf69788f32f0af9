"""The real SQL job's checkpoints and state samples under the event clock: at the emulation's
records, not on the wall clock.

A checkpoint the wall clock triggers holds whatever record the job had reached by then, which
moves with the machine's load: q19's peak checkpoint read 0.08x of the emulation's beside other
jobs and 1.24x without (docs/operators.md, "Checkpoints at the records' times"). Under the
event clock the job checkpoints before the first record at or after each of the emulation's
barrier times (``SqlJob.EventCheckpoints``), so both sides checkpoint the same records; the
same for RocksDB's state samples at the emulation's sample times (``SqlJob.EventSamples``). One
JVM for the module's quiet jobs; the slow test runs the same jobs beside two busy processes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from backends.flink.sql_job import SqlJobConfig, run_sql_jobs
from workloads.lanes.flink_sql_job import events_in_time_order, sql_job_config, write_events_csv
from workloads.report.real_engine_bands import Neighbour
from workloads.run.barriers import (
    CHECKPOINT,
    SAMPLE,
    barrier_schedule,
    checkpoint_times,
    sample_times,
)
from workloads.run.config import DataFacts
from workloads.run.plan import RunConfig, operator_config, plan_scenarios, spec_time_frame
from workloads.spec import WorkloadSpec, load_spec

pytestmark = pytest.mark.usefixtures("sql_job_built")

EVENTS = 20_000
#: The emulation's checkpoint times over these events (start 0, 20 k events at 20 k/s).
TIMES = (250, 500, 750)
#: Sample times: one between checkpoints, one on a checkpoint's time, one past the last record.
SAMPLES = (100, 500, 600, 1_200)
#: Records a sample may hold more or fewer of beside a neighbour: about one ms of records
#: here (20 per ms; paced samples were thousands apart).
RECORDS_SLACK = 50
BACKENDS = ("rocksdb", "hashmap")


def topn_spec() -> WorkloadSpec:
    return load_spec("nexmark-q19-topn").with_overrides(events=EVENTS, checkpoint_interval_ms=250)


def jobs(root: Path, times: tuple[int, ...] = TIMES,
         samples: tuple[int, ...] = SAMPLES) -> list[SqlJobConfig]:
    """q19 on both backends at parallelism 2 (a source subtask without a split finishes at
    once: the checkpoints must complete with it finished)."""
    spec = topn_spec()
    op, time = spec.operator, spec.time
    assert op is not None and time is not None
    root.mkdir(parents=True, exist_ok=True)
    events = root / "events.csv"
    count = write_events_csv(events_in_time_order(spec), events)
    return [SqlJobConfig(
        events=events, count=count, kind=op.kind, backend=backend,
        checkpoint_dir=root / f"ck-{backend}", checkpoint_interval_ms=200, ttl_ms=2_000,
        parallelism=2, out_of_orderness_ms=time.max_out_of_orderness_ms, top_n=op.top_n,
        category=op.category, sample_interval_ms=100, ttl_clock="event",
        checkpoint_times_ms=times, sample_times_ms=samples) for backend in BACKENDS]


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    root = tmp_path_factory.mktemp("sql-checkpoints")
    return run_sql_jobs([*jobs(root / "placed"),
                         *[replace(j, checkpoint_times_ms=(), sample_times_ms=())
                           for j in jobs(root / "periodic")]])


def test_each_checkpoint_is_taken_at_its_records_time_and_completes(
        quiet: list[dict[str, Any]]) -> None:
    for report in quiet[:2]:
        found = [(c["clock_ms"], c["status"]) for c in report["checkpoints"]]
        assert found == [(t, "COMPLETED") for t in TIMES], (report["backend"], found)
        # ids 2, 3, ...: the coordinator's own checkpoint as the job starts, then the placed
        # ones, none declined and retried (a placed checkpoint waits for the split-less
        # source subtask to finish closing)
        assert [c["id"] for c in report["checkpoints"]] == list(range(2, len(TIMES) + 2))
        assert report["placed_checkpoints_retried"] == 0
        assert report["placed_checkpoints_failed"] == 0
        sizes = [c["state_bytes"] for c in report["checkpoints"]]
        assert min(sizes) > 0
        assert report["records"] == EVENTS  # the job ended: its final checkpoint came


def test_without_times_the_wall_clock_places_them(quiet: list[dict[str, Any]]) -> None:
    """The same jobs with no times: Flink's periodic checkpoints, at the paced clock's time
    of their trigger, not at the times above (the check can tell the two apart)."""
    for report in quiet[2:]:
        found = [c["clock_ms"] for c in report["checkpoints"] if c["status"] == "COMPLETED"]
        assert found and tuple(found) != TIMES, found


def test_rocksdbs_samples_are_taken_at_their_records_times(
        quiet: list[dict[str, Any]]) -> None:
    """One sample per time, at that time, with the state's entries of the records before it:
    none before the first sample time's records, growing as Top-N's state does; HashMap has
    no state gauge and no sample. Without times the paced clock places them elsewhere."""
    placed, heap, periodic = quiet[0], quiet[1], quiet[2]
    assert [s["clock_ms"] for s in placed["state_samples"]] == list(SAMPLES)
    entries = [s["estimate-num-keys"] for s in placed["state_samples"]]
    assert entries[0] > 0 and entries[-1] > entries[0], entries
    assert heap["state_samples"] == []
    found = [s["clock_ms"] for s in periodic["state_samples"]]
    assert found and found != list(SAMPLES), found


def test_the_lane_hands_the_job_the_emulations_checkpoint_times() -> None:
    spec = topn_spec()
    cfg = RunConfig(spec, backends=("flink-sql", "flink-rocksdb"),
                    strategies=("compaction_filter",), checkpoint_root="/tmp/unused")
    runnable, _ = plan_scenarios(cfg)
    facts = DataFacts((), *(spec_time_frame(spec) or (0, 0)))  # as the runner's job lanes get
    by_lane = {s.backend: operator_config(cfg, s, 0, facts) for s in runnable}
    emulated = [b.time_ms for b in barrier_schedule(by_lane["flink-rocksdb"])
                if b.kind == CHECKPOINT]
    real = sql_job_config(cfg, by_lane["flink-sql"], Path("e.csv"), EVENTS, Path("ck"))
    assert emulated and real.checkpoint_times_ms == tuple(emulated)
    samples = [b.time_ms for b in barrier_schedule(by_lane["flink-rocksdb"]) if b.kind == SAMPLE]
    assert samples and real.sample_times_ms == tuple(samples)
    assert sample_times(0, 1_000, 300) == [300, 600, 900, 1_200]
    assert checkpoint_times(0, 1_000, 250) == [250, 500, 750]
    assert checkpoint_times(0, 1_000, 0) == []
    processing = replace(by_lane["flink-sql"], time_characteristic="ProcessingTime")
    paced = sql_job_config(cfg, processing, Path("e.csv"), EVENTS, Path("ck"))
    assert paced.checkpoint_times_ms == () and paced.sample_times_ms == ()


@pytest.mark.slow
def test_beside_two_busy_processes_the_checkpoints_hold_the_same_records(
        quiet: list[dict[str, Any]], tmp_path: Path) -> None:
    """The placed checkpoints of the HashMap job (its snapshot is the serialized state, no
    file layout) are within 5% of the quiet job's beside a neighbour loading both cores: the
    records they hold do not move with the load (a few records of slack: the barrier follows
    the record at the time, or the few released while the trigger travels)."""
    with Neighbour(processes=2):
        loaded = run_sql_jobs(jobs(tmp_path))
    quiet_sizes = [c["state_bytes"] for c in quiet[1]["checkpoints"]]
    loaded_sizes = [c["state_bytes"] for c in loaded[1]["checkpoints"]]
    print(f"HashMap checkpoints quiet {quiet_sizes}, loaded {loaded_sizes}; lag "
          f"{loaded[1]['schedule_lag_max_ms']} ms")
    assert len(loaded_sizes) == len(quiet_sizes) == len(TIMES)
    for q, x in zip(quiet_sizes, loaded_sizes):
        assert abs(x - q) <= 0.05 * q, (quiet_sizes, loaded_sizes)
    # RocksDB's samples hold the same records (the keyed task's input at each), but for the
    # few of the time before the sample's still in flight (the lockstep waits for a time's
    # watermark, which its first record brings); the estimate itself moves a little with
    # when RocksDB compacts in the background
    quiet_in = [s["keyed_records_in"] for s in quiet[0]["state_samples"]]
    loaded_in = [s["keyed_records_in"] for s in loaded[0]["state_samples"]]
    quiet_entries = [s["estimate-num-keys"] for s in quiet[0]["state_samples"]]
    loaded_entries = [s["estimate-num-keys"] for s in loaded[0]["state_samples"]]
    print(f"RocksDB samples: records in quiet {quiet_in}, loaded {loaded_in}; estimated "
          f"entries quiet {quiet_entries}, loaded {loaded_entries}")
    assert len(loaded_in) == len(quiet_in) == len(SAMPLES)
    assert all(abs(x - q) <= RECORDS_SLACK for q, x in zip(quiet_in, loaded_in))
    assert quiet_in == sorted(quiet_in) and 0 < quiet_in[0] < quiet_in[-1]
    for q, x in zip(quiet_entries, loaded_entries):
        assert abs(x - q) <= 0.25 * q, (quiet_entries, loaded_entries)
