"""The one loop of a run: every runnable scenario once per round, one job each on an Engine.

A run is a number of rounds (``RunConfig.repetitions``): in round r every scenario runs once,
each backend's strategies back to back in a seeded shuffled order (:func:`job_order`), and
repetition r of every row is round r, so a decision can pair strategies round by round. A
comparison first runs one unmeasured warm-up round on the lanes whose kept process speeds up
over its first jobs (:func:`keeps_state`).

An engine is where a job's tasks execute. It prepares the keyed data once per run (and learns
the :class:`~workloads.run.plan.DataFacts`: events per task, the logical time frame), runs one
job (one scenario x repetition) and hands back that job's metric rows, and releases what it
holds. Planning, job totals, ``job_records_per_s``, progress callbacks and the outcome are the
same for every engine, so they live here, once:

* :class:`workloads.run.engines.inprocess.InProcessEngine`: the tasks one after the other in
  this process (fast tests, asv, the per-core baseline);
* :class:`workloads.run.engines.spark.SparkEngine`: one Spark job per scenario x repetition,
  one Spark task per operator task.

Two seams keep new lanes small. An engine decides only *where* tasks run and how their input
batches reach them; *what* runs is the lane's (``workloads.lanes``), independent of the engine.
A task lane (statebench's backends, Flink's keyed backends in a JVM worker per task) makes each
task's ``TaskOperator`` (``process(batch)``, ``finish() -> rows``, ``close()``), which both
engines above drive unchanged; a job lane (a real Flink SQL job, a Spark streaming query) reads
its own source and runs a whole scenario x repetition here, whatever the engine. A different way
of running tasks (a cluster of JVMs of its own) would be a new ``Engine``, driven by this loop.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pyarrow as pa

from workloads.errors import JobsFailed, LaneJobError, note_failures
from workloads.lanes import LANES
from workloads.run import run_tempdirs
from workloads.run.config import OperatorConfig
from workloads.run.job_errors import job_failure
from workloads.run.metrics import (
    METRIC_SCHEMA,
    attempts,
    finalize_rows,
    job_rows,
    not_applicable_rows,
)
from workloads.run.plan import (
    Completion,
    DataFacts,
    RunConfig,
    RunOutcome,
    Scenario,
    operator_config,
    plan_scenarios,
    spec_time_frame,
)

JobCallback = Callable[[Scenario, int], None]
#: ``on_result(outcome)``: what finished so far, after each measured job and once more when the
#: run stops early (``outcome.completion`` says how far it got and how it stopped)
ResultCallback = Callable[[RunOutcome], None]


class Engine(Protocol):
    """Where a run's tasks execute (see the module docstring)."""

    @property
    def name(self) -> str:
        """What run.json records as the engine: "in-process" or the Spark master URL."""
        ...

    def prepare(self, cfg: RunConfig) -> DataFacts:
        """Make the run's keyed events ready for every job and say what they hold."""
        ...

    def run_tasks(self, op_cfg: OperatorConfig) -> pa.Table:
        """Run one scenario x repetition over every task; its rows (METRIC_SCHEMA), per task."""
        ...

    def release(self) -> None:
        """Free what :meth:`prepare` holds (cached data); called once, also after a failure."""
        ...


#: The repetition index of a warm-up job (its rows are dropped; series are off, as in every
#: round after the first).
WARMUP_ROUND = -1


def keeps_state(backend: str) -> bool:
    """Whether a backend's jobs run in a process kept from one job to the next whose speed
    depends on what it ran before (its lane's ``keeps_state``): Flink's keyed lanes keep a JVM
    per Python worker (``workloads.lanes.flink_workers``), and a kept JVM's JIT goes on
    compiling over its first tasks. statebench's own backends run Python, which compiles
    nothing as it runs, and a flink-sql scenario starts a Flink job of its own."""
    return LANES[backend].keeps_state


