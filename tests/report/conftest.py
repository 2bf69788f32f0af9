"""A realistic synthetic run directory for report tests, generated from a seeded RNG.

The model is deliberately shaped like the design notes' expectations so that the report has
something to say: ``none`` is fastest but accumulates expired entries, ``timer`` removes them
almost immediately (smallest state) at a throughput cost, ``full_snapshot`` keeps memory like
``none`` but drops expired entries from heap snapshots (smallest heap checkpoints), and RocksDB
checkpoints upload only new SST files.  RocksDB scenarios also carry RocksDB's own counters: flushes
every few samples, compactions at fixed samples after which the compaction filter removes most
expired entries (or, per workload, no compaction at all, or compactions that rewrite nothing).
``sessions-churn`` runs on a paced ProcessingTime clock (schedule-lag rows, "clock": "paced").
Knobs (``throughput_factor``, ``drop``, ``compactions``, ``paced``, ``sweep``) let tests change
the data and check that the report's conclusions follow it. ``flink`` adds Flink's reference
lanes (``flink-heap``, ``flink-rocksdb``: the same model, no cleanup counters, Flink's
not-applicable strategies), ``lane_throughput``/``lane_retained`` change one lane's strategy, and
``no_ttl`` adds each workload once more without a TTL (``<name>-no-ttl``, strategy none only).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

STRATEGIES = ("none", "full_snapshot", "incremental", "compaction_filter", "timer")
BACKENDS = ("heap", "rocksdb")
WORKLOADS = {
    # name: (live entries at steady state, heap records/s, expiries per logical second)
    "sessions-churn": (200_000, 420_000.0, 900.0),
    "ycsb-a": (100_000, 260_000.0, 350.0),
}
NOT_APPLICABLE = (("rocksdb", "incremental"),)
DROPPING, NO_COMPACTION, TRIVIAL = "dropping", "no-compaction", "trivial"
#: RocksDB model: bytes per flush (the write buffer), SST target file size, the share of the
#: expired entries present that a compaction with the filter removes, sample period of flushes
#: and of compactions (first compaction at sample 5, before anything expired: it drops nothing).
WRITE_BUFFER = 4_000_000
TARGET_FILE = 2_000_000
FILTER_SHARE = 0.8
FLUSH_EVERY, COMPACT_EVERY, FIRST_COMPACTION = 2, 6, 5
#: Without compactions the run still flushes: at these samples (3 flushes).
IDLE_FLUSHES = (15, 30, 45)
MECHANISM_OF = {"none": None, **{s: s for s in ("incremental", "compaction_filter", "timer",
                                                "full_snapshot")}}
NA_REASON = "incremental cleanup walks heap state tables; RocksDB relies on compaction"

#: Relative throughput of each strategy against ``none`` (before noise).
THROUGHPUT = {
    "none": 1.0,
    "full_snapshot": 0.95,
    "incremental": 0.78,
    "compaction_filter": 0.91,
    "timer": 0.86,
}
#: Fraction of expired entries a strategy leaves in state (before noise).
RETAINED = {
    "none": 1.0,
    "full_snapshot": 1.0,
    "incremental": 0.35,
    "compaction_filter": 0.5,
    "timer": 0.02,
}
BACKEND = {  # throughput scale, logical bytes/entry, physical bytes/entry
    "heap": (1.0, 96.0, 150.0),
    "rocksdb": (0.32, 64.0, 88.0),
    "flink-heap": (2.6, 96.0, 150.0),
    "flink-rocksdb": (0.8, 64.0, 88.0),
}
FLINK_LANES = ("flink-heap", "flink-rocksdb")
#: Flink has no timer cleanup, no compaction filter on heap, no incremental cleanup on RocksDB.
FLINK_NOT_APPLICABLE = (("flink-heap", "compaction_filter"), ("flink-heap", "timer"),
                        ("flink-rocksdb", "incremental"), ("flink-rocksdb", "timer"))
FLINK_NA_REASON = "Flink has no such cleanup on this backend"
NO_TTL_SUFFIX = "-no-ttl"
#: How much faster a workload runs without a TTL than with one (strategy none), by default.
NO_TTL_SPEEDUP = 1.25
REMOVER = {
    "incremental": "cleanup_removed_incremental",
    "compaction_filter": "cleanup_removed_compaction_filter",
    "timer": "cleanup_removed_timer",
    "full_snapshot": "cleanup_removed_full_snapshot",
}

COLUMNS = (
    "run_id",
    "scenario",
    "backend",
    "strategy",
    "workload",
    "task",
    "step",
    "logical_time_ms",
    "metric",
    "value",
    "unit",
)
SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("scenario", pa.string()),
        ("backend", pa.string()),
        ("strategy", pa.string()),
        ("workload", pa.string()),
        ("task", pa.int32()),
        ("step", pa.int64()),
        ("logical_time_ms", pa.int64()),
        ("metric", pa.string()),
        ("value", pa.float64()),
        ("unit", pa.string()),
    ]
)


@dataclass
class SyntheticRun:
    """Knobs for one synthetic run; defaults give the "realistic" run."""

    run_id: str = "20250101T000000Z-synthetic"
    seed: int = 20250101
    reps: int = 3
    samples: int = 50
    checkpoints: int = 5
    tasks: int = 2
    duration_ms: int = 600_000
    ttl_ms: int = 120_000
    throughput_factor: dict[str, float] = field(default_factory=dict)
    #: (workload, backend, strategy, metric) patterns to drop; None matches anything.
    drop: list[tuple[str | None, str | None, str | None, str]] = field(default_factory=list)
    na_reason: str = NA_REASON
    #: workload -> what RocksDB's compactions do (default DROPPING for every workload):
    #: DROPPING (compactions run and the filter removes expired entries), NO_COMPACTION (a few
    #: flushes, no compaction, so the filter never runs) or TRIVIAL (compactions run but only
    #: move files, rewriting nothing, so the filter drops nothing).
    compactions: dict[str, str] = field(default_factory=dict)
    #: Workloads on a paced ProcessingTime clock (wall-clock driven, schedule-lag rows).
    paced: tuple[str, ...] = ("sessions-churn",)
    #: (strategy, knob, values): run the strategy once per knob value instead of once.
    sweep: tuple[str, str, tuple[float, ...]] | None = None
    #: RocksDB's state layout recorded in run.json ("ttl_db" is the like-for-like one).
    layout: str = "ttl_db"
    #: Add Flink's reference lanes flink-heap and flink-rocksdb.
    flink: bool = False
    #: (backend, strategy) -> throughput factor / retained share replacing the model's.
    lane_throughput: dict[tuple[str, str], float] = field(default_factory=dict)
    lane_retained: dict[tuple[str, str], float] = field(default_factory=dict)
    #: Add every workload once more without a TTL (strategy none only).
    no_ttl: bool = False
    #: backend -> how much faster its no-TTL run is than its TTL one (default NO_TTL_SPEEDUP).
    no_ttl_speedup: dict[str, float] = field(default_factory=dict)
    #: Workloads whose spec says EventTime (a logical clock: counted numbers are exact); the
    #: others' specs name no clock, which is ProcessingTime.
    event_time: tuple[str, ...] = ()


def backends(cfg: SyntheticRun) -> tuple[str, ...]:
    """The run's backends: each Flink lane (with ``flink``) after the backend it mirrors."""
    if not cfg.flink:
        return BACKENDS
    return ("heap", "flink-heap", "rocksdb", "flink-rocksdb")


