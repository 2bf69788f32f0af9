"""Event generator speed (pytest-benchmark): events per second for uniform and zipfian keys.

Target: >= 5 M events/s per core (the generator must never be what a run waits for; a run's
operator does ~1 M records/s). Recorded in ``extra_info`` with the target, not asserted: the
number depends on the machine and on whatever else shares its cores. (Moved here from the unit
tests, which assert behaviour only.)
"""

from __future__ import annotations

from typing import Any

import pytest

from workloads.generator import generate_partition
from workloads.spec import parse_spec

EVENTS = 2_000_000
TARGET = 5_000_000


def _spec(distribution: str) -> Any:
    return parse_spec(
        {
            "name": f"gen-{distribution}",
            "seed": 11,
            "keys": {"count": 100_000, "distribution": distribution},
            "operations": {"value_get": 0.5, "value_update": 0.5},
            "time": {"rate": 1_000_000, "events": EVENTS},
        },
        source="bench",
    )


def _drain(spec: Any) -> int:
    return sum(b.num_rows for b in generate_partition(spec, 0, 1))


@pytest.mark.parametrize("distribution", ["uniform", "zipfian"])
def test_generation_rate(benchmark, distribution: str) -> None:
    spec = _spec(distribution)
    rows = benchmark.pedantic(_drain, args=(spec,), rounds=3, iterations=1, warmup_rounds=1)
    rate = EVENTS / benchmark.stats.stats.median
    benchmark.extra_info.update({
        "distribution": distribution,
        "events": EVENTS,
        "events_per_s": round(rate),
        "target": f">= {TARGET:,} events/s per core",
        "target_met": rate >= TARGET,
    })
    assert rows == EVENTS
