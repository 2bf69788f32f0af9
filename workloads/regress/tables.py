"""The docs' tables of the regression check's proof, made from the experiment's documents.

``bench/regress_experiment.py`` writes one document per condition (``docs/results/regress-*.json``:
every check's verdicts with each benchmark's true planted share). Here a benchmark belongs to
the size bucket of its true share averaged over the planted checks, and the table says, per
bucket, in how many planted checks each of its benchmarks was flagged (the least and the
median over the bucket's benchmarks), beside the false flags of the empty checks.
``workloads.report.readme_tables`` puts the tables in docs/performance.md and checks them.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The planted sizes the proof is about, as (label, low, high) shares of a benchmark's cost.
BUCKETS = (("about 5%", 0.04, 0.07), ("about 10%", 0.07, 0.14), ("about 20%", 0.14, 0.30))
#: The conditions, in the order the table gives them: (file, label).
CONDITIONS = (("regress-quiet.json", "no deliberate neighbour (before the layout draw)"),
              ("regress-noisy.json", "a noisy neighbour (one core, 64 MB scattered writes; "
               "before the layout draw)"),
              ("regress-layout.json", "the interpreter's layout drawn per pair (no "
               "deliberate neighbour; other jobs ran: see the load)"))
FULL = "regress-full.json"


def _doc(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise ValueError(f"{path}: not a regress experiment document (no runs)")
    return doc


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def detection(doc: dict[str, Any]) -> dict[str, Any]:
    """Per bucket: benchmarks, and in how many planted checks each was flagged."""
    planted = [r for r in doc["runs"] if r["kind"] == "planted"]
    shares: dict[str, list[float]] = {}
    flagged: dict[str, int] = {}
    for run in planted:
        for row in run["rows"]:
            shares.setdefault(row["name"], []).append(row["true_share"])
            flagged[row["name"]] = flagged.get(row["name"], 0) + (row["verdict"] == "slower")
    out = {}
    for label, lo, hi in BUCKETS:
        names = [n for n, s in shares.items() if lo <= statistics.fmean(s) < hi]
        counts = sorted(flagged[n] for n in names)
        out[label] = {"benchmarks": len(names), "least": counts[0] if counts else None,
                      "median": statistics.median(counts) if counts else None}
    return out


def _mde(runs: list[dict[str, Any]], family: str) -> str:
    values = [r["mde_by_family"][family] for r in runs if family in r.get("mde_by_family", {})]
    if not values:
        return "-"
    return f"{100 * statistics.median(values):.1f}%"


def detection_table(results: Path) -> str:
    """Planted sizes found and false flags, per condition."""
    rows = []
    for name, label in CONDITIONS:
        if not (results / name).exists() and name != CONDITIONS[0][0]:
            continue  # a condition not measured yet
        doc = _doc(results / name)
        runs = doc["runs"]
        planted = [r for r in runs if r["kind"] == "planted"]
        empty = [r for r in runs if r["kind"] == "empty"]
        layout = [r for r in runs if r["kind"] == "layout"]
        found = detection(doc)
        cells = [f"{b['median']:g} (least {b['least']}) of {len(planted)}, "
                 f"{b['benchmarks']} benchmarks" if b["benchmarks"] else "-"
                 for b in found.values()]
        seconds = sorted(r["seconds"] for r in runs)
        false_empty = sum(len(r["false_flags"]) for r in empty)
        false_layout = sum(len(r["false_flags"]) for r in layout)
        false_nulls = sum(len(r["false_flags"]) for r in planted)
        rows.append([label, *cells,
                     f"{false_empty} in {len(empty)} checks",
                     f"{false_layout} in {len(layout)} checks" if layout else "not run",
                     f"{false_nulls} in {len(planted)} checks",
                     f"{_mde(empty, 'state')} / {_mde(empty, 'raw')}",
                     f"{seconds[0] / 60:.1f}-{seconds[-1] / 60:.1f}",
                     f"{min(r['load'][0] for r in runs):.1f}-"
                     f"{max(r['load'][0] for r in runs):.1f}"])
    note = ("A benchmark's size is its true planted share (the loop's measured cost over the "
            "benchmark's own cost per operation), averaged over the planted checks; each "
            "cell is the median, over the bucket's benchmarks, of the planted checks that "
            "flagged one (the least in brackets). False flags: any benchmark called changed "
            "in an empty check, or in a layout-only check (a commit adding only unused classes, "
            "imported by backends: it moves the interpreter's class layout and no code; \"not "
            "run\": measured before the experiment had it); any raw loop (which no plant "
            "touches) called changed in a planted check. MDE: the median minimal detectable "
            "effect of the empty checks (state operations / raw loops).")
    return _md(["condition", *[f"{b[0]} slower: flagged in" for b in BUCKETS],
                "false flags, empty commits", "false flags, layout-only commits",
                "false flags, raw loops of planted commits",
                "MDE (state / raw)", "minutes per check", "load average"], rows) + "\n\n" + note


def full_table(results: Path) -> str:
    """The full check (state operations, scenario tracks, exact figures)."""
    doc = _doc(results / FULL)
    rows = []
    for run in doc["runs"]:
        slower = [r for r in run["rows"] if r["verdict"] == "slower"]
        scenarios = [r for r in slower if r["name"].startswith("scenario/")]
        rows.append([run["kind"], f"{run['seconds'] / 60:.1f}", f"{run['load'][0]:.1f}",
                     f"{len(slower)} ({len(scenarios)} scenario tracks)",
                     str(len(run["false_flags"])),
                     f"{100 * run['mde_by_family'].get('state', float('nan')):.1f}% / "
                     f"{100 * run['mde_by_family'].get('scenario', float('nan')):.1f}%"])
    return _md(["commit", "minutes", "load average", "slower",
                "false flags (incl. exact figures changed)",
                "MDE (state / scenario)"], rows)
