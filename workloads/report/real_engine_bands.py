"""Measure the bands "differ by construction" may claim, and write them as data.

``workloads.report.real_engine`` calls a gap between the real Flink SQL job and the emulated
operator "by construction" only where a known cause is listed AND the gap lies inside the band
that repeated real-job runs measured for it. This module runs those repetitions and writes
``workloads/report/data/real-engine-bands.json`` (package data):

    python -m workloads.report.real_engine_bands            # 3 runs of each default workload
    python -m workloads.report.real_engine_bands --repeats 5 --workloads nexmark-q7-window
    python -m workloads.report.real_engine_bands --neighbour-repeats 2 --add  # 2 more, loaded
    python -m workloads.report.real_engine_bands --verdicts RUNS.json  # each run's verdicts

Each repetition is a separate ``statebench run`` of the workload, in-process, over both real
lanes and their emulated lanes (``flink-sql`` beside ``flink-rocksdb``, ``flink-sql-heap``
beside ``flink-heap``) with the strategies SQL runs (``compaction_filter`` on RocksDB,
``incremental(5, false)`` on HashMap: ``table.exec.state.ttl`` configures no other), so each
one is a fresh real job. ``--neighbour-repeats K`` adds K repetitions run beside a neighbour
that keeps every core busy (one spinning process per core), so a band covers the machine
loaded as well as quiet; each run records its condition and the load average it ended at.
``--add`` keeps the runs already in ``--out`` and adds these (the document lists every
command that made it). Per (operator kind, measure, real lane,
emulated lane, TTL or not) the file keeps every run's value and the band: for peak entries and
peak checkpoint bytes the smallest and largest real / emulated ratio, for
``ttl_changed_results`` the real job's smallest and largest share (its spread). The ratios are
the report's own (:func:`workloads.report.real_engine.real_pairs`), so the band and the verdict
measure the same thing. A band over fewer than three runs is written but never used.

Why runs and not a formula: the causes (RocksDB's estimate counting overwrites until a
compaction, row serializers, when each side's cleanup ran) set a direction, not a size; the size
moves with memtable flushes and where checkpoints fall, which only repeated runs show.

``--verdicts FILE`` prints, for every run of a document this tool wrote, the verdicts the report
would give it against the shipped bands (``--bands`` for others; ``--held-out``: against the
bands of the document's other runs, so that no run is judged by a band it made), one row per
operator kind: how a run quiet and a run beside the neighbour are compared, verdict by verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
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
    OUTPUTS,
    TTL_CHANGED,
    Bands,
    RealPair,
    agreement,
    outputs_agreement,
    parse_bands,
    real_pairs,
    ttl_changed_agreement,
)

#: The shipped specs of every kind the flink-sql lane runs.
DEFAULT_WORKLOADS = ("nexmark-q18-dedup", "nexmark-q20-join", "nexmark-q7-window",
                     "nexmark-q4-agg", "nexmark-q5-sliding", "nexmark-q11-session",
                     "nexmark-interval-join", "nexmark-q19-topn")
DEFAULT_BACKENDS = ("flink-rocksdb", "flink-sql", "flink-heap", "flink-sql-heap")
#: What ``table.exec.state.ttl`` runs on each backend: the only strategies a real job pairs.
DEFAULT_STRATEGIES = ("compaction_filter", "incremental(5, false)")
#: Conditions a run is recorded under.
QUIET = "no deliberate neighbour"
LOADED = "beside a neighbour loading every core"


class Neighbour:
    """Spinning processes, one per core unless ``processes`` says how many, for the length of
    a ``with`` block: the machine loaded the way a busy tenant loads it."""

    def __init__(self, processes: int | None = None) -> None:
        self.processes = processes or os.cpu_count() or 1

    def __enter__(self) -> Neighbour:
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(self.processes)]
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def pair_record(p: RealPair, workload: str, repeat: int, condition: str = QUIET,
                load_1m: float | None = None) -> dict[str, Any]:
    """One real-job run's numbers beside the emulation's, as the report computes them."""
    out: dict[str, Any] = {"workload": workload, "kind": p.kind, "strategy": p.strategy,
                           "ttl": p.ttl, "real": p.real, "emulated": p.emulated,
                           "repeat": repeat, "condition": condition, "load_1m": load_1m}
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
        loaded = sum(1 for r in runs if r.get("condition") == LOADED
                     and (r["kind"], r["real"], r["emulated"], bool(r["ttl"]))
                     == (kind, real, emulated, ttl))
        where = f", {loaded} of them beside a neighbour loading every core" if loaded else ""
        out.append({"kind": kind, "measure": measure, "real": real, "emulated": emulated,
                    "ttl": ttl, "lo": min(values), "hi": max(values), "runs": len(values),
                    "values": values,
                    "source": f"{', '.join(workloads)}, {len(values)} runs "
                              f"({'with' if ttl else 'without'} TTL{where})"})
    return out


def measure(workloads: Sequence[str], backends: Sequence[str], strategies: Sequence[str],
            repeats: int, events: int | None, log: Any = sys.stderr,
            done: Any = None, loaded: int = 0) -> list[dict[str, Any]]:
    """Run every workload ``repeats`` times (each a fresh real job), then ``loaded`` more
    times beside a :class:`Neighbour`, and return each run's pair records; ``done(records)``
    after each workload (the file is written as it goes, so an interrupted measurement keeps
    the workloads it finished)."""
    from workloads.report.load import load_run
    from workloads.run import run_tempdirs
    from workloads.run.compare import run_comparison, write_comparison
    from workloads.run.plan import RunConfig
    from workloads.spec import load_spec

    records: list[dict[str, Any]] = []
    # owner-tagged: a run stopped by a signal removes it, one killed outright is swept by the
    # next start (this tool's or any statebench command's)
    run_tempdirs.sweep()
    with run_tempdirs.temp_dir("statebench-bands-") as tmp:
        for name in workloads:
            spec = load_spec(name)
            if events is not None:
                spec = spec.with_overrides(events=events)
            for repeat in range(repeats + loaded):
                started = time.monotonic()
                condition = QUIET if repeat < repeats else LOADED
                # what `statebench run NAME --in-process --backend .. --strategy ..` runs
                cfg = RunConfig(spec=spec, backends=tuple(backends),
                                strategies=tuple(strategies))
                with Neighbour() if condition == LOADED else contextlib.nullcontext():
                    outcomes = run_comparison([cfg], in_process=True)
                load_1m = os.getloadavg()[0]
                run = load_run(write_comparison(outcomes, Path(tmp) / f"{name}-{repeat}"))
                found = [pair_record(p, name, repeat, condition, load_1m)
                         for p in real_pairs(run, name, bands={})]
                records += found
                print(f"{name} run {repeat + 1}/{repeats + loaded} ({condition}): "
                      f"{len(found)} pairs, {time.monotonic() - started:.0f} s, load "
                      f"{load_1m:.1f}", file=log, flush=True)
            if done is not None:
                done(records)
    return records


def record_verdicts(r: dict[str, Any], bands: Bands) -> dict[str, tuple[str, float | None]]:
    """The report's verdict code on each measure of one pair record (and the number it judged:
    the ratio, or for TTL-changed outputs the real share), against ``bands``."""
    out: dict[str, tuple[str, float | None]] = {}
    outputs = r.get(OUTPUTS) or {}
    if outputs.get("real") is not None and outputs.get("emulated") is not None:
        out[OUTPUTS] = (outputs_agreement(outputs["real"], outputs["emulated"]).code,
                        outputs.get("ratio"))
    for measure in (ENTRIES, CHECKPOINT):
        ratio = (r.get(measure) or {}).get("ratio")
        if ratio is not None and ratio > 0:
            out[measure] = (agreement(ratio, r["kind"], measure, r["real"], r["emulated"],
                                      bool(r["ttl"]), bands).code, ratio)
    changed = r.get(TTL_CHANGED) or {}
    if r["ttl"] and changed.get("real") is not None and changed.get("emulated") is not None:
        out[TTL_CHANGED] = (ttl_changed_agreement(changed["real"], changed["emulated"],
                                                  r["kind"], r["real"], r["emulated"],
                                                  bands).code, changed["real"])
    return out


def held_out_bands(runs: Sequence[dict[str, Any]], workload: str, repeat: int) -> Bands:
    """The bands of every run but one (``workload``'s repetition ``repeat``): what that run is
    judged against when it must not be part of its own band."""
    return parse_bands({"bands": bands_from_runs(
        [r for r in runs if (r["workload"], r["repeat"]) != (workload, repeat)])})


def verdict_table(runs: Sequence[dict[str, Any]], bands: Bands | None) -> str:
    """A markdown table, a row per run and real lane: each measure's number and verdict; then
    the cells whose verdict moved between runs - to or from "differ" (the runs disagree on
    whether the real job and the emulation differ), or only between "agree" and "differ by
    construction" (both say the gap is understood). ``bands`` None: each run is judged against
    the bands of the others (:func:`held_out_bands`), so that a run never vouches for itself."""
    rows = []
    by_cell: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for r in sorted(runs, key=lambda r: (r["repeat"], r["kind"], r["real"])):
        judged_by = (held_out_bands(runs, r["workload"], r["repeat"]) if bands is None
                     else bands)
        found = record_verdicts(r, judged_by)
        cells = []
        for measure in (OUTPUTS, TTL_CHANGED, ENTRIES, CHECKPOINT):
            code, number = found.get(measure, ("-", None))
            by_cell[(r["kind"], r["real"], measure)].add(code)
            shown = ("" if number is None else f"{number:.1%} " if measure == TTL_CHANGED
                     else f"{number:.2f}x ")
            cells.append(f"{shown}{code}")
        load = r.get("load_1m")
        rows.append(f"| {r['repeat']} | {r.get('condition', QUIET)} | "
                    f"{'-' if load is None else f'{load:.1f}'} | {r['kind']} | {r['real']} | "
                    + " | ".join(cells) + " |")
    head = ("| run | condition | load | kind | real lane | outputs | TTL changed | entries | "
            "checkpoint bytes |\n|---|---|---|---|---|---|---|---|---|")
    def moved(flip: bool) -> str:
        found = [f"{kind} {real} {measure}: {', '.join(sorted(codes))}"
                 for (kind, real, measure), codes in sorted(by_cell.items())
                 if len(codes) > 1 and ("differ" in codes) == flip]
        return "; ".join(found) if found else "none"

    return "\n".join([head, *rows, "", f"differ in some runs only: {moved(True)}",
                      f"agree in some runs, differ by construction in others: {moved(False)}"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workloads.report.real_engine_bands",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=MIN_BAND_RUNS)
    parser.add_argument("--neighbour-repeats", type=int, default=0,
                        help="more repetitions beside a neighbour loading every core")
    parser.add_argument("--add", action="store_true",
                        help="keep the runs already in --out and add these")
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS))
    parser.add_argument("--backends", default=",".join(DEFAULT_BACKENDS))
    parser.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES))
    parser.add_argument("--events", type=int, default=None,
                        help="events per run (default: each spec's)")
    parser.add_argument("--out", default=str(BANDS_PATH))
    parser.add_argument("--verdicts", default=None, metavar="FILE",
                        help="print each run's verdicts in FILE against --bands; measure nothing")
    parser.add_argument("--bands", default=str(BANDS_PATH))
    parser.add_argument("--held-out", action="store_true",
                        help="with --verdicts: judge each run by the bands of the others")
    args = parser.parse_args(argv)
    if args.verdicts is not None:
        return _print_verdicts(Path(args.verdicts), None if args.held_out else Path(args.bands))
    problem = _problem(args)
    if problem:
        print(f"real_engine_bands: {problem}", file=sys.stderr)
        return 2
    split = [split_list(v) for v in (args.workloads, args.backends, args.strategies)]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    command = "python -m workloads.report.real_engine_bands " + " ".join(
        argv if argv is not None else sys.argv[1:])
    kept: list[dict[str, Any]] = []
    commands = [command]
    if args.add:
        before = json.loads(Path(args.out).read_text(encoding="utf-8"))
        kept = list(before["runs"])
        commands = [*before.get("commands", [before.get("command", "")]), command]

    def write(runs: list[dict[str, Any]]) -> None:
        every = kept + runs
        doc = {
            "about": "Bands for the real-engine verdicts (workloads/report/real_engine.py): "
                     "per (kind, measure, real lane, emulated lane, TTL), the values of "
                     "repeated real-job runs and their min (lo) and max (hi).",
            "commands": commands,
            "generated_utc": started,
            "settings": {"workloads": split[0], "backends": split[1], "strategies": split[2],
                         "repeats": args.repeats, "neighbour_repeats": args.neighbour_repeats,
                         "events": args.events, "in_process": True},
            "bands": bands_from_runs(every),
            "runs": every,
        }
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}: {len(doc['bands'])} bands from {len(every)} pair runs",
              file=sys.stderr)

    from workloads.run import run_tempdirs

    run_tempdirs.install_signal_handlers()  # SIGTERM / SIGINT: the work folder goes too
    measure(*split, repeats=args.repeats, events=args.events, done=write,
            loaded=args.neighbour_repeats)
    return 0


def _problem(args: argparse.Namespace) -> str:
    """What is wrong with a measuring call's arguments, in one line ("" when nothing)."""
    if args.repeats + args.neighbour_repeats < MIN_BAND_RUNS and not args.add:
        return (f"--repeats and --neighbour-repeats must make at least {MIN_BAND_RUNS} runs (a "
                f"band over fewer runs is no measurement), got "
                f"{args.repeats + args.neighbour_repeats}")
    if args.repeats < 0 or args.neighbour_repeats < 0:
        return "--repeats and --neighbour-repeats cannot be negative"
    if args.events is not None and args.events < 1:
        return f"--events must be positive, got {args.events}"
    if args.add and not Path(args.out).is_file():
        return f"--add: {args.out} does not exist (nothing to add to)"
    return ""


def _print_verdicts(runs_path: Path, bands_path: Path | None) -> int:
    for path in (runs_path, bands_path):
        if path is not None and not path.is_file():
            print(f"real_engine_bands: {path} does not exist", file=sys.stderr)
            return 2
    doc = json.loads(runs_path.read_text(encoding="utf-8"))
    bands = (None if bands_path is None
             else parse_bands(json.loads(bands_path.read_text(encoding="utf-8"))))
    print(verdict_table(doc.get("runs", []), bands))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
