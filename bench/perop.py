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

Every refusal is one line and status 2, made before anything is measured or simulated: fewer
than two runs, one run given twice (the same file or a copy), runs of different protocols or
clocks, a document that is not one or lacks what the command needs, a number out of its range
(``--runs``: 2-100 simulated, 2-10 repeated; ``--option``: processes 1-200, rounds 1-1000),
an ``--out`` whose folder does not exist or cannot be written in (a probe file is made and
removed there). Ctrl-C prints "interrupted" and gives status 130, no half-written file left.

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
import hashlib
import json
import math
import os
import stat
import statistics
import sys
import tempfile
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
    for each cell's ratio, and the machine probe's move beside them. Fewer than two runs, or
    runs that share no cell, are refused (ValueError): no verdict repeats over them."""
    st.check_runs(len(docs))

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
    if not complete:
        raise ValueError("the runs share no cell: no verdict to compare")
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


def _check_writable_folder(folder: Path) -> None:
    """Refuse a folder this process cannot create a file in: a probe file is made and removed
    there (ValueError naming the folder)."""
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder" if folder.exists()
                         else f"folder {folder} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=".perop-probe-", dir=folder)
    except OSError as exc:
        raise ValueError(f"cannot write in {folder}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)


def check_out(out: Path) -> None:
    """Refuse an output path `run` could not write after measuring for an hour: a folder, a
    device or other non-file, a path whose folder does not exist or cannot be written in
    (ValueError)."""
    if out.is_dir():  # first: '.' or '/' has no name to make the temporary file's from
        raise ValueError(f"{out} is a folder, not a file")
    for path in (out, out.with_name(out.name + ".tmp")):
        if path.is_dir():
            raise ValueError(f"{path} is a folder, not a file")
        if path.exists() and not path.is_file():
            raise ValueError(f"{path} exists and is not a regular file")
    _check_writable_folder(out.parent)


def run(protocol: Protocol, out: Path | None, clock: str = "cpu") -> dict[str, Any]:
    """Measure `protocol`, and write the document to `out` (checked before measuring)."""
    if out is not None:
        check_out(out)
    before = _load()
    m, probes = measure(protocol, progress=lambda s: print(f"  measured {s}", file=sys.stderr,
                                                           flush=True))
    doc = document(m, protocol, before, _load(), clock, probes)
    if out is not None:
        tmp = out.with_name(out.name + ".tmp")
        try:
            tmp.write_text(json.dumps(_rounded(doc), separators=(",", ":")) + "\n")
            tmp.replace(out)
        except BaseException:  # a failed or interrupted write leaves no half file
            tmp.unlink(missing_ok=True)
            raise
    return doc


#: What `repeat` writes into its folder: the i-th run's document and the runs' comparison.
REPEAT_RUN = "run-{}.json"
REPEAT_COMPARE = "compare.json"


#: At most this many runs a repeat (a wide run takes 70-80 minutes: ten are half a day).
MAX_REPEAT_RUNS = 10


def check_repeat(runs: int, folder: Path) -> None:
    """What `repeat` refuses before it makes its folder (ValueError): a count of runs outside
    2..MAX_REPEAT_RUNS, a folder that holds an earlier repeat, a path that is not a folder or
    that could not be made or written in (probed in the folder or its nearest existing
    parent)."""
    st.check_runs(runs, MAX_REPEAT_RUNS)
    earlier = (sorted(p.name for p in folder.glob(REPEAT_RUN.format("*"))) if folder.is_dir()
               else [])
    earlier += [REPEAT_COMPARE] if (folder / REPEAT_COMPARE).exists() else []
    if earlier:
        raise ValueError(f"{folder} already holds a repeat ({', '.join(earlier)}); give a new "
                         "folder")
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is not a folder")
    _check_writable_folder(next(p for p in (folder, *folder.parents) if p.exists()))


def repeat(protocol: Protocol, runs: int, folder: Path, clock: str = "cpu",
           measure_run: Callable[..., dict[str, Any]] = run) -> dict[str, Any]:
    """`runs` runs of `protocol` one after the other, each written to `folder` as it ends (a
    run that fails leaves the earlier ones), then their comparison, written beside them. The
    folder must not hold an earlier repeat: runs from another hour are not back to back."""
    check_repeat(runs, folder)
    folder.mkdir(parents=True, exist_ok=True)  # now, not after the first hour's run
    _check_writable_folder(folder)
    docs = []
    for i in range(1, runs + 1):
        print(f"  run {i} of {runs}", file=sys.stderr, flush=True)
        docs.append(measure_run(protocol, folder / REPEAT_RUN.format(i), clock))
    result = compare(docs)
    (folder / REPEAT_COMPARE).write_text(json.dumps(result, indent=1) + "\n")
    return result


#: What a cell's verdict can be, the sides of a rate and the clocks of a document.
VERDICTS = ("agree", "disagree", "undecided")
SIDES = ("flink", "statebench")
CLOCKS = ("cpu", "wall")


def _describe(value: Any) -> str:
    """A JSON value as a refusal names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, (int, float)):
        return f"the number {value}"
    return "a list" if isinstance(value, list) else "an object"