def round_order(scenarios: Sequence[Any], seed: int, round_index: int | str) -> list[Any]:
    """One round's scenarios in the order they run: each backend's scenarios back to back, the
    backends' blocks in a shuffled order, and the strategies inside a block shuffled. Seeded by
    the run's seed and the round, so the order is random against the strategies yet the same for
    the same run (run.json records it).

    Why a backend's strategies stay together: the decision pairs round r of strategy X with round
    r of strategy Y on the same backend, and the closer in time they ran, the more of the
    machine's drift they share. Why shuffled: a fixed order gives one strategy the same place
    every round (always first after another backend's block, or always last), and a position's
    effect would then read as the strategy's.
    """
    rng = random.Random(f"statebench-round:{seed}:{round_index}")
    blocks: dict[str, list[Any]] = {}
    for scenario in scenarios:
        blocks.setdefault(scenario.backend, []).append(scenario)
    backends_order = list(blocks)
    rng.shuffle(backends_order)
    order: list[Any] = []
    for backend in backends_order:
        block = list(blocks[backend])
        rng.shuffle(block)
        order.extend(block)
    return order


def job_order(scenarios: Sequence[Any], rounds: int, seed: int,
              warm_up: bool = True) -> list[tuple[int, Any]]:
    """(round, scenario) in the order the jobs run: first, when ``warm_up`` and a scenario's
    backend :func:`keeps_state`, one unmeasured warm-up round (round :data:`WARMUP_ROUND`) of
    those scenarios; then ``rounds`` measured rounds, each every scenario once in its
    :func:`round_order`. The round is the repetition index of every row a job writes, so
    repetition r of two strategies of one backend ran in the same round, back to back.

    Why the warm-up: a JVM's JIT keeps speeding up a Flink lane over its first tasks even after
    its synthetic warm-up stream (``flink_task._warm_up``): whichever strategy runs first on a
    fresh JVM comes out slower than the next (docs/measurements.md, "A kept JVM's first jobs").
    A shuffled order spreads that over strategies, but leaves it in round 0, where it reads as
    drift that hits one strategy of the round.
    """
    warm = [s for s in scenarios if keeps_state(s.backend)] if warm_up else []
    jobs = [(WARMUP_ROUND, s) for s in round_order(warm, seed, "warm-up")]
    for r in range(rounds):
        jobs.extend((r, s) for s in round_order(scenarios, seed, r))
    return jobs


def rounds_record(jobs: Sequence[tuple[int, Any]], rounds: int, seed: int,
                  warm_seconds: dict[str, float]) -> dict[str, Any]:
    """What run.json says about the rounds: how many, the seed of their order, every round's
    order (``backend/strategy`` labels) and the warm-up (its order and its jobs' seconds)."""
    orders: list[list[str]] = [[] for _ in range(rounds)]
    warm: list[str] = []
    for r, scenario in jobs:
        label = f"{scenario.backend}/{scenario.strategy}"
        (warm if r == WARMUP_ROUND else orders[r]).append(label)
    return {
        "count": rounds,
        "order_seed": seed,
        "orders": orders,
        "warm_up": bool(warm),
        "warm_up_order": warm,
        "warm_up_job_seconds": {k: round(v, 3) for k, v in warm_seconds.items()},
        "warm_up_seconds": round(sum(warm_seconds.values()), 3),
    }


#: How long an error may be in run.json's ``progress.error`` (its first line, cut here).
MAX_ERROR_CHARS = 500


def stop_reason(exc: BaseException) -> tuple[str, str]:
    """How a run that raised ``exc`` stopped, as :class:`Completion` says it: ("interrupted",
    "") for SIGINT, ("terminated", "") for SIGTERM, also when the signal broke off a Spark job
    whose error then replaced it (the ``__context__`` chain is searched, as the CLI's
    ``lifecycle.signal_cause`` does), ("ended", "") for :class:`JobsFailed` (the run went
    through; its failed jobs are listed apart), else ("failed", the error's type and first
    line)."""
    if isinstance(exc, JobsFailed):
        return "ended", ""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return "interrupted", ""
        if isinstance(current, run_tempdirs.Terminated):
            return "terminated", ""
        seen.add(id(current))
        current = current.__context__
    lines = str(exc).strip().splitlines()
    error = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return "failed", error[:MAX_ERROR_CHARS]


