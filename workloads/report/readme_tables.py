"""The measured tables of the docs, regenerated from result files kept in the repository.

Every table of measured numbers in the docs (``docs/performance.md``) is produced here from a
small file under ``docs/results/``, with its spread, so a reader can
regenerate it and a test can check that the page says what the data says::

    python -m workloads.report.readme_tables                  # every table, as markdown
    python -m workloads.report.readme_tables --check docs/performance.md   # exit 1 if it differs
    python -m workloads.report.readme_tables paste docs/performance.md     # remake its blocks
    python -m workloads.report.readme_tables trim SUITE BENCH.json   # add a pytest-benchmark run
    python -m workloads.report.readme_tables keep-run RUN_DIR NAME   # keep a run's summary rows

In a page each table sits between ``<!-- table: NAME -->`` and ``<!-- /table -->``; the check
compares those blocks with what this module generates from the files, and ``paste`` replaces
them with it.

Input that is missing, malformed or of another workload (``keep-run`` of a run that is not the
table's workload, a kept folder holding one) is one line on stderr and exit 2, never a
traceback and never a table made without it: ``show`` prints the tables it could make and one
line for each it could not, and a table with no row is an error, not an empty table.

Sources (``TABLES`` lists them with the command that measures each):

* ``state-ops.json``, ``checkpoints.json``, ``runner.json``: pytest-benchmark runs of
  ``bench/pytest/test_bench_targets.py``, ``test_bench_snapshots.py`` and
  ``test_bench_runner.py`` (``--benchmark-json``), trimmed by ``trim`` to each benchmark's
  ``extra_info`` and timing stats; ``trim`` appends, so a file may hold several runs, and the
  tables then give the median and the range over runs.
* ``per-op.json``: the per-op suite's document (``python -m bench.perop run``).
* ``sessions-paced/<run-id>/``: ``statebench compare sessions-paced`` folders, their job-total
  rows of the table's metrics only (``keep-run``); the report's own loader reads them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import json
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workloads.regress import tables as regress_tables

RESULTS = Path("docs/results")
#: The workload whose kept runs make the ``sessions-paced`` table (``keep-run`` NAME).
PACED_WORKLOAD = "sessions-paced"
SCHEMA = "statebench-readme-bench-1"
TIMES = "x"
DASH = "-"


class TableProblem(ValueError):
    """An input of a table that is missing, malformed or of another workload: one line, naming
    the file (``main`` prints it and exits 2)."""


@dataclass(frozen=True)
class Table:
    """One README table: its name (the README's marker), the command that measures its data,
    the files it is made from, and the function that makes it."""

    name: str
    title: str
    command: str
    sources: tuple[str, ...]
    make: Callable[[Path], str]


# ------------------------------------------------------------------------------------------------
# Formatting
# ------------------------------------------------------------------------------------------------


def _g(x: float, digits: int = 2) -> str:
    """A ratio with ``digits`` decimals."""
    return f"{x:.{digits}f}"


def _si(x: float) -> str:
    for suffix, scale in (("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {suffix}"
    return f"{x:.3g}"


def _bytes(x: float) -> str:
    for suffix, scale in (("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {suffix}"
    return f"{x:.0f} B"


def _range(lo: float, hi: float, fmt: Callable[[float], str]) -> str:
    a, b = fmt(lo), fmt(hi)
    return a if a == b else f"{a}{DASH}{b}"


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _runs_note(runs: list[dict[str, Any]]) -> str:
    dates = sorted({r.get("created", "")[:10] for r in runs if r.get("created")})
    when = f", {', '.join(dates)}" if dates else ""
    return f"{len(runs)} run{'s' if len(runs) != 1 else ''}{when}"


# ------------------------------------------------------------------------------------------------
# pytest-benchmark runs, trimmed
# ------------------------------------------------------------------------------------------------


def trim_benchmark(raw: dict[str, Any]) -> dict[str, Any]:
    """One pytest-benchmark JSON reduced to what the tables read: per benchmark its name,
    ``extra_info`` and timing stats (seconds), plus when and where it ran."""
    machine = raw.get("machine_info", {})
    cpu = machine.get("cpu", {}) if isinstance(machine.get("cpu"), dict) else {}
    out = []
    for b in raw.get("benchmarks", []):
        stats = b.get("stats", {})
        out.append({
            "name": b.get("name"),
            "extra_info": b.get("extra_info", {}),
            "stats": {k: stats[k] for k in ("median", "min", "max", "q1", "q3", "rounds")
                      if k in stats},
        })
    return {
        "created": raw.get("datetime", ""),
        "machine": {"cpu": cpu.get("brand_raw", ""), "cores": cpu.get("count"),
                    "node": machine.get("node", "")},
        "commit": (raw.get("commit_info") or {}).get("id", ""),
        "benchmarks": out,
    }


def add_benchmark_run(path: Path, raw: dict[str, Any], suite: str) -> dict[str, Any]:
    """Append a trimmed run to ``path`` (created if missing) and return the document."""
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {
        "schema": SCHEMA, "suite": suite, "runs": []}
    doc["runs"].append(trim_benchmark(raw))
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return doc


def _runs(results: Path, name: str) -> list[dict[str, Any]]:
    doc = _read_json(results / name, "suite file")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA \
            or not isinstance(doc.get("runs"), list):
        raise TableProblem(f"suite file {results / name}: not a {SCHEMA} document")
    return list(doc["runs"])


def _infos(run: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    """The benchmarks of a run whose extra_info has every ``match`` item."""
    return [b for b in run["benchmarks"]
            if all(b["extra_info"].get(k) == v for k, v in match.items())]


def _one(run: dict[str, Any], **match: Any) -> dict[str, Any] | None:
    found = _infos(run, **match)
    return found[0] if found else None


def _over_runs(values: list[float], fmt: Callable[[float], str]) -> str:
    """One number per run: the median, and the range when there are several runs."""
    if not values:
        return "not measured"
    mid = fmt(statistics.median(values))
    if len(values) == 1 or fmt(min(values)) == fmt(max(values)):
        return mid
    return f"{mid} (runs {_range(min(values), max(values), fmt)})"


# ------------------------------------------------------------------------------------------------
# The tables
# ------------------------------------------------------------------------------------------------

STATE_OPS_ROWS = (
    ("heap", "ttl_nobg", "heap, TTL, background cleanup off", 0.5),
    ("heap", "ttl", "heap, TTL, Flink's default cleanup (incremental 5/access)", None),
    ("heap", "plain", "heap, no TTL", None),
    ("rocksdb", "ttl", "RocksDB, TTL (WAL off)", 0.6),
    ("rocksdb", "ttl_nobg", "RocksDB, TTL, background cleanup off", 0.6),
    ("rocksdb", "plain", "RocksDB, no TTL", None),
)


def state_ops_table(results: Path) -> str:
    """TTL ValueState.update vs the raw loop: per run the median of its paired rounds, with
    the rounds' min-max; over several runs the median of the medians and their range."""
    runs = _runs(results, "state-ops.json")
    rows = []
    for kind, variant, label, target in STATE_OPS_ROWS:
        found = [b["extra_info"] for r in runs
                 if (b := _one(r, kind=kind, variant=variant, op="value_update:paired"))]
        if not found:
            continue
        medians = [f["ratio_median"] for f in found]
        lo, hi = min(f["ratio_min"] for f in found), max(f["ratio_max"] for f in found)
        rounds = sum(f["rounds"] for f in found)
        mid = statistics.median(medians)
        cell = f"{_g(mid)}{TIMES} (rounds {_g(lo)}{DASH}{_g(hi)}, {rounds} rounds"
        cell += f"; run medians {_g(min(medians))}{DASH}{_g(max(medians))})" if len(found) > 1 \
            else ")"
        goal = "" if target is None else (
            f">= {target}{TIMES}: {'met' if mid >= target else 'not met'}"
            + (" (median; not every round)" if mid >= target and lo < target else ""))
        rows.append((label, cell, goal))
    return _md(("backend", "TTL ValueState.update vs raw loop: median (min-max)", "target"),
               rows) + (f"\n\n(rate of the state loop / rate of the raw loop, each round both "
                        "back to back: a dict loop storing `(v, ts)` for the heap, a rocksdict "
                        "put loop of the same bytes for RocksDB; 100 k ops over 100 k keys; "
                        f"{_runs_note(runs)}; `state-ops.json`)")


def checkpoints_table(results: Path) -> str:
    runs = _runs(results, "checkpoints.json")
    rows = []
    inc = [b for r in runs for b in r["benchmarks"] if "upload_ratio" in b["extra_info"]]
    if inc:
        ratios = [b["extra_info"]["upload_ratio"] for b in inc]
        worst = max(b["extra_info"]["max_upload_ratio"] for b in inc)
        e = inc[0]["extra_info"]
        rows.append((
            "RocksDB incremental checkpoint after changing 1% of the keys",
            f"{_over_runs(ratios, lambda x: f'{x:.1%}')} of the full checkpoint's bytes "
            f"({_bytes(e['uploaded_bytes'])} of {_bytes(e['full_bytes'])}; worst round "
            f"{worst:.1%})",
            f"<= 5%: {'met' if worst <= 0.05 else 'not met'}"))
    parts = []
    worst_round = 0.0
    for kind in ("heap", "rocksdb"):
        found = [b for r in runs for b in r["benchmarks"]
                 if b["extra_info"].get("kind") == kind and "ratio_vs_pyarrow" in b["extra_info"]]
        if found:
            med = [b["extra_info"]["ratio_vs_pyarrow"] for b in found]
            best = [b["extra_info"]["best_ratio_vs_pyarrow"] for b in found]
            worst_round = max(worst_round, *(b["stats"]["max"] /
                                             b["extra_info"]["pyarrow_baseline_median_s"]
                                             for b in found))
            parts.append((kind, statistics.median(med),
                          f"{kind} {_over_runs(med, lambda x: _g(x) + TIMES)} "
                          f"(best rounds {_g(min(best))}{TIMES})"))
    if parts:
        met = all(m <= 2 for _, m, _ in parts)
        rows.append(("full snapshot write time vs pyarrow writing the same rows (medians of "
                     "5 rounds)", "; ".join(p for _, _, p in parts),
                     f"<= 2x: {'met' if met else 'not met'} on medians; slowest round "
                     f"{_g(worst_round)}{TIMES}"))
    restore = []
    size = None
    for dest in ("heap", "rocksdb"):
        found = [b for r in runs for b in r["benchmarks"]
                 if b["extra_info"].get("dest") == dest
                 and b["extra_info"].get("key_groups") == "all"]
        if found:
            size = found[0]["extra_info"]["bytes_read"]
            med = [b["stats"]["median"] * 1e3 for b in found]
            lo = min(b["stats"]["min"] for b in found) * 1e3
            hi = max(b["stats"]["max"] for b in found) * 1e3
            restore.append(f"{dest} {statistics.median(med):.0f} ms ({lo:.0f}{DASH}{hi:.0f})")
    if restore:
        rows.append((f"restore, all key groups ({_bytes(size or 0)})", "; ".join(restore), ""))
    return _md(("what", "measured", "target"), rows) + \
        f"\n\n({_runs_note(runs)}; `checkpoints.json`)"


def _med(infos: list[dict[str, Any]], key: str) -> str:
    return _si(statistics.median(i[key] for i in infos))


def runner_table(results: Path) -> str:
    runs = _runs(results, "runner.json")
    rows = []
    spark = [b["extra_info"] for r in runs for b in r["benchmarks"]
             if "spark_records_per_s_per_core" in b["extra_info"]]
    if spark:
        ratios = [s["ratio"] for s in spark]
        mid = statistics.median(ratios)
        rows.append(("Spark local[2] records/s per core vs in-process (median of 3 "
                     "repetitions each)",
                     f"{_over_runs(ratios, lambda x: _g(x) + TIMES)} "
                     f"({_med(spark, 'spark_records_per_s_per_core')} vs "
                     f"{_med(spark, 'in_process_records_per_s_per_core')} records/s, medians)",
                     f">= 0.8x: {'met' if mid >= 0.8 else 'not met'}"))
    drop = [b["extra_info"] for r in runs for b in r["benchmarks"] if "drop" in b["extra_info"]]
    if drop:
        d = [x["drop"] for x in drop]
        mid = statistics.median(d)
        rows.append(("heap throughput drop from 10^4 to 10^6 keys",
                     f"{_over_runs(d, lambda x: f'{x:.0%}')} "
                     f"({_med(drop, 'records_per_s_1e4_keys')} -> "
                     f"{_med(drop, 'records_per_s_1e6_keys')} records/s, medians)",
                     f"<= 30%: {'met' if mid <= 0.30 else 'not met'}"))
    tws = [b["extra_info"] for r in runs for b in r["benchmarks"]
           if "transform_with_state_records_per_s" in b["extra_info"]]
    if tws:
        ours = [t["statebench_records_per_s"] for t in tws]
        theirs = [t["transform_with_state_records_per_s"] for t in tws]
        ratio = [t["ratio"] for t in tws]
        mid, mine = statistics.median(ratio), statistics.median(ours)
        rows.append(("statebench's Spark runner vs Spark's transformWithState (RocksDB state "
                     "store, TTL ValueState, Row API)",
                     f"{_over_runs(ours, _si)} records/s vs {_over_runs(theirs, _si)}: "
                     f"{_over_runs(ratio, lambda x: f'{x:.0f}{TIMES}')}",
                     f">= 100x and >= 1.3 M/s: "
                     f"{'met' if mid >= 100 and mine >= 1.3e6 else 'not met'}"))
    return _md(("what", "measured", "target"), rows) + \
        f"\n\n({_runs_note(runs)}; `runner.json`)"


PER_OP_OPS = ("value_update", "value_get", "list_add", "list_get", "map_put", "map_get",
              "map_iterate")


def _verdict(c: dict[str, Any]) -> str:
    r = c["ratio"]
    v = c["verdict"]
    if v == "disagree":
        v = (f"disagree: {1 / r['value']:.1f}{TIMES} dearer here" if r["value"] < 1
             else f"disagree: {r['value']:.1f}{TIMES} cheaper here")
    return f"{v} ({_g(r['value'])}, CI {_g(r['ci_low'])}{DASH}{_g(r['ci_high'])})" + (
        ", unstable" if c["unstable"] else "")


def _ci(x: dict[str, float]) -> str:
    return f"{_g(x['value'])} ({_g(x['ci_low'])}{DASH}{_g(x['ci_high'])})"


def per_op_table(results: Path, backend: str = "heap", ttl: str = "on") -> str:
    """TTL's relative cost (rate with TTL / without) on both sides, with 95% intervals, and
    the verdict from the interval of their ratio (statebench over Flink)."""
    doc = _read_json(results / "per-op.json", "per-op document")
    cells = {(c["backend"], c["ttl"], c["op"]): c for c in doc["cells"]}
    rows = []
    for op in PER_OP_OPS:
        c = cells.get((backend, ttl, op))
        if c is None:
            continue
        rows.append((op.replace("_", " "), _ci(c["flink_ttl_over_off"]),
                     _ci(c["statebench_ttl_over_off"]), _verdict(c)))
    p = doc["protocol"]
    counts = {v: sum(c["verdict"] == v for c in doc["cells"] if (c["backend"], c["ttl"]) ==
                     (backend, ttl)) for v in ("agree", "disagree", "undecided")}
    note = (f"({p['name']} protocol, {p['keys']:,} keys, clock {doc['clock']}, "
            f"{doc['created'][:10]}; " + ", ".join(f"{n} {v}" for v, n in counts.items())
            + "; `per-op.json`)")
    return _md(("op", "Flink (TTL / no TTL, 95% CI)", "statebench (TTL / no TTL, 95% CI)",
                "within 1.5x (statebench / Flink, 95% CI)"), rows) + f"\n\n{note}"


def per_op_table_no_bg(results: Path) -> str:
    return per_op_table(results, "heap", "on_no_bg")


PACED_SCENARIOS = (("rocksdb", "none"), ("rocksdb", "compaction_filter(1000)"),
                   ("flink-rocksdb", "none"), ("flink-rocksdb", "compaction_filter(1000)"))
#: What ``keep-run`` keeps of a sessions-paced run: the job totals of these metrics.
PACED_METRICS = ("records_per_s", "expired_present_entries", "physical_bytes",
                 "checkpoint_bytes", "rocksdb_flushes", "rocksdb_compactions",
                 "cleanup_removed_compaction_filter")


def paced_runs(results: Path) -> list[Any]:
    """The kept runs of ``sessions-paced/``; a folder there that is not a kept run of the
    workload is a problem, not a run silently left out or counted."""
    from workloads.report.load import load_run

    folder = results / PACED_WORKLOAD
    runs = []
    for d in sorted(folder.iterdir()):
        if not (d / "rows.parquet").is_file():
            continue
        run = load_run(d)
        workloads = sorted({key.workload for key in run.samples})
        if PACED_WORKLOAD not in workloads:
            raise TableProblem(f"{d}: a run of {', '.join(workloads) or 'no workload'}, not of "
                               f"{PACED_WORKLOAD}; remove it")
        runs.append(run)
    return runs


def _paced_repetitions(runs: list[Any]) -> str:
    """Repetitions per kept run, from the runs' own records/s rows (not assumed)."""
    from workloads.report.load import ScenarioKey

    counts = set()
    for run in runs:
        for backend, strategy in PACED_SCENARIOS:
            found = run.get(ScenarioKey(PACED_WORKLOAD, backend, strategy), "records_per_s")
            if found is not None:
                counts.add(len(found.values))
                break
    if not counts:
        return "?"
    lo, hi = min(counts), max(counts)
    return str(lo) if lo == hi else f"{lo}{DASH}{hi}"


def sessions_paced_table(results: Path) -> str:
    """sessions-paced's compaction-filter findings: records/s as the median (min-max) of all
    repetitions; the other numbers (repetition 0 of each run: wall-clock driven, so
    timing-dependent) as the median over the kept runs with their range."""
    from backends.strategies import BASELINE
    from workloads.report.engines import engine_of, engine_title
    from workloads.report.load import ScenarioKey
    from workloads.report.stats import stat

    runs = paced_runs(results)
    rows = []
    for backend, strategy in PACED_SCENARIOS:
        key = ScenarioKey(PACED_WORKLOAD, backend, strategy)
        if not any(key in r.samples for r in runs):
            continue

        def centers(metric: str, key: ScenarioKey = key) -> list[float]:
            found = [stat(r, key, metric) for r in runs]
            return [s.center for s in found if s is not None]

        rates = [float(v) for r in runs if (s := r.get(key, "records_per_s")) is not None
                 for v in s.values]
        rate = (f"{_si(statistics.median(rates))} ({_range(min(rates), max(rates), _si)})"
                if rates else "-")
        flushes, compactions = centers("rocksdb_flushes"), centers("rocksdb_compactions")
        removed = centers("cleanup_removed_compaction_filter")
        engine = engine_title(engine_of(backend))  # the lane registry's engine
        if not engine.counts_removals:
            filt = f"({engine.title} keeps no count)" if strategy != BASELINE else "-"
        else:
            filt = _over_runs(removed, _si) if removed else "0"
        rows.append((backend, strategy, rate,
                     _over_runs(centers("expired_present_entries"), _si),
                     _over_runs(centers("physical_bytes"), _bytes),
                     _over_runs(centers("checkpoint_bytes"), _bytes),
                     f"{_over_runs(flushes, lambda x: f'{x:.0f}')} / "
                     f"{_over_runs(compactions, lambda x: f'{x:.0f}')}",
                     filt))
    if not rows:
        raise TableProblem(f"{results / PACED_WORKLOAD}: no kept run has any of the table's "
                           f"scenarios ({', '.join(f'{b} {s}' for b, s in PACED_SCENARIOS)}); "
                           f"keep one with keep-run RUN_DIR {PACED_WORKLOAD}")
    reps = sum(len(r.get(ScenarioKey(PACED_WORKLOAD, *PACED_SCENARIOS[0]), "records_per_s")
                   .values) for r in runs if r.get(ScenarioKey(PACED_WORKLOAD,
                                                                *PACED_SCENARIOS[0]),
                                                    "records_per_s") is not None)
    created = sorted({str(r.meta.get("created_utc", ""))[:10] for r in runs})
    note = (f"({len(runs)} run{'s' if len(runs) != 1 else ''} of {_paced_repetitions(runs)} "
            "repetitions, "
            f"{', '.join(created)}: records/s over all {reps} repetitions; the rest, wall-clock "
            "driven, repetition 0 of each run; `sessions-paced/`)")
    return _md(("backend", "strategy", "records/s", "peak expired-but-present entries",
                "peak physical bytes", "checkpoint (median)", "flushes / compactions",
                "removed by the filter"), rows) + f"\n\n{note}"


TABLES: tuple[Table, ...] = (
    Table("state-ops", "State operations: TTL ValueState.update vs a raw loop",
          "python -m pytest bench/pytest/test_bench_targets.py --benchmark-json=B.json -s && "
          "python -m workloads.report.readme_tables trim state-ops B.json",
          ("state-ops.json",), state_ops_table),
    Table("per-op-heap-ttl", "TTL's relative cost, statebench vs Flink (heap, Flink's default "
          "cleanup)",
          "python -m bench.perop run --protocol wide --out docs/results/per-op.json",
          ("per-op.json",), per_op_table),
    Table("per-op-heap-ttl-no-bg", "TTL's relative cost, statebench vs Flink (heap, no "
          "background cleanup)",
          "python -m bench.perop run --protocol wide --out docs/results/per-op.json",
          ("per-op.json",), per_op_table_no_bg),
    Table("checkpoints", "Checkpoints (50 k keys)",
          "python -m pytest bench/pytest/test_bench_snapshots.py --benchmark-json=B.json -s && "
          "python -m workloads.report.readme_tables trim checkpoints B.json",
          ("checkpoints.json",), checkpoints_table),
    Table("runner", "The runner (ycsb-a, 1 M events, heap, TTL on)",
          "python -m pytest bench/pytest/test_bench_runner.py --benchmark-json=B.json -s && "
          "python -m workloads.report.readme_tables trim runner B.json",
          ("runner.json",), runner_table),
    Table("sessions-paced", "What the default comparison shows: sessions-paced",
          "statebench compare sessions-paced --backend rocksdb,flink-rocksdb && "
          "python -m workloads.report.readme_tables keep-run results/<run-id> sessions-paced",
          ("sessions-paced/",), sessions_paced_table),
    Table("regress", "Regressions across commits: planted slowdowns found, empty commits",
          "python -m bench.regress_experiment --runs 10 --out docs/results/regress-quiet.json "
          "&& python -m bench.regress_experiment --runs 10 --neighbour "
          "--out docs/results/regress-noisy.json (both before the layout draw) && "
          "python -m bench.regress_experiment --runs 2 --out docs/results/regress-layout.json",
          ("regress-quiet.json", "regress-noisy.json", "regress-layout.json"),
          regress_tables.detection_table),
    Table("regress-full", "The full regression check",
          "python -m bench.regress_experiment --protocol full --runs 3 --planted-runs 1 "
          "--out docs/results/regress-full.json",
          ("regress-full.json",), regress_tables.full_table),
)
SUITES = {"state-ops": "state-ops.json", "checkpoints": "checkpoints.json",
          "runner": "runner.json"}


def available(results: Path) -> list[Table]:
    """The tables whose source files exist under ``results``."""
    return [t for t in TABLES if all((results / s).exists() for s in t.sources)]


def block(table: Table, results: Path) -> str:
    """A table as it sits in the README: between its markers, with the command that remakes
    it."""
    return (f"<!-- table: {table.name} -->\n{table.make(results)}\n\n"
            f"Remade by `python -m workloads.report.readme_tables` from "
            f"{', '.join(f'`docs/results/{s}`' for s in table.sources)} "
            f"(measured by `{table.command}`).\n<!-- /table -->")


_BLOCK = re.compile(r"<!-- table: ([\w-]+) -->\n.*?<!-- /table -->", re.S)


def readme_blocks(text: str) -> dict[str, str]:
    """The marked table blocks of a README, by name."""
    return {m.group(1): m.group(0) for m in _BLOCK.finditer(text)}


def check(readme: Path, results: Path) -> list[str]:
    """Problems: a table the README lacks, or a block that differs from the data (a diff)."""
    have = readme_blocks(readme.read_text(encoding="utf-8"))
    problems = []
    for table in available(results):
        want = block(table, results)
        if table.name not in have:
            problems.append(f"{readme}: no <!-- table: {table.name} --> block")
        elif have[table.name] != want:
            diff = difflib.unified_diff(have[table.name].splitlines(), want.splitlines(),
                                        f"README {table.name}", "from the data", lineterm="")
            problems.append("\n".join(diff))
    return problems


def paste(page: Path, results: Path) -> list[str]:
    """Replace the page's marked blocks with the tables made from the data; the names of the
    blocks that changed. A table the page lacks is not added (where it goes is prose)."""
    text = page.read_text(encoding="utf-8")
    made = {t.name: block(t, results) for t in available(results)}
    changed = [name for name, have in readme_blocks(text).items()
               if name in made and made[name] != have]
    new = _BLOCK.sub(lambda m: made.get(m.group(1), m.group(0)), text)
    if new != text:
        page.write_text(new, encoding="utf-8")
    return changed


def keep_run(run_dir: Path, name: str, results: Path) -> Path:
    """Keep a run's job totals of the table's metrics (and its run.json) under
    ``results/NAME/<run-id>/``: a few kB instead of the run's full rows."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from workloads.report.load import load_run

    run = load_run(run_dir)  # a run folder (one RunFolderError line otherwise)
    rows = pq.read_table(run_dir / "rows.parquet")
    workloads = sorted(set(rows.column("workload").to_pylist()))
    if name not in workloads:  # a compare run may hold several workloads: this one's rows
        raise TableProblem(f"{run_dir}: a run of {', '.join(map(str, workloads)) or 'nothing'};"
                           f" the {name} table keeps runs of {name} only")
    keep = pc.and_(pc.and_(pc.equal(rows["task"], -1), pc.equal(rows["workload"], name)),
                   pc.is_in(rows["metric"], pa_array((*PACED_METRICS, "not_applicable"))))
    kept = rows.filter(keep)
    scenarios = {(b, s) for b, s in zip(kept.column("backend").to_pylist(),
                                        kept.column("strategy").to_pylist())}
    if not scenarios & set(PACED_SCENARIOS):
        raise TableProblem(f"{run_dir}: has none of the table's scenarios "
                           f"({', '.join(f'{b} {s}' for b, s in PACED_SCENARIOS)})")
    out = results / name / run_dir.name
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(kept, out / "rows.parquet", compression="zstd")
    (out / "run.json").write_text(json.dumps(run.meta, indent=1, sort_keys=True) + "\n",
                                  encoding="utf-8")
    return out


def pa_array(values: Sequence[str]) -> Any:
    import pyarrow as pa

    return pa.array(list(values), pa.string())


def _read_json(path: Path, what: str) -> Any:
    """A JSON input (untrusted: any size or type); one TableProblem line when it is not."""
    from workloads import limits

    try:
        data = limits.read_bounded(path, limits.MAX_RUN_JSON_BYTES, what)
        return json.loads(limits.decode_text(data, path, what))
    except FileNotFoundError:
        raise TableProblem(f"{what} {path}: no such file") from None
    except limits.FileProblem as exc:
        raise TableProblem(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise TableProblem(f"{what} {path}: not valid JSON ({exc})") from None


#: What a table's maker raises on an input it cannot read: said in one line, never a traceback.
_INPUT_ERRORS = (TableProblem, OSError, ValueError, KeyError, TypeError, IndexError,
                 AttributeError, ZeroDivisionError, statistics.StatisticsError)


def _problem(exc: BaseException, where: str) -> str:
    """One line for an input problem (the message of ours; the kind and text of another)."""
    if isinstance(exc, TableProblem | FileNotFoundError) or type(exc).__name__ == \
            "RunFolderError":
        text = str(exc)
    elif isinstance(exc, KeyError):
        text = f"a malformed file: field {exc} is missing"
    else:
        text = f"a malformed file ({type(exc).__name__}: {exc})"
    return f"{where}: {text}".replace("\n", " ")


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring); bad input is one line on stderr and exit 2."""
    try:
        return _main(argv)
    except _INPUT_ERRORS as exc:
        print(f"readme_tables: error: {_problem(exc, 'input')}", file=sys.stderr)
        return 2


def _main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workloads.report.readme_tables",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, default=RESULTS, help="default docs/results")
    sub = p.add_subparsers(dest="cmd")
    show = sub.add_parser("show", help="print every table (the default)")
    show.add_argument("--check", type=Path, metavar="README",
                      help="compare with the README's marked blocks; exit 1 if they differ")
    t = sub.add_parser("trim", help="append a pytest-benchmark JSON to a suite's file")
    t.add_argument("suite", choices=sorted(SUITES))
    t.add_argument("bench_json", type=Path)
    pa_ = sub.add_parser("paste", help="replace a page's marked blocks with the tables")
    pa_.add_argument("page", type=Path)
    k = sub.add_parser("keep-run", help="keep a run folder's table rows under docs/results")
    k.add_argument("run_dir", type=Path)
    k.add_argument("name", choices=["sessions-paced"])
    p.add_argument("--check", type=Path, metavar="README", dest="check_top",
                   help="as `show --check`")
    args = p.parse_args(argv)
    results: Path = args.results
    if args.cmd == "trim":
        raw = _read_json(args.bench_json, "pytest-benchmark JSON")
        if not isinstance(raw, dict) or not isinstance(raw.get("benchmarks"), list):
            raise TableProblem(f"pytest-benchmark JSON {args.bench_json}: not a pytest-"
                               "benchmark document (no benchmarks list)")
        target = results / SUITES[args.suite]
        if target.exists():
            doc = _read_json(target, "suite file")
            if not isinstance(doc, dict) or doc.get("schema") != SCHEMA \
                    or not isinstance(doc.get("runs"), list):
                raise TableProblem(f"suite file {target}: not a {SCHEMA} document")
        add_benchmark_run(target, raw, args.suite)
        return 0
    if args.cmd == "paste":
        for name in paste(args.page, results):
            print(f"{args.page}: remade {name}")
        return 0
    if args.cmd == "keep-run":
        print(keep_run(args.run_dir, args.name, results))
        return 0
    readme = getattr(args, "check", None) or args.check_top
    if readme is not None:
        if not readme.is_file():
            raise TableProblem(f"--check {readme}: no such file")
        problems = check(readme, results)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    if not results.is_dir():
        raise TableProblem(f"--results {results}: no such folder")
    made, bad = [], []
    for table in available(results):  # each table's input problem is one line of its own
        try:
            made.append(f"\n### {table.title}\n\n{block(table, results)}")
        except _INPUT_ERRORS as exc:
            where = f"table {table.name} ({', '.join(str(results / x) for x in table.sources)})"
            bad.append(f"readme_tables: error: {_problem(exc, where)}")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"<!-- made by python -m workloads.report.readme_tables, {stamp} -->")
    for text in made:
        print(text)
    missing = [t.name for t in TABLES if t not in available(results)]
    if missing:
        print(f"\n(no data yet for: {', '.join(missing)})", file=sys.stderr)
    for line in bad:
        print(line, file=sys.stderr)
    return 2 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
