"""What a run does, decided on the driver before anything runs: scenarios, skipped strategies,
the logical time frame, and each job's OperatorConfig. The one loop (``workloads.run.runner``)
runs this plan on any engine, so in-process and Spark runs run exactly the same plan.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

import backends
from backends.keygroups import DEFAULT_MAX_PARALLELISM
from backends.rocksdb_options import TTL_DB
from backends.storage.registry import BACKEND_KINDS, STORAGE_BACKENDS
from backends.strategies import strategy_of_label
from workloads.generator import DEFAULT_BATCH_SIZE, Timeline
from workloads.lanes import LANES
from workloads.run.config import (
    STATE_NAMES,
    DataFacts,
    OperatorConfig,
    default_sample_interval,
    paced,
)
from workloads.run.planted import planted_cost
from workloads.spec import WorkloadSpec


class PlanError(ValueError):
    """A run configuration that cannot run (unknown backend or strategy, bad numbers)."""


def new_run_id() -> str:
    """A sortable UTC timestamp plus a short random suffix, e.g. ``20260101T120000Z-3f9a``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


@dataclass(frozen=True)
class RunConfig:
    """A run: one workload over backends x strategies, repeated, on one engine."""

    spec: WorkloadSpec
    backends: tuple[str, ...] = BACKEND_KINDS  # any of RUN_BACKENDS (workloads.lanes)
    strategies: tuple[str, ...] | None = None  # None: the spec's strategies
    parallelism: int = 2
    source_partitions: int | None = None  # generator partitions; None: = parallelism
    repetitions: int = 1  # rounds: repetition r of every scenario runs in round r
    sample_interval_ms: int | None = None  # None: the run's duration / 10
    warmup_fraction: float = 0.1
    time_speedup: float | None = None  # None: the spec's state.time_speedup, else 1
    measure_latency: bool = True
    checkpoint_root: str | None = None  # None: checkpoints off
    local_dir: str | None = None  # task-local RocksDB folders (None: the system temp dir)
    batch_size: int = DEFAULT_BATCH_SIZE
    max_parallelism: int = DEFAULT_MAX_PARALLELISM
    run_id: str = field(default_factory=new_run_id)
    fail_task_once: int | None = None  # Spark partition whose first attempt fails (tests)
    #: a knob sweep (``workloads.run.sweep.Sweep``): its labels may appear in ``strategies``
    sweep: Any = None
    #: one unmeasured round first for the backends whose kept process warms up (the Flink lanes:
    #: ``workloads.run.runner.keeps_state``); on in comparisons (``workloads.run.compare``)
    warm_up: bool = False
    #: ``rocksdb_options(self)``, worked out on its first use: it plans every scenario, which
    #: the run would otherwise do again for each RocksDB job (``operator_config``)
    _rocksdb_options: dict[str, Any] | None = field(
        default=None, init=False, repr=False, compare=False)
    #: ``plan_scenarios(self)``, worked out on its first use: the CLI, the estimate, the runner
    #: and the RocksDB options all ask for the one plan of a run
    _plan: tuple[tuple[Scenario, ...], tuple[NotApplicable, ...]] | None = field(
        default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.backends:
            raise PlanError("no backend given")
        for kind in self.backends:
            if kind not in LANES:
                raise PlanError(
                    f"unknown backend '{kind}'; expected one of {', '.join(LANES)}"
                )
        twice = next((k for i, k in enumerate(self.backends) if k in self.backends[:i]), None)
        if twice is not None:  # it would run, and count, every scenario of it twice
            raise PlanError(f"backend '{twice}' is given twice")
        if not 1 <= self.parallelism <= self.max_parallelism:
            raise PlanError(
                f"parallelism must be in 1..{self.max_parallelism}, got {self.parallelism}"
            )
        if self.source_partitions is not None and self.source_partitions < 1:
            raise PlanError(f"source partitions must be >= 1, got {self.source_partitions}")
        if self.repetitions < 1:
            raise PlanError(f"repetitions must be >= 1, got {self.repetitions}")
        if not 0 <= self.warmup_fraction < 1:
            raise PlanError(f"warm-up fraction must be in [0, 1), got {self.warmup_fraction}")
        if self.sample_interval_ms is not None and self.sample_interval_ms < 1:
            raise PlanError(f"sample interval must be >= 1 ms, got {self.sample_interval_ms}")
        if self.time_speedup is not None and not self.time_speedup > 0:
            raise PlanError(f"time speedup must be > 0, got {self.time_speedup}")
        if self.batch_size < 1:
            raise PlanError(f"batch size must be >= 1, got {self.batch_size}")
        if self.strategies is not None:
            if not self.strategies:
                raise PlanError("no strategy given")
            labels = []
            aliases = self.aliases
            for text in self.strategies:
                if text in aliases:  # a swept scenario keeps its label (e.g. incremental(size=5))
                    labels.append(text)
                    continue
                try:
                    labels.append(backends.parse_strategy(text).label)
                except ValueError as exc:
                    raise PlanError(str(exc)) from None
            fixed_ttl = [label for label in labels if self.ttl_sweep_of(label) is None
                         and not backends.parse_strategy(self.cleanup_of(label)).kind.ttl_free]
            if self.spec.state.ttl_ms is None and fixed_ttl:
                raise PlanError("cleanup strategies need a TTL; the spec has no state.ttl_ms")
            object.__setattr__(self, "strategies", tuple(dict.fromkeys(labels)))
        reasons = [LANES[k].spec_reason(self) for k in self.backends]
        if all(r is not None for r in reasons):  # nothing would run
            raise PlanError(str(reasons[0]))
        for kind in self.backends:  # each lane's own up-front checks, before any work
            problem = LANES[kind].check(self)
            if problem is not None:
                raise PlanError(problem)
        try:  # a test-only knob (workloads.run.planted); malformed: refused before any work
            planted_cost()
        except ValueError as exc:
            raise PlanError(str(exc)) from None

    @property
    def strategy_labels(self) -> tuple[str, ...]:
        """The run's strategies: those given, else the spec's and each lane's own (Spark's
        lanes expire state in Spark's terms: ``Lane.own_strategies``)."""
        if self.strategies is not None:
            return self.strategies
        own = [s for kind in self.backends for s in LANES[kind].own_strategies]
        if self.spec.state.ttl_ms is None:
            own = [s for s in own if backends.parse_strategy(s).kind.ttl_free]
        return tuple(dict.fromkeys((*self.spec.state.strategies, *own)))

    @property
    def aliases(self) -> dict[str, str]:
        """Swept strategy label -> the canonical strategy text it runs (empty without a sweep)."""
        return dict(self.sweep.strategies) if self.sweep is not None else {}

    def ttl_sweep_of(self, label: str) -> int | None:
        """The TTL a TTL sweep (``--sweep "ttl(ms=...)"``) gives scenario ``label``, if any."""
        return self.sweep.ttl_of(label) if self.sweep is not None else None

    def ttl_of(self, label: str) -> int | None:
        """Scenario ``label``'s ``state.ttl_ms``: its TTL sweep value, else the spec's."""
        swept = self.ttl_sweep_of(label)
        return swept if swept is not None else self.spec.state.ttl_ms

    def cleanup_of(self, label: str) -> str:
        """The strategy text a scenario's strategy label configures."""
        return self.aliases.get(label, label)

    @property
    def planned_rocksdb_options(self) -> dict[str, Any]:
        """The RocksDB options statebench's RocksDB scenarios run with (:func:`rocksdb_options`)."""
        return rocksdb_options(self)

    @property
    def partitions(self) -> int:
        return self.source_partitions or self.parallelism

    @property
    def speedup(self) -> float:
        """Clock ms per real ms of a paced (ProcessingTime) run: the option, the spec's, or 1."""
        if self.time_speedup is not None:
            return self.time_speedup
        return self.spec.state.time_speedup or 1.0

    @property
    def clock(self) -> str:
        """"paced" (ProcessingTime: one wall-driven ScaledClock every strategy shares) or
        "event" (EventTime: each record's timestamp, deterministic)."""
        return "paced" if paced(self.spec.state.time_characteristic) else "event"

    def describe(self) -> dict[str, Any]:
        """The JSON-able configuration recorded in run.json."""
        return {
            "backends": list(self.backends),
            "strategies": list(self.strategy_labels),
            "parallelism": self.parallelism,
            "source_partitions": self.partitions,
            "repetitions": self.repetitions,
            "warm_up": self.warm_up,
            "sample_interval_ms": self.sample_interval_ms,
            "warmup_fraction": self.warmup_fraction,
            "time_speedup": self.speedup,
            "clock": self.clock,
            "rocksdb": (rocksdb_options(self) if any(_takes_rocksdb_options(b)
                                                     for b in self.backends) else {}),
            **{key: value for found in LANES.values() if found.name in self.backends
               for key, value in found.engine_configuration(self).items()},
            "measure_latency": self.measure_latency,
            "checkpoints": "off" if self.checkpoint_root is None else "on",
            "batch_size": self.batch_size,
            "max_parallelism": self.max_parallelism,
            **({"sweep": self.sweep.as_dict()} if self.sweep is not None else {}),
            **({"planted_cost": planted.as_dict()} if (planted := planted_cost()) else {}),
        }


@dataclass(frozen=True)
class Scenario:
    backend: str
    strategy: str


@dataclass(frozen=True)
class NotApplicable:
    backend: str
    strategy: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"backend": self.backend, "strategy": self.strategy, "reason": self.reason}