def _positive(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


_WANTS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "object": (lambda v: isinstance(v, dict), "an object"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "name": (lambda v: isinstance(v, str) and v != "", "a name (a non-empty string)"),
    "positive": (_positive, "a positive number"),
}


def _get(obj: dict, key: str, where: str, want: str, optional: bool = False) -> Any:
    """obj[key], refused (ValueError) when missing (unless `optional`: None where missing or
    null) or not what `want` names."""
    if obj.get(key) is None and (optional or key not in obj):
        if optional:
            return None
        raise ValueError(f"{where or 'the document'} has no '{key}'")
    value = obj[key]
    test, what = _WANTS[want]
    if not test(value):
        raise ValueError(f"{where + '.' if where else ''}{key} is {_describe(value)}, not {what}")
    return value


def _one_of(obj: dict, key: str, where: str, choices: Sequence[str]) -> str:
    if key not in obj:
        raise ValueError(f"{where or 'the document'} has no '{key}'")
    if obj[key] not in choices:
        raise ValueError(f"{where + '.' if where else ''}{key} is {_describe(obj[key])}, not one "
                         f"of {', '.join(choices)}")
    return obj[key]


def _count(obj: dict, key: str, where: str, most: int) -> int:
    value = obj.get(key)
    if key not in obj:
        raise ValueError(f"{where} has no '{key}'")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ValueError(f"{where}.{key} is {_describe(value)}, not an integer from 1 to {most}")
    return value


def _objects(doc: dict, key: str) -> list[dict]:
    items = _get(doc, key, "", "list")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"{key}[{i}] is {_describe(item)}, not an object")
    return items


def _processes(values: dict, clock: str, where: str) -> list[list[float]]:
    """A rate's values by `clock`: one non-empty list of positive rates per process, every
    process as many."""
    series = _get(values, clock, where, "list")
    name = f"{where}.{clock}"
    if not series:
        raise ValueError(f"{name} holds no process")
    for j, rates in enumerate(series):
        if not isinstance(rates, list) or not rates:
            raise ValueError(f"{name}[{j}] is {_describe(rates)}, not a non-empty list of rates")
        bad = [v for v in rates if not _positive(v)]
        if bad:
            raise ValueError(f"{name}[{j}] holds {_describe(bad[0])}, not a positive rate")
        if len(rates) != len(series[0]):
            raise ValueError(f"{name}: its processes hold different numbers of values "
                             f"({len(series[0])} and {len(rates)})")
    return series


def check_document(doc: Any, command: str) -> None:
    """Refuse (ValueError naming the field and the problem) a document `command` ("compare"
    or "predict") cannot use: not an object, another schema, a field it needs missing or of
    the wrong type, a rate or cell given twice, a rate with TTL without its rate without."""
    from bench import perop_repeat

    if not isinstance(doc, dict):
        raise ValueError(f"not a {SCHEMA} document: {_describe(doc)}, not an object")
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"not a {SCHEMA} document (its schema is {_describe(doc.get('schema'))})"
                         if "schema" in doc else f"not a {SCHEMA} document (it has no schema)")
    protocol = _get(doc, "protocol", "", "object")
    _get(protocol, "name", "protocol", "name")
    clock = _one_of(doc, "clock", "", CLOCKS) if "clock" in doc else "cpu"
    rates: dict[tuple, tuple[int, dict]] = {}
    for i, r in enumerate(_objects(doc, "rates")):
        where = f"rates[{i}]"
        key = (_one_of(r, "side", where, SIDES), _get(r, "backend", where, "name"),
               _one_of(r, "ttl", where, MODES), _get(r, "op", where, "name"))
        if key in rates:
            raise ValueError(f"{where} repeats rates[{rates[key][0]}] ({'/'.join(key)})")
        rates[key] = (i, r)
        if command == "compare":
            _get(r, "median", where, "positive")
            cache = _get(r, "cache", where, "object", optional=True)
            if cache is not None:
                _get(cache, "median", f"{where}.cache", "positive")
        else:
            _processes(_get(r, "values", where, "object"), clock, f"{where}.values")
    if command == "predict":
        for key in ("forks", "workers"):
            _count(protocol, key, "protocol", perop_repeat.MAX_PROCESSES)
        for key in ("jvm_iterations", "py_values"):
            _count(protocol, key, "protocol", perop_repeat.MAX_ROUNDS)
        for (side, backend, ttl, op), (i, r) in rates.items():
            if ttl == "off":
                continue
            off = rates.get((side, backend, "off", op))
            if off is None:
                raise ValueError(f"rates[{i}] ({side}/{backend}/{ttl}/{op}) has no rate with "
                                 f"TTL off ({side}/{backend}/off/{op}) to divide by")
            if len(r["values"][clock]) != len(off[1]["values"][clock]):
                raise ValueError(f"rates[{i}] and rates[{off[0]}] ({side}/{backend}/{op} with "
                                 "TTL and without) come from different numbers of processes")
        return
    cells: dict[tuple, int] = {}
    for i, c in enumerate(_objects(doc, "cells")):
        where = f"cells[{i}]"
        key = (_get(c, "backend", where, "name"), _one_of(c, "ttl", where, TTL_MODES),
               _get(c, "op", where, "name"))
        if key in cells:
            raise ValueError(f"{where} repeats cells[{cells[key]}] ({'/'.join(key)})")
        cells[key] = i
        _one_of(c, "verdict", where, VERDICTS)
        _get(_get(c, "ratio", where, "object"), "value", f"{where}.ratio", "positive")
    probe = _get(doc, "machine_probe", "", "object", optional=True)
    if probe is not None:
        _get(probe, "median", "machine_probe", "positive")
    cache_probe = _get(doc, "cache_probe", "", "object", optional=True)
    if cache_probe is not None:
        _get(cache_probe, "median", "cache_probe", "positive", optional=True)
    _get(doc, "load", "", "object")