def workloads(cfg: SyntheticRun) -> list[str]:
    """The run's workloads: with ``no_ttl``, each followed by its copy without a TTL."""
    return [x for w in WORKLOADS for x in ((w, w + NO_TTL_SUFFIX) if cfg.no_ttl else (w,))]


def workload_model(w: str) -> tuple[int, float, float]:
    """(live entries, heap records/s, expiries per logical second); nothing expires without
    a TTL."""
    if w.endswith(NO_TTL_SUFFIX):
        live, rate, _expiry = WORKLOADS[w[: -len(NO_TTL_SUFFIX)]]
        return live, rate, 0.0
    return WORKLOADS[w]


def not_applicable(cfg: SyntheticRun) -> set[tuple[str, str]]:
    """(backend, base strategy) pairs the run reports as not applicable."""
    return set(NOT_APPLICABLE) | (set(FLINK_NOT_APPLICABLE) if cfg.flink else set())


class _Rows:
    """Accumulates tidy rows column-wise."""

    def __init__(self, cfg: SyntheticRun) -> None:
        self.cfg = cfg
        self.cols: dict[str, list] = {c: [] for c in COLUMNS}

    def add(
        self,
        w: str,
        b: str,
        s: str,
        task: int,
        step: int,
        t: int,
        metric: str,
        value: float,
        unit: str,
    ) -> None:
        for pw, pb, ps, pm in self.cfg.drop:
            if pw in (None, w) and pb in (None, b) and ps in (None, s) and pm == metric:
                return
        row = (self.cfg.run_id, f"{w}/{b}/{s}", b, s, w, task, step, t, metric, float(value), unit)
        for c, v in zip(COLUMNS, row):
            self.cols[c].append(v)

    def table(self) -> pa.Table:
        return pa.table(self.cols, schema=SCHEMA)


