"""The lanes' checkpoint model checked against a real Flink job over the same events.

Why: the ``flink-heap`` / ``flink-rocksdb`` lanes model Flink's checkpoint phases (sync on the
task thread, async on a thread of its own) around Flink's keyed backends. Whether their strategy
ratios (``none`` vs ``full_snapshot`` throughput) are what a Flink user would see is checked here
against a real DataStream job on a local MiniCluster (``backends.flink.real_job``): the same
events as the lanes get (``workloads.run.source.keyed_table``, parallelism's tasks in
(ts, seq) order), the same states, TTL configuration (``backends.flink.register.ttl_fields`` of the
scenario, as the lane opens it) and RocksDB settings, a logical TTL clock at each record's
timestamp as in the lanes, and Flink's own checkpointing on the wall clock every
``checkpoint_interval_ms`` (the spec's interval, read as wall ms: the default shape runs at a
logical rate close to the real heap job's, so the two cadences are alike; each side's checkpoint
count is reported).

Both sides' rates are post-warm-up records over time (the lanes: over the task's busy time;
the job: from the record that ends the warm-up to the last record, wall time, since a job's task
thread has no other work to exclude), and the strategy ratio is ``none`` / ``full_snapshot``
per backend. ``python -m workloads.run.checkpoint_model_check [SPEC] [--events N] ...`` prints
both sides and exits 1 when a lane's ratio is further than TOLERANCE from the real job's: a timed
check of several minutes, so a benchmark command (docs/checkpoints.md), not a test of every CI
run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from backends.flink.lanes import ROCKSDB_TABLE_KINDS
from backends.flink.real_job import EventFile, RealJobConfig, run_real_job
from backends.flink.register import rocksdb_configuration, ttl_fields
from workloads.lanes.flink_task import compaction_options
from workloads.run import run_tempdirs
from workloads.run.config import OperatorConfig
from workloads.run.engines.inprocess import InProcessEngine, data_facts
from workloads.run.plan import DataFacts, RunConfig, Scenario, operator_config, spec_time_frame
from workloads.run.runner import run
from workloads.run.source import keyed_table
from workloads.run.state_setup import ttl_config_of
from workloads.spec import SpecError, WorkloadSpec, load_spec

#: The lanes compared and the kind of Flink backend each one is.
FLINK_BACKEND_OF = {"flink-heap": "heap", "flink-rocksdb": "rocksdb"}
STRATEGIES = ("none", "full_snapshot")
#: The check's tolerance: the lanes' ratio within this factor of the real job's.
TOLERANCE = 1.5
DEFAULT_EVENTS = 1_500_000
#: Fewer real-job checkpoints than this while its records run say nothing about their cost.
MIN_CHECKPOINTS = 3
_COLUMNS = ("key", "ts", "op", "value", "value_size", "map_key")


def churn_spec(events: int = DEFAULT_EVENTS) -> WorkloadSpec:
    """The issue's real-job shape on sessions-churn's op mix: session keys of 100 ms, 5 events
    each (~3.75 writes) and never used again, a 200 ms TTL, a checkpoint every 500 ms, 500 k
    events per logical second (near the real heap job's rate on a busy 2-core machine, so the
    lanes' logical cadence and the job's wall one take similar checkpoints per record there;
    1.5 M events = 6 of the lanes' checkpoints over a state that only grows under none)."""
    return load_spec("sessions-churn").with_overrides(
        events=events, rate=500_000, ttl_ms=200, checkpoint_interval_ms=500,
        keys__concurrent=10_000, keys__length={"distribution": "constant", "ms": 100},
        strategies=list(STRATEGIES), name="sessions-churn-real-job")


@dataclass
class Comparison:
    """records/s per backend x strategy on both sides (lists: one value per repetition) and the
    real jobs' reports."""

    spec: str
    events: int
    lanes: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    real: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    reports: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    lane_checkpoints: dict[str, dict[str, int]] = field(default_factory=dict)

    @staticmethod
    def _ratio(rates: dict[str, list[float]]) -> float:
        return statistics.median(rates["full_snapshot"]) / statistics.median(rates["none"])

    def lane_ratio(self, lane: str) -> float:
        """full_snapshot / none records/s of a lane (> 1: none is slower)."""
        return self._ratio(self.lanes[lane])

    def real_ratio(self, lane: str) -> float:
        """full_snapshot / none records/s of the real job on the lane's backend."""
        return self._ratio(self.real[lane])

    def agreement(self, lane: str) -> float:
        """How far apart the two ratios are (>= 1; the check wants <= TOLERANCE)."""
        a, b = self.lane_ratio(lane), self.real_ratio(lane)
        return max(a, b) / min(a, b)

    def disagreeing(self) -> list[str]:
        """The lanes whose ratio is further than TOLERANCE from the real job's: the check's
        failing verdict (the command exits 1)."""
        return [lane for lane in self.lanes if self.agreement(lane) > TOLERANCE]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"spec": self.spec, "events": self.events, "backends": {}}
        for lane in self.lanes:
            out["backends"][lane] = {
                "lane_records_per_s": self.lanes[lane], "real_records_per_s": self.real[lane],
                "lane_ratio": self.lane_ratio(lane), "real_ratio": self.real_ratio(lane),
                "apart": self.agreement(lane),
                "within_tolerance": self.agreement(lane) <= TOLERANCE,
                "lane_checkpoints": self.lane_checkpoints.get(lane, {}),
                "real_checkpoints_during_records": {
                    s: [r["checkpoints_during_records"] for r in reps]
                    for s, reps in self.reports[lane].items()},
                "real_checkpoint_sync_ms": {
                    s: [r["checkpoint_sync_ms_during_records"] for r in reps]
                    for s, reps in self.reports[lane].items()},
                "real_checkpoint_async_ms": {
                    s: [r["checkpoint_async_ms_during_records"] for r in reps]
                    for s, reps in self.reports[lane].items()},
                "real_jvm_gc_ms": {s: [r["jvm_gc_ms"] for r in reps]
                                   for s, reps in self.reports[lane].items()},
                "real_jvm_cpu_s": {s: [r["jvm_cpu_s"] for r in reps]
                                   for s, reps in self.reports[lane].items()},
            }
        return out


