"""Run directories: ``results/<run-id>/rows.parquet`` plus ``run.json``.

``rows.parquet`` holds the tidy metric rows (``workloads.run.metrics.METRIC_SCHEMA``, what
``workloads/report`` reads); ``run.json`` says what ran where: the spec, the run configuration,
the git commit, library versions, the machine, the Spark master, the strategies that were
reported as not applicable instead of being run, and how long it took.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from workloads.run.metrics import METRIC_SCHEMA
from workloads.run.plan import RunOutcome

DEFAULT_RESULTS_DIR = "results"
ROWS_FILE = "rows.parquet"
META_FILE = "run.json"
_VERSIONED = ("pyspark", "rocksdict", "pyarrow", "numpy", "statebench")
_REPO = Path(__file__).resolve().parent.parent


def git_commit(repo: Path = _REPO) -> str:
    """``git rev-parse HEAD`` of the source tree, or "unknown" (not a checkout, no git)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in _VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": psutil.virtual_memory().total,
        "platform": platform.platform(),
    }


def run_metadata(outcome: RunOutcome, created_utc: str | None = None) -> dict[str, Any]:
    """The run.json document of a finished run."""
    cfg = outcome.config
    config = cfg.describe()
    config.update(
        {
            "events": outcome.facts.events,
            "master": outcome.engine,
            "in_process": outcome.engine == "in-process",
            "events_per_task": {str(t): n for t, n in outcome.facts.task_counts},
            "time_frame_ms": [outcome.facts.start_ms, outcome.facts.end_ms],
            "job_seconds": outcome.job_seconds,
            "retried_attempts": outcome.retried_attempts,
            "argv": sys.argv,
        }
    )
    return {
        "run_id": cfg.run_id,
        "created_utc": created_utc or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "spec": cfg.spec.to_dict(),
        "config": config,
        "git_commit": git_commit(),
        "versions": versions(),
        "machine": machine(),
        "spark_master": outcome.engine,
        "not_applicable": [n.as_dict() for n in outcome.not_applicable],
        "duration_s": round(outcome.duration_s, 3),
    }


def write_run_dir(run_id: str, rows: pa.Table, meta: dict[str, Any],
                  results_dir: str | Path = DEFAULT_RESULTS_DIR) -> Path:
    """Write ``<results_dir>/<run_id>/`` (rows.parquet + run.json) and return it."""
    run_dir = Path(results_dir) / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    pq.write_table(rows.cast(METRIC_SCHEMA), run_dir / ROWS_FILE)
    (run_dir / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n",
                                     encoding="utf-8")
    return run_dir


def write_run(outcome: RunOutcome, results_dir: str | Path = DEFAULT_RESULTS_DIR) -> Path:
    """Write one run's ``<results_dir>/<run-id>/`` and return it."""
    return write_run_dir(outcome.config.run_id, outcome.rows, run_metadata(outcome), results_dir)
