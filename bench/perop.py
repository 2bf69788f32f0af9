"""The per-op suite's results: a small JSON document, its printout, and the repeatability check.

Run (from the repository root, with the ``flink`` extra and a JDK)::

    python -m bench.perop run [--protocol lean|wide|full|quick] [--out FILE.json]
    python -m bench.perop compare A.json B.json C.json
    python -m bench.perop predict A.json B.json C.json [--option 3,3,9,9 ...] [--runs 3]
    python -m bench.perop repeat --dir DIR [--protocol wide] [--runs 3]

``run`` measures (bench/flink_ops.py), prints the table and writes the document (the wide
protocol by default: the docs' tables are made from its output, docs/results/per-op.json);
``compare`` prints how many verdicts the runs share, which cells contradict themselves, and how
far each median moved between them; ``predict`` fits a model of their spread and drift and
says how often other protocols' verdicts would repeat (bench/perop_repeat.py); ``repeat`` makes
the back-to-back runs the verdict bar is judged on, unattended (a wide triple takes hours):
``DIR/run-1.json`` ... and ``DIR/compare.json``.

Document (schema ``statebench-perop-3``)::

    {"schema", "created", "protocol": {...}, "load": {"before": [1, 5, 15 min], "after": [...]},
     "clock": "cpu"|"wall",
     "rates": [{"side": "flink"|"statebench", "backend", "ttl", "op", "unit": "ops/s",
                "median", "ci_low", "ci_high", "mean", "stdev", "min", "max", "n", "groups",
                "unstable", "unstable_reasons", "steady", "retaken", "slow_kept",
                "cache": {"median": cache probe ops/s over its rounds, "level": of the
                          run's median reading} | null,
                "wall": {these numbers by wall clock}, "cpu": {... by process CPU time},
                "values": {"wall": [[ops/s per round] per fork / worker], "cpu": [...],
                           "warmup": [[warm-up rates] per process],
                           "cache": [[cache probe reading per round] per process]}}],
     "machine_probe": {the same numbers for a plain dict loop, "values": [[...] per worker]},
     "gate": {"floor", "probe_s", "wait_s", "reference_quantile", "retaken_rounds",
              "slow_rounds_kept"},
     "cache_probe": {"keys", "p10", "median", "p90", "flag_below"} | null,
     "cells": [{"backend", "ttl": "on"|"on_no_bg", "op",
                "flink_ttl_over_off": {"value", "ci_low", "ci_high"},  (median over processes)
                "statebench_ttl_over_off": {...},
                "ratio": {"value", "ci_low", "ci_high"}, "band": [0.667, 1.5],
                "verdict": "agree"|"disagree"|"undecided", "unstable": bool}]}

The headline numbers (median, interval, verdicts) are by ``clock``: "cpu" (the default) divides
each iteration's ops by the process's CPU time, "wall" by wall-clock time as JMH and pyperf do.
Both are always recorded. On this 2-core machine shared by several jobs the wall clock counts
the time a process waits for a core: at a load of 5.6 one worker's wall-clock map_put rates
spanned 5.6 k-47 k ops/s while its CPU-time rates spanned 168 k-181 k. JMH and pyperf assume a
dedicated machine (pyperf's docs ask for isolated CPUs); where there is one, ``--clock wall``
gives their exact measure.

A cell's ratio is statebench's relative cost of TTL over Flink's. Each side's relative cost is
the median over processes of a process's ratio of mean rates on / off (a statebench worker
measures every mode in each round; Flink's forks of one op's modes, one state per fork, take
turns, one iteration each per round; bench/flink_ops.py); the cell's ratio is statebench's over
Flink's: 1 means the same relative cost. A cell "agrees" when its whole 95% interval lies
within 1.5x either way, "disagrees" when it lies wholly outside, and is "undecided" when it
straddles an edge. A cell is unstable when any of its four rate series is.

Absolute rates move with the machine: ``machine_probe`` is a plain dict loop timed first thing
in every statebench worker (fresh, before it fills any state), and ``compare`` sets the
medians' moves beside the probe's. Within a run, the machine gate (bench/machine_gate.py)
retakes a round measured while a short probe found the machine below 70% of its speed; a
rate's ``retaken`` counts such rounds over its processes, ``slow_kept`` the slow rounds kept
once a process had used its retakes, and ``gate`` totals them over the run. The gate's probe
fits in the L3 whatever the neighbours do; the ops with the largest states do not, and they
move with the share of the L3 the neighbours leave. So each kept round carries one reading of
the gate's cache probe (a dict over four times the keys): a rate's ``cache`` is the median
reading over its rounds, and its ``level`` that reading over the median of all the run's
readings; the printout flags a rate measured below ``CACHE_FLAG`` of it (under more cache
pressure than the run's other rates), and ``compare`` gives the readings beside every median
that moved, since between runs it is the readings themselves that differ.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine_gate as gate
from bench import perop_stats as st
from bench.flink_ops import (
    KINDS,
    MODES,
    PROTOCOLS,
    Measurements,
    OpRun,
    Protocol,
    measure,
    protocol_json,
)

SCHEMA = "statebench-perop-3"
BAND = 1.5
TTL_MODES = ("on", "on_no_bg")
#: A rate whose rounds' cache probe read below this share of the run's median reading is
#: flagged.
CACHE_FLAG = 0.7


def _cache_readings(runs: Iterable[OpRun]) -> list[float]:
    return [x for r in runs for x in r.cache]


def _cache(runs: list[OpRun], run_median: float | None) -> dict[str, float] | None:
    """A rate's cache pressure: the median reading over its rounds and its share of the run's
    median reading (None where the runs carry no readings)."""
    readings = _cache_readings(runs)
    if not readings or not run_median:
        return None
    median = statistics.median(readings)
    return {"median": median, "level": median / run_median}


def _series(runs: list, clock: str) -> list[list[float]]:
    return [r.cpu_rates if clock == "cpu" else r.rates for r in runs]


def document(m: Measurements, protocol: Protocol, load_before: Sequence[float],
             load_after: Sequence[float], clock: str = "cpu",
             probes: Sequence[Sequence[float]] = ()) -> dict[str, Any]:
    """The JSON document of one run of the suite (see the module docstring)."""
    rates = []
    readings = _cache_readings(r for runs in m.values() for r in runs)
    run_cache = statistics.median(readings) if readings else None
    for (side, kind, mode, op), runs in sorted(m.items()):
        shortest = min(r.shortest_s for r in runs)
        wall = st.summarise(_series(runs, "wall"), shortest).to_json()
        cpu = st.summarise(_series(runs, "cpu"), shortest).to_json()
        head = cpu if clock == "cpu" else wall
        rates.append({"side": side, "backend": kind, "ttl": mode, "op": op, "unit": "ops/s",
                      **head, "steady": all(r.steady for r in runs),
                      "retaken": sum(r.retaken for r in runs),
                      "slow_kept": sum(r.slow_kept for r in runs),
                      "cache": _cache(runs, run_cache), "wall": wall, "cpu": cpu,
                      "values": {"wall": _series(runs, "wall"), "cpu": _series(runs, "cpu"),
                                 "warmup": [r.warmup for r in runs],
                                 "cache": [r.cache for r in runs]}})
    unstable = {(r["side"], r["backend"], r["ttl"], r["op"]): r["unstable"] for r in rates}
    cells = []
    kinds = sorted({k for _, k, _, _ in m}, key=KINDS.index)
    for kind in kinds:
        for mode in TTL_MODES:
            for op in protocol.ops:
                s_on, s_off = (_series(m[("statebench", kind, t, op)], clock)
                               for t in (mode, "off"))
                f_on, f_off = (_series(m[("flink", kind, t, op)], clock) for t in (mode, "off"))
                ratio = st.ratio_of_processes(s_on, s_off, f_on, f_off, BAND)
                cells.append({
                    "backend": kind, "ttl": mode, "op": op,
                    "flink_ttl_over_off": _plain(st.process_ratio(f_on, f_off)),
                    "statebench_ttl_over_off": _plain(st.process_ratio(s_on, s_off)),
                    "ratio": _plain(ratio), "band": [round(1 / BAND, 4), BAND],
                    "verdict": ratio.verdict,
                    "unstable": any(unstable[(side, kind, t, op)]
                                    for side in ("flink", "statebench") for t in (mode, "off")),
                })
    probe = ({**st.summarise(probes).to_json(), "values": [list(p) for p in probes]}
             if probes else None)
    # a round holds every TTL mode: count each once, by its rates with TTL off
    offs = [r for r in rates if r["ttl"] == "off"]
    gated = {"floor": gate.FLOOR, "probe_s": gate.PROBE_S, "wait_s": gate.WAIT_S,
             "reference_quantile": gate.REFERENCE_QUANTILE,
             "retaken_rounds": sum(r["retaken"] for r in offs),
             "slow_rounds_kept": sum(r["slow_kept"] for r in offs)}
    cache_probe = ({"keys": gate.CACHE_PROBE_SCALE * protocol.keys,
                    "p10": float(np.quantile(readings, 0.1)), "median": run_cache,
                    "p90": float(np.quantile(readings, 0.9)), "flag_below": CACHE_FLAG}
                   if readings else None)
    return {"schema": SCHEMA, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "protocol": protocol_json(protocol), "clock": clock, "cpus": os.cpu_count(),
            "load": {"before": list(load_before), "after": list(load_after)},
            "rates": rates, "machine_probe": probe, "gate": gated,
            "cache_probe": cache_probe, "cells": cells}


def _plain(r: st.Ratio) -> dict[str, float]:
    return {"value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high}


def _si(x: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.3g}"


def format_document(doc: dict[str, Any]) -> list[str]:
    """The printout: every rate with its interval and the unstable flag, then every cell."""
    p = doc["protocol"]
    lines = [
        f"per-op rates, protocol {p['name']} (Flink: {p['forks']} forks per op and mode x "
        f"{p['jvm_iterations']} rounds x {p['jvm_iteration_ms']} ms after >= "
        f"{p['jvm_warmup_min']} warm-up rounds, then until steady; statebench: {p['workers']} "
        f"workers x {p['py_values']} rounds of values >= {p['py_min_value_s'] * 1000:.0f} ms; "
        f"TTL modes side by side in every round of a worker), "
        f"{p['keys']:,} keys, clock {doc['clock']}, load {doc['load']['before'][0]:.2f} -> "
        f"{doc['load']['after'][0]:.2f}",
        f"{'side':10} {'backend':8} {'ttl':9} {'op':13} {'median':>10} {'95% CI':>21}  flags",
    ]
    for r in doc["rates"]:
        flags = []
        if r["unstable"]:
            flags.append("UNSTABLE (" + "; ".join(r["unstable_reasons"]) + ")")
        if not r["steady"]:
            flags.append("warm-up not steady")
        if r.get("retaken"):
            flags.append(f"{r['retaken']} rounds retaken")
        if r.get("slow_kept"):
            flags.append(f"{r['slow_kept']} slow rounds kept")
        cache = r.get("cache")
        if cache and cache["level"] < CACHE_FLAG:
            flags.append(f"cache probe at {cache['level']:.0%}")
        lines.append(f"{r['side']:10} {r['backend']:8} {r['ttl']:9} {r['op']:13} "
                     f"{_si(r['median']):>10} {_si(r['ci_low']):>10}-{_si(r['ci_high']):<10} "
                     f" {', '.join(flags)}")
    probe = doc.get("machine_probe")
    if probe:
        lines.append(f"{'machine':10} {'probe':8} {'':9} {'dict_update':13} "
                     f"{_si(probe['median']):>10} {_si(probe['ci_low']):>10}-"
                     f"{_si(probe['ci_high']):<10}  (a plain dict loop: the machine's speed)")
    g = doc.get("gate")
    if g:
        lines.append(f"machine gate: {g['retaken_rounds']} rounds retaken, "
                     f"{g['slow_rounds_kept']} slow rounds kept (a round is retaken when a "
                     f"{g['probe_s'] * 1000:.0f} ms probe around it ran below "
                     f"{g['floor']:.0%} of the machine's speed)")
    c = doc.get("cache_probe")
    if c:
        lines.append(f"cache probe (dict stores over {c['keys']:,} keys after each round, how "
                     f"much of the shared L3 the neighbours left): {_si(c['p10'])}-"
                     f"{_si(c['p90'])} (10th-90th percentile), median {_si(c['median'])}; a rate "
                     f"whose rounds read below {c['flag_below']:.0%} of it is flagged")
    lines.append("")
    lines.append(f"TTL's relative cost (median over processes of on/off), statebench over Flink "
                 f"(agree: 95% CI within {BAND}x)")
    lines.append(f"{'backend':8} {'ttl':9} {'op':13} {'flink on/off':>12} {'sb on/off':>10} "
                 f"{'ratio':>6} {'95% CI':>13}  verdict")
    for c in doc["cells"]:
        r = c["ratio"]
        lines.append(
            f"{c['backend']:8} {c['ttl']:9} {c['op']:13} "
            f"{c['flink_ttl_over_off']['value']:>12.3f} "
            f"{c['statebench_ttl_over_off']['value']:>10.3f} "
            f"{r['value']:>6.2f} {r['ci_low']:>6.2f}-{r['ci_high']:<6.2f}  {c['verdict']}"
            f"{' (unstable)' if c['unstable'] else ''}")
    counts = {v: sum(c["verdict"] == v for c in doc["cells"]) for v in
              ("agree", "disagree", "undecided")}
    lines.append(", ".join(f"{n} {v}" for v, n in counts.items()) + f" of {len(doc['cells'])}")
    return lines


SAME_VERDICT_SHARE = st.SAME_VERDICT_SHARE


def compare(docs: Sequence[dict[str, Any]], max_move: float = 0.25) -> dict[str, Any]:
    """Repeatability of runs of the suite: cells whose verdict is the same in every run, cells
    that contradict themselves (agree in one run, disagree in another), whether the runs meet
    the verdict bar (SAME_VERDICT_SHARE of the cells the same, none contradicted), the largest
    move of each rate median between runs (max / min - 1; reported with its cache readings,
    not a bar: on a shared machine the medians move with the L3 a neighbour leaves), the same
    for each cell's ratio, and the machine probe's move beside them."""
    def cell_key(c: dict) -> tuple:
        return c["backend"], c["ttl"], c["op"]

    def rate_key(r: dict) -> tuple:
        return r["side"], r["backend"], r["ttl"], r["op"]

    verdicts: dict[tuple, list[str]] = {}
    for doc in docs:
        for c in doc["cells"]:
            verdicts.setdefault(cell_key(c), []).append(c["verdict"])
    medians: dict[tuple, list[float]] = {}
    # each rate's rounds' cache probe reading in every run (ops/s; None: no probe)
    readings: dict[tuple, list[float | None]] = {}
    for doc in docs:
        for r in doc["rates"]:
            medians.setdefault(rate_key(r), []).append(r["median"])
            cache = r.get("cache")
            readings.setdefault(rate_key(r), []).append(cache["median"] if cache else None)
    complete = {k: v for k, v in verdicts.items() if len(v) == len(docs)}
    same = [k for k, v in complete.items() if len(set(v)) == 1]
    moves = {k: st.relative_move(v) for k, v in medians.items() if len(v) == len(docs)}
    ratios: dict[tuple, list[float]] = {}
    for doc in docs:
        for c in doc["cells"]:
            ratios.setdefault(cell_key(c), []).append(c["ratio"]["value"])
    ratio_moves = [st.relative_move(v) for v in ratios.values() if len(v) == len(docs)]
    probes = [d["machine_probe"]["median"] for d in docs if d.get("machine_probe")]
    contradicted = {"/".join(k): v for k, v in complete.items() if st.contradicts(v)}
    return {
        "runs": len(docs), "cells": len(complete), "same_verdict": len(same),
        "flipped": {"/".join(k): v for k, v in complete.items() if len(set(v)) > 1},
        "contradicted": contradicted,
        "verdict_bar_met": len(same) >= st.verdict_bar(len(complete)) and not contradicted,
        "max_median_move": max(moves.values()) if moves else 0.0,
        "medians_over_limit": {"/".join(k): round(v, 3) for k, v in moves.items()
                               if v > max_move},
        "cache_of_moved": {"/".join(k): readings[k] for k, v in moves.items() if v > max_move},
        "cache_probe_medians": [(d.get("cache_probe") or {}).get("median") for d in docs],
        "max_cell_ratio_move": max(ratio_moves) if ratio_moves else 0.0,
        "machine_probe_medians": probes,
        "machine_probe_move": st.relative_move(probes) if len(probes) == len(docs) else None,
        "loads": [d["load"] for d in docs],
    }


def _rounded(obj: Any, digits: int = 5) -> Any:
    """Floats to `digits` significant digits (the file stays small; no rate here is known
    better than that)."""
    if isinstance(obj, float):
        return float(f"{obj:.{digits}g}")
    if isinstance(obj, dict):
        return {k: _rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v, digits) for v in obj]
    return obj


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(protocol: Protocol, out: Path | None, clock: str = "cpu") -> dict[str, Any]:
    before = _load()
    m, probes = measure(protocol, progress=lambda s: print(f"  measured {s}", file=sys.stderr,
                                                           flush=True))
    doc = document(m, protocol, before, _load(), clock, probes)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(_rounded(doc), separators=(",", ":")) + "\n")
        tmp.replace(out)
    return doc


#: What `repeat` writes into its folder: the i-th run's document and the runs' comparison.
REPEAT_RUN = "run-{}.json"
REPEAT_COMPARE = "compare.json"


def repeat(protocol: Protocol, runs: int, folder: Path, clock: str = "cpu",
           measure_run: Callable[..., dict[str, Any]] = run) -> dict[str, Any]:
    """`runs` runs of `protocol` one after the other, each written to `folder` as it ends (a
    run that fails leaves the earlier ones), then their comparison, written beside them. The
    folder must not hold an earlier repeat: runs from another hour are not back to back."""
    st.check_runs(runs)
    earlier = (sorted(p.name for p in folder.glob(REPEAT_RUN.format("*"))) if folder.is_dir()
               else [])
    earlier += [REPEAT_COMPARE] if (folder / REPEAT_COMPARE).exists() else []
    if earlier:
        raise ValueError(f"{folder} already holds a repeat ({', '.join(earlier)}); give a new "
                         "folder")
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is not a folder")
    folder.mkdir(parents=True, exist_ok=True)  # now, not after the first hour's run
    docs = []
    for i in range(1, runs + 1):
        print(f"  run {i} of {runs}", file=sys.stderr, flush=True)
        docs.append(measure_run(protocol, folder / REPEAT_RUN.format(i), clock))
    result = compare(docs)
    (folder / REPEAT_COMPARE).write_text(json.dumps(result, indent=1) + "\n")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perop", description=__doc__.split(
        "\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="measure the per-op suite, print it, write its JSON")
    r.add_argument("--protocol", choices=sorted(PROTOCOLS), default="wide")
    r.add_argument("--clock", choices=("wall", "cpu"), default="cpu",
                   help="the clock of the headline medians and verdicts (both are recorded)")
    r.add_argument("--out", type=Path, default=None)
    c = sub.add_parser("compare", help="repeatability of several runs' JSON documents")
    c.add_argument("files", type=Path, nargs="+")
    p = sub.add_parser("predict", help="how often other protocols' verdicts would repeat, "
                       "from several runs of one protocol (bench/perop_repeat.py)")
    p.add_argument("files", type=Path, nargs="+")
    p.add_argument("--option", action="append", default=[], type=_option,
                   metavar="FORKS,WORKERS,FLINK_ROUNDS,STATEBENCH_ROUNDS",
                   help="a protocol to predict besides the runs' own (repeatable)")
    p.add_argument("--runs", type=int, default=3,
                   help="back-to-back runs a verdict must repeat over (default 3, the bar's)")
    t = sub.add_parser("repeat", help="back-to-back runs and their comparison, into a new "
                       "folder (what the verdict bar is judged on)")
    t.add_argument("--dir", type=Path, required=True)
    t.add_argument("--protocol", choices=sorted(PROTOCOLS), default="wide")
    t.add_argument("--runs", type=int, default=3)
    t.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    args = parser.parse_args(argv)
    if args.cmd == "repeat":
        from backends.flink import FlinkUnavailableError
        from backends.flink.lanes import check_available

        try:
            check_available()  # before the folder is made
            print(json.dumps(repeat(PROTOCOLS[args.protocol], args.runs, args.dir, args.clock),
                             indent=1))
        except (ValueError, OSError, FlinkUnavailableError) as exc:
            print(f"bench.perop: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.cmd == "run":
        from backends.flink import FlinkUnavailableError

        try:
            doc = run(PROTOCOLS[args.protocol], args.out, args.clock)
        except FlinkUnavailableError as exc:
            print(f"bench.perop: {exc}", file=sys.stderr)
            return 2
        print("\n".join(format_document(doc)))
        return 0
    docs = []
    for f in args.files:
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError) as exc:
            print(f"bench.perop: cannot read {f}: {exc}", file=sys.stderr)
            return 2
        if doc.get("schema") != SCHEMA:
            print(f"bench.perop: {f} is not a {SCHEMA} document", file=sys.stderr)
            return 2
        docs.append(doc)
    if args.cmd == "compare":
        print(json.dumps(compare(docs), indent=1))
        return 0
    from bench import perop_repeat

    try:
        print(json.dumps(perop_repeat.report(docs, args.option, runs=args.runs), indent=1))
    except ValueError as exc:
        print(f"bench.perop: {exc}", file=sys.stderr)
        return 2
    return 0


def _option(text: str) -> tuple[int, int, int, int]:
    """FORKS,WORKERS,FLINK_ROUNDS,STATEBENCH_ROUNDS as four positive integers."""
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 4 or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not FORKS,WORKERS,FLINK_ROUNDS,STATEBENCH_ROUNDS (four integers >= 1)")
    return values  # type: ignore[return-value]


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["BAND", "MODES", "SAME_VERDICT_SHARE", "compare", "document", "format_document",
           "main", "repeat", "run"]
