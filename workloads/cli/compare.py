"""`statebench compare` and `statebench report RUN_DIR` (`diff` lives in ``cli/diff.py``).

compare: the main job. Runs the default comparison matrix (statebench's heap and RocksDB
backends and Flink's own as reference lanes x every applicable cleanup strategy, on a
session-churn, a YCSB, a paced processing-time, a Nexmark join and a Nexmark dedup
workload, in Spark local[*]), writes results/<run-id>/ and renders its self-contained
report.html, after printing its estimate (wall time, disk; one beyond 6 hours or the free
disk is refused unless --allow-long). The folder is written as the comparison goes: one that
stops (Ctrl-C, SIGTERM, an error) keeps the jobs that finished, marked incomplete in run.json.
report: re-renders a run's report from its stored rows (and says so when the run is
incomplete).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workloads import limits
from workloads.cli.checks import bounded
from workloads.cli.long_runs import add_allow_long, announce
from workloads.cli.options import CliError, joined, positive, refuse_duplicates
from workloads.cli.progress import Progress
from workloads.results.store import DEFAULT_RESULTS_DIR


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from workloads.run.compare import DEFAULT_REPETITIONS, DEFAULT_SPECS

    p = subparsers.add_parser(
        "compare", help="compare cleanup strategies on both backends and write a report",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("specs", nargs="*", metavar="SPEC",
                   help=f"spec files or shipped names (default: {' '.join(DEFAULT_SPECS)})")
    p.add_argument("--backend", action="append", metavar="LIST",
                   help="backends, comma-separated (default: heap,rocksdb,flink-heap,"
                   "flink-rocksdb; Flink's lanes when the 'flink' extra and a JDK 17 are there)")
    p.add_argument("--strategy", action="append", metavar="LIST",
                   help="strategies, comma-separated (default: each spec's own list)")
    p.add_argument("--sweep", default=None, metavar="STRATEGY(KNOB=V1,V2,...)",
                   help="run one strategy at several values of one knob, beside the baseline "
                        "none, e.g. \"incremental(size=1,5,20,100)\"; knobs: incremental "
                        "size|per_record, compaction_filter query_time_after_num_entries|"
                        "periodic_compaction_ms, timer granularity_ms")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    p.add_argument("--in-process", action="store_true", help="run without Spark")
    p.add_argument("--events", type=bounded(limits.EVENTS),
                   help="events per workload (default: the spec's)")
    p.add_argument("--repetitions", type=bounded(limits.REPETITIONS), default=DEFAULT_REPETITIONS,
                   help=f"rounds: each runs every scenario once, a backend's strategies back "
                        f"to back in a shuffled order, paired round by round (default "
                        f"{DEFAULT_REPETITIONS})")
    p.add_argument("--parallelism", type=positive, default=2,
                   help="operator tasks (default 2)")
    p.add_argument("--results-dir", default=DEFAULT_RESULTS_DIR,
                   help=f"where the run folder goes (default {DEFAULT_RESULTS_DIR}/)")
    add_allow_long(p, "the comparison")
    p.set_defaults(handler=compare_command)

    r = subparsers.add_parser("report", help="re-render a run's report.html from its rows")
    r.add_argument("run_dir", metavar="RUN_DIR")
    r.add_argument("-o", "--output", default=None, help="where to write (default RUN_DIR/)")
    r.set_defaults(handler=report_command)


def _run_dir(text: str) -> Path:
    """A complete run folder, else one line saying what is missing or wrong (RunFolderError)."""
    from workloads.cli.checks import run_folder_files
    from workloads.report.load import check_run_folder

    run_folder_files(text)
    return check_run_folder(text)


def compare_command(args: argparse.Namespace) -> int:
    from workloads.cli.checks import non_empty, writable_dir
    from workloads.cli.display import summary_table
    from workloads.cli.lifecycle import command_scope
    from workloads.cli.run import refuse_empty_run, refuse_long_schedule
    from workloads.report import render_report
    from workloads.results.store import RunExistsError, run_dir_free
    from workloads.run import run_tempdirs
    from workloads.run.compare import (
        ComparisonFolder,
        comparison_configs,
        default_backends,
        default_specs,
        load_specs,
        planned_jobs,
        run_comparison,
        write_comparison,
    )

    if args.in_process and args.master:  # the master was silently ignored
        raise CliError("--in-process and --master exclude each other")
    if args.master is not None:  # before any work or JVM (workloads/run/engines/masters.py)
        from workloads.run.engines.masters import check_master_url

        check_master_url(args.master)
    run_tempdirs.sweep([None, args.results_dir])  # folders of runs killed earlier (kill -9)
    refuse_duplicates("SPEC", list(args.specs))
    specs = load_specs(args.specs, args.events) if args.specs else default_specs(args.events)
    backends = tuple(non_empty("--backend", joined(args.backend, "--backend"), args.backend)
                     or default_backends(lambda line: print(line, file=sys.stderr)))
    strategies = non_empty("--strategy", joined(args.strategy, "--strategy"), args.strategy)
    sweep = None
    if args.sweep is not None:
        from workloads.run.sweep import SweepError, parse_sweep

        try:
            sweep = parse_sweep(args.sweep)
        except SweepError as exc:
            raise CliError(f"--sweep: {exc}") from None
    configs = comparison_configs(
        specs, backends=backends, strategies=tuple(strategies) if strategies else None,
        repetitions=args.repetitions, parallelism=args.parallelism, sweep=sweep)
    for config in configs:  # bounded checkpoints and samples, before any event is made
        refuse_long_schedule(config)
    refuse_empty_run(*configs)  # a comparison that would measure nothing
    writable_dir("--results-dir", args.results_dir)
    try:
        run_dir_free(args.results_dir, configs[0].run_id)
    except RunExistsError as exc:
        raise CliError(f"--results-dir {args.results_dir}: {exc}") from None
    from workloads.cli.run import refuse_long_trace
    from workloads.run.estimate import estimate

    for config in configs:  # a trace's span from its footer: the engine's words, first
        refuse_long_trace(config)
    est = estimate(configs, args.in_process, args.master, args.results_dir)
    announce(est, "compare", args.allow_long)  # always said; refused beyond the bound
    progress = Progress(planned_jobs(configs), "compare",  # a bar with ETA, or log lines
                        estimate_s=est.wall_s)
    step, close = progress.step, progress.close
    folder = ComparisonFolder(configs, args.results_dir)  # written as each job finishes
    with command_scope(args.results_dir):  # no process or folder of the run outlives it
        try:
            try:
                outcomes = run_comparison(configs, master=args.master,
                                          in_process=args.in_process, on_job=step,
                                          on_result=folder.save)
            finally:
                close()
            run_dir = write_comparison(outcomes, args.results_dir, folder)  # complete
        except BaseException as exc:
            from workloads.cli.failures import say_stopped

            say_stopped(folder.folder, exc)  # jobs failed: the report too
            raise
        report = render_report(run_dir)
    for outcome in outcomes:
        print(f"\n{outcome.config.spec.name}")
        print(summary_table(outcome))
    print(f"\nresults: {run_dir}\nreport:  {report}")
    return 0


def report_command(args: argparse.Namespace) -> int:
    from workloads.cli.checks import writable_file
    from workloads.cli.diff import refuse_clobber
    from workloads.cli.run import warn_incomplete
    from workloads.report import render_report

    run_dir = _run_dir(args.run_dir)
    refuse_clobber("-o", args.output, [run_dir])
    output = writable_file("-o", args.output) if args.output is not None else None
    out = render_report(run_dir, output)
    warn_incomplete(run_dir)
    print(out)
    return 0