def _not_a_number(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


#: The largest file read as a document: a wide run's is about 250 KB.
MAX_DOCUMENT_BYTES = 64 * 2**20


def read_documents(files: Sequence[Path], command: str) -> list[dict[str, Any]]:
    """The documents `command` ("compare" or "predict") reads, each checked
    (check_document). Refused (ValueError, one line naming the file): fewer than two files,
    a file given twice (the same path once resolved, or the same content: the same run
    counted twice repeats every verdict), one that is not a regular file, cannot be read or
    is not JSON, and runs of different protocols or clocks (not repeats of one another)."""
    if len(files) < 2:
        raise ValueError(f"{command} needs the documents of at least two runs, not "
                         f"{len(files)} (a verdict repeats over at least two runs)")
    docs: list[dict[str, Any]] = []
    paths: dict[Path, Path] = {}
    contents: dict[str, Path] = {}
    for f in files:
        try:
            info = f.stat()
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{f} is a folder, not a file" if f.is_dir()
                                 else f"{f} is not a regular file")
            if info.st_size > MAX_DOCUMENT_BYTES:
                raise ValueError(f"{f} holds {info.st_size / 2**20:.0f} MiB: more than any run's "
                                 f"document ({MAX_DOCUMENT_BYTES // 2**20} MiB at most)")
            resolved = f.resolve()
            if resolved in paths:
                spelled = f" (as {paths[resolved]})" if str(paths[resolved]) != str(f) else ""
                raise ValueError(f"{f} is given twice{spelled}: the same run would repeat "
                                 "every verdict")
            data = f.read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read {f}: {exc.strerror or exc}") from None
        digest = hashlib.sha256(data).hexdigest()
        if digest in contents:
            raise ValueError(f"{f} has the same content as {contents[digest]}: the same run "
                             "would repeat every verdict")
        paths[resolved], contents[digest] = f, f
        try:
            doc = json.loads(data, parse_constant=_not_a_number)
        except (ValueError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise ValueError(f"{f} is not JSON ({reason})") from None
        try:
            check_document(doc, command)
        except ValueError as exc:
            raise ValueError(f"{f}: {exc}") from None
        first = docs[0] if docs else doc
        if doc["protocol"] != first["protocol"]:
            name, first_name = doc["protocol"]["name"], first["protocol"]["name"]
            raise ValueError(
                f"{f} is a run of protocol {name}, {files[0]} of {first_name}: the runs must "
                "share one protocol" if name != first_name else
                f"{f}'s protocol {name} has other settings than {files[0]}'s: the runs must "
                "share one protocol")
        if doc.get("clock", "cpu") != first.get("clock", "cpu"):
            raise ValueError(f"{f} is by the {doc.get('clock', 'cpu')} clock, {files[0]} by the "
                             f"{first.get('clock', 'cpu')} clock: the runs must share one clock")
        docs.append(doc)
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (the module docstring). A refusal is one line on stderr and status 2;
    an interrupt (Ctrl-C) prints "interrupted" and gives status 130, the runs a repeat ended
    kept and no half-written file left."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("bench.perop: interrupted", file=sys.stderr)
        return 130


def _fail(message: str) -> int:
    print(f"bench.perop: {message}", file=sys.stderr)
    return 2


class _Parser(argparse.ArgumentParser):
    """argparse, its refusals (a bad option, a missing argument) one line as the tool's own."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("python -m bench.perop").strip()
        self.exit(2, f"bench.perop: {command + ': ' if command else ''}{message}; --help gives "
                     "the usage\n")


def _check_runs_option(runs: int, most: int) -> None:
    try:
        st.check_runs(runs, most)
    except ValueError as exc:
        raise ValueError(f"--runs: {exc}") from None


def _main(argv: Sequence[str] | None) -> int:
    from bench import perop_repeat

    parser = _Parser(prog="python -m bench.perop", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True,
                                metavar="{run,compare,predict,repeat}")
    r = sub.add_parser("run", help="measure the per-op suite, print it, write its JSON")
    r.add_argument("--protocol", choices=sorted(PROTOCOLS), default="wide")
    r.add_argument("--clock", choices=CLOCKS, default="cpu",
                   help="the clock of the headline medians and verdicts (both are recorded)")
    r.add_argument("--out", type=Path, default=None,
                   help="the document's file, in an existing folder (checked before measuring)")
    c = sub.add_parser("compare", help="repeatability of several runs' JSON documents")
    c.add_argument("files", type=Path, nargs="+")
    p = sub.add_parser("predict", help="how often other protocols' verdicts would repeat, "
                       "from several runs of one protocol (bench/perop_repeat.py)")
    p.add_argument("files", type=Path, nargs="+")
    p.add_argument("--option", action="append", default=[], type=_option,
                   metavar="FORKS,WORKERS,FLINK_ROUNDS,STATEBENCH_ROUNDS",
                   help="a protocol to predict besides the runs' own (repeatable; forks and "
                   f"workers 1-{perop_repeat.MAX_PROCESSES}, rounds 1-{perop_repeat.MAX_ROUNDS})")
    p.add_argument("--runs", type=int, default=3,
                   help="back-to-back runs a verdict must repeat over (default 3, the bar's; "
                   f"2-{perop_repeat.MAX_RUNS})")
    t = sub.add_parser("repeat", help="back-to-back runs and their comparison, into a new "
                       "folder (what the verdict bar is judged on)")
    t.add_argument("--dir", type=Path, required=True)
    t.add_argument("--protocol", choices=sorted(PROTOCOLS), default="wide")
    t.add_argument("--runs", type=int, default=3, help=f"2-{MAX_REPEAT_RUNS} (default 3)")
    t.add_argument("--clock", choices=CLOCKS, default="cpu")
    args = parser.parse_args(argv)
    if args.cmd in ("repeat", "run"):
        from backends.flink import FlinkUnavailableError
        from backends.flink.lanes import check_available

        try:
            if args.cmd == "run":
                doc = run(PROTOCOLS[args.protocol], args.out, args.clock)
                print("\n".join(format_document(doc)))
                return 0
            _check_runs_option(args.runs, MAX_REPEAT_RUNS)
            check_repeat(args.runs, args.dir)  # before the JDK check and the folder
            check_available()  # before the folder is made
            print(json.dumps(repeat(PROTOCOLS[args.protocol], args.runs, args.dir, args.clock),
                             indent=1))
        except (ValueError, OSError, FlinkUnavailableError) as exc:
            return _fail(str(exc))
        return 0
    try:
        if args.cmd == "predict":
            _check_runs_option(args.runs, perop_repeat.MAX_RUNS)
        docs = read_documents(args.files, args.cmd)
        if args.cmd == "compare":
            print(json.dumps(compare(docs), indent=1))
        else:
            print(json.dumps(perop_repeat.report(docs, args.option, runs=args.runs), indent=1))
    except ValueError as exc:
        return _fail(str(exc))
    return 0


def _option(text: str) -> tuple[int, int, int, int]:
    """FORKS,WORKERS,FLINK_ROUNDS,STATEBENCH_ROUNDS as four positive integers, the processes
    at most perop_repeat.MAX_PROCESSES, the rounds at most perop_repeat.MAX_ROUNDS."""
    from bench.perop_repeat import MAX_PROCESSES, MAX_ROUNDS

    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        values = ()
    if (len(values) != 4 or min(values) < 1 or max(values[:2]) > MAX_PROCESSES
            or max(values[2:]) > MAX_ROUNDS):
        raise argparse.ArgumentTypeError(
            f"'{text}' is not FORKS,WORKERS,FLINK_ROUNDS,STATEBENCH_ROUNDS (four integers >= 1: "
            f"forks and workers 1-{MAX_PROCESSES}, rounds 1-{MAX_ROUNDS})")
    return values  # type: ignore[return-value]


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["BAND", "MODES", "SAME_VERDICT_SHARE", "compare", "document", "format_document",
           "main", "repeat", "run"]
