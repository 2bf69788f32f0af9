"""A realistic synthetic run directory for report tests, generated from a seeded RNG.

The model is deliberately shaped like the design notes' expectations so that the report has
something to say: ``none`` is fastest but accumulates expired entries, ``timer`` removes them
almost immediately (smallest state) at a throughput cost, ``full_snapshot`` keeps memory like
``none`` but drops expired entries from heap snapshots (smallest heap checkpoints), and RocksDB
checkpoints upload only new SST files.  Knobs (``throughput_factor``, ``drop``) let tests change
the data and check that the report's conclusions follow it.
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
}
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


def _scenario(rows: _Rows, rng: np.random.Generator, w: str, b: str, s: str) -> None:
    cfg = rows.cfg
    live_n, heap_rate, expiry_rate = WORKLOADS[w]
    tp_scale, logical_per, physical_per = BACKEND[b]
    factor = cfg.throughput_factor.get(s, THROUGHPUT[s])

    # Summary metrics: repetitions in ``step``, logical_time_ms = -1, per task and total.
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
        expired_at_end = expiry_rate * max(0, cfg.duration_ms - cfg.ttl_ms) / 1000
        # full_snapshot drops expired entries only from what it writes: count those.
        removed_total = expired_at_end * (
            cfg.checkpoints / 2 if s == "full_snapshot" else 1 - RETAINED[s]
        )
        read_removed = expiry_rate * cfg.duration_ms / 1000 * 0.04 * rng.uniform(0.8, 1.2)
        for task, v in enumerate(_split(rng, read_removed, cfg.tasks)):
            rows.add(w, b, s, task, rep, -1, "cleanup_removed_read", round(v), "entries")
        if s in REMOVER:
            for task, v in enumerate(_split(rng, removed_total * rng.normal(1, 0.02), cfg.tasks)):
                rows.add(w, b, s, task, rep, -1, REMOVER[s], round(max(v, 0.0)), "entries")
        lag = cfg.ttl_ms * (0.01 if s == "timer" else 2.5 * RETAINED[s] + 0.2)
        rows.add(w, b, s, -1, rep, -1, "cleanup_lag_p50_ms", lag * rng.lognormal(0, 0.05), "ms")
        rows.add(w, b, s, -1, rep, -1, "cleanup_lag_p99_ms", 3 * lag * rng.lognormal(0, 0.1), "ms")

    # Time series over logical time, per task only (the report must sum tasks itself).
    t = np.linspace(0, cfg.duration_ms, cfg.samples).astype(np.int64)
    live = live_n * (1 - np.exp(-t / (cfg.ttl_ms / 2))) * rng.normal(1, 0.01, t.size)
    expired = expiry_rate * np.maximum(0, t - cfg.ttl_ms) / 1000 * RETAINED[s]
    if s == "compaction_filter":  # sawtooth: compactions periodically drop expired entries
        expired = expired * (1.4 - 0.9 * ((np.arange(t.size) % 8) / 7))
    expired = np.maximum(0, expired * rng.normal(1, 0.03, t.size))
    amplification = 1.0 + (0.3 * rng.random(t.size) if b == "rocksdb" else 0.0)
    series = {
        "live_entries": (live, "entries"),
        "expired_present_entries": (expired, "entries"),
        "logical_bytes": ((live + expired) * logical_per, "bytes"),
        "physical_bytes": (
            (live + expired) * physical_per * amplification * (1.08 if s == "timer" else 1.0),
            "bytes",
        ),
    }
    for metric, (total, unit) in series.items():
        for task, values in enumerate(_split(rng, total, cfg.tasks)):
            for step, (ts, v) in enumerate(zip(t, values)):
                rows.add(w, b, s, task, step, int(ts), metric, round(v), unit)

    # Checkpoints at evenly spaced barriers, per task.
    barriers = np.linspace(
        cfg.duration_ms / cfg.checkpoints, cfg.duration_ms, cfg.checkpoints
    ).astype(np.int64)
    idx = np.searchsorted(t, barriers).clip(0, t.size - 1)
    content = live[idx] + (0 if s == "full_snapshot" and b == "heap" else expired[idx])
    full = content * logical_per * (1.15 if s == "timer" else 1.0)
    uploaded = full if b == "heap" else full * rng.uniform(0.22, 0.35, full.size)
    for cp, (ts, f, u) in enumerate(zip(barriers, full, uploaded), start=1):
        for task, (fv, uv) in enumerate(zip(_split(rng, f, cfg.tasks), _split(rng, u, cfg.tasks))):
            sync = (fv / 4e8 * 1e3 if b == "heap" else 15.0) * rng.lognormal(0, 0.1)
            rows.add(w, b, s, task, cp, int(ts), "checkpoint_bytes", round(fv), "bytes")
            rows.add(w, b, s, task, cp, int(ts), "checkpoint_uploaded_bytes", round(uv), "bytes")
            rows.add(w, b, s, task, cp, int(ts), "checkpoint_sync_ms", sync, "ms")
            rows.add(
                w,
                b,
                s,
                task,
                cp,
                int(ts),
                "checkpoint_total_ms",
                sync + uv / 1.5e8 * 1e3 * rng.lognormal(0, 0.1),
                "ms",
            )


def write_run_dir(run_dir: Path, cfg: SyntheticRun) -> Path:
    """Write rows.parquet and run.json for ``cfg`` into ``run_dir`` and return it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(cfg.seed)
    rows = _Rows(cfg)
    na = set(NOT_APPLICABLE)
    for w in WORKLOADS:
        for b in BACKENDS:
            for s in STRATEGIES:
                if (b, s) in na:
                    rows.add(w, b, s, -1, -1, -1, "not_applicable", 1.0, "flag")
                else:
                    _scenario(rows, rng, w, b, s)
    pq.write_table(rows.table(), run_dir / "rows.parquet")
    meta = {
        "run_id": cfg.run_id,
        "created_utc": "2025-01-01T00:00:00Z",
        "spec": [
            {
                "name": w,
                "keys": live * 5,
                "distribution": "zipf",
                "zipf_s": 1.1,
                "ttl_ms": cfg.ttl_ms,
                "duration_ms": cfg.duration_ms,
                "seed": cfg.seed + i,
            }
            for i, (w, (live, _, _)) in enumerate(WORKLOADS.items())
        ],
        "config": {
            "backends": list(BACKENDS),
            "strategies": list(STRATEGIES),
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
            {"backend": b, "strategy": s, "reason": cfg.na_reason} for b, s in sorted(na)
        ],
        "duration_s": 83.4,
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
