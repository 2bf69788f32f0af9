"""Change points in an asv history: per benchmark, the commit where its level stepped.

``python -m bench.changepoints RESULTS_DIR [--machine M] [--benchmark REGEX] [--repo PATH]
[--json OUT]``

Reads an asv results folder (``<RESULTS_DIR>/<machine>/<commit>-<env>.json`` and
``benchmarks.json``, as ``asv run`` writes them) with asv's own loader, puts each benchmark's
history (one per parameter set and environment) in commit order, cuts it into constant pieces
with asv's own step detection (``asv.step_detect.detect_steps``, what its published site uses),
and names the commits where a piece's level differs from the one before by more than the
unit's minimum (``workloads.report.changepoints``: 5% for a ratio, 10% for a time, any change
of an exact count). asv's site lists regressions only and leaves the threshold to a graph's
reader; this is the list of both directions, each with its commit, levels and their ratio.

The commit order is the git log of ``--repo`` (this repository by default), as asv's
``Repo.get_revisions`` gives it; results of commits it does not have are put in the order of
their commit dates (which ties commits made within one second: the report says so). Only
results of each benchmark's current version (benchmarks.json) are read, as asv's site does.
The report exits 0 whatever it finds, and 2 with one line for input it cannot read.

asv imports every module of bench/ in the environments it builds, where asv itself is not
installed and an older commit's statebench may lack workloads.report.changepoints: both are
imported inside the functions that use them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "statebench-asv-changepoints-2"
#: Units whose histories are shown but not judged: an absolute time of one commit is measured
#: minutes apart from its neighbours' and moves with the machine (docs/performance.md, "Steps
#: between commits"); a same-process ratio or an exact count is what names a commit.
MACHINE_DEPENDENT_UNITS = frozenset({"seconds"})
REPO = Path(__file__).resolve().parents[1]


class BadInput(ValueError):
    """Input the report cannot read: one line saying why."""


@dataclass(frozen=True)
class History:
    """One benchmark's values in commit order, for one parameter set and environment."""

    benchmark: str
    params: tuple[tuple[str, str], ...]
    env: str
    unit: str
    values: list[float | None]
    #: asv's weights (from each result's confidence interval; None where it has none)
    weights: list[float | None]

    @property
    def label(self) -> str:
        if not self.params:
            return self.benchmark
        return f"{self.benchmark}({', '.join(v for _, v in self.params)})"


def _unquote(value: str) -> str:
    """asv stores parameter values as their repr: 'heap' with its quotes."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def machines(results_dir: Path) -> list[str]:
    """The machines of an asv results folder: its subfolders that hold a machine.json."""
    return sorted(p.parent.name for p in results_dir.glob("*/machine.json"))


def _pick_machine(results_dir: Path, machine: str | None) -> str:
    if not results_dir.is_dir():
        raise BadInput(f"{results_dir}: no such folder")
    if not (results_dir / "benchmarks.json").is_file():
        raise BadInput(f"{results_dir} is not an asv results folder (no benchmarks.json)")
    known = machines(results_dir)
    if not known:
        raise BadInput(f"{results_dir} is not an asv results folder (no <machine>/machine.json)")
    if machine is None:
        if len(known) > 1:
            raise BadInput(f"{results_dir} has several machines ({', '.join(known)}): name one "
                           "with --machine")
        return known[0]
    if machine not in known:
        raise BadInput(f"unknown machine '{machine}' in {results_dir} (it has: "
                       f"{', '.join(known)})")
    return machine


def _git_order(repo: Path | None, hashes: set[str]) -> dict[str, int] | None:
    """asv's revision numbers of ``hashes`` in ``repo`` (``rev-list --all --date-order``), or
    None unless the repository has them all."""
    from asv.plugins.git import Git

    if repo is None or not Git.is_local_repo(str(repo)):
        return None
    try:
        revisions = Git(str(repo), str(repo)).get_revisions(hashes)
    except Exception:  # asv's ProcessError: not a repository git can read
        return None
    return revisions if set(revisions) == hashes else None


def _subjects(repo: Path, hashes: list[str]) -> dict[str, str]:
    """Each commit's subject line, where ``repo`` has it."""
    proc = subprocess.run(["git", "log", "--no-walk=unsorted", "--format=%H %s", *hashes],
                          cwd=repo, capture_output=True, text=True, check=False)
    if proc.returncode:
        return {}
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)


