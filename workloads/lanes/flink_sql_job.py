"""The ``flink-sql`` lanes in a run: one scenario x repetition as one real Flink SQL job over the
spec's Nexmark events, reported as the run's metric rows.

Why a job and not a task operator: the lanes of ``workloads.run.tasks`` get each task's keyed
events batch by batch; a SQL job reads its own source, plans its own exchange and keys, and is
one program, so the runner hands it a whole scenario (``run_sql_scenario``) and whichever
engine the run uses only prepares the other lanes' data. The job (``backends.flink.sql_job``)
reads exactly the events the emulated operator's input is made of
(``workloads.operators.input.nexmark_config``: same seed, rate, time and knobs) in the
emulation's order (by ts, then arrival: ``events_in_time_order``), at the run's
parallelism, with ``table.exec.state.ttl`` = the spec's ``ttl_ms`` and, on RocksDB, the spec's
``[rocksdb]`` options as the Flink lanes set them
(``backends.flink.register.rocksdb_configuration``; periodic compaction as the compaction
filter's).

Time: every flink-sql job runs on the paced clock at the run's ``time_speedup``
(``RunConfig.speedup``); ``late_records_share`` and ``schedule_lag_max_ms`` say by how much it
did not keep up. Its TTL clock is the emulation's: under a ProcessingTime scenario the paced
clock the other lanes pace on; under an EventTime one the records' time its keyed operator has
reached (``SqlJobConfig.ttl_clock = "event"``: ``backends.flink.sql_job``), so what a TTL
expires does not move with the machine's load. The checkpoint interval is the spec's, in clock
ms (``interval / speedup`` wall ms; at least 10).

Rows (task = -1, the job; ``workloads.run.metrics`` names where they mean the same):

* summary (``step`` = repetition): ``records`` (the keyed operator's input: Flink's
  ``numRecordsIn`` of its task, the events the query's filters let through, as the
  emulation's input), ``records_per_s`` (those records over the keyed task's busy time,
  Flink's ``accumulateBusyTimeMs``, summed over subtasks: a capacity, as statebench's lanes
  measure theirs; the task's busy time includes the chained sink function),
  ``released_records_per_s`` (every event the source released over wall time, first to last:
  the schedule's rate while the job keeps up),
  ``latency_p50_us``, ``latency_p99_us``, ``latency_p999_us``, ``latency_max_us`` (per output
  row: how far the paced clock is past the event time it stands for, real us; a row emitted
  before the clock got there - a window the end-of-input watermark fired - has none, and a
  job with no measured row has no latency rows: absent, not 0),
  ``schedule_lag_max_ms``, ``late_records_share``, ``operator_outputs`` (the changelog rows the
  query emitted: +I, -U, +U and -D), ``sql_job_s`` (s: the job, submission to result);
* series (``step`` = sample, ``logical_time_ms`` = the sample's time: under EventTime the
  emulation's sample barrier, taken before the first record at or past it as the emulation's
  are; under ProcessingTime the paced clock's), RocksDB only:
  ``estimated_entries`` (RocksDB's ``estimate-num-keys`` summed over every state and timer
  column family: an estimate counting overwritten and expired entries until a compaction drops
  them - not ``live_entries``, which counts unexpired units exactly), ``rocksdb_sst_bytes``
  (total SST size), ``rocksdb_memtable_bytes``, and ``physical_bytes`` (their sum, as
  statebench's RocksDB reports it); the HashMap backend exposes no state-size metric;
* per completed checkpoint triggered while the records ran (from the first record's release to
  the run's end; ``step`` = checkpoint id,
  ``logical_time_ms`` = under EventTime the emulation's checkpoint time it was placed at,
  under ProcessingTime its trigger time on the paced clock): ``checkpoint_bytes`` (Flink's full
  state size: every entry in Flink's row serializers), ``checkpoint_uploaded_bytes`` (what
  this checkpoint wrote), ``checkpoint_sync_ms``, ``checkpoint_async_ms``,
  ``checkpoint_total_ms`` (their sum; the maxima over subtasks).
* with a TTL, ``ttl_changed_outputs``, ``ttl_compared_outputs`` and ``ttl_changed_results``
  (share): the job's outputs against the same job with a TTL no entry reaches
  (:data:`REFERENCE_TTL_MS`, run right after it in the same JVM, not measured), as multisets
  of output rows as the emulation compares its own
  (``workloads.operators.results``); under EventTime on the records' time, as the
  emulation's exact share (one record's time apart: the event clock is the input watermark
  after the record before), under ProcessingTime on the paced clock, timing-dependent.
"""

