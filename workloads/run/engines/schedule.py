"""The schedule check every engine runs before its first job (its own module: the engines
import it, and ``engines/__init__`` imports the engines, so it cannot live there)."""

from __future__ import annotations

from typing import Any


def check_schedule(cfg: Any, facts: Any) -> None:
    """Refuse, before any job, a run whose logical time frame would plan more checkpoints or
    samples than ``workloads.limits`` allows: the operator builds every barrier up front, and a
    trace's time frame is only known once its rows are read (a trace spanning 2**62 ms with
    checkpoints grew to 22 GB before the kernel killed it). Called by each engine's prepare."""
    from workloads import limits
    from workloads.generator import TraceError
    from workloads.run.config import default_sample_interval
    from workloads.run.plan import PlanError

    span = facts.end_ms - facts.start_ms
    checkpoints = (cfg.spec.checkpoints.interval_ms if cfg.checkpoint_root is not None else 0)
    sample = cfg.sample_interval_ms or default_sample_interval(facts.start_ms, facts.end_ms)
    problem = limits.schedule_problem(span, checkpoints, sample)
    if problem is None and cfg.clock == "paced":
        problem = limits.paced_problem(span, cfg.speedup)
    if problem is None:
        return
    if cfg.spec.source.kind == "trace":
        raise TraceError(f"trace {cfg.spec.source.path}: the run over its timestamps {problem}")
    raise PlanError(f"the run {problem}")