def load_histories(results_dir: Path, machine: str, repo: Path | None,
                   pattern: re.Pattern[str] | None) -> tuple[list[str], str, list[History]]:
    """(the commits in order, "git" or "date", every history whose benchmark name or
    ``name(params)`` label matches ``pattern``) from asv's results of ``machine``."""
    from asv import util
    from asv._stats import get_weight
    from asv.benchmarks import Benchmarks
    from asv.results import iter_results_for_machine

    try:
        benchmarks = util.load_json(str(results_dir / "benchmarks.json"),
                                    api_version=Benchmarks.api_version)
    except util.UserError as exc:
        raise BadInput(f"{results_dir}/benchmarks.json: {str(exc).splitlines()[0]}") from None
    results = list(iter_results_for_machine(str(results_dir), machine))
    if not results:
        raise BadInput(f"machine '{machine}' has no asv results in {results_dir}")
    dates = {r.commit_hash: r.date or 0 for r in results}
    revisions = _git_order(repo, set(dates))
    order = "git" if revisions is not None else "date"
    key = revisions.__getitem__ if revisions is not None else lambda h: (dates[h], h)
    commits = sorted(dates, key=key)
    position = {h: i for i, h in enumerate(commits)}
    envs = {r.env_name for r in results}
    series: dict[tuple[str, tuple, str], tuple[list, list]] = {}
    for r in results:
        for name in sorted(r.get_result_keys(benchmarks)):
            params = r.get_result_params(name)
            combos = list(itertools.product(*params))  # [()] without parameters
            asv_label = [f"{name}({', '.join(c)})" if c else name for c in combos]
            values = r.get_result_value(name, params)  # a list, one value per combination
            stats = r.get_result_stats(name, params)
            names = benchmarks[name].get("param_names") or []
            for j, combo in enumerate(combos):
                if pattern is not None and not (pattern.search(name)
                                                or pattern.search(asv_label[j])):
                    continue
                shown = tuple((n, _unquote(v)) for n, v in zip(names, combo))
                env = r.env_name if len(envs) > 1 else ""
                ys, ws = series.setdefault((name, shown, env), ([None] * len(commits),
                                                                 [None] * len(commits)))
                v = values[j] if values is not None else None
                ys[position[r.commit_hash]] = None if v is None or math.isnan(v) else float(v)
                ws[position[r.commit_hash]] = get_weight(stats[j] if stats else None)
    histories = [History(name, params, env, benchmarks[name].get("unit") or "", ys, ws)
                 for (name, params, env), (ys, ws) in sorted(series.items())
                 if any(y is not None for y in ys)]  # skipped or failed at every commit: none
    return commits, order, histories


def analyse(history: History) -> tuple[str, float, list[Any], set[int]]:
    """(kind: "exact" or "measured", the least change reported, the change points, the
    positions asv's own ``detect_regressions`` would list as a regression's first commit)."""
    from asv.step_detect import detect_regressions, detect_steps

    from workloads.report import changepoints as cp

    exact = cp.is_exact(history.unit, history.values)
    least = cp.min_change(history.unit, exact)
    if exact:
        pieces = cp.exact_pieces(history.values)
        found = cp.change_points(history.values, pieces, least, min_piece=1)
    else:
        pieces = [tuple(p) for p in detect_steps(history.values, history.weights)]
        found = cp.change_points(history.values, pieces, least)
    _, _, jumps = detect_regressions(pieces, threshold=least)
    flagged = {after for _, after, _, _ in jumps or ()}
    return ("exact" if exact else "measured"), least, found, flagged


