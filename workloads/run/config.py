"""What one task needs to run one scenario (:class:`OperatorConfig`) and the planning rules the
planner and the operator share: the state names, which scenarios run on the wall clock, the
default sample interval. Planning reads these without importing the operator.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from backends.keygroups import DEFAULT_MAX_PARALLELISM
from backends.strategies import strategy_of_label
from workloads.limits import DEFAULT_CHECKPOINTS_IN_FLIGHT
from workloads.ops import StateType
from workloads.run.metrics import ScenarioId

STATE_NAMES: tuple[str, ...] = tuple(s.value for s in StateType)
DEFAULT_SAMPLES = 10


def wall_clock_driven(time_characteristic: str, strategy: str) -> bool:
    """Whether a scenario's TTL clock is the (scaled) wall clock: a strategy whose cleanup reads
    the wall clock (RocksDB's TTL compaction filter: ``Strategy.reads_wall_clock``) cannot run
    a ProcessingTime scenario on a logical clock (see ``workloads.run.keyed_operator``).
    ``strategy`` is a scenario's label (a sweep's too)."""
    found = strategy_of_label(strategy)
    return paced(time_characteristic) and found is not None and found.reads_wall_clock


def paced(time_characteristic: str) -> bool:
    """Whether every strategy of a scenario runs on the paced clock: ProcessingTime scenarios
    share one wall-driven ``ScaledClock`` and release each record at its timestamp on it, so the
    TTL clock, RocksDB's native TTL (which reads the wall clock) and the records' time agree."""
    return time_characteristic == "ProcessingTime"


def default_sample_interval(start_ms: int, end_ms: int, samples: int = DEFAULT_SAMPLES) -> int:
    """``samples`` state samples over the run's logical time frame (at least 1 ms apart)."""
    return max(1, math.ceil((end_ms - start_ms) / samples))


@dataclass(frozen=True)
class OperatorConfig:
    """Everything a task needs to run one scenario (small and picklable for Spark closures)."""

    run_id: str
    workload: str
    backend: str
    strategy: str
    value_type: str
    state_types: tuple[str, ...]
    ttl_ms: int | None
    update_type: str
    visibility: str
    time_characteristic: str
    start_ms: int
    end_ms: int
    sample_interval_ms: int
    checkpoint_interval_ms: int = 0
    checkpoint_mode: str = "full"
    #: checkpoints in flight per task (the spec's ``[checkpoints] max_in_flight``), every lane
    checkpoint_max_in_flight: int = DEFAULT_CHECKPOINTS_IN_FLIGHT
    checkpoint_root: str | None = None
    parallelism: int = 1
    max_parallelism: int = DEFAULT_MAX_PARALLELISM
    task_counts: tuple[tuple[int, int], ...] = ()
    warmup_fraction: float = 0.1
    repetition: int = 0
    emit_series: bool = True
    measure_latency: bool = True
    time_speedup: float = 1.0
    #: statebench's RocksDB: plan.rocksdb_options; Flink's: the spec's [rocksdb] table
    rocksdb_options: tuple[tuple[str, object], ...] = ()
    cleanup: str = ""  # the strategy text to configure when ``strategy`` is a sweep label
    local_dir: str | None = None
    restore_at_end: bool = True
    #: an ``[operator]`` spec's operator (``workloads.spec.OperatorSpec``; None: key-value
    #: traffic) and its input's out-of-orderness bound (the watermark's)
    operator: object = None
    out_of_orderness_ms: int = 0

    @property
    def scenario(self) -> ScenarioId:
        return ScenarioId(self.workload, self.backend, self.strategy, self.run_id)

    @property
    def configured_cleanup(self) -> str:
        """The strategy text this scenario configures (its lane's, for a sweep label)."""
        return self.cleanup or self.strategy

    @property
    def never_return_expired(self) -> bool:
        return self.ttl_ms is not None and self.visibility == "NeverReturnExpired"


@dataclass(frozen=True)
class DataFacts:
    """What the runner learnt from the keyed data: events per task and the time frame."""

    task_counts: tuple[tuple[int, int], ...]
    start_ms: int
    end_ms: int

    @property
    def events(self) -> int:
        return sum(c for _, c in self.task_counts)


def local_root(cfg: OperatorConfig) -> str | None:
    """Where task-local backend folders go: the configured folder, else the executor's first
    Spark local dir (Spark passes SPARK_LOCAL_DIRS to its Python workers), else the temp dir."""
    if cfg.local_dir is not None:
        return cfg.local_dir
    spark_dirs = os.environ.get("SPARK_LOCAL_DIRS")
    return spark_dirs.split(",")[0] if spark_dirs else None
