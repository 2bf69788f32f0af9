"""How far identical runs move a checkpoint size, per workload and backend: the calibration the
decision table separates one-per-run checkpoint sizes with.

Why a calibration and not the run's own repetitions: a run writes its checkpoint rows in
repetition 0 only (later repetitions run without series, ``workloads.run.plan``), so a
checkpoint size is one number per run, and one run cannot say how much it moves. RocksDB's
incremental checkpoint sizes are timing-dependent (background compactions decide which SST
files exist at the barrier), and how much they move depends on the workload's write pattern
and the backend (docs/report.md gives the figures: from none at all to more than 20%), so one
figure for every workload (the 10% of two runs of sessions-churn this replaces) was wrong in
both directions.

:data:`CALIBRATION` (workloads/report/data/checkpoint-noise.json, package data) holds, per
``workload/backend``, the largest relative spread (max / min - 1) of any strategy's checkpoint
number over repeated same-configuration runs, with the runs it came from. Remake it with
``python -m workloads.report.checkpoint_noise RUN_DIR... >
workloads/report/data/checkpoint-noise.json``
(at least :data:`MIN_RUNS` runs of one configuration; ``--into`` the existing file to merge a
configuration's entries with the others', the larger spread winning). The runs it is made from
are kept: docs/results/sessions-paced/ and docs/results/checkpoint-noise/ (checkpoint rows
only). A workload and backend without a
calibration separates no timing-dependent checkpoint size, and the cell says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from workloads.report.load import load_run
from workloads.report.metrics import CHECKPOINT_SIZE_METRICS
from workloads.report.stats import stat

#: The committed calibration, package data (an installed statebench decides as a checkout does).
CALIBRATION = Path(__file__).resolve().parent / "data" / "checkpoint-noise.json"
#: Fewest repeated runs a spread is taken from (two runs show one difference, not a spread).
MIN_RUNS = 3


@lru_cache(maxsize=4)
def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def layout_noise(workload: str, backend: str, path: Path | None = None
                 ) -> tuple[float, int] | None:
    """(spread, runs) that identical runs moved this workload's checkpoint sizes on this
    backend, or None when the calibration (``path``, else :data:`CALIBRATION`) has no entry
    for them."""
    entry = _load(path or CALIBRATION).get("noise", {}).get(f"{workload}/{backend}")
    if not isinstance(entry, dict):
        return None
    spread, runs = entry.get("spread"), entry.get("runs")
    if not isinstance(spread, int | float) or not isinstance(runs, int) or runs < MIN_RUNS:
        return None
    return float(spread), runs


def calibrate(run_dirs: Sequence[str | Path]) -> dict[str, Any]:
    """The calibration document from repeated runs of one configuration: per workload and
    backend found in at least :data:`MIN_RUNS` of them, the largest spread of any strategy's
    checkpoint numbers (each metric of :data:`CHECKPOINT_SIZE_METRICS`, the run's summary:
    median over checkpoints)."""
    runs = [load_run(d) for d in run_dirs]
    spreads: dict[str, dict[str, Any]] = {}
    ids = [run.run_id for run in runs]
    keys = {k for run in runs for k in run.samples}
    for key in sorted(keys):
        for metric in sorted(CHECKPOINT_SIZE_METRICS):
            found = [s.center for run in runs if (s := stat(run, key, metric)) is not None]
            if len(found) < MIN_RUNS or min(found) <= 0:
                continue
            spread = max(found) / min(found) - 1
            name = f"{key.workload}/{key.backend}"
            entry = spreads.setdefault(name, {"spread": 0.0, "runs": len(found), "by": "",
                                              "run_ids": ids})
            if spread >= entry["spread"]:
                entry.update(spread=round(spread, 4), runs=min(entry["runs"], len(found)),
                             by=f"{key.strategy} {metric}")
    return {"about": "largest max/min - 1 of a strategy's checkpoint number (median over "
                     "checkpoints) over identical runs, per workload/backend",
            "noise": spreads}


def merge(*docs: dict[str, Any]) -> dict[str, Any]:
    """Calibrations of several configurations in one document; where two measured the same
    workload and backend, the larger spread (identical runs at another time moved it that
    far: the smaller would separate what may be noise)."""
    noise: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for name, entry in doc.get("noise", {}).items():
            if name not in noise or entry["spread"] > noise[name]["spread"]:
                noise[name] = entry
    return {**(docs[0] if docs else {}), "noise": noise}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="checkpoint-size noise from repeated runs")
    parser.add_argument("runs", nargs="+", help="run folders of one configuration")
    parser.add_argument("--into", type=Path, help="a calibration to add these entries to")
    args = parser.parse_args(argv)
    if len(args.runs) < MIN_RUNS:
        print(f"checkpoint_noise: needs at least {MIN_RUNS} runs, got {len(args.runs)}",
              file=sys.stderr)
        return 2
    doc = calibrate(args.runs)
    if args.into is not None:
        doc = merge(_load(args.into.resolve()), doc)
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
