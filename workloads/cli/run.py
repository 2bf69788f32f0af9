"""``statebench run SPEC``: run one workload over backends x strategies and write the results.

Runs inside Spark (default master ``local[*]``, any cluster with ``--master``) or in this
process (``--in-process``), writes ``<results-dir>/<run-id>/rows.parquet`` and ``run.json``,
renders ``report.html`` next to them, and prints a summary table. Before any work it prints
its estimate (wall time, disk) and refuses, in one line, a run beyond 6 hours or the free disk
unless ``--allow-long`` (``workloads/run/estimate.py``). The folder is written as the run
goes: a run that stops (Ctrl-C, SIGTERM, an error) keeps the jobs that finished, marked
incomplete in run.json.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from workloads import limits
from workloads.cli.checks import bounded
from workloads.cli.long_runs import add_allow_long, announce
from workloads.cli.options import CliError, joined, positive
from workloads.cli.progress import Progress
from workloads.results.store import DEFAULT_RESULTS_DIR, RunFolder, write_run
from workloads.results.summaries import STORED_ENTRIES, summaries
from workloads.run.engines import make_engine
from workloads.run.plan import RunConfig, RunOutcome, plan_scenarios
from workloads.run.runner import run
from workloads.spec import load_spec

if TYPE_CHECKING:
    from workloads.run.estimate import Estimate


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a workload spec and write results/<run-id>/",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", metavar="SPEC", help="a spec file, or a shipped spec name (ycsb-a...)")
    p.add_argument("--backend", action="append", metavar="LIST",
                   help="backends, comma-separated or repeated (default: heap,rocksdb)")
    p.add_argument("--strategy", action="append", metavar="LIST",
                   help="cleanup strategies, e.g. 'none,incremental(5, false)' "
                        "(default: the spec's)")
    p.add_argument("--master", default=None,
                   help="Spark master URL, e.g. spark://127.0.0.1:7077 (default: local[*], or "
                        "spark-submit's --master when launched by spark-submit)")
    p.add_argument("--in-process", action="store_true",
                   help="run without Spark, in this process")
    p.add_argument("--events", type=bounded(limits.EVENTS),
                   help=f"override the spec's number of events (1..{limits.MAX_EVENTS})")
    p.add_argument("--parallelism", type=positive, default=2,
                   help="operator tasks (key-group ranges) (default 2)")
    p.add_argument("--source-partitions", type=bounded(limits.SOURCE_PARTITIONS),
                   help=f"generator partitions, 1..{limits.MAX_SOURCE_PARTITIONS} "
                        "(default: = parallelism)")
    p.add_argument("--repetitions", type=bounded(limits.REPETITIONS), default=1,
                   help="repeat each scenario; summary metrics per repetition (default 1)")
    p.add_argument("--results-dir", default=DEFAULT_RESULTS_DIR,
                   help=f"where run folders go (default {DEFAULT_RESULTS_DIR}/)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="shared checkpoint folder or URI, kept after the run (flink-sql's "
                        "excepted: Flink discards a finished job's checkpoints) "
                        "(default: a temporary folder, removed)")
    p.add_argument("--sample-interval-ms", type=bounded(limits.SAMPLE_INTERVAL_MS),
                   help="logical ms between state samples (default: run length / 10)")
    p.add_argument("--warmup", type=bounded(limits.WARMUP), default=0.1,
                   help="fraction of each task's records excluded from throughput, in [0, 1) "
                        "(default 0.1)")
    p.add_argument("--time-speedup", type=bounded(limits.TIME_SPEEDUP), default=None,
                   help="clock ms per real ms of the paced clock of ProcessingTime scenarios, "
                        f"{limits.MIN_TIME_SPEEDUP:g}..{limits.MAX_TIME_SPEEDUP:g} "
                        "(default: the spec's state.time_speedup, else 1)")
    p.add_argument("--batch-size", type=bounded(limits.BATCH_SIZE), default=65536,
                   help="Arrow batch rows")
    p.add_argument("--no-latency", action="store_true", help="do not time each record")
    p.add_argument("--sweep", default=None, metavar="STRATEGY(KNOB=V1,V2,...)",
                   help="run one strategy at several values of one knob, beside the baseline "
                        "none (as `statebench compare --sweep`)")
    p.add_argument("--no-report", action="store_true", help="do not render report.html")
    add_allow_long(p)
    p.add_argument("--fail-task-once", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=run_command)


def same_folder(a: str | Path, b: str | Path) -> bool:
    """Whether two local folder names (existing or not) are one folder."""
    return os.path.realpath(os.path.abspath(a)) == os.path.realpath(os.path.abspath(b))


def refuse_overlap(results_dir: str, checkpoint_dir: str | None) -> None:
    """Checkpoints go to ``<checkpoint dir>/<run id>/`` and results to
    ``<results dir>/<run id>/``: one folder for both makes the run's checkpoints take its
    results' place, and the results were lost at the end of the run. Refused up front."""

    if checkpoint_dir is None:
        return
    local = checkpoint_dir
    if "://" in local:
        if not local.startswith("file://"):
            return
        local = local[len("file://"):] or "/"
    if same_folder(local, results_dir):
        raise CliError(f"--checkpoint-dir {checkpoint_dir}: is the --results-dir; both write a "
                       "<run id> folder there, so the results could not be published; give "
                       "checkpoints a folder of their own")