def completion(cfg: RunConfig, done: dict[tuple[str, str], int] | int,
               stopped: str = "running", error: str = "",
               failures: Sequence[LaneJobError] = ()) -> Completion:
    """How far ``cfg``'s run got: ``done`` is the measured rounds each (backend, strategy)
    finished, or one number for every runnable scenario (0: a run not started); ``failures``
    the jobs that failed in their engine."""
    runnable, _ = plan_scenarios(cfg)
    count = (lambda s: done) if isinstance(done, int) else (
        lambda s: done.get((s.backend, s.strategy), 0))
    return Completion(cfg.repetitions, tuple((s.backend, s.strategy, count(s)) for s in runnable),
                      stopped, error,
                      tuple((f.backend, f.strategy, f.round, f.message) for f in failures))


def run(cfg: RunConfig, engine: Engine, on_job: JobCallback | None = None,
        on_result: ResultCallback | None = None) -> RunOutcome:
    """Run ``cfg`` on ``engine``: its warm-up jobs, then every applicable scenario once per
    round (:func:`job_order`), one job each; the warm-up jobs' rows are dropped.

    ``on_job(scenario, round)`` is called after each job, warm-up jobs included (progress bars;
    :func:`planned_jobs` counts them).

    ``on_result(outcome)`` (a run folder written as the run goes:
    ``workloads.results.store.RunFolder.save``) is called after each measured job with what
    finished so far, and once more, whatever stopped the run (SIGINT, SIGTERM, an error in a
    later job), before the exception leaves: ``outcome.completion`` says how far the run got
    and how it stopped, and its rows are the finished jobs', each job's finalized on its own
    (so a snapshot costs one job's finalizing, not the whole run's). The complete outcome is
    not passed: it is what ``run`` returns, its rows finalized together as always.

    A job that fails in its engine (``workloads.run.job_errors``: not a signal, not a usage or
    environment error, which stop the run as before) does not stop the run: it is recorded as
    a :class:`~workloads.errors.LaneJobError`, its scenario's later rounds are skipped
    (``on_job`` is still called for them, so a progress bar ends full), and the other
    scenarios run. Why: one lane's engine refusing one scenario must not cost the hour the
    other lanes' jobs took, nor the ones still to come. A run with failed jobs ends with
    :class:`~workloads.errors.JobsFailed` once every other job ran, carrying the failures and
    the outcome (incomplete, ``Completion.stopped`` "ended"), which ``on_result`` got too."""
    started = time.perf_counter()
    runnable, skipped = plan_scenarios(cfg)
    parts: list[pa.Table] = []
    job_seconds: dict[str, list[float]] = {}
    warm_seconds: dict[str, float] = {}
    jobs = job_order(runnable, cfg.repetitions, cfg.spec.seed, cfg.warm_up)
    skipped_rows = not_applicable_rows(cfg.run_id, cfg.spec.name,
                                       [(n.backend, n.strategy) for n in skipped])
    measured: list[pa.Table] = []  # each finished measured job's raw rows
    finished: list[pa.Table] = []  # the same, finalized as far as so_far got (one job a call)
    retried: dict[str, int] = {}
    done: dict[tuple[str, str], int] = {}
    failures: list[LaneJobError] = []
    given_up: set[tuple[str, str]] = set()  # scenarios whose later rounds are skipped
    facts: DataFacts | None = None

    def so_far(stopped: str, error: str = "") -> RunOutcome:
        """The outcome of the jobs that finished, marked incomplete."""
        for raw in measured[len(finished):]:
            finished.append(finalize_rows(raw))
            for label, n in attempts(raw).items():
                retried[label] = retried.get(label, 0) + n
        return RunOutcome(
            config=cfg,
            rows=pa.concat_tables([*finished, skipped_rows.cast(METRIC_SCHEMA)]),
            not_applicable=skipped,
            facts=facts or DataFacts((), *(spec_time_frame(cfg.spec) or (0, 0))),
            engine=engine.name,
            duration_s=time.perf_counter() - started,
            retried_attempts={k: v for k, v in retried.items() if v},
            job_seconds={k: list(v) for k, v in job_seconds.items()},
            rounds=rounds_record(jobs, cfg.repetitions, cfg.spec.seed, warm_seconds),
            completion=completion(cfg, done, stopped, error, failures),
        )

    try:
        facts = engine.prepare(cfg)
        for rep, scenario in jobs:
            key = (scenario.backend, scenario.strategy)
            if key in given_up:  # failed in an earlier round: not run again
                if on_job is not None:
                    on_job(scenario, rep)
                continue
            op_cfg = operator_config(cfg, scenario, rep, facts)
            t0 = time.perf_counter()
            lane = LANES[scenario.backend]
            try:
                if lane.runs_tasks:  # the engine feeds its tasks
                    rows = engine.run_tasks(op_cfg)
                else:  # a whole job of its own (a Flink SQL job, a Spark query), on any engine
                    rows = lane.run_job(cfg, op_cfg, facts)
            except Exception as exc:
                failure = job_failure(exc, *key, cfg.spec.name, rep)
                if failure is None:  # a signal, a usage or environment error: the run stops
                    raise
                failures.append(failure)
                given_up.add(key)
                if on_result is not None:  # the failure is in the folder as the run goes on
                    on_result(so_far("running"))
                if on_job is not None:
                    on_job(scenario, rep)
                continue
            seconds = time.perf_counter() - t0
            if rep == WARMUP_ROUND:  # unmeasured: only its cost is kept
                warm_seconds[op_cfg.scenario.label] = seconds
            else:
                parts.append(rows)
                job_seconds.setdefault(op_cfg.scenario.label, []).append(seconds)
                parts.append(job_rows(op_cfg.scenario, rep, facts.events, seconds))
                done[key] = done.get(key, 0) + 1
                measured.append(pa.concat_tables(parts[-2:]))
                if on_result is not None:  # this job's rows, kept as it ends
                    on_result(so_far("running"))
            if on_job is not None:
                on_job(scenario, rep)
        if failures:  # every other job ran: what did, and what failed
            raise JobsFailed(failures, [so_far("ended")])
    except BaseException as exc:
        note_failures(exc, failures)  # a run stopped after jobs failed: the CLI says them too
        if on_result is not None:  # what finished, marked with how the run stopped
            try:
                on_result(exc.outcomes[0] if isinstance(exc, JobsFailed)
                          else so_far(*stop_reason(exc)))
            except Exception as failed:  # the first error is the one to report
                exc.add_note(f"the finished jobs' results could not be written: {failed}")
        raise
    finally:
        engine.release()
        for kind in cfg.backends:
            LANES[kind].release()
    parts.append(skipped_rows)
    raw = pa.concat_tables(parts)
    return RunOutcome(
        config=cfg,
        rows=finalize_rows(raw),
        not_applicable=skipped,
        facts=facts,
        engine=engine.name,
        duration_s=time.perf_counter() - started,
        retried_attempts={k: v for k, v in attempts(raw).items() if v},
        job_seconds=job_seconds,
        rounds=rounds_record(jobs, cfg.repetitions, cfg.spec.seed, warm_seconds),
    )


def planned_jobs(cfg: RunConfig) -> int:
    """The jobs :func:`run` runs for ``cfg``, warm-up jobs included (progress bars)."""
    runnable, _ = plan_scenarios(cfg)
    return len(job_order(runnable, cfg.repetitions, cfg.spec.seed, cfg.warm_up))