def _split(rng: np.random.Generator, total: np.ndarray | float, tasks: int) -> np.ndarray:
    """Per-task shares of ``total`` (tasks own slightly different key-group ranges)."""
    shares = rng.dirichlet(np.full(tasks, 40.0))
    return np.multiply.outer(shares, np.asarray(total, dtype=float))


def sweep_label(strategy: str, knob: str, value: float) -> str:
    """How a swept scenario is labelled in rows and run.json: "incremental(size=5)"."""
    return f"{strategy}({knob}={value:g})"


def strategies(cfg: SyntheticRun) -> list[str]:
    """The strategy labels of a run: the swept strategy replaced by one label per knob value."""
    if cfg.sweep is None:
        return list(STRATEGIES)
    base, knob, values = cfg.sweep
    out: list[str] = []
    for s in STRATEGIES:
        out.extend([sweep_label(base, knob, v) for v in values] if s == base else [s])
    return out


def _params(cfg: SyntheticRun, s: str, w: str = "", b: str = "") -> tuple[str, float, float]:
    """(base strategy, throughput factor, retained share) of a strategy label.

    A swept knob trades throughput for state: from the smallest to the largest value,
    throughput drops by 15% and the expired entries left behind by 60%."""
    base = s.split("(", 1)[0]
    factor, retained = THROUGHPUT[base], RETAINED[base]
    if b in FLINK_LANES:
        factor = cfg.lane_throughput.get((b, base), factor)
        retained = cfg.lane_retained.get((b, base), retained)
    if w.endswith(NO_TTL_SUFFIX):
        factor *= cfg.no_ttl_speedup.get(b, NO_TTL_SPEEDUP)
    if cfg.sweep is not None and base == cfg.sweep[0] and s != base:
        labels = [sweep_label(base, cfg.sweep[1], v) for v in cfg.sweep[2]]
        pos = labels.index(s) / max(1, len(labels) - 1)
        factor, retained = factor * (1 - 0.15 * pos), retained * (1 - 0.6 * pos)
    return base, cfg.throughput_factor.get(s, factor), retained


