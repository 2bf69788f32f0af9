"""One SparkSession for the whole ``tests/spark`` package (package-scoped, stopped after its
last test): this process's session, ``workloads.run.engines.spark_session.get_session``'s.

Spark cannot make these tests skip: pyspark is a core dependency (importing it fails loudly
where it is missing) and a JVM that will not start is an ``InfrastructureError`` raised by the
fixture, an error of every test that uses it. Spark's first transformWithState query in a
session is its slowest (Python workers, the processor's schemas: 20-30 s under load here), so
every test shares the session and keeps its event counts small.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from workloads.generator import DEFAULT_BATCH_SIZE
from workloads.run.config import DataFacts, OperatorConfig
from workloads.run.plan import spec_time_frame, state_types_of
from workloads.spec import WorkloadSpec


@pytest.fixture(scope="package")
def spark() -> Iterator[Any]:
    from workloads.run.engines.spark_session import get_session

    session = get_session("local[2]", app_name="statebench-tests-spark")
    try:
        yield session
    finally:
        session.stop()


@dataclass
class View:
    """A run as the lanes read it (``workloads.lanes.base.RunView``), without the planner."""

    spec: WorkloadSpec
    backends: tuple[str, ...] = ("spark-tws",)
    parallelism: int = 2
    run_id: str = "tests-spark"
    checkpoint_root: str | None = None
    local_dir: str | None = None
    measure_latency: bool = True
    strategy_labels: tuple[str, ...] = ("spark_no_ttl", "spark_ttl", "spark_timer")
    speedup: float = 1.0
    batch_size: int = DEFAULT_BATCH_SIZE
    ttl_override: dict[str, int | None] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        """The generator's partitions: the parallelism, as a run that sets none."""
        return self.parallelism

    def cleanup_of(self, label: str) -> str:
        return label

    def ttl_of(self, label: str) -> int | None:
        return self.ttl_override.get(label, self.spec.state.ttl_ms)

    def ttl_sweep_of(self, label: str) -> int | None:
        return None


@pytest.fixture
def view() -> Callable[..., View]:
    return View


@pytest.fixture
def scenario() -> Callable[..., tuple[OperatorConfig, DataFacts]]:
    """``scenario(run, lane, strategy)``: the operator config and data facts of one job."""

    def make(run: View, lane: str, strategy: str,
             repetition: int = 0) -> tuple[OperatorConfig, DataFacts]:
        spec = run.spec
        frame = spec_time_frame(spec)
        assert frame is not None
        lo, hi = frame
        cfg = OperatorConfig(
            run_id=run.run_id, workload=spec.name, backend=lane, strategy=strategy,
            value_type=spec.values.type, state_types=state_types_of(spec),
            ttl_ms=run.ttl_of(strategy), update_type=spec.state.update_type,
            visibility=spec.state.visibility,
            time_characteristic=spec.state.time_characteristic, start_ms=lo, end_ms=hi,
            sample_interval_ms=max(1, (hi - lo) // 10), parallelism=run.parallelism,
            repetition=repetition, emit_series=repetition == 0,
            checkpoint_root=run.checkpoint_root, time_speedup=run.speedup)
        events = spec.time.events if spec.time is not None else 0
        return cfg, DataFacts(((0, events or 0),), lo, hi)

    return make
