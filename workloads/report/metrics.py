"""Catalogue of the metrics the report knows how to present.

The rows table is open-ended (a backend may emit metrics the report has never heard of), so the
catalogue only adds what the raw rows cannot carry: a human label, which group a metric belongs
to, whether bigger is better (needed to colour ratios in a diff and to pick "winners"), and how
values combine across Spark tasks when no task=-1 total row was written.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Units whose per-task values add up to the job's value.  Rates, sizes and counts are additive;
#: durations and latency percentiles are not (a checkpoint completes when its slowest task does,
#: so durations combine with ``max``).
ADDITIVE_UNITS = frozenset({"bytes", "entries", "count", "records/s", "ops/s"})

#: A metric whose rows say "this strategy was not run on this backend".
NOT_APPLICABLE = "not_applicable"

#: Derived metric: entries physically held (live + expired-but-present) at each sample.
STORED_ENTRIES = "stored_entries"

#: Time-series metrics with one sample per logical-time step.
SERIES_METRICS = (
    "live_entries",
    "expired_present_entries",
    STORED_ENTRIES,
    "logical_bytes",
    "physical_bytes",
)

#: Metrics sampled once per checkpoint (step = checkpoint id).
CHECKPOINT_PREFIX = "checkpoint_"
EVENT_METRICS = frozenset({"restore_ms"})


@dataclass(frozen=True)
class MetricSpec:
    """Presentation facts about one metric name.

    ``better`` is +1 when higher is better, -1 when lower is better and 0 when the number is
    descriptive only (e.g. how many entries a mechanism removed).
    """

    name: str
    label: str
    unit: str
    group: str
    better: int


GROUPS: tuple[tuple[str, str], ...] = (
    ("throughput", "Throughput (median over repetitions)"),
    ("latency", "Per-record latency (median over repetitions)"),
    ("state", "State size (peak over logical time)"),
    ("checkpoint", "Checkpoints (median over checkpoints)"),
    ("cleanup", "Cleanup"),
    ("correctness", "Correctness"),
    ("other", "Other metrics"),
)

_CATALOGUE: tuple[MetricSpec, ...] = (
    MetricSpec("records_per_s", "records", "records/s", "throughput", +1),
    MetricSpec("state_ops_per_s", "state operations", "ops/s", "throughput", +1),
    MetricSpec("job_records_per_s", "whole job (with scheduling and transfer)", "records/s",
               "throughput", +1),
    MetricSpec("records", "records processed", "records", "throughput", 0),
    MetricSpec("latency_p50_us", "p50", "us", "latency", -1),
    MetricSpec("latency_p99_us", "p99", "us", "latency", -1),
    MetricSpec("latency_p999_us", "p99.9", "us", "latency", -1),
    MetricSpec("latency_max_us", "max", "us", "latency", -1),
    MetricSpec("live_entries", "live entries", "entries", "state", -1),
    MetricSpec("expired_present_entries", "expired-present entries", "entries", "state", -1),
    MetricSpec(STORED_ENTRIES, "stored entries (live + expired)", "entries", "state", -1),
    MetricSpec("logical_bytes", "logical bytes", "bytes", "state", -1),
    MetricSpec("physical_bytes", "physical bytes", "bytes", "state", -1),
    MetricSpec("checkpoint_bytes", "full size", "bytes", "checkpoint", -1),
    MetricSpec("checkpoint_uploaded_bytes", "uploaded", "bytes", "checkpoint", -1),
    MetricSpec("checkpoint_sync_ms", "sync duration", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_total_ms", "total duration", "ms", "checkpoint", -1),
    MetricSpec("restore_ms", "restore", "ms", "checkpoint", -1),
    MetricSpec("cleanup_removed_read", "removed on read", "entries", "cleanup", 0),
    MetricSpec("cleanup_removed_incremental", "removed incrementally", "entries", "cleanup", 0),
    MetricSpec(
        "cleanup_removed_compaction_filter", "removed by compaction", "entries", "cleanup", 0
    ),
    MetricSpec("cleanup_removed_timer", "removed by timer", "entries", "cleanup", 0),
    MetricSpec("cleanup_removed_full_snapshot", "dropped from snapshots", "entries", "cleanup", 0),
    MetricSpec("cleanup_lag_mean_ms", "cleanup lag mean", "ms", "cleanup", -1),
    MetricSpec("cleanup_lag_max_ms", "cleanup lag max", "ms", "cleanup", -1),
    MetricSpec("cleanup_lag_p50_ms", "cleanup lag p50", "ms", "cleanup", -1),
    MetricSpec("cleanup_lag_p99_ms", "cleanup lag p99", "ms", "cleanup", -1),
    MetricSpec(
        "expired_returned", "expired values returned (must be 0)", "count", "correctness", -1
    ),
)

CATALOGUE: dict[str, MetricSpec] = {m.name: m for m in _CATALOGUE}


def spec_for(name: str, unit: str = "") -> MetricSpec:
    """Return the catalogue entry for ``name``, or a neutral one built from the row's unit.

    Unknown metrics still get a row in the tables (group "other") so nothing a run measured is
    silently dropped from the report.
    """
    known = CATALOGUE.get(name)
    if known is not None:
        return known
    return MetricSpec(name, name.replace("_", " "), unit, "other", 0)


def is_event_metric(name: str) -> bool:
    """True for metrics sampled once per checkpoint/restore rather than over logical time."""
    return name.startswith(CHECKPOINT_PREFIX) or name in EVENT_METRICS


def is_additive(unit: str) -> bool:
    """True when per-task values of this unit sum to the job-wide value."""
    return unit in ADDITIVE_UNITS
