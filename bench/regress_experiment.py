"""Proof of ``statebench regress`` on real commits: planted slowdowns found, empty commits silent.

``python -m bench.regress_experiment --runs 10 [--neighbour] --out FILE.json`` makes a scratch
clone of this repository's HEAD with three commits on top of it, each on its own branch: an
empty commit, a layout-only commit (a module of unused classes imported by ``backends``: no
code on any measured path changes, only the interpreter's class layout, which once read as a
7% regression), and a commit carrying the plants (``workloads/regress/plants.py``: a known
number of empty loop iterations at the heap's and RocksDB's key switch, so every state
benchmark of a backend is slower by its own known share). It then runs the check ``--runs``
times for each (the kinds' order rotating), and counts:

* per planted size bucket (about 5%, 10% and 20% slower, from the loop's measured cost and each
  benchmark's own cost in that run), the share of checks that flagged the benchmark;
* false flags: any benchmark called changed in an empty or a layout-only check, and any raw
  loop (which the plants cannot touch) called changed in a planted check.

``--neighbour`` runs a noisy neighbour for the whole experiment: a process that keeps a core
busy reading and writing a buffer four times a core's cache at random, started and stopped
here. The document written is ``docs/results/regress-*.json``; docs/performance.md has the table.

asv imports every module of bench/ in the environments it builds, where an older commit's
statebench has no ``workloads.regress``: it is imported inside the functions that use it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: Loop iterations per plant: about 20-30 ns at the heap's key switch (5-20% of its cheap
#: operations) and about 120 ns at RocksDB's (5-15% of its).
DEFAULT_PLANTS = ("heap.key=0", "rocksdb.key=25")
#: Unused generic classes (and as many protocols) of the layout-only commit.
LAYOUT_CLASSES = 24
#: The commits checked against the base, in the order of a round (rotated round by round).
KINDS = ("empty", "layout", "planted")



def neighbour(stop: Any, megabytes: int = 64) -> None:
    """Keep a core busy scattering writes over a buffer many times a core's cache (and a good
    share of the L3 the machine's tenants share), until ``stop`` is set."""
    import numpy as np

    buf = np.zeros((megabytes << 20) // 8, dtype=np.int64)
    index = np.random.default_rng(1).integers(0, buf.size, 1 << 20)
    while not stop.is_set():
        np.add.at(buf, index, 1)


def scratch_repo(root: Path, plants: list[Any]) -> dict[str, str]:
    """A clone of HEAD in ``root`` with an empty, a layout-only and a planted commit, each
    on top of HEAD; their ids."""
    from workloads.regress import plants as P

    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(root)], check=True)
    base = P.git_out(root, "rev-parse", "HEAD")
    empty = P.commit(root, [], "empty commit (regress experiment)")
    P.git_out(root, "checkout", "-q", base)
    layout = P.layout_commit(root, LAYOUT_CLASSES, "layout-only commit (regress experiment)")
    P.git_out(root, "checkout", "-q", base)
    planted = P.commit(root, plants, "planted regression: " + ", ".join(
        f"{p.site}={p.loops}" for p in plants))
    return {"base": base, "empty": empty, "layout": layout, "planted": planted}


def round_kinds(i: int, planted: bool) -> tuple[str, ...]:
    """The commits of round ``i`` in their order: :data:`KINDS` rotated by ``i`` (each kind
    goes first, second and last equally often), without the planted one past
    ``--planted-runs``."""
    kinds = KINDS[i % len(KINDS):] + KINDS[:i % len(KINDS)]
    return tuple(k for k in kinds if planted or k != "planted")