from __future__ import annotations

from collections import Counter
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from backends.flink.register import rocksdb_configuration
from backends.flink.sql_job import (
    DEFAULT_TIMEOUT_S,
    SqlJobConfig,
    run_sql_jobs,
    write_events_csv,
)
from backends.flink.sql_lanes import SQL_BACKENDS, query_time_after_num_entries
from workloads.lanes.base import RunView
from workloads.nexmark import NEXMARK_SCHEMA, generate_nexmark
from workloads.operators.input import nexmark_config
from workloads.run import run_tempdirs
from workloads.run.barriers import checkpoint_times, sample_times
from workloads.run.checkpoints import job_checkpoint_dir, local_checkpoint_root
from workloads.run.config import DataFacts, OperatorConfig
from workloads.run.metrics import NO_TIME, MetricRows, Row
from workloads.spec import WorkloadSpec

TOTAL_TASK = -1
SERIES_PROPERTIES = (("estimated_entries", "estimate-num-keys", "entries"),
                     ("rocksdb_sst_bytes", "total-sst-files-size", "bytes"),
                     ("rocksdb_memtable_bytes", "cur-size-all-mem-tables", "bytes"))


def events_in_time_order(spec: WorkloadSpec) -> pa.Table:
    """The spec's Nexmark events in (ts, arrival) order: the order each emulated task reads its
    input in (``workloads.run.source`` sorts by ts, then seq), so a record the emulation
    processes before another the job does too - with Nexmark's arrival order, an out-of-order
    bid older than its pair's kept one would be ignored by the job's keep-last dedup and
    processed by the emulation."""
    table = generate_nexmark(nexmark_config(spec))
    seq = pa.array(np.arange(table.num_rows, dtype=np.int64))
    order = pc.sort_indices(table.append_column("seq", seq),
                            sort_keys=[("ts", "ascending"), ("seq", "ascending")])
    return table.take(order)


#: Peak bytes per byte of a Nexmark row while a scenario's events are made, numbered and
#: sorted in memory (``events_in_time_order``): the table, its copy with ``seq``, the sort's
#: indices and the sorted table.
SQL_INPUT_PEAK_FACTOR = 3.5
#: The reference job's ``table.exec.state.ttl``: longer than any run, so nothing expires, yet
#: state retention is on. Flink's operators emit differently with retention on (GroupAggFunction
#: suppresses an update that leaves the aggregate unchanged only when retention is off), so a
#: reference without any TTL counted those extra updates as results the TTL changed.
REFERENCE_TTL_MS = 1000 * 86_400_000


