"""Measure the bands "differ by construction" may claim, and write them as data.

``workloads.report.real_engine`` calls a gap between the real Flink SQL job and the emulated
operator "by construction" only where a known cause is listed AND the gap lies inside the band
that repeated real-job runs measured for it. This module runs those repetitions and writes
``workloads/report/data/real-engine-bands.json`` (package data):

    python -m workloads.report.real_engine_bands            # 3 runs of each default workload
    python -m workloads.report.real_engine_bands --repeats 5 --workloads nexmark-q7-window

Each repetition is a separate ``statebench run`` of the workload, in-process, over the real lane
and its emulated lane with every given strategy (by default ``none``: no TTL, and
``compaction_filter``: the spec's TTL under RocksDB's default cleanup, the only one SQL runs),
so each one is a fresh real job on the paced wall clock. Per (operator kind, measure, real lane,
emulated lane, TTL or not) the file keeps every run's value and the band: for peak entries and
peak checkpoint bytes the smallest and largest real / emulated ratio, for
``ttl_changed_results`` the real job's smallest and largest share (its spread). The ratios are
the report's own (:func:`workloads.report.real_engine.real_pairs`), so the band and the verdict
measure the same thing. A band over fewer than three runs is written but never used.

Why runs and not a formula: the causes (RocksDB's estimate counting overwrites until a
compaction, row serializers, when each side's cleanup ran) set a direction, not a size; the size
moves with memtable flushes and where checkpoints fall, which only repeated runs show.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workloads.cli.options import split_list
from workloads.report.real_engine import (
    BANDS_PATH,
    CHECKPOINT,
    ENTRIES,
    MIN_BAND_RUNS,
    TTL_CHANGED,
    RealPair,
    real_pairs,
)

#: The shipped specs of every kind the flink-sql lane runs.
DEFAULT_WORKLOADS = ("nexmark-q18-dedup", "nexmark-q20-join", "nexmark-q7-window",
                     "nexmark-q4-agg", "nexmark-q5-sliding", "nexmark-q11-session",
                     "nexmark-interval-join", "nexmark-q19-topn")
DEFAULT_BACKENDS = ("flink-rocksdb", "flink-sql")
DEFAULT_STRATEGIES = ("none", "compaction_filter")


def pair_record(p: RealPair, workload: str, repeat: int) -> dict[str, Any]:
    """One real-job run's numbers beside the emulation's, as the report computes them."""
    out: dict[str, Any] = {"workload": workload, "kind": p.kind, "strategy": p.strategy,
                           "ttl": p.ttl, "real": p.real, "emulated": p.emulated,
                           "repeat": repeat}
    for m in p.measures:
        out[m.name] = {"real": None if m.real is None else m.real.value,
                       "emulated": None if m.emulated is None else m.emulated.value,
                       "ratio": m.ratio}
    return out


def bands_from_runs(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (kind, measure, real, emulated, ttl): every run's value, its min and max."""
    groups: dict[tuple[str, str, str, str, bool], list[tuple[float, str]]] = defaultdict(list)
    for r in runs:
        base = (r["kind"], r["real"], r["emulated"], bool(r["ttl"]))
        for measure in (ENTRIES, CHECKPOINT):
            ratio = r.get(measure, {}).get("ratio")
            if ratio is not None:
                groups[(base[0], measure, base[1], base[2], base[3])].append(
                    (float(ratio), r["workload"]))
        changed = r.get(TTL_CHANGED, {}).get("real")
        if r["ttl"] and changed is not None:
            groups[(base[0], TTL_CHANGED, base[1], base[2], True)].append(
                (float(changed), r["workload"]))
    out = []
    for (kind, measure, real, emulated, ttl), found in sorted(groups.items()):
        values = [v for v, _ in found]
        workloads = sorted({w for _, w in found})
        out.append({"kind": kind, "measure": measure, "real": real, "emulated": emulated,
                    "ttl": ttl, "lo": min(values), "hi": max(values), "runs": len(values),
                    "values": values,
                    "source": f"{', '.join(workloads)}, {len(values)} runs "
                              f"({'with' if ttl else 'without'} TTL)"})
    return out


def measure(workloads: Sequence[str], backends: Sequence[str], strategies: Sequence[str],
            repeats: int, events: int | None, log: Any = sys.stderr,
            done: Any = None) -> list[dict[str, Any]]:
    """Run every workload ``repeats`` times (each a fresh real job) and return each run's
    pair records; ``done(records)`` after each workload (the file is written as it goes, so
    an interrupted measurement keeps the workloads it finished)."""
    from workloads.report.load import load_run
    from workloads.run.compare import run_comparison, write_comparison
    from workloads.run.plan import RunConfig
    from workloads.spec import load_spec

    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="statebench-bands-") as tmp:
        for name in workloads:
            spec = load_spec(name)
            if events is not None:
                spec = spec.with_overrides(events=events)
            for repeat in range(repeats):
                started = time.monotonic()
                # what `statebench run NAME --in-process --backend .. --strategy ..` runs
                cfg = RunConfig(spec=spec, backends=tuple(backends),
                                strategies=tuple(strategies))
                outcomes = run_comparison([cfg], in_process=True)
                run = load_run(write_comparison(outcomes, Path(tmp) / f"{name}-{repeat}"))
                found = [pair_record(p, name, repeat) for p in real_pairs(run, name, bands={})]
                records += found
                print(f"{name} run {repeat + 1}/{repeats}: {len(found)} pairs, "
                      f"{time.monotonic() - started:.0f} s", file=log, flush=True)
            if done is not None:
                done(records)
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workloads.report.real_engine_bands",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=MIN_BAND_RUNS)
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS))
    parser.add_argument("--backends", default=",".join(DEFAULT_BACKENDS))
    parser.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES))
    parser.add_argument("--events", type=int, default=None,
                        help="events per run (default: each spec's)")
    parser.add_argument("--out", default=str(BANDS_PATH))
    args = parser.parse_args(argv)
    if args.repeats < MIN_BAND_RUNS:
        print(f"real_engine_bands: --repeats must be at least {MIN_BAND_RUNS} (a band over "
              f"fewer runs is no measurement), got {args.repeats}", file=sys.stderr)
        return 2
    if args.events is not None and args.events < 1:
        print(f"real_engine_bands: --events must be positive, got {args.events}",
              file=sys.stderr)
        return 2
    split = [split_list(v) for v in (args.workloads, args.backends, args.strategies)]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def write(runs: list[dict[str, Any]]) -> None:
        doc = {
            "about": "Bands for the real-engine verdicts (workloads/report/real_engine.py): "
                     "per (kind, measure, real lane, emulated lane, TTL), the values of "
                     "repeated real-job runs and their min (lo) and max (hi).",
            "command": "python -m workloads.report.real_engine_bands " + " ".join(
                argv if argv is not None else sys.argv[1:]),
            "generated_utc": started,
            "settings": {"workloads": split[0], "backends": split[1], "strategies": split[2],
                         "repeats": args.repeats, "events": args.events, "in_process": True},
            "bands": bands_from_runs(runs),
            "runs": runs,
        }
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}: {len(doc['bands'])} bands from {len(runs)} pair runs",
              file=sys.stderr)

    measure(*split, repeats=args.repeats, events=args.events, done=write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