def score(result: Any, plants: list[Any], loop_cost: dict[str, float], ops: int,
          planted: bool) -> dict[str, Any]:
    """One check's flags, with each benchmark's true planted share."""
    from workloads.regress import plants as P
    from workloads.regress import stats

    rows = []
    for e in result.estimates:
        share = P.planted_share(e.name, plants, loop_cost, ops, e.a_ns) if planted else 0.0
        rows.append({"name": e.name, "true_share": share, "ratio": e.ratio, "q": e.q,
                     "mde": e.mde, "verdict": e.verdict})
    flagged = [r for r in rows if r["verdict"] in (stats.SLOWER, stats.FASTER)]
    exact = [f"{c.name}:{c.metric}" for c in result.exact]  # no plant changes an exact figure
    # an empty commit changes nothing; a planted one can touch anything but the raw loops
    # (a scenario's records pass the key switch too, at a share this does not compute)
    nulls = [r for r in flagged if not planted or r["name"].startswith("raw/")]
    false = [r["name"] for r in nulls] + exact
    return {"seconds": round(result.seconds, 1), "false_flags": false,
            "flagged": [r["name"] for r in flagged], "rows": rows,
            "mde_by_family": result.mde_by_family()}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Detection per size bucket (the docs' buckets, workloads.regress.tables) and false
    flags over every run."""
    from workloads.regress import stats
    from workloads.regress.tables import BUCKETS

    planted = [r for r in runs if r["kind"] == "planted"]
    empty = [r for r in runs if r["kind"] == "empty"]
    layout = [r for r in runs if r["kind"] == "layout"]
    buckets = {}
    for label, lo, hi in BUCKETS:
        per_check = []
        for run in planted:
            rows = [row for row in run["rows"] if lo <= row["true_share"] < hi]
            if rows:
                per_check.append(sum(row["verdict"] == stats.SLOWER for row in rows) / len(rows))
        found = per_check
        buckets[label] = {
            "range": [lo, hi],
            "benchmarks_per_check": round(sum(
                sum(lo <= row["true_share"] < hi for row in run["rows"]) for run in planted)
                / max(1, len(planted)), 1),
            "share_flagged_per_check": [round(x, 3) for x in found],
            "checks_flagging_most": sum(x >= 0.5 for x in found),
            "share_flagged_overall": round(sum(found) / len(found), 3) if found else None,
        }
    return {
        "planted_checks": len(planted), "empty_checks": len(empty),
        "layout_checks": len(layout),
        "buckets": buckets,
        "false_flags_empty": sum(len(r["false_flags"]) for r in empty),
        "false_flags_layout": sum(len(r["false_flags"]) for r in layout),
        "false_flags_planted_nulls": sum(len(r["false_flags"]) for r in planted),
        "seconds_per_check": sorted(r["seconds"] for r in runs),
    }


def main(argv: list[str] | None = None) -> int:
    from workloads.cli.ab import export_revision
    from workloads.regress import plants as P
    from workloads.regress.check import PROTOCOLS, run_check
    from workloads.regress.pairs import INTERLEAVED, MODES, Revision
    from workloads.regress.report import json_safe

    parser = argparse.ArgumentParser(prog="python -m bench.regress_experiment",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="checks of each kind")
    parser.add_argument("--planted-runs", type=int, default=None,
                        help="planted checks (default: as many as --runs)")
    parser.add_argument("--neighbour", action="store_true", help="run a noisy neighbour")
    parser.add_argument("--protocol", default="quick", choices=sorted(PROTOCOLS))
    parser.add_argument("--mode", default=INTERLEAVED, choices=MODES)
    parser.add_argument("--plant", action="append", help="SITE=LOOPS (default: "
                        f"{', '.join(DEFAULT_PLANTS)})")
    parser.add_argument("--out", type=Path, required=True, help="the JSON document to write")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    args.planted_runs = args.runs if args.planted_runs is None else args.planted_runs
    if not 0 <= args.planted_runs <= args.runs:
        parser.error("--planted-runs must be in 0..--runs")
    if not args.out.parent.is_dir():
        parser.error(f"--out: no folder {args.out.parent}")
    plants = [P.Plant.parse(p) for p in (args.plant or DEFAULT_PLANTS)]
    protocol = PROTOCOLS[args.protocol]
    stop = multiprocessing.Event()
    noisy = None
    runs: list[dict[str, Any]] = []
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="statebench-regress-exp-") as tmp:
        repo = Path(tmp) / "repo"
        commits = scratch_repo(repo, plants)
        trees = {name: Revision(label, *export_revision(repo, commits[name],
                                                        Path(tmp) / name))
                 for name, label in (("base", "A"), *((k, "B") for k in KINDS))}
        loop_cost = {p.site: P.loop_ns(p.loops) for p in plants}
        if args.neighbour:
            noisy = multiprocessing.Process(target=neighbour, args=(stop,), daemon=True)
            noisy.start()
        try:
            for i in range(args.runs):
                for kind in round_kinds(i, i < args.planted_runs):
                    work = Path(tmp) / f"work-{kind}-{i}"
                    work.mkdir()
                    result = run_check(trees["base"], trees[kind], protocol, args.mode,
                                       seed=1000 + i, alpha=0.05, min_effect=0.03, work=work)
                    run = {"kind": kind, "index": i, "load": os.getloadavg(),
                           **score(result, plants, loop_cost, protocol.ops, kind == "planted")}
                    runs.append(run)
                    print(f"{kind:8s} {i}: {len(run['flagged'])} flagged, "
                          f"{len(run['false_flags'])} false, {run['seconds']} s, "
                          f"load {run['load'][0]:.1f}", file=sys.stderr)
        finally:
            stop.set()
            if noisy is not None:
                noisy.join(timeout=10)
                if noisy.is_alive():
                    noisy.terminate()
    doc = {"protocol": protocol.__dict__, "mode": args.mode, "neighbour": args.neighbour,
           "plants": [p.__dict__ for p in plants],
           "loop_ns": {k: round(v, 2) for k, v in loop_cost.items()}, "commits": commits,
           "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
           "minutes": round((time.time() - started) / 60, 1), "cpus": os.cpu_count(),
           "summary": summarise(runs), "runs": runs}
    args.out.write_text(json.dumps(json_safe(doc), indent=1) + "\n", encoding="utf-8")
    print(json.dumps(json_safe(doc["summary"]), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