def build_config(args: argparse.Namespace, checkpoint_root: str | None) -> RunConfig:
    from workloads.cli.checks import non_empty

    spec = load_spec(args.spec)
    if args.events is not None:
        spec = spec.with_overrides(events=args.events)
    if args.in_process and args.master:
        raise CliError("--in-process and --master exclude each other")
    if args.master is not None:  # before any work or JVM (workloads/run/engines/masters.py)
        from workloads.run.engines.masters import check_master_url

        check_master_url(args.master)
    backends = tuple(non_empty("--backend", joined(args.backend, "--backend"), args.backend)
                     or ("heap", "rocksdb"))
    strategies = non_empty("--strategy", joined(args.strategy, "--strategy"), args.strategy)
    sweep = None
    if getattr(args, "sweep", None) is not None:
        from workloads.run.sweep import SweepError, parse_sweep

        try:
            sweep = parse_sweep(args.sweep)
        except SweepError as exc:
            raise CliError(f"--sweep: {exc}") from None
        base = tuple(strategies or ("none",))
        strategies = [*base, *(label for label in sweep.labels if label not in base)]
    return RunConfig(
        spec=spec,
        backends=backends,
        strategies=tuple(strategies) if strategies else None,
        sweep=sweep,
        parallelism=args.parallelism,
        source_partitions=args.source_partitions,
        repetitions=args.repetitions,
        sample_interval_ms=args.sample_interval_ms,
        warmup_fraction=args.warmup,
        time_speedup=args.time_speedup,
        measure_latency=not args.no_latency,
        checkpoint_root=checkpoint_root,
        batch_size=args.batch_size,
        fail_task_once=args.fail_task_once,
    )


def argv_estimate(run_argv: Sequence[str], results_dir: str) -> Estimate:
    """The estimate of ``statebench run_argv`` (``["run", SPEC, ...]``) as this code plans it,
    parsed by this command's own parser (``ab`` and ``diff --rerun`` estimate the runs of their
    rounds before any of them starts); CliError or the planner's error when it cannot."""
    parser = argparse.ArgumentParser(prog="statebench", add_help=False)
    commands = parser.add_subparsers(dest="command")
    add_parser(commands)

    def refuse(message: str) -> NoReturn:
        raise CliError(message)

    for sub in (parser, *commands.choices.values()):
        sub.error = refuse  # type: ignore[method-assign]
    args = parser.parse_args(list(run_argv))
    from workloads.run.estimate import estimate

    return estimate([build_config(args, None)], args.in_process, args.master, results_dir)


def refuse_long_schedule(cfg: RunConfig) -> None:
    """A generated run's checkpoints and samples are planned up front (every barrier at once):
    their number is bounded by ``workloads.limits`` and checked before any event is made (a
    trace's, once its rows are read: ``workloads.run.engines.schedule``, and before the
    estimate where its footer states its span: :func:`refuse_long_trace`)."""
    from workloads.run.config import default_sample_interval
    from workloads.run.plan import spec_time_frame

    frame = spec_time_frame(cfg.spec)
    if frame is None:
        return
    span = frame[1] - frame[0]
    checkpoints = cfg.spec.checkpoints.interval_ms  # the CLI always checkpoints (temp default)
    problem = limits.schedule_problem(span, checkpoints, None)
    if problem is not None:
        raise CliError(f"checkpoints.interval_ms = {checkpoints}: the run {problem} (in "
                       f"{cfg.spec.origin})")
    sample = cfg.sample_interval_ms or default_sample_interval(*frame)
    problem = limits.schedule_problem(span, None, sample)
    if problem is not None:
        raise CliError(f"--sample-interval-ms {sample}: the run {problem}")
    problem = limits.paced_problem(span, cfg.speedup) if paces(cfg) else None
    if problem is not None:  # a bound --allow-long does not lift
        raise CliError(f"the paced run of {cfg.spec.name} {problem}")


