"""One regression check: which benchmarks, how many pairs and trials, and what they conclude.

Two protocols. ``quick`` times the state-operation suite (every state benchmark of both
backends and TTL variants, and the raw loops beside them, which a change to statebench cannot
move: they are nulls in every check); CI runs it on every commit against its parent. ``full``
adds the scenario tracks: small in-process runs of the asv suite's workloads on statebench's own
backends, timed, with their exact figures (counts under the logical clock) compared exactly.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workloads.cli.options import CliError
from workloads.regress import stats
from workloads.regress.pairs import Progress, Revision, benchmark_names, measure

#: The asv suite's scenario workloads (bench/bench_scenarios.py) on statebench's own backends,
#: with every strategy that runs under their logical clock.
SCENARIOS = tuple(
    f"scenario/{workload}/{backend}/{strategy}"
    for workload in ("sessions-churn", "ycsb-a")
    for backend, strategies in (("heap", ("none", "full_snapshot", "incremental(5, false)",
                                          "timer")),
                                ("rocksdb", ("none", "full_snapshot", "timer")))
    for strategy in strategies)


@dataclass(frozen=True)
class Protocol:
    """How much a check measures."""

    name: str
    pairs: int  # pairs of worker processes
    trials: int  # interleaved trials of each state benchmark per pair
    scenario_trials: int = 0  # trials of each scenario per pair (0: no scenarios)
    #: the fixture's pre-filled keys and operations per call: small enough to stay in a core's
    #: own cache, so a trial times the code's path and not which pages the fixture landed on
    setup_keys: int = 2_000
    ops: int = 1_000
    #: scenario size: events and checkpoint interval of each run
    events: int = 50_000
    checkpoint_interval_ms: int = 250
    target_ms: float = 5.0  # a trial's length: calls per trial are chosen to reach it

    def trials_of(self, name: str) -> int:
        return self.scenario_trials if name.startswith("scenario/") else self.trials


PROTOCOLS = {
    "quick": Protocol("quick", pairs=16, trials=4),
    "full": Protocol("full", pairs=16, trials=4, scenario_trials=2),
}


@dataclass
class CheckResult:
    """What a check found, and how it was measured."""

    a: Revision
    b: Revision
    protocol: Protocol
    mode: str
    alpha: float
    min_effect: float
    estimates: list[stats.Estimate]
    exact: list[stats.ExactChange]
    not_applicable: dict[str, str]
    seconds: float
    accepted: str | None = None  # a regular expression of benchmarks allowed to be slower
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def regressions(self) -> list[stats.Estimate]:
        return [e for e in self.estimates if e.verdict == stats.SLOWER]

    def is_accepted(self, name: str) -> bool:
        return bool(self.accepted) and re.search(self.accepted, name) is not None  # type: ignore[arg-type]

    @property
    def failing(self) -> list[str]:
        """Benchmark names that fail the check: slower, or an exact figure changed, and not
        accepted. A figure that moved between runs of one side ("not exact") is reported but
        does not fail: it says the figure is not exact there, not that B changed it."""
        names = [e.name for e in self.regressions] + [
            f"{c.name}:{c.metric}" for c in self.exact if c.verdict == "changed"]
        return [n for n in names if not self.is_accepted(n)]

    def mde_by_family(self) -> dict[str, float]:
        """The median minimal detectable effect of each family of benchmarks."""
        out = {}
        for family in dict.fromkeys(e.family for e in self.estimates):
            values = sorted(e.mde for e in self.estimates if e.family == family)
            out[family] = values[len(values) // 2]
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "revisions": {r.label: r.describe for r in (self.a, self.b)},
            "protocol": self.protocol.__dict__, "mode": self.mode, "alpha": self.alpha,
            "min_effect": self.min_effect, "seconds": round(self.seconds, 1),
            "accepted": self.accepted, "failing": self.failing,
            "mde_by_family": self.mde_by_family(),
            "estimates": [e.as_dict() for e in self.estimates],
            "exact_changes": [c.as_dict() for c in self.exact],
            "not_applicable": self.not_applicable, **self.meta,
        }


def select(names: Sequence[str], pattern: str | None) -> list[str]:
    """The benchmarks matching ``pattern`` (all without one); none matching is an error."""
    if not pattern:
        return list(names)
    chosen = [n for n in names if re.search(pattern, n)]  # checked by the CLI before any work
    if not chosen:
        raise CliError(f"--bench {pattern!r} matches no benchmark (e.g. {names[0]})")
    return chosen


def run_check(a: Revision, b: Revision, protocol: Protocol, mode: str, seed: int, alpha: float,
              min_effect: float, work: Path, pattern: str | None = None,
              accepted: str | None = None, progress: Progress | None = None) -> CheckResult:
    """Measure A and B by ``protocol`` and decide every benchmark."""
    names = benchmark_names(a, work)
    missing = set(names) - set(benchmark_names(b, work))
    if missing:  # a benchmark only one side has cannot be compared
        names = [n for n in names if n not in missing]
    if protocol.scenario_trials:
        names += SCENARIOS
    names = select(names, pattern)
    scenario = {"setup_keys": protocol.setup_keys, "ops": protocol.ops,
                "events": protocol.events,
                "checkpoint_interval_ms": protocol.checkpoint_interval_ms}
    started = time.monotonic()
    load = os.getloadavg()
    samples = measure(a, b, names, protocol.pairs, protocol.trials_of, mode, seed, scenario,
                      work, progress, target_ns=protocol.target_ms * 1e6)
    estimates = stats.decide([stats.estimate(n, c) for n, c in samples.costs.items()],
                             alpha, min_effect)
    return CheckResult(
        a, b, protocol, mode, alpha, min_effect, estimates,
        stats.exact_changes(samples.exact["A"], samples.exact["B"]), samples.not_applicable,
        time.monotonic() - started, accepted,
        meta={"seed": seed, "load_before": [round(x, 2) for x in load],
              "load_after": [round(x, 2) for x in os.getloadavg()],
              "only_one_side": sorted(missing), "ops_per_call": protocol.ops,
              "benchmarks": len(names)})