def plan_scenarios(cfg: RunConfig) -> tuple[list[Scenario], list[NotApplicable]]:
    """Runnable scenarios (backend-major order) and the skipped ones with their reasons: each
    lane says whether it runs the spec at all, then each strategy (``workloads.lanes``).
    Planned once per RunConfig (it is frozen); each call gets lists of its own."""
    if cfg._plan is None:
        runnable, skipped = _plan(cfg)
        object.__setattr__(cfg, "_plan", (tuple(runnable), tuple(skipped)))
    assert cfg._plan is not None
    return list(cfg._plan[0]), list(cfg._plan[1])


def _plan(cfg: RunConfig) -> tuple[list[Scenario], list[NotApplicable]]:
    runnable: list[Scenario] = []
    skipped: list[NotApplicable] = []
    for kind in cfg.backends:
        lane = LANES[kind]
        spec_reason = lane.spec_reason(cfg)
        for label in cfg.strategy_labels:
            reason = spec_reason
            if reason is None:
                reason = lane.strategy_reason(cfg, label)
                note = cfg.sweep.scenario_note(label) if cfg.sweep is not None else None
                if reason is not None and note is not None and label not in reason:
                    reason = f"{note}: {reason}"  # the lane names the cleanup, not the label
            if reason is None:
                runnable.append(Scenario(kind, label))
            else:
                skipped.append(NotApplicable(kind, label, reason))
    return runnable, skipped


