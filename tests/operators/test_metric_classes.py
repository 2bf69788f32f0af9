"""The operator metrics' classes: exact under event time (the TTL clock is the records' time),
timing-dependent on a paced ProcessingTime clock."""

from __future__ import annotations

import pytest

from workloads.report.metrics import EXACT, TIMING_DEPENDENT, class_of

METRICS = ("ttl_changed_results", "ttl_changed_outputs", "ttl_compared_outputs",
           "operator_outputs", "timers_registered", "timers_fired")


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("backend", ["heap", "rocksdb"])
def test_exact_under_event_time(metric: str, backend: str) -> None:
    assert class_of(metric, backend, "timer", clock="EventTime").cls == EXACT
    assert class_of(metric, backend, "timer", clock="ProcessingTime").cls == TIMING_DEPENDENT