def input_memory_problem(spec: WorkloadSpec, available: int) -> str | None:
    """Why a flink-sql scenario's events do not fit in ``available`` bytes (None: they do, or
    the spec has no query for the lane): they are made and sorted in memory before the CSV is
    written, on any engine."""
    if spec.operator is None or spec.time is None:
        return None
    events = nexmark_config(spec).events
    row = sum(f.type.bit_width // 8 for f in NEXMARK_SCHEMA) + 8  # + seq
    need = events * row * SQL_INPUT_PEAK_FACTOR
    if need <= available:
        return None
    return (f"the flink-sql lanes sort a scenario's {events:,} Nexmark events in memory before "
            f"the SQL job reads them: about {need / 1e9:.3g} GB, but {available / 1e9:.3g} GB "
            "are available; lower --events")


def sql_job_config(cfg: RunView, op_cfg: OperatorConfig, events: Path, count: int,
                   checkpoint_dir: Path) -> SqlJobConfig:
    """The SQL job of one flink-sql scenario (module docstring)."""
    op = cfg.spec.operator
    if op is None or cfg.spec.time is None:  # the lane's spec_reason refuses it before
        raise ValueError(f"{op_cfg.scenario.label}: no [operator] query to run")
    speedup = cfg.speedup
    event_clock = op_cfg.time_characteristic == "EventTime"
    backend = SQL_BACKENDS[op_cfg.backend]
    options = dict(cfg.spec.rocksdb.options())
    conf = rocksdb_configuration(options) if backend.rocksdb else {}
    if backend.rocksdb and "periodic_compaction_ms" in options:
        conf["state.backend.rocksdb.compaction.filter.periodic-compaction-time"] = (
            f"{int(options['periodic_compaction_ms'])} ms")
    return SqlJobConfig(
        events=events, count=count, kind=op.kind, backend=backend.name,
        checkpoint_dir=checkpoint_dir,
        checkpoint_interval_ms=max(10, round(op_cfg.checkpoint_interval_ms / speedup)),
        incremental=op_cfg.checkpoint_mode == "incremental",
        ttl_ms=op_cfg.ttl_ms or 0, parallelism=op_cfg.parallelism, speedup=speedup,
        start_ms=op_cfg.start_ms, out_of_orderness_ms=cfg.spec.time.max_out_of_orderness_ms,
        window_ms=op.window_ms, slide_ms=op.slide_ms, gap_ms=op.gap_ms, lower_ms=op.lower_ms,
        upper_ms=op.upper_ms, top_n=op.top_n, category=op.category, group_by=op.group_by,
        agg=op.agg,
        sample_interval_ms=op_cfg.sample_interval_ms,
        query_time_after_num_entries=query_time_after_num_entries(
            op_cfg.configured_cleanup),
        ttl_clock="event" if event_clock else "paced",
        checkpoint_times_ms=tuple(checkpoint_times(op_cfg.start_ms, op_cfg.end_ms,
                                                   op_cfg.checkpoint_interval_ms))
        if event_clock else (),
        sample_times_ms=tuple(sample_times(op_cfg.start_ms, op_cfg.end_ms,
                                           op_cfg.sample_interval_ms))
        if event_clock and op_cfg.emit_series else (),
        conf=conf)


def report_rows(op_cfg: OperatorConfig, report: dict[str, Any], end_ms: int) -> list[Row]:
    """A job's report as metric rows (module docstring)."""
    rep = op_cfg.repetition
    rows: list[Row] = []

    def add(step: int, t: int, metric: str, value: float, unit: str) -> None:
        rows.append((TOTAL_TASK, step, t, metric, float(value), unit))

    records = int(report["records"])
    add(rep, NO_TIME, "records", report["keyed_records_in"], "count")
    add(rep, NO_TIME, "records_per_s", report["keyed_records_per_busy_s"], "records/s")
    add(rep, NO_TIME, "released_records_per_s", report["records_per_s"], "records/s")
    for name, value in report["latency_us"].items():
        add(rep, NO_TIME, f"latency_{name}_us", value, "us")
    add(rep, NO_TIME, "schedule_lag_max_ms", report["schedule_lag_max_ms"], "ms")
    add(rep, NO_TIME, "late_records_share",
        report["late_records"] / records if records else 0.0, "share")
    add(rep, NO_TIME, "operator_outputs", sum(report["outputs"].values()), "count")
    add(rep, NO_TIME, "sql_job_s", report["job_s"], "s")
    if op_cfg.emit_series:
        for i, sample in enumerate(report["state_samples"]):
            t = int(sample["clock_ms"])
            for metric, prop, unit in SERIES_PROPERTIES:
                add(i, t, metric, sample.get(prop, 0), unit)
            add(i, t, "physical_bytes",
                sample.get("total-sst-files-size", 0) + sample.get("cur-size-all-mem-tables", 0),
                "bytes")
    for c in report["checkpoints"]:
        t = int(c["clock_ms"])
        if c["status"] != "COMPLETED" or not op_cfg.start_ms <= t < end_ms:
            continue  # failed, before the first record, or after the last (finished tasks
            # checkpoint nothing)
        step = int(c["id"])
        add(step, t, "checkpoint_bytes", c["state_bytes"], "bytes")
        add(step, t, "checkpoint_uploaded_bytes", c["checkpointed_bytes"], "bytes")
        add(step, t, "checkpoint_sync_ms", c["sync_ms"], "ms")
        add(step, t, "checkpoint_async_ms", c["async_ms"], "ms")
        add(step, t, "checkpoint_total_ms", c["sync_ms"] + c["async_ms"], "ms")
    return rows


def run_sql_scenario(cfg: RunView, op_cfg: OperatorConfig, facts: DataFacts) -> pa.Table:
    """Run one flink-sql scenario x repetition as a SQL job; its rows (METRIC_SCHEMA).

    The events CSV and the job's folders live in an owner-tagged temporary folder under the
    run's ``local_dir`` (the system's when None: ``workloads.run.run_tempdirs``, so a start-up after
    a ``kill -9`` sweeps it); checkpoints go under ``checkpoint_root`` when the run has one,
    else into that temporary folder (the job always checkpoints: on HashMap, checkpoints are
    its only state measure). Flink discards a finished job's completed checkpoints, so under
    ``checkpoint_root`` the job's folder is removed again once it is empty."""
    with run_tempdirs.temp_dir("statebench-flink-sql-", dir=cfg.local_dir) as tmp:
        work = Path(tmp)
        events = work / "events.csv"
        count = write_events_csv(events_in_time_order(cfg.spec), events)
        checkpoints = job_checkpoint_dir(op_cfg, cfg.checkpoint_root, work, "flink-sql")
        job = sql_job_config(cfg, op_cfg, events, count, checkpoints)
        jobs = [job]
        if job.ttl_ms > 0:  # the reference: the same job, nothing expiring, in the same JVM
            jobs = [replace(job, collect_outputs=True),
                    replace(job, ttl_ms=REFERENCE_TTL_MS, collect_outputs=True,
                            checkpoint_dir=checkpoints.with_name(checkpoints.name + "-no-ttl"))]
        # a job takes at least its paced span of wall time: give each that twice over, beyond
        # the fixed allowance for the JVM, the planner and a slow machine
        paced_s = max(0, facts.end_ms - facts.start_ms) / cfg.speedup / 1000.0
        try:
            reports = run_sql_jobs(jobs, timeout_s=DEFAULT_TIMEOUT_S + 2 * paced_s * len(jobs))
        finally:
            if cfg.checkpoint_root is not None:
                prune_empty([j.checkpoint_dir for j in jobs],
                            local_checkpoint_root(cfg.checkpoint_root))
    rows = MetricRows(op_cfg.scenario)
    rows.extend(report_rows(op_cfg, reports[0], facts.end_ms))
    if len(reports) == 2:
        changed, compared = changed_outputs(reports[0]["output_hashes"],
                                            reports[1]["output_hashes"])
        rep = op_cfg.repetition
        rows.add(TOTAL_TASK, rep, NO_TIME, "ttl_changed_outputs", changed, "count")
        rows.add(TOTAL_TASK, rep, NO_TIME, "ttl_compared_outputs", compared, "count")
        rows.add(TOTAL_TASK, rep, NO_TIME, "ttl_changed_results",
                 changed / compared if compared else 0.0, "share")
    return pa.Table.from_batches([rows.to_batch()])


def prune_empty(folders: list[Path], root: Path) -> None:
    """Remove ``folders`` where Flink left them empty (a finished job's checkpoints are
    discarded, their folders kept), and their then empty parents up to ``root`` (never
    ``root`` itself, nor a folder holding another lane's checkpoints)."""
    for folder in folders:
        for sub in sorted((p for p in folder.rglob("*") if p.is_dir()),
                          key=lambda p: len(p.parts), reverse=True):
            with suppress(OSError):
                sub.rmdir()
        current = folder
        while current != root and root in current.parents:
            try:
                current.rmdir()
            except OSError:
                break
            current = current.parent


def changed_outputs(ttl: list[int], reference: list[int]) -> tuple[int, int]:
    """(changed, compared) of two runs' outputs as multisets of row hashes, as
    ``workloads.operators.results.compare_outputs`` compares the emulation's: changed = rows
    one run emitted and the other did not, compared = their union (max multiplicity)."""
    a, b = Counter(ttl), Counter(reference)
    return sum(((a - b) + (b - a)).values()), sum((a | b).values())
