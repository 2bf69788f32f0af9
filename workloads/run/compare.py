"""The strategy comparison: several workloads x both backends x every applicable strategy, as
one run folder with one report (what `statebench compare` runs).

Each workload is one RunConfig run on the Spark (or in-process) engine with a shared run id and
one SparkSession; their rows are concatenated (the `workload` column tells them apart) and
run.json lists every spec, each workload's configuration, and every not-applicable
(workload, backend, strategy) with its reason. The folder is written as the comparison goes
(:class:`ComparisonFolder`): a comparison that stops keeps every job that finished, marked
incomplete (``workloads.results.completion``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from workloads.errors import JobsFailed, LaneJobError, note_failures
from workloads.results.completion import progress_record
from workloads.results.store import DEFAULT_RESULTS_DIR, RunFolder, run_metadata
from workloads.run import checkpoints as ck
from workloads.run import run_tempdirs
from workloads.run.engines import make_engine
from workloads.run.metrics import METRIC_SCHEMA
from workloads.run.plan import Completion, PlanError, RunConfig, RunOutcome, new_run_id
from workloads.run.runner import JobCallback, completion, run
from workloads.run.runner import planned_jobs as runner_planned_jobs
from workloads.spec import WorkloadSpec, load_spec

#: The default matrix: a session-churn workload (keys expire for good), a YCSB one (hot keys),
#: both on event time, and sessions on a paced processing-time clock, where RocksDB's own TTL
#: compaction filter (wall clock) runs next to its baseline in the same ``ttl_db`` layout; then
#: two operator workloads: Nexmark q20's regular join and q18's deduplication, whose
#: ``ttl_changed_results`` shows what the TTL costs in results. A lane that cannot run an
#: operator kind has its scenarios listed as not applicable, with the reason (plan.py).
DEFAULT_SPECS = ("sessions-churn", "ycsb-a", "sessions-paced", "nexmark-q20-join",
                 "nexmark-q18-dedup")
#: Lighter jobs in the default comparison, so that its rounds fit in 8 minutes on a 2-core
#: machine (docs/guide.md, "Rounds"). Key-value workloads: half the shipped rate over the same
#: 10 s of event time (10 TTL periods, 2 checkpoints), so the TTL bounds the state as in the
#: shipped spec and every exact number stays exact under the logical clock. The paced workload
#: costs wall time, not events: 30 s of its clock (3 real seconds at 10x, 3 TTL periods, 2
#: checkpoints 12 s apart) instead of 100 s. The operator workloads: half the shipped rate over
#: the same 10 s (5 TTL periods, 2 checkpoints). ``--events`` or a SPEC argument runs the
#: shipped spec.
DEFAULT_OVERRIDES: dict[str, dict[str, int]] = {
    "sessions-churn": {"events": 125_000, "rate": 12_500},
    "ycsb-a": {"events": 100_000, "rate": 10_000},
    "sessions-paced": {"duration_ms": 30_000, "checkpoint_interval_ms": 12_000},
    "nexmark-q20-join": {"events": 100_000, "rate": 10_000},
    "nexmark-q18-dedup": {"events": 100_000, "rate": 10_000},
}
#: Rounds of the default comparison: every scenario once per round, paired round by round
#: (workloads/run/runner.py). Six paired rounds are the fewest whose exact signed-rank test can
#: reach p = 0.031 (2 / 2**6); drift cancels round by round, and what six rounds can separate
#: depends on each job's own noise (docs/guide.md, "Rounds"); eight take a third longer.
DEFAULT_REPETITIONS = 6
#: statebench's backends and Flink's own as reference lanes (the published comparison
#: is both, per strategy).
DEFAULT_BACKENDS = ("heap", "rocksdb", "flink-heap", "flink-rocksdb")


def default_backends(warn: Any = print) -> tuple[str, ...]:
    """The comparison's backends: with Flink's lanes when they can run here; otherwise
    statebench's own, after one line saying what to install (a user without the extra or a
    JDK still gets a comparison, and is told what it lacks)."""
    from backends.flink.errors import FlinkUnavailableError
    from backends.flink.lanes import check_available
    from workloads.lanes import runs_on_flink

    try:
        check_available()
    except FlinkUnavailableError as exc:
        warn(f"statebench: Flink's reference lanes are left out: {exc}")
        return tuple(b for b in DEFAULT_BACKENDS if not runs_on_flink(b))
    return DEFAULT_BACKENDS



def load_specs(names: Sequence[str], events: int | None = None) -> list[WorkloadSpec]:
    """Specs by path or shipped name, optionally scaled to `events` each."""
    specs = [load_spec(name) for name in names]
    if events is not None:
        specs = [s.with_overrides(events=events) for s in specs]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise PlanError(f"workload '{spec.name}' is given twice (two SPECs of one name)")
        seen.add(spec.name)
    return specs


def default_specs(events: int | None = None) -> list[WorkloadSpec]:
    """The default comparison's specs: ``DEFAULT_SPECS`` with ``DEFAULT_OVERRIDES`` applied,
    or every one scaled to ``events`` when given (as ``load_specs``)."""
    if events is not None:
        return load_specs(DEFAULT_SPECS, events)
    return [spec.with_overrides(**DEFAULT_OVERRIDES.get(spec.name, {}))
            if spec.name in DEFAULT_OVERRIDES else spec
            for spec in load_specs(DEFAULT_SPECS)]


def comparison_configs(specs: Sequence[WorkloadSpec], **options: Any) -> list[RunConfig]:
    """One RunConfig per workload, sharing a run id (and every other option).

    With ``sweep`` (a ``workloads.run.sweep.Sweep``) the strategies are the given ones (default
    ``none``, the baseline) followed by one scenario per knob value, labelled as the sweep
    labels them."""
    run_id = options.pop("run_id", None) or new_run_id()
    options.setdefault("warm_up", True)  # the Flink lanes' kept JVMs: runner.job_order
    sweep = options.get("sweep")
    if sweep is not None:
        base = tuple(options.get("strategies") or ("none",))
        options["strategies"] = base + tuple(s for s in sweep.labels if s not in base)
    return [RunConfig(spec=spec, run_id=run_id, **options) for spec in specs]


def planned_jobs(configs: Sequence[RunConfig]) -> int:
    """Every job the comparison runs, warm-up jobs included (the progress bar's total)."""
    return sum(runner_planned_jobs(c) for c in configs)


#: ``on_result(outcomes)``: every workload that finished, then what finished of the running one
#: (``RunOutcome.completion`` set), after each of its measured jobs and when it stops
ComparisonCallback = Callable[[list[RunOutcome]], None]


def run_comparison(
    configs: Sequence[RunConfig],
    master: str | None = None,
    in_process: bool = False,
    on_job: JobCallback | None = None,
    on_result: ComparisonCallback | None = None,
) -> list[RunOutcome]:
    """Run every workload's matrix on one engine (Spark runs share one session: ``master``, or
    local[*], or spark-submit's when launched by it). ``on_result`` (a
    :class:`ComparisonFolder`'s ``save``) sees what finished as the comparison goes.

    A workload whose jobs failed in their engine (``runner.run`` raised
    :class:`~workloads.errors.JobsFailed`) keeps what else it ran and the comparison goes on
    with the next workload; once every workload ran, the failures of all of them are raised
    as one :class:`JobsFailed` with every workload's outcome (after ``on_result`` saw them)."""
    engine = make_engine(in_process, master)
    outcomes: list[RunOutcome] = []
    failures: list[LaneJobError] = []
    checkpoint_base = run_tempdirs.make("statebench-compare-ckpt-")  # owner-tagged: swept if killed
    try:
        for cfg in configs:
            # a workload's name is untrusted: one safe path component (`../x` stays inside)
            cfg = replace(cfg, checkpoint_root=ck.join(checkpoint_base, ck.slug(cfg.spec.name)))
            sink = None if on_result is None else (
                lambda partial, before=tuple(outcomes): on_result([*before, partial]))
            try:
                outcomes.append(run(cfg, engine, on_job, sink))
            except JobsFailed as exc:  # the other workloads still run
                outcomes.extend(exc.outcomes)
                failures.extend(exc.failures)
    except BaseException as exc:  # stopped: the earlier workloads' failed jobs are said too
        note_failures(exc, failures)
        raise
    finally:
        run_tempdirs.remove(checkpoint_base)
    if failures:
        if on_result is not None:  # the comparison as it ended, every workload in it
            on_result(list(outcomes))
        raise JobsFailed(failures, outcomes)
    return outcomes


def comparison_metadata(outcomes: Sequence[RunOutcome],
                        configs: Sequence[RunConfig] = ()) -> dict[str, Any]:
    """run.json of a comparison: the first workload's document, widened to every workload.

    Complete when every outcome is and every one of ``configs`` (the comparison's workloads,
    when they are given) has one; else ``"complete": false`` and the ``progress`` of every
    workload: finished, stopped (how the run stopped is the stopped workload's: see
    :func:`how_stopped`) or not started."""
    metas = [run_metadata(o) for o in outcomes]
    meta = dict(metas[0])
    pending = list(configs[len(outcomes):])
    stopped = [o.completion for o in outcomes if o.completion is not None]
    if stopped or pending:
        parts = [(o.config.spec.name, o.completion or completion(o.config, o.config.repetitions))
                 for o in outcomes]
        parts += [(c.spec.name, completion(c, 0, "not started")) for c in pending]
        how = how_stopped(stopped, bool(pending)) or completion(configs[0], 0)
        meta["complete"] = False
        meta["progress"] = progress_record(parts, how.stopped, how.error)
    meta["spec"] = [m["spec"] for m in metas]
    meta["config"] = {
        "workloads": {o.config.spec.name: m["config"] for o, m in zip(outcomes, metas)},
        "backends": metas[0]["config"]["backends"],
        "strategies": sorted({s for m in metas for s in m["config"]["strategies"]}),
        "repetitions": metas[0]["config"]["repetitions"],
        "rounds": metas[0]["config"]["rounds"]["count"],
        "warm_up": any(m["config"]["rounds"]["warm_up"] for m in metas),
        "warm_up_seconds": round(sum(m["config"]["rounds"]["warm_up_seconds"] for m in metas),
                                 3),
        "master": metas[0]["config"]["master"],
        "kind": "comparison",
    }
    meta["not_applicable"] = [
        {**n.as_dict(), "workload": o.config.spec.name} for o in outcomes for n in o.not_applicable
    ]
    meta["duration_s"] = round(sum(o.duration_s for o in outcomes), 3)
    sweep = outcomes[0].config.sweep
    if sweep is not None:
        meta["sweep"] = sweep.as_dict()
    return meta


def how_stopped(stopped: Sequence[Completion], pending: bool) -> Completion | None:
    """How an incomplete comparison stopped, of its workloads' completions: a workload still
    running, or one that a signal or an error stopped, says it; workloads that ended with
    failed jobs (``"ended"``) say so only when nothing else runs or is still to run (the
    comparison goes on past them). None: no workload stopped and some are still to run."""
    for completion_ in stopped:
        if completion_.stopped not in ("ended", "not started"):
            return completion_
    if pending:
        return None
    return stopped[0] if stopped else None


class ComparisonFolder:
    """A comparison's run folder, written as it goes (``workloads.results.store.RunFolder``):
    :meth:`save` is :func:`run_comparison`'s ``on_result``, and writes every finished
    workload, the finished jobs of the running one, and the workloads not started yet as
    unfinished; a comparison stopped before any job finished leaves nothing."""

    def __init__(self, configs: Sequence[RunConfig],
                 results_dir: str | Path = DEFAULT_RESULTS_DIR) -> None:
        if not configs:
            raise ValueError("no workload to run")
        self.configs = list(configs)
        self.folder = RunFolder(configs[0].run_id, results_dir)

    def save(self, outcomes: Sequence[RunOutcome]) -> None:
        if self.folder.path is None and not any(
                o.completion is None or o.completion.jobs_finished for o in outcomes):
            return
        self.folder.write(_rows(outcomes), comparison_metadata(outcomes, self.configs))

    def kept(self) -> str | None:
        """What the folder kept of a comparison that stopped, and where (``RunFolder.kept``)."""
        return self.folder.kept()


def _rows(outcomes: Sequence[RunOutcome]) -> pa.Table:
    return pa.concat_tables([o.rows.cast(METRIC_SCHEMA) for o in outcomes])


def write_comparison(outcomes: Sequence[RunOutcome],
                     results_dir: str | Path = DEFAULT_RESULTS_DIR,
                     folder: ComparisonFolder | None = None) -> Path:
    """Write `<results_dir>/<run_id>/` with every workload's rows and one run.json; with
    ``folder`` (the :class:`ComparisonFolder` it was saved to as it went), replace what it
    holds."""
    if not outcomes:
        raise ValueError("no workload was run")
    target = folder.folder if folder is not None else RunFolder(outcomes[0].config.run_id,
                                                                 results_dir)
    configs = folder.configs if folder is not None else ()
    return target.write(_rows(outcomes), comparison_metadata(outcomes, configs))