def _run_config(spec: WorkloadSpec, lanes: tuple[str, ...], parallelism: int, root: Path,
                repetitions: int) -> RunConfig:
    # one state sample (at the end: the census scans the whole state, and only records/s is
    # compared) and no latency histogram; neither is in the lanes' busy time
    frame = spec_time_frame(spec)
    span = max(1, frame[1] - frame[0]) if frame is not None else None
    return RunConfig(spec, backends=lanes, strategies=STRATEGIES, parallelism=parallelism,
                     repetitions=repetitions, checkpoint_root=str(root / "lane-checkpoints"),
                     local_dir=str(root / "lane-local"), run_id="real-job-check",
                     sample_interval_ms=span, measure_latency=False)


class _LanesEngine(InProcessEngine):
    """The in-process engine without the lanes' timed restore at the end of a job: it is not
    part of records/s, and restoring the heap lane's checkpoint of a state that only grows
    (none) takes longer than the job itself."""

    def run_tasks(self, op_cfg: OperatorConfig) -> pa.Table:
        return super().run_tasks(replace(op_cfg, restore_at_end=False))


def write_events(cfg: RunConfig, path: Path) -> DataFacts:
    """The lanes' events (the in-process engine's keyed table) in (ts, seq) order, so each
    keyed subtask of the job sees its task's events in the lane's order; their facts."""
    table = keyed_table(cfg.spec, cfg.partitions, cfg.parallelism, cfg.max_parallelism,
                        cfg.batch_size)
    facts = data_facts(table, cfg)
    table = table.sort_by([("ts", "ascending"), ("seq", "ascending")])
    with EventFile(path) as out:
        for batch in table.to_batches(max_chunksize=cfg.batch_size):
            out.append({c: batch.column(c).to_numpy(zero_copy_only=False) for c in _COLUMNS})
    return facts