def refuse_long_trace(cfg: RunConfig) -> None:
    """The engine's schedule check of a trace (``workloads.run.engines.schedule``), made on the
    span its Parquet footer states, with the same words, before the estimate reads that span
    (nothing when it states none: the engine checks the rows)."""
    from workloads.generator import TraceError, total_events
    from workloads.run.config import default_sample_interval
    from workloads.run.estimate import trace_span_ms

    if cfg.spec.source.kind != "trace":
        return
    total_events(cfg.spec)  # a regular, bounded, well-formed trace first (never a FIFO)
    span = trace_span_ms(cfg.spec)
    if span is None:
        return
    sample = cfg.sample_interval_ms or default_sample_interval(0, span)
    problem = limits.schedule_problem(span, cfg.spec.checkpoints.interval_ms, sample)
    if problem is None and paces(cfg):
        problem = limits.paced_problem(span, cfg.speedup)
    if problem is not None:
        raise TraceError(f"trace {cfg.spec.source.path}: the run over its timestamps {problem}")


def paces(cfg: RunConfig) -> bool:
    """Whether a job of the run releases its records on the wall clock: every job of a
    ProcessingTime spec, and the jobs of the lanes that always pace (flink-sql, spark-tws:
    their TTL runs on processing time), under EventTime too (a 1.5-day EventTime
    spec on spark-tws took 36 hours, and no bound applied)."""
    from workloads.lanes import LANES

    runnable, _ = plan_scenarios(cfg)
    return cfg.clock == "paced" or any(LANES[s.backend].paces(cfg) for s in runnable)


def refuse_empty_run(*configs: RunConfig) -> None:
    """A run (or comparison) that would measure nothing is refused before any work, as its
    empty result would read as a measured one: a spec of which no row reaches the operator,
    or no applicable scenario at all (a comparison goes on while one spec has some: the
    others are listed not applicable, one rule for every lane)."""
    from workloads.operators.input import empty_input_problem

    for cfg in configs:
        problem = empty_input_problem(cfg.spec)
        if problem is not None:
            raise CliError(problem)
    planned = [(cfg, *plan_scenarios(cfg)) for cfg in configs]
    if not any(runnable for _, runnable, _ in planned):
        reasons = "; ".join(f"{cfg.spec.name} on {n.backend} {n.strategy}: {n.reason}"
                            if len(configs) > 1 else f"{n.backend} {n.strategy}: {n.reason}"
                            for cfg, _, skipped in planned for n in skipped)
        names = ", ".join(cfg.spec.name for cfg in configs)
        raise CliError(f"{names}: no scenario of the run is applicable, nothing would be "
                       f"measured ({reasons})".replace("\n", " "))


def preflight(args: argparse.Namespace, cfg: RunConfig) -> None:
    """Everything the run needs later, checked now (``workloads/cli/checks.py``): the results
    folder and a free run id, the checkpoint target, a trace that can be read; and a warning
    when a scenario's state may not fit on the disk. One message naming the option, no work
    lost."""
    from workloads.cli import checks
    from workloads.generator import total_events
    from workloads.lanes import FLINK_SQL, LANES
    from workloads.results.store import RunExistsError, run_dir_free

    refuse_overlap(args.results_dir, args.checkpoint_dir)  # before either folder is made
    if args.checkpoint_dir is not None:
        checks.lane_checkpoint_target("--checkpoint-dir", args.checkpoint_dir, cfg.backends)
    refuse_long_schedule(cfg)
    if args.in_process:  # its whole input in memory: what does not fit, refused now
        from workloads.run.engines.inprocess import memory_problem

        problem = memory_problem(cfg)
        if problem is not None:
            raise CliError(problem)
    if any(LANES[b].engine == FLINK_SQL for b in cfg.backends):  # so are a SQL job's events
        from workloads.lanes.flink_sql_job import input_memory_problem
        from workloads.run.engines.inprocess import MEMORY_SHARE, available_memory

        problem = input_memory_problem(cfg.spec, int(available_memory() * MEMORY_SHARE))
        if problem is not None:
            raise CliError(problem)
    events = total_events(cfg.spec)  # a trace that is missing, unreadable, empty or of wrong
    # columns fails here, before any folder is made
    checks.writable_dir("--results-dir", args.results_dir)
    try:
        run_dir_free(args.results_dir, cfg.run_id)
    except RunExistsError as exc:
        raise CliError(f"--results-dir {args.results_dir}: {exc}") from None
    if args.checkpoint_dir is not None:
        checks.checkpoint_target("--checkpoint-dir", args.checkpoint_dir)
    warning = checks.disk_warning(cfg.spec, events, cfg.local_dir)
    if warning is not None:
        print(f"statebench: warning: {warning}", file=sys.stderr)


def run_command(args: argparse.Namespace) -> int:
    from workloads.cli.lifecycle import command_scope
    from workloads.run import run_tempdirs

    run_tempdirs.sweep([None, args.results_dir])  # folders of runs killed earlier (kill -9)
    cfg = build_config(args, args.checkpoint_dir)
    refuse_empty_run(cfg)
    preflight(args, cfg)
    from workloads.run.estimate import estimate

    refuse_long_trace(cfg)
    est = estimate([cfg], args.in_process, args.master, args.results_dir)
    announce(est, cfg.spec.name, getattr(args, "allow_long", False))  # or refused, in one line
    with command_scope(args.results_dir):  # no process or folder of the run outlives it
        return _run_checked(args, cfg, est.wall_s)