def _rocksdb_model(
    cfg: SyntheticRun, rng: np.random.Generator, mode: str, filtering: bool, accrued: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """RocksDB counters per sample, the expired entries left, and entries removed per sample.

    ``accrued`` is how many entries have expired by each sample; with ``filtering`` (the
    compaction-filter strategy) a compaction removes FILTER_SHARE of those still present."""
    n = accrued.size
    idx = np.arange(n)
    if mode == NO_COMPACTION:
        flush_events = np.isin(idx, IDLE_FLUSHES).astype(float)
        compaction_events = np.zeros(n)
    else:
        flush_events = ((idx % FLUSH_EVERY == 1) & (idx > 0)).astype(float)
        at = (idx >= FIRST_COMPACTION) & ((idx - FIRST_COMPACTION) % COMPACT_EVERY == 0)
        compaction_events = np.where(at, rng.integers(1, 3, n), 0).astype(float)
    expired = np.zeros(n)
    removed = np.zeros(n)
    present = 0.0
    for i in range(n):
        present += accrued[i] - (accrued[i - 1] if i else 0.0)
        if filtering and mode == DROPPING and compaction_events[i] > 0 and present > 0:
            removed[i] = round(present * FILTER_SHARE)
            present -= removed[i]
        expired[i] = present
    return (
        {"flushes": np.cumsum(flush_events), "compactions": np.cumsum(compaction_events)},
        expired,
        removed,
    )


def _rocksdb_series(
    rows: _Rows, w: str, b: str, s: str, t: np.ndarray, counters: dict[str, np.ndarray],
    physical: np.ndarray, removed: np.ndarray, physical_per: float, mode: str,
) -> None:
    """RocksDB's counters and sizes as job totals (task=-1) per sample."""
    flushes, compactions = counters["flushes"], counters["compactions"]
    since_flush = np.zeros(t.size)
    for i in range(1, t.size):
        since_flush[i] = 0 if flushes[i] > flushes[i - 1] else since_flush[i - 1] + 1
    memtable = np.minimum(WRITE_BUFFER * (0.3 + 0.35 * since_flush), WRITE_BUFFER)
    sst = np.where(flushes > 0, np.maximum(physical - memtable, 0.0), 0.0)
    compacted = np.diff(compactions, prepend=0.0) > 0
    read_inc = np.where(compacted & (mode == DROPPING), 0.5 * sst, 0.0)
    write_inc = np.maximum(read_inc - removed * physical_per, 0.0)
    comp_read, comp_write = np.cumsum(read_inc), np.cumsum(write_inc)
    flushed = flushes * WRITE_BUFFER
    write_amp = np.where(flushed > 0, (flushed + comp_write) / np.maximum(flushed, 1), 1.0)
    l0 = np.zeros(t.size)
    for i in range(1, t.size):
        l0[i] = 0 if compacted[i] else l0[i - 1] + (flushes[i] - flushes[i - 1])
    files = np.where(flushes > 0, np.ceil(sst / TARGET_FILE) + l0, 0)
    series = {
        "rocksdb_flushes": (flushes, "count"),
        "rocksdb_compactions": (compactions, "count"),
        "rocksdb_compaction_read_bytes": (np.round(comp_read), "bytes"),
        "rocksdb_compaction_write_bytes": (np.round(comp_write), "bytes"),
        "rocksdb_write_amp": (write_amp, "x"),
        "rocksdb_sst_files": (files, "count"),
        "rocksdb_sst_bytes": (np.round(sst), "bytes"),
        "rocksdb_memtable_bytes": (np.round(memtable), "bytes"),
    }
    for metric, (values, unit) in series.items():
        for step, (ts, v) in enumerate(zip(t, values)):
            rows.add(w, b, s, -1, step, int(ts), metric, float(v), unit)


def _summary(
    rows: _Rows, rng: np.random.Generator, w: str, b: str, s: str, base: str, factor: float,
    retained: float, removed_total: float, paced: bool, filter_ran: bool,
) -> None:
    """Summary metrics: repetitions in ``step``, logical_time_ms = -1, per task and total."""
    cfg = rows.cfg
    _live_n, heap_rate, expiry_rate = workload_model(w)
    tp_scale = BACKEND[b][0]
    lane = b in FLINK_LANES  # Flink keeps no cleanup counters and no cleanup lag
    for rep in range(cfg.reps):
        total = heap_rate * tp_scale * factor * rng.normal(1.0, 0.012)
        per_task = _split(rng, total, cfg.tasks)
        for task, v in enumerate(per_task):
            rows.add(w, b, s, task, rep, -1, "records_per_s", v, "records/s")
            rows.add(w, b, s, task, rep, -1, "state_ops_per_s", 2.1 * v, "ops/s")
        rows.add(w, b, s, -1, rep, -1, "records_per_s", per_task.sum(), "records/s")
        rows.add(w, b, s, -1, rep, -1, "state_ops_per_s", 2.1 * per_task.sum(), "ops/s")
        p50 = 1e6 / (heap_rate * tp_scale * factor) * 0.6 * rng.lognormal(0, 0.05)
        tails = (
            ("latency_p50_us", 1.0),
            ("latency_p99_us", 6.0 * rng.lognormal(0, 0.1)),
            ("latency_p999_us", 25.0 * rng.lognormal(0, 0.15)),
            ("latency_max_us", 400.0 * rng.lognormal(0, 0.3)),
        )
        for metric, mult in tails:
            for task in range(-1, cfg.tasks):
                rows.add(w, b, s, task, rep, -1, metric, p50 * mult * rng.lognormal(0, 0.03), "us")
        rows.add(w, b, s, -1, rep, -1, "expired_returned", 0.0, "count")
        read_removed = expiry_rate * cfg.duration_ms / 1000 * 0.04 * rng.uniform(0.8, 1.2)
        for task, v in enumerate(_split(rng, read_removed, cfg.tasks)):
            if not lane:
                rows.add(w, b, s, task, rep, -1, "cleanup_removed_read", round(v), "entries")
        if base in REMOVER and not lane:
            noisy = removed_total * rng.normal(1, 0.02)
            for task, v in enumerate(_split(rng, noisy, cfg.tasks)):
                rows.add(w, b, s, task, rep, -1, REMOVER[base], round(max(v, 0.0)), "entries")
        # Cleanup lag per mechanism (merged histograms: job totals only). A mechanism that
        # removed nothing has no lag to report.
        lags = {"read": cfg.ttl_ms * 0.4}
        own = MECHANISM_OF[base]
        if own is not None and (base != "compaction_filter" or filter_ran):
            lags[own] = cfg.ttl_ms * (0.01 if base == "timer" else 2.5 * retained + 0.2)
        for mechanism, lag in ({} if lane else lags).items():
            p50_lag = lag * rng.lognormal(0, 0.05)
            for stat, mult in (("p50", 1.0), ("p99", 3.0), ("max", 5.0)):
                rows.add(w, b, s, -1, rep, -1, f"cleanup_lag_{mechanism}_{stat}_ms",
                         p50_lag * mult * rng.lognormal(0, 0.05), "ms")
        if paced:  # how far behind its paced schedule the task ran: slower strategies lag more
            lag_p50 = 0.4 / factor**3 * rng.lognormal(0, 0.1)
            late = min(0.9, 0.03 / factor**4 * rng.lognormal(0, 0.1))
            for task in range(-1, cfg.tasks):
                jitter = 1.0 if task == -1 else rng.uniform(0.8, 1.0)
                rows.add(w, b, s, task, rep, -1, "schedule_lag_p50_ms", lag_p50 * jitter, "ms")
                rows.add(w, b, s, task, rep, -1, "schedule_lag_p99_ms", 9 * lag_p50 * jitter, "ms")
                rows.add(w, b, s, task, rep, -1, "schedule_lag_max_ms", 40 * lag_p50 * jitter,
                         "ms")
                rows.add(w, b, s, task, rep, -1, "late_records_share", late * jitter, "share")


def _scenario(rows: _Rows, rng: np.random.Generator, w: str, b: str, s: str) -> None:
    cfg = rows.cfg
    live_n, _heap_rate, expiry_rate = workload_model(w)
    _tp_scale, logical_per, physical_per = BACKEND[b]
    base, factor, retained = _params(cfg, s, w, b)
    kind = b.removeprefix("flink-")  # a Flink lane is modelled as the backend it mirrors
    mode = cfg.compactions.get(w, DROPPING)

    # Time series over logical time, per task only (the report must sum tasks itself).
    t = np.linspace(0, cfg.duration_ms, cfg.samples).astype(np.int64)
    live = live_n * (1 - np.exp(-t / (cfg.ttl_ms / 2))) * rng.normal(1, 0.01, t.size)
    accrued = expiry_rate * np.maximum(0, t - cfg.ttl_ms) / 1000
    counters: dict[str, np.ndarray] = {}
    removed = np.zeros(t.size)
    expired = accrued * retained
    # full_snapshot drops expired entries only from what it writes: count those.
    removed_total = float(accrued[-1]) * (
        cfg.checkpoints / 2 if base == "full_snapshot" else 1 - retained
    )
    if kind == "rocksdb":
        filtering = base == "compaction_filter"
        counters, filtered, removed = _rocksdb_model(cfg, rng, mode, filtering, accrued)
        if filtering:  # on RocksDB the filter removes exactly what compactions dropped
            expired, removed_total = filtered, float(removed.sum())
    elif base == "compaction_filter":  # heap stand-in: periodic full cleanups, a sawtooth
        expired = expired * (1.4 - 0.9 * ((np.arange(t.size) % 8) / 7))
    expired = np.maximum(0, expired * rng.normal(1, 0.03, t.size))
    amplification = 1.0 + (0.3 * rng.random(t.size) if kind == "rocksdb" else 0.0)
    physical = (live + expired) * physical_per * amplification * (1.08 if base == "timer" else 1.0)
    series = {
        "live_entries": (live, "entries"),
        "expired_present_entries": (expired, "entries"),
        "expired_present_bytes": (expired * logical_per, "bytes"),
        "logical_bytes": ((live + expired) * logical_per, "bytes"),
        "physical_bytes": (physical, "bytes"),
    }
    for metric, (total, unit) in series.items():
        for task, values in enumerate(_split(rng, total, cfg.tasks)):
            for step, (ts, v) in enumerate(zip(t, values)):
                rows.add(w, b, s, task, step, int(ts), metric, round(v), unit)
    if counters:
        _rocksdb_series(rows, w, b, s, t, counters, physical, removed, physical_per, mode)

    filter_ran = kind != "rocksdb" or (mode == DROPPING and removed_total > 0)
    _summary(rows, rng, w, b, s, base, factor, retained, removed_total, w in cfg.paced,
             filter_ran)

    # Checkpoints at evenly spaced barriers, per task: sync, async and upload phases.
    barriers = np.linspace(
        cfg.duration_ms / cfg.checkpoints, cfg.duration_ms, cfg.checkpoints
    ).astype(np.int64)
    idx = np.searchsorted(t, barriers).clip(0, t.size - 1)
    content = live[idx] + (0 if base == "full_snapshot" and kind == "heap" else expired[idx])
    full = content * logical_per * (1.15 if base == "timer" else 1.0)
    uploaded = full if kind == "heap" else full * rng.uniform(0.22, 0.35, full.size)
    for cp, (ts, f, u) in enumerate(zip(barriers, full, uploaded), start=1):
        for task, (fv, uv) in enumerate(zip(_split(rng, f, cfg.tasks), _split(rng, u, cfg.tasks))):
            sync = (fv / 4e8 * 1e3 if kind == "heap" else 15.0) * rng.lognormal(0, 0.1)
            asynchronous = fv / (5e8 if kind == "heap" else 3e8) * 1e3 * rng.lognormal(0, 0.1)
            upload = uv / 1.5e8 * 1e3 * rng.lognormal(0, 0.1)
            at = (w, b, s, task, cp, int(ts))
            rows.add(*at, "checkpoint_bytes", round(fv), "bytes")
            rows.add(*at, "checkpoint_uploaded_bytes", round(uv), "bytes")
            rows.add(*at, "checkpoint_sync_ms", sync, "ms")
            rows.add(*at, "checkpoint_async_ms", asynchronous, "ms")
            rows.add(*at, "checkpoint_upload_ms", upload, "ms")
            rows.add(*at, "checkpoint_total_ms", sync + asynchronous + upload, "ms")


def write_run_dir(run_dir: Path, cfg: SyntheticRun) -> Path:
    """Write rows.parquet and run.json for ``cfg`` into ``run_dir`` and return it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(cfg.seed)
    rows = _Rows(cfg)
    na = not_applicable(cfg)
    labels = strategies(cfg)
    for w in workloads(cfg):
        for b in backends(cfg):
            for s in labels if not w.endswith(NO_TTL_SUFFIX) else ["none"]:
                if (b, s.split("(", 1)[0]) in na:
                    rows.add(w, b, s, -1, -1, -1, "not_applicable", 1.0, "flag")
                else:
                    _scenario(rows, rng, w, b, s)
    pq.write_table(rows.table(), run_dir / "rows.parquet")
    rocksdb = {
        "write_buffer_size": WRITE_BUFFER,
        "max_write_buffer_number": 2,
        "target_file_size_base": TARGET_FILE,
        "level0_file_num_compaction_trigger": 4,
        "block_cache_size": 8 << 20,
        "compression": "none",
        "periodic_compaction_ms": cfg.ttl_ms,
        "statistics": True,
        "state_layout": cfg.layout,
    }
    specs = [
        {
            "name": w,
            "keys": live * 5,
            "distribution": "zipf",
            "zipf_s": 1.1,
            "ttl_ms": cfg.ttl_ms,
            "duration_ms": cfg.duration_ms,
            "seed": cfg.seed + i,
            "rocksdb": {k: v for k, v in rocksdb.items() if k != "statistics"},
            **({"state": {"time_characteristic": "EventTime"}} if w in cfg.event_time else {}),
        }
        for i, (w, (live, _, _)) in enumerate(WORKLOADS.items())
    ]
    if cfg.no_ttl:  # the same spec under another name, without a TTL
        specs = [x for spec in specs for x in (spec, {
            **{k: v for k, v in spec.items() if k != "ttl_ms"},
            "name": spec["name"] + NO_TTL_SUFFIX})]
    meta = {
        "run_id": cfg.run_id,
        "created_utc": "2025-01-01T00:00:00Z",
        "spec": specs,
        "config": {
            "workloads": {
                w: {
                    "backends": list(backends(cfg)),
                    "strategies": labels if not w.endswith(NO_TTL_SUFFIX) else ["none"],
                    "repetitions": cfg.reps,
                    "clock": "paced" if w in cfg.paced else "event",
                    "time_speedup": 20.0 if w in cfg.paced else 1.0,
                    "rocksdb": rocksdb,
                }
                for w in workloads(cfg)
            },
            "backends": list(backends(cfg)),
            "strategies": labels,
            "events": 2_000_000,
            "master": "local[2]",
            "repetitions": cfg.reps,
        },
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "versions": {
            "python": "3.11.7",
            "pyspark": "4.0.1",
            "rocksdict": "0.3.29",
            "pyarrow": "21.0.0",
            "numpy": "2.3.0",
            "statebench": "0.1.0",
        },
        "machine": {
            "cpu_model": "Synthetic CPU @ 3.0GHz",
            "cores": 2,
            "memory_bytes": 24 * 2**30,
            "platform": "Linux-6.1-x86_64",
        },
        "spark_master": "local[2]",
        "not_applicable": [
            {"backend": b, "strategy": s,
             "reason": FLINK_NA_REASON if b in FLINK_LANES else cfg.na_reason}
            for b, s in sorted((b, s) for b, s in ((b, s) for b in backends(cfg) for s in labels)
                               if (b, s.split("(", 1)[0]) in na)
        ],
        "duration_s": 83.4,
    }
    if cfg.sweep is not None:
        base, knob, values = cfg.sweep
        meta["sweep"] = {
            "strategy": base,
            "knob": knob,
            "values": list(values),
            "labels": [sweep_label(base, knob, v) for v in values],
        }
    (run_dir / "run.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return run_dir


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``make_run("name", **SyntheticRun knobs)`` writes a run dir under tmp_path."""

    def _make(name: str = "run", **knobs: object) -> Path:
        return write_run_dir(tmp_path / name, SyntheticRun(**knobs))  # type: ignore[arg-type]

    return _make


@pytest.fixture
def synthetic_run_dir(make_run: Callable[..., Path]) -> Path:
    """The default realistic run (2 workloads x 2 backends x 5 strategies)."""
    return make_run()


@pytest.fixture(scope="session")
def session_run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default run, written once per session (for slower browser tests)."""
    return write_run_dir(tmp_path_factory.mktemp("report") / "run", SyntheticRun())