def rocksdb_options(cfg: RunConfig) -> dict[str, Any]:
    """The RocksDB options every RocksDB scenario of ``cfg`` runs with: the spec's [rocksdb]
    table, and ``state_layout = "ttl_db"`` when a runnable RocksDB scenario uses the compaction
    filter. Like for like: a compaction-filter state lives in a TTL-mode DB of its own, so its
    baselines must too, or they would differ from it in layout as well as in cleanup. Planned
    once per RunConfig (it is frozen), not again for every job."""
    options = cfg._rocksdb_options
    if options is None:
        options = dict(cfg.spec.rocksdb.options())
        runnable, _ = plan_scenarios(cfg)
        if any(_takes_rocksdb_options(s.backend) and _needs_compactions(s.strategy)
               for s in runnable):
            options["state_layout"] = TTL_DB
        object.__setattr__(cfg, "_rocksdb_options", options)
    return dict(options)


def _takes_rocksdb_options(backend: str) -> bool:
    """Whether ``backend`` is one of statebench's own backends reading the [rocksdb] table."""
    found = STORAGE_BACKENDS.get(backend)
    return found is not None and found.takes_rocksdb_options


def _needs_compactions(label: str) -> bool:
    """Whether scenario ``label``'s strategy runs inside a backend's compactions."""
    found = strategy_of_label(label)
    return found is not None and found.cleans_in_compactions


def state_types_of(spec: WorkloadSpec) -> tuple[str, ...]:
    """States the ops need (all five for a trace, whose ops are only known while reading)."""
    if spec.operations is None:
        return STATE_NAMES
    used = {op.state_type.value for op, p in spec.operations if p > 0}
    return tuple(name for name in STATE_NAMES if name in used)