def report(results_dir: Path, machine: str | None = None, repo: Path | None = REPO,
           pattern: str | None = None) -> dict[str, Any]:
    """The change-point report of an asv results folder as a JSON-ready document (BadInput
    for a folder it cannot read)."""
    from workloads.report import changepoints as cp

    try:
        regex = re.compile(pattern) if pattern is not None else None
    except re.error as exc:
        raise BadInput(f"bad --benchmark regex {pattern!r}: {exc}") from None
    machine = _pick_machine(results_dir, machine)
    commits, order, histories = load_histories(results_dir, machine, repo, regex)
    subjects = _subjects(repo, commits) if order == "git" and repo is not None else {}
    points, per_benchmark = [], {}
    for h in histories:
        kind, least, found, flagged = analyse(h)
        counts = per_benchmark.setdefault(h.benchmark, {"unit": h.unit, "histories": 0,
                                                        "with_a_change": 0})
        counts["histories"] += 1
        counts["with_a_change"] += bool(found)
        for c in found:
            points.append({
                "benchmark": h.benchmark, "params": dict(h.params), **({"env": h.env} if h.env
                                                                      else {}),
                "unit": h.unit, "kind": kind, "min_change": least,
                "commit": commits[c.first_after], "position": c.first_after + 1,
                "last_before": commits[c.last_before],
                "before": c.before, "after": c.after, "ratio": c.ratio,
                "asv_regression": c.first_after in flagged,
                "judged": h.unit not in MACHINE_DEPENDENT_UNITS,
            })
    return {
        "schema": SCHEMA, "results_dir": str(results_dir), "machine": machine,
        "order": order, "repo": str(repo) if order == "git" else None,
        "commits": [{"position": i + 1, "commit": h, **({"subject": subjects[h]}
                                                          if h in subjects else {})}
                    for i, h in enumerate(commits)],
        "rules": {"min_change": cp.MIN_CHANGE, "default_min_change": cp.DEFAULT_MIN_CHANGE,
                  "exact": "any change", "min_piece": cp.MIN_PIECE},
        "histories": len(histories), "benchmarks": per_benchmark, "change_points": points,
        "judged_commits": sorted({p["commit"] for p in points if p["judged"]},
                                 key=commits.index),
    }


def format_report(doc: dict[str, Any]) -> list[str]:
    """The console table of a report document."""
    n = len(doc["commits"])
    how = ("the git log of " + doc["repo"] if doc["order"] == "git" else
           "commit dates (the repository lacks some commits: ties are ordered by hash)")
    lines = [f"asv results {doc['results_dir']}, machine {doc['machine']}: {n} commits in the "
             f"order of {how}; {doc['histories']} histories, "
             f"{len(doc['change_points'])} change points"]
    for name, c in sorted(doc["benchmarks"].items()):
        lines.append(f"  {name} ({c['unit'] or 'no unit'}): {c['with_a_change']} of "
                     f"{c['histories']} histories change")
    judged = doc.get("judged_commits", [])
    lines.append("  commits named (ratios and exact counts): " + (
        ", ".join(f"{c[:8]} ({[x['commit'] for x in doc['commits']].index(c) + 1}/{n})"
                  for c in judged) or "none"))
    if not doc["change_points"]:
        return lines
    rows = [("benchmark", "commit", "at", "before", "after", "after/before", "kind", "asv",
             "judged")]
    for p in doc["change_points"]:
        label = p["benchmark"] + (f"({', '.join(p['params'].values())})" if p["params"] else "")
        rows.append((label, p["commit"][:8], f"{p['position']}/{n}", f"{p['before']:.4g}",
                     f"{p['after']:.4g}", f"{p['ratio']:.3f}x",
                     p["kind"] if p["kind"] == "exact" else f">{p['min_change']:.0%}",
                     "regression" if p["asv_regression"] else "",
                     "yes" if p.get("judged", True) else "no: an absolute time"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines.append("")
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.changepoints",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    parser.add_argument("--machine", default=None,
                        help="the machine's results (required where the folder has several)")
    parser.add_argument("--benchmark", default=None, metavar="REGEX",
                        help="only benchmarks whose name or name(params) matches")
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the git repository whose log orders the commits (default: this "
                             "one)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT",
                        help="also write the report as JSON")
    args = parser.parse_args(argv)
    try:
        doc = report(args.results_dir, args.machine, args.repo, args.benchmark)
        if args.json is not None:
            args.json.write_text(json.dumps(doc, indent=1) + "\n")
    except (BadInput, OSError) as exc:
        print(f"bench.changepoints: {exc}", file=sys.stderr)
        return 2
    print("\n".join(format_report(doc)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
