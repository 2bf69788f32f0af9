"""``statebench run SPEC``: run one workload over backends x strategies and write the results.

Runs inside Spark (default master ``local[*]``, any cluster with ``--master``) or in this
process (``--in-process``), writes ``<results-dir>/<run-id>/rows.parquet`` and ``run.json``,
renders ``report.html`` next to them, and prints a summary table.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

from workloads.results.store import DEFAULT_RESULTS_DIR, write_run
from workloads.run.plan import RunConfig, RunOutcome, Scenario, plan_scenarios
from workloads.spec import load_spec


def split_list(text: str) -> list[str]:
    """Split a comma-separated list, keeping commas inside parentheses:
    ``"none,incremental(5, false)"`` -> ``["none", "incremental(5, false)"]``."""
    items, depth, current = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    items.append("".join(current).strip())
    return [i for i in items if i]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


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
    p.add_argument("--events", type=_positive, help="override the spec's number of events")
    p.add_argument("--parallelism", type=_positive, default=2,
                   help="operator tasks (key-group ranges) (default 2)")
    p.add_argument("--source-partitions", type=_positive,
                   help="generator partitions (default: = parallelism)")
    p.add_argument("--repetitions", type=_positive, default=1,
                   help="repeat each scenario; summary metrics per repetition (default 1)")
    p.add_argument("--results-dir", default=DEFAULT_RESULTS_DIR,
                   help=f"where run folders go (default {DEFAULT_RESULTS_DIR}/)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="shared checkpoint folder or URI, kept after the run "
                        "(default: a temporary folder, removed)")
    p.add_argument("--sample-interval-ms", type=_positive,
                   help="logical ms between state samples (default: run length / 10)")
    p.add_argument("--warmup", type=float, default=0.1,
                   help="fraction of each task's records excluded from throughput (default 0.1)")
    p.add_argument("--time-speedup", type=float, default=1.0,
                   help="ScaledClock speedup of wall-clock (compaction_filter) scenarios")
    p.add_argument("--batch-size", type=_positive, default=65536, help="Arrow batch rows")
    p.add_argument("--no-latency", action="store_true", help="do not time each record")
    p.add_argument("--no-report", action="store_true", help="do not render report.html")
    p.add_argument("--fail-task-once", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=run_command)


def _joined(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [item for value in values for item in split_list(value)]


def build_config(args: argparse.Namespace, checkpoint_root: str | None) -> RunConfig:
    from workloads.cli import CliError

    spec = load_spec(args.spec)
    if args.events is not None:
        spec = spec.with_overrides(events=args.events)
    if args.in_process and args.master:
        raise CliError("--in-process and --master exclude each other")
    backends = tuple(_joined(args.backend) or ("heap", "rocksdb"))
    strategies = _joined(args.strategy)
    return RunConfig(
        spec=spec,
        backends=backends,
        strategies=tuple(strategies) if strategies else None,
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


def _progress(total: int, desc: str) -> tuple[Callable[[Scenario, int], None], Callable[[], None]]:
    """The runner's job callback and a closer: a bar with ETA, or log lines (cli/progress.py)."""
    from workloads.cli.progress import Progress

    progress = Progress(total, desc)
    return progress.step, progress.close


def run_command(args: argparse.Namespace) -> int:
    temp_ckpt = None
    checkpoint_root = args.checkpoint_dir
    if checkpoint_root is None:
        temp_ckpt = checkpoint_root = tempfile.mkdtemp(prefix="statebench-checkpoints-")
    try:
        cfg = build_config(args, checkpoint_root)
        runnable, _ = plan_scenarios(cfg)
        step, close = _progress(len(runnable) * cfg.repetitions, cfg.spec.name)
        try:
            if args.in_process:
                from workloads.run.engines.inprocess import run_in_process

                outcome = run_in_process(cfg, on_job=step)
            else:
                from workloads.run.engines.spark import run_spark

                outcome = run_spark(cfg, master=args.master, on_job=step)
        finally:
            close()
    finally:
        if temp_ckpt is not None:
            shutil.rmtree(temp_ckpt, ignore_errors=True)
    run_dir = write_run(outcome, args.results_dir)
    report = None if args.no_report else _render(run_dir)
    print(summary_table(outcome))
    print(f"\nresults: {run_dir}" + (f"\nreport:  {report}" if report else ""))
    return 0


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


def summarize(outcome: RunOutcome) -> list[dict[str, Any]]:
    """Per backend x strategy: records/s and p99 (median over repetitions), peak stored entries
    (live + expired-but-present), bytes of the last checkpoint; n/a rows for skipped ones."""
    values: dict[tuple[str, str], dict[str, dict[int, float]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    ckpt_last: dict[tuple[str, str], tuple[int, float]] = {}
    rows = outcome.rows
    cols = [rows.column(n).to_pylist() for n in ("backend", "strategy", "task", "step", "metric",
                                                  "value")]
    for backend, strategy, task, step, metric, value in zip(*cols):
        if task != -1:
            continue
        key = (backend, strategy)
        if metric == "checkpoint_bytes":
            if key not in ckpt_last or step > ckpt_last[key][0]:
                ckpt_last[key] = (step, value)
        else:
            values[key][metric][step] = value
    out = []
    for n in outcome.not_applicable:
        values.setdefault((n.backend, n.strategy), {})
    for (backend, strategy), metrics in values.items():
        na = next((n for n in outcome.not_applicable
                   if (n.backend, n.strategy) == (backend, strategy)), None)
        stored = [metrics.get("live_entries", {}).get(s, 0.0)
                  + metrics.get("expired_present_entries", {}).get(s, 0.0)
                  for s in metrics.get("live_entries", {})]
        out.append({
            "backend": backend,
            "strategy": strategy,
            "not_applicable": na.reason if na else None,
            "records_per_s": _median(metrics.get("records_per_s")),
            "latency_p99_us": _median(metrics.get("latency_p99_us")),
            "peak_entries": max(stored) if stored else math.nan,
            "checkpoint_bytes": ckpt_last.get((backend, strategy), (0, math.nan))[1],
        })
    order = {b: i for i, b in enumerate(outcome.config.backends)}
    sorder = {s: i for i, s in enumerate(outcome.config.strategy_labels)}
    return sorted(out, key=lambda r: (order.get(r["backend"], 99), sorder.get(r["strategy"], 99)))


def _median(by_step: dict[int, float] | None) -> float:
    return median(by_step.values()) if by_step else math.nan


def _fmt(value: float, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= div:
            return f"{value / div:.2f} {suffix}{unit}".rstrip()
    return f"{value:.3g} {unit}".rstrip() if isinstance(value, float) else f"{value} {unit}"


def summary_table(outcome: RunOutcome) -> str:
    header = ("backend", "strategy", "records/s", "p99 latency", "peak entries", "ckpt bytes")
    lines = [header]
    for r in summarize(outcome):
        if r["not_applicable"]:
            lines.append((r["backend"], r["strategy"], "not applicable", "", "", ""))
            continue
        lines.append((
            r["backend"], r["strategy"], _fmt(r["records_per_s"]),
            _fmt(r["latency_p99_us"], "us"), _fmt(r["peak_entries"]),
            _fmt(r["checkpoint_bytes"], "B"),
        ))
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(header))]
    title = (f"{outcome.config.spec.name}: {outcome.facts.events} events, "
             f"{outcome.engine}, parallelism {outcome.config.parallelism}")
    body = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in lines]
    body.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join([title, *body])