def spec_time_frame(spec: WorkloadSpec) -> tuple[int, int] | None:
    """[start, end) of the run's event time for generated specs (None for traces)."""
    if spec.time is None:
        return None
    timeline = Timeline(spec.time)
    return timeline.start_ms, timeline.start_ms + timeline.duration_ms


def operator_config(
    cfg: RunConfig, scenario: Scenario, repetition: int, facts: DataFacts
) -> OperatorConfig:
    spec = cfg.spec
    st = spec.state
    sample = cfg.sample_interval_ms or default_sample_interval(facts.start_ms, facts.end_ms)
    return OperatorConfig(
        run_id=cfg.run_id,
        workload=spec.name,
        backend=scenario.backend,
        strategy=scenario.strategy,
        cleanup=LANES[scenario.backend].cleanup_of(cfg, scenario.strategy),
        value_type=spec.values.type,
        state_types=state_types_of(spec),
        ttl_ms=cfg.ttl_of(scenario.strategy),
        update_type=st.update_type,
        visibility=st.visibility,
        time_characteristic=st.time_characteristic,
        start_ms=facts.start_ms,
        end_ms=facts.end_ms,
        sample_interval_ms=sample,
        checkpoint_interval_ms=spec.checkpoints.interval_ms,
        checkpoint_mode=spec.checkpoints.mode,
        checkpoint_max_in_flight=spec.checkpoints.max_in_flight,
        checkpoint_root=cfg.checkpoint_root,
        parallelism=cfg.parallelism,
        max_parallelism=cfg.max_parallelism,
        task_counts=facts.task_counts,
        warmup_fraction=cfg.warmup_fraction,
        repetition=repetition,
        emit_series=repetition == 0,
        measure_latency=cfg.measure_latency,
        time_speedup=cfg.speedup,
        rocksdb_options=LANES[scenario.backend].rocksdb_options(cfg),
        local_dir=cfg.local_dir,
        operator=spec.operator,
        out_of_orderness_ms=spec.time.max_out_of_orderness_ms if spec.time is not None else 0,
    )


@dataclass(frozen=True)
class Completion:
    """How far a run that did not finish got: the measured rounds each runnable scenario
    finished (``done``: (backend, strategy, rounds finished), every runnable scenario in plan
    order) of the ``rounds`` planned, and how it stopped: "running" (a snapshot written while
    it runs; read later, the run was killed without a word), "interrupted" (SIGINT),
    "terminated" (SIGTERM), "failed" (an error stopped it, ``error`` says which), "ended" (it
    ran every job it could, but some failed in their engine) or "not started".

    ``failed``: the jobs that failed in their engine, in the order they did, as (backend,
    strategy, round, the engine's message in one line); the run skipped each one's scenario
    from then on and went on with the others (``workloads.run.runner``), whatever stopped it
    later."""

    rounds: int
    done: tuple[tuple[str, str, int], ...]
    stopped: str = "running"
    error: str = ""
    failed: tuple[tuple[str, str, int, str], ...] = ()

    @property
    def jobs(self) -> int:
        """The measured jobs planned (every runnable scenario once per round)."""
        return self.rounds * len(self.done)

    @property
    def jobs_finished(self) -> int:
        return sum(n for _, _, n in self.done)


@dataclass
class RunOutcome:
    """What a run hands to the results writer."""

    config: RunConfig
    rows: pa.Table  # finalized: task=-1 totals added, internal rows dropped
    not_applicable: list[NotApplicable]
    facts: DataFacts
    engine: str  # "in-process" or the Spark master URL
    duration_s: float
    retried_attempts: dict[str, int] = field(default_factory=dict)
    job_seconds: dict[str, list[float]] = field(default_factory=dict)
    #: the rounds' record for run.json (``workloads.run.runner.rounds_record``)
    rounds: dict[str, Any] = field(default_factory=dict)
    #: None: every planned job finished. Else the run stopped early, or this is a snapshot of a
    #: run still running, and its rows hold only the jobs that finished (``runner.run``'s
    #: ``on_result``; run.json says ``"complete": false``)
    completion: Completion | None = None
