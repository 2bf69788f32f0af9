"""Catalogue of the metrics the report knows how to present.

The rows table is open-ended (a backend may emit metrics the report has never heard of), so the
catalogue only adds what the raw rows cannot carry: a human label, which group a metric belongs
to, and whether bigger is better (needed to colour ratios in a diff and to pick "winners"). How
values combine across tasks is ``workloads.results.summaries``.
"""

from __future__ import annotations

from dataclasses import dataclass

# what rows mean is defined with the summaries, once; re-exported for the report's modules
from workloads.results.summaries import NOT_APPLICABLE as NOT_APPLICABLE
from workloads.results.summaries import STORED_ENTRIES
from workloads.results.summaries import lag_metric as lag_metric

#: Time-series metrics with one sample per logical-time step.
SERIES_METRICS = (
    "live_entries",
    "expired_present_entries",
    STORED_ENTRIES,
    "logical_bytes",
    "physical_bytes",
)


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
    #: Written by older runs only: shown when a run has it, never as an empty column.
    legacy: bool = False


GROUPS: tuple[tuple[str, str], ...] = (
    ("throughput", "Throughput (median over repetitions)"),
    ("latency", "Per-record latency (median over repetitions)"),
    ("schedule", "Schedule lag: how far behind its paced source the task ran "
                 "(median over repetitions)"),
    ("state", "State size (peak over logical time)"),
    ("rocksdb", "RocksDB activity (peak over logical time: cumulative counters read as totals)"),
    ("checkpoint", "Checkpoints (median over checkpoints)"),
    ("cleanup", "Cleanup (median over repetitions)"),
    ("cleanup_lag", "Cleanup lag per mechanism: expiry to physical removal, values, list "
                    "elements and map entries (median over repetitions)"),
    ("correctness", "Correctness"),
    ("other", "Other metrics"),
)
#: Groups only some workloads or backends have (paced clocks, RocksDB): a workload without any
#: of their numbers gets no table rather than a table of dashes.
OPTIONAL_GROUPS = frozenset({"schedule", "rocksdb"})

#: Cleanup mechanisms, each with its own lag histogram (``cleanup_lag_<mechanism>_<stat>_ms``).
MECHANISMS: tuple[tuple[str, str], ...] = (
    ("read", "on read"),
    ("incremental", "incremental"),
    ("timer", "timer"),
    ("compaction_filter", "compaction filter"),
    ("full_snapshot", "full snapshot"),
)
LAG_STATS = ("p50", "p99", "max")


def rocksdb_metric(name: str) -> bool:
    """True for RocksDB's own counters and sizes (flushes, compactions, SST files, ...)."""
    return name.startswith("rocksdb_")

_CATALOGUE: tuple[MetricSpec, ...] = (
    MetricSpec("records_per_s", "records", "records/s", "throughput", +1),
    MetricSpec("state_ops_per_s", "state operations", "ops/s", "throughput", +1),
    MetricSpec("job_records_per_s", "whole job (with scheduling and transfer)", "records/s",
               "throughput", +1),
    MetricSpec("records", "records processed", "records", "throughput", 0),
    MetricSpec("schedule_lag_p50_ms", "p50", "ms", "schedule", -1),
    MetricSpec("schedule_lag_p99_ms", "p99", "ms", "schedule", -1),
    MetricSpec("schedule_lag_max_ms", "max", "ms", "schedule", -1),
    MetricSpec("late_records_share", "records late", "share", "schedule", -1),
    MetricSpec("latency_p50_us", "p50", "us", "latency", -1),
    MetricSpec("latency_p99_us", "p99", "us", "latency", -1),
    MetricSpec("latency_p999_us", "p99.9", "us", "latency", -1),
    MetricSpec("latency_max_us", "max", "us", "latency", -1),
    MetricSpec("live_entries", "live entries", "entries", "state", -1),
    MetricSpec("expired_present_entries", "expired-present entries", "entries", "state", -1),
    MetricSpec("expired_present_bytes", "expired-present bytes", "bytes", "state", -1),
    MetricSpec(STORED_ENTRIES, "stored entries (live + expired)", "entries", "state", -1),
    MetricSpec("logical_bytes", "logical bytes", "bytes", "state", -1),
    MetricSpec("physical_bytes", "physical bytes", "bytes", "state", -1),
    MetricSpec("rocksdb_flushes", "flushes", "count", "rocksdb", 0),
    MetricSpec("rocksdb_compactions", "compactions", "count", "rocksdb", 0),
    MetricSpec("rocksdb_compaction_read_bytes", "compaction read", "bytes", "rocksdb", 0),
    MetricSpec("rocksdb_compaction_write_bytes", "compaction written", "bytes", "rocksdb", -1),
    MetricSpec("rocksdb_write_amp", "write amplification", "x", "rocksdb", -1),
    MetricSpec("rocksdb_sst_files", "SST files", "count", "rocksdb", -1),
    MetricSpec("rocksdb_sst_bytes", "SST bytes", "bytes", "rocksdb", -1),
    MetricSpec("rocksdb_memtable_bytes", "memtable bytes", "bytes", "rocksdb", 0),
    MetricSpec("checkpoint_bytes", "full size", "bytes", "checkpoint", -1),
    MetricSpec("checkpoint_uploaded_bytes", "uploaded", "bytes", "checkpoint", -1),
    MetricSpec("checkpoint_sync_ms", "sync duration", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_async_ms", "async duration", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_upload_ms", "upload duration", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_total_ms", "total duration", "ms", "checkpoint", -1),
    MetricSpec("restore_ms", "restore", "ms", "checkpoint", -1),
    MetricSpec("cleanup_removed_read", "removed on read", "entries", "cleanup", 0),
    MetricSpec("cleanup_removed_incremental", "removed incrementally", "entries", "cleanup", 0),
    MetricSpec(
        "cleanup_removed_compaction_filter", "removed by compaction", "entries", "cleanup", 0
    ),
    MetricSpec("cleanup_removed_timer", "removed by timer", "entries", "cleanup", 0),
    MetricSpec("cleanup_removed_full_snapshot", "dropped from snapshots", "entries", "cleanup", 0),
    *(
        MetricSpec(lag_metric(m, st), f"{label} lag {st}", "ms", "cleanup_lag", -1)
        for m, label in MECHANISMS
        for st in LAG_STATS
    ),
    # one histogram over every mechanism, written before issue 9
    MetricSpec("cleanup_lag_mean_ms", "cleanup lag mean", "ms", "cleanup", -1, legacy=True),
    MetricSpec("cleanup_lag_max_ms", "cleanup lag max", "ms", "cleanup", -1, legacy=True),
    MetricSpec("cleanup_lag_p50_ms", "cleanup lag p50", "ms", "cleanup", -1, legacy=True),
    MetricSpec("cleanup_lag_p99_ms", "cleanup lag p99", "ms", "cleanup", -1, legacy=True),
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