def _run_checked(args: argparse.Namespace, cfg: RunConfig, estimate_s: float | None = None,
                 ) -> int:
    from workloads.run import run_tempdirs

    checkpoints = (run_tempdirs.temp_dir("statebench-checkpoints-") if args.checkpoint_dir is None
                   else contextlib.nullcontext(args.checkpoint_dir))
    folder = RunFolder(cfg.run_id, args.results_dir)  # written as each job finishes
    try:
        with checkpoints as checkpoint_root:
            cfg = dataclasses.replace(cfg, checkpoint_root=checkpoint_root)
            runnable, _ = plan_scenarios(cfg)
            progress = Progress(len(runnable) * cfg.repetitions, cfg.spec.name,  # bar or lines
                                estimate_s=estimate_s)  # the ETA before a job has ended
            step, close = progress.step, progress.close
            try:
                engine = make_engine(args.in_process, args.master)
                if hasattr(engine, "on_progress"):  # an engine that sees inside its jobs
                    engine.on_progress = progress.within
                outcome = run(cfg, engine, on_job=step, on_result=folder.save)
            finally:
                close()
        run_dir = write_run(outcome, args.results_dir, folder)  # the whole run: complete
    except BaseException as exc:
        from workloads.cli.failures import say_stopped

        say_stopped(folder, exc, render=not args.no_report)  # jobs failed: the report too
        raise
    report = None if args.no_report else _render(run_dir)
    from workloads.cli.display import summary_table

    print(summary_table(outcome))
    print(f"\nresults: {run_dir}" + (f"\nreport:  {report}" if report else ""))
    return 0


def warn_incomplete(run_dir: Path, side: str = "") -> None:
    """One line when ``run_dir``'s run.json says the run did not finish: "incomplete run: N of
    M scenarios finished (...)"; its unfinished scenarios read "n/a (not run ...)" on the
    page (``workloads.report.load``), and only what finished is shown."""
    from workloads.report.load import read_meta
    from workloads.results.completion import incomplete_line

    line = incomplete_line(read_meta(run_dir))
    if line is not None:
        print(f"statebench: warning: {side}{run_dir}: {line}; only what finished is shown",
              file=sys.stderr)


def _render(run_dir: Path) -> Path | None:
    try:
        from workloads.report import render_report

        return render_report(run_dir)
    except Exception as exc:  # the results are written; a report problem must not lose them
        print(f"statebench: warning: report not rendered: {exc}", file=sys.stderr)
        return None


# ------------------------------------------------------------------------------------------------
# Summary table
# ------------------------------------------------------------------------------------------------


#: The summary table's columns: (header, metric, unit as ``workloads.report.fmt`` formats
#: it), each value from the shared ``workloads.results.summaries`` (the report's headline
#: numbers too).
COLUMNS = (
    ("records/s", "records_per_s", ""),
    ("p99 latency", "latency_p99_us", "us"),
    ("peak entries", STORED_ENTRIES, "entries"),
    ("ckpt bytes", "checkpoint_bytes", "bytes"),
)


def summarize(outcome: RunOutcome) -> list[dict[str, Any]]:
    """Per backend x strategy: the COLUMNS' headline numbers (median of repetitions, peak over
    logical time, median over checkpoints), NaN where not measured; n/a rows for skipped ones."""
    stats = summaries(outcome.rows)
    name = outcome.config.spec.name
    out = [
        {"backend": n.backend, "strategy": n.strategy, "not_applicable": n.reason}
        for n in outcome.not_applicable
    ]
    for key, metrics in stats.items():
        if key.workload != name:
            continue
        row: dict[str, Any] = {"backend": key.backend, "strategy": key.strategy,
                               "not_applicable": None}
        for _, metric, _ in COLUMNS:
            found = metrics.get(metric)
            row[metric] = found.center if found is not None else math.nan
        out.append(row)
    order = {b: i for i, b in enumerate(outcome.config.backends)}
    sorder = {s: i for i, s in enumerate(outcome.config.strategy_labels)}
    return sorted(out, key=lambda r: (order.get(r["backend"], 99), sorder.get(r["strategy"], 99)))


def _fmt(value: float, unit: str = "") -> str:
    """A summary cell as the report writes the number (a duration in us, ms or s: SI prefixes
    on a unit of time read "259.00 kus" and "2.79 Mus"); "-" when not measured."""
    from workloads.report.fmt import fmt_value

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt_value(float(value), unit).replace("\u00b5s", "us")  # ASCII on any terminal