def real_job_config(cfg: RunConfig, facts: DataFacts, lane: str, strategy: str,
                    events: Path, checkpoint_dir: Path,
                    interval_ms: int | None = None) -> RealJobConfig:
    """The job of one lane x strategy: its TTL fields, compaction-filter settings, RocksDB
    options and checkpoint mode exactly as the lane opens its worker (flink_task._open)."""
    op = operator_config(cfg, Scenario(lane, strategy), 0, facts)
    query, periodic = compaction_options(op.cleanup or op.strategy, dict(op.rocksdb_options))
    kind = FLINK_BACKEND_OF[lane]
    counts = dict(facts.task_counts)  # keyed subtask i is task i: the same key-group ranges
    warmups = tuple(int(counts.get(t, 0) * op.warmup_fraction) for t in range(op.parallelism))
    ttl = ttl_config_of(replace(op, time_characteristic="ProcessingTime"))
    return RealJobConfig(
        events=events, kind=kind, checkpoint_dir=checkpoint_dir, value_type=op.value_type,
        state_types=op.state_types, ttl_fields=ttl_fields(ttl, query, periodic),
        start_ms=op.start_ms, warmup_records=warmups,
        checkpoint_interval_ms=interval_ms or op.checkpoint_interval_ms,
        incremental=kind in ROCKSDB_TABLE_KINDS and op.checkpoint_mode == "incremental",
        parallelism=op.parallelism, max_parallelism=op.max_parallelism,
        periodic_compaction_ms=periodic,
        rocksdb_conf=(rocksdb_configuration(dict(op.rocksdb_options))
                      if kind in ROCKSDB_TABLE_KINDS else {}))


def _lane_rates(rows: pa.Table) -> tuple[dict[str, dict[str, list[float]]],
                                         dict[str, dict[str, int]]]:
    """records_per_s of each job total (task -1, one per repetition) and the checkpoints a
    lane took (repetition 0's checkpoint rows of task 0)."""
    rates: dict[str, dict[str, list[float]]] = {}
    checkpoints: dict[str, dict[str, set[int]]] = {}
    for r in rows.to_pylist():
        if r["metric"] == "records_per_s" and r["task"] == -1:
            rates.setdefault(r["backend"], {}).setdefault(r["strategy"], []).append(r["value"])
        elif r["metric"] == "checkpoint_bytes" and r["task"] == 0:
            checkpoints.setdefault(r["backend"], {}).setdefault(r["strategy"], set()).add(
                r["step"])
    counts = {b: {s: len(v) for s, v in per.items()} for b, per in checkpoints.items()}
    return rates, counts


def compare(spec: WorkloadSpec, lanes: tuple[str, ...] = tuple(FLINK_BACKEND_OF),
            parallelism: int = 1,
            repetitions: int = 1, interval_ms: int | None = None,
            root: Path | None = None,
            progress: Callable[[str], None] | None = None) -> Comparison:
    """Run the real job and the lanes over the same events, ``repetitions`` times each (the
    strategies' jobs interleaved, so a change in the machine's load hits both alike);
    ``progress`` gets a line per step."""
    say = progress or (lambda _line: None)
    for lane in lanes:
        if lane not in FLINK_BACKEND_OF:
            raise ValueError(f"unknown lane {lane!r}; expected one of "
                             f"{', '.join(FLINK_BACKEND_OF)}")
    with run_tempdirs.temp_dir("statebench-real-job-",  # owner-tagged: swept after a kill -9
                           dir=None if root is None else str(root)) as tmp:
        work = Path(tmp)
        cfg = _run_config(spec, lanes, parallelism, work, repetitions)
        (work / "lane-local").mkdir()
        events = work / "events.bin"
        started = time.perf_counter()
        facts = write_events(cfg, events)
        say(f"{facts.events} events written ({time.perf_counter() - started:.1f} s)")
        out = Comparison(spec=spec.name, events=facts.events)
        for lane in lanes:
            out.real[lane], out.reports[lane] = {}, {}
            for rep in range(repetitions):
                for strategy in STRATEGIES:
                    t0 = time.perf_counter()
                    job = real_job_config(cfg, facts, lane, strategy, events,
                                          work / f"ckpt-{lane}-{strategy}-{rep}", interval_ms)
                    report = run_real_job(job)
                    out.reports[lane].setdefault(strategy, []).append(report)
                    rate = report["records_per_s_after_warmup"]
                    out.real[lane].setdefault(strategy, []).append(rate)
                    say(f"real job {lane} {strategy}: {rate:,.0f} records/s, "
                        f"{report['checkpoints_during_records']} checkpoints "
                        f"({time.perf_counter() - t0:.1f} s)")
        t0 = time.perf_counter()
        outcome = run(cfg, _LanesEngine())
        say(f"lanes ({time.perf_counter() - t0:.1f} s)")
        out.lanes, out.lane_checkpoints = _lane_rates(outcome.rows)
    return out


def format_comparison(c: Comparison) -> str:
    """The comparison as the closing note's table."""
    lines = [f"{c.spec}: {c.events} events; full_snapshot/none records/s "
             f"(lanes within {TOLERANCE}x of the real job?)"]
    for lane in c.lanes:
        real = {s: statistics.median(v) for s, v in c.real[lane].items()}
        lane_rates = {s: statistics.median(v) for s, v in c.lanes[lane].items()}
        ck = {s: reps[0]["checkpoints_during_records"] for s, reps in c.reports[lane].items()}
        lines.append(
            f"  {lane:14s} real job: none {real['none']:>11,.0f}/s  full_snapshot "
            f"{real['full_snapshot']:>11,.0f}/s  ratio {c.real_ratio(lane):.2f}x  "
            f"(checkpoints {ck['none']}/{ck['full_snapshot']})")
        lines.append(
            f"  {'':14s} lane:     none {lane_rates['none']:>11,.0f}/s  full_snapshot "
            f"{lane_rates['full_snapshot']:>11,.0f}/s  ratio {c.lane_ratio(lane):.2f}x  "
            f"(checkpoints {c.lane_checkpoints.get(lane, {}).get('none', 0)}/"
            f"{c.lane_checkpoints.get(lane, {}).get('full_snapshot', 0)})  "
            f"apart {c.agreement(lane):.2f}x "
            f"{'ok' if c.agreement(lane) <= TOLERANCE else 'DISAGREE'}")
        if min(ck.values()) < MIN_CHECKPOINTS:
            lines.append(f"  {'':14s} (the real job took under {MIN_CHECKPOINTS} checkpoints while "
                         "its records ran: too few to compare; give a shorter "
                         "--checkpoint-interval-ms or more --events)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workloads.run.checkpoint_model_check",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", nargs="?", default=None,
                   help="a spec name or file (default: the issue's churn shape, churn_spec())")
    p.add_argument("--events", type=int, default=None, help=f"events (default: {DEFAULT_EVENTS:,})")
    p.add_argument("--lanes", default=",".join(FLINK_BACKEND_OF), help="flink-heap,flink-rocksdb")
    p.add_argument("--repetitions", type=int, default=1)
    p.add_argument("--parallelism", type=int, default=1)
    p.add_argument("--checkpoint-interval-ms", type=int, default=None,
                   help="the real job's (wall) interval; default: the spec's")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = p.parse_args(argv)
    try:
        if args.spec is None:
            spec = churn_spec(args.events or DEFAULT_EVENTS)
        else:
            spec = load_spec(args.spec).with_overrides(strategies=list(STRATEGIES))
            if args.events is not None:
                spec = spec.with_overrides(events=args.events)
        if args.repetitions < 1 or args.parallelism < 1:
            raise ValueError("--repetitions and --parallelism must be >= 1")
        lanes = tuple(x for x in args.lanes.split(",") if x)
        result = compare(spec, lanes, args.parallelism, args.repetitions,
                         args.checkpoint_interval_ms,
                         progress=lambda line: print(line, file=sys.stderr, flush=True))
    except (SpecError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result.as_dict(), indent=1) if args.json else format_comparison(result))
    return 1 if result.disagreeing() else 0


if __name__ == "__main__":
    raise SystemExit(main())
