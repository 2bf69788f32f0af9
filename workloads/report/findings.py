"""Plain-words findings derived from the numbers (never written by hand).

Each finding is a list of text segments, some marked bold, so the same sentence can be rendered
as escaped HTML for the page and as plain text for tests and logs without the two drifting.
Comparisons are made within one backend, because strategies are the subject of the report and
heap and RocksDB differ by an order of magnitude for reasons that have nothing to do with TTL.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np

from backends import strategies
from backends.storage.registry import STORAGE_BACKENDS
from workloads.lanes import LANES
from workloads.report.checkpoint_noise import layout_noise
from workloads.report.engines import OWN, engine_of, engine_order, possessive
from workloads.report.fmt import DASH, compare_phrase, connector, fmt_value, si
from workloads.report.load import Run, ScenarioKey, backend_label
from workloads.report.metrics import (
    LOCKSTEP,
    STORED_ENTRIES,
    TIMING_DEPENDENT,
    run_lockstep_latency,
)
from workloads.report.runinfo import TTL_DB, is_paced, paced_note, rocksdb_options, sweep
from workloads.report.stats import Stat, compaction_marks, pareto_points, stat
from workloads.report.tables import metric_class

BASELINE = strategies.BASELINE
#: A share of task time in synchronous checkpoint phases from which the findings warn.
SYNC_SHARE_WARN = 0.10
COMPACTION_FILTER = strategies.COMPACTION_FILTER.name


@dataclass
class Sentence:
    """A finding: text segments (text, bold) plus a severity: "info", "warn", or "clock" (which
    numbers of a workload are wall-clock driven)."""

    parts: list[tuple[str, bool]] = field(default_factory=list)
    severity: str = "info"

    def t(self, text: str) -> Sentence:
        self.parts.append((text, False))
        return self

    def b(self, text: str) -> Sentence:
        self.parts.append((text, True))
        return self

    @property
    def text(self) -> str:
        return "".join(p for p, _ in self.parts)

    @property
    def html(self) -> str:
        return "".join(
            f"<strong>{html.escape(p)}</strong>" if bold else html.escape(p)
            for p, bold in self.parts
        )


def _rate(records_per_s: float) -> str:
    return f"{si(records_per_s)} records/s"


def _stats(run: Run, keys: list[ScenarioKey], metric: str) -> dict[ScenarioKey, Stat]:
    found = {k: stat(run, k, metric) for k in keys}
    return {k: s for k, s in found.items() if s is not None}


def _baseline(stats: dict[ScenarioKey, Stat], worst: ScenarioKey) -> ScenarioKey:
    """Compare against "none" when it was measured, otherwise against the worst scenario."""
    for key in stats:
        if key.strategy == BASELINE:
            return key
    return worst


#: What a finding says where it leaves a lockstep job's latency out of a comparison.
LOCKSTEP_LEFT_OUT = f"p99 latency not compared ({LOCKSTEP})"


def _lockstep(run: Run, keys: tuple[ScenarioKey, ...], metric: str) -> bool:
    """Whether any of ``keys``' ``metric`` is a lockstep job's latency, which no finding
    compares (``metrics.lockstep_latency``)."""
    return any(run_lockstep_latency([run.meta], k.workload, k.backend, metric) for k in keys)


def _cost(run: Run, best: ScenarioKey, base: ScenarioKey) -> str:
    """'at 12% lower throughput and 30% higher p99 latency' for ``best`` relative to ``base``;
    a lockstep job's latency is left out, and the sentence says so."""
    parts = []
    tb, tr = stat(run, best, "records_per_s"), stat(run, base, "records_per_s")
    if tb is not None and tr is not None:
        parts.append(compare_phrase(tb.center, tr.center, "throughput"))
    lb, lr = stat(run, best, "latency_p99_us"), stat(run, base, "latency_p99_us")
    left_out = ""
    if lb is not None and lr is not None:
        if _lockstep(run, (best, base), "latency_p99_us"):
            left_out = f"; {LOCKSTEP_LEFT_OUT}"
        else:
            parts.append(compare_phrase(lb.center, lr.center, "p99 latency"))
    return (f", at {' and '.join(parts)}" if parts else "") + left_out


def _throughput(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    tp = _stats(run, keys, "records_per_s")
    if not tp:
        return []
    ranked = sorted(tp, key=lambda k: tp[k].center, reverse=True)
    best = ranked[0]
    s = Sentence().t(f"On {backend}, ").b(best.strategy)
    s.t(f" has the highest throughput ({_rate(tp[best].center)})")
    if len(ranked) == 1:
        return [s.t(".")]
    worst, second = ranked[-1], ranked[1]
    change = compare_phrase(tp[worst].center, tp[best].center, "throughput")
    s.t("; the slowest, ").b(worst.strategy).t(f", has {change} ")
    s.t(f"({_rate(tp[worst].center)}).")
    if tp[best].lo <= tp[second].hi:
        s.t(" Its lead over ").b(second.strategy)
        s.t(f" is within the run-to-run spread (their min{DASH}max ranges overlap).")
    return [s]


#: What a backend counts of its state, in order of preference, and how a sentence names it:
#: statebench's and Flink's entries, else a real engine's own count (Spark's state store rows,
#: RocksDB's key estimate in a Flink SQL job), never called entries when it is not.
STATE_COUNTS = ((STORED_ENTRIES, "entries (live + expired)"), ("live_entries", "live entries"),
                ("state_rows", "state store rows"), ("estimated_entries", "estimated entries"))


def _state_count(run: Run, keys: list[ScenarioKey]) -> tuple[str, str, dict[ScenarioKey, Stat]]:
    """(metric, its name, its stats): the first count two strategies measured, else the first
    any measured."""
    found = [(m, what, _stats(run, keys, m)) for m, what in STATE_COUNTS]
    return next((f for f in found if len(f[2]) > 1), None) or next(
        (f for f in found if f[2]), (STORED_ENTRIES, "", {}))


def _state(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    metric, what, entries = _state_count(run, keys)
    if not entries:
        return []
    unit = run.units.get(metric, "entries")
    best = min(entries, key=lambda k: entries[k].center)
    worst = max(entries, key=lambda k: entries[k].center)
    base = _baseline(entries, worst)
    tied = [k for k in entries if k != best and entries[k].center == entries[best].center]
    s = Sentence().t(f"On {backend}, ").b(best.strategy)
    if tied:  # equal numbers: none of them is "the" smallest
        s.t(" and ").b(", ".join(k.strategy for k in tied)).t(" keep the same smallest peak "
                                                              "state")
    else:
        s.t(" keeps the smallest peak state")
    out = [s]
    if best == base or base in tied:
        s.t(f" ({fmt_value(entries[best].center, unit)} {what}); no strategy shrank it.")
    else:
        e_best, e_base = entries[best].center, entries[base].center
        s.t(f": {compare_phrase(e_best, e_base, what, down='fewer')}{connector(e_best, e_base)}")
        s.b(base.strategy)
        s.t(f" ({fmt_value(entries[best].center, unit)} vs ")
        s.t(f"{fmt_value(entries[base].center, unit)})")
        pb, pr = stat(run, best, "physical_bytes"), stat(run, base, "physical_bytes")
        if pb is not None and pr is not None and pb.center != pr.center:
            phrase = compare_phrase(pb.center, pr.center, "physical bytes", "more", "fewer")
            s.t(f" and {phrase}" if pb.center < pr.center else f" but {phrase}")
        s.t(_cost(run, best, base) + ".")
    phys = _stats(run, keys, "physical_bytes")
    if len(phys) > 1:
        by_bytes = min(phys, key=lambda k: phys[k].center)
        if by_bytes != best:
            out.append(
                Sentence()
                .t(f"On {backend}, by peak physical bytes ")
                .b(by_bytes.strategy)
                .t(f" is smallest ({fmt_value(phys[by_bytes].center, 'bytes')}).")
            )
    return out


def _checkpoints(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    metric, what = "checkpoint_uploaded_bytes", "uploaded"
    sizes = _stats(run, keys, metric)
    if not sizes:
        metric, what = "checkpoint_bytes", "written"
        sizes = _stats(run, keys, metric)
    if not sizes:
        return []
    best = min(sizes, key=lambda k: sizes[k].center)
    worst = max(sizes, key=lambda k: sizes[k].center)
    base = _baseline(sizes, worst)
    s = Sentence().t(f"On {backend}, ").b(best.strategy).t(" writes the least per checkpoint (")
    s.t(f"median {fmt_value(sizes[best].center, 'bytes')} {what}")
    if best == base:
        return [s.t(").")]
    c_best, c_base = sizes[best].center, sizes[base].center
    s.t(f", {compare_phrase(c_best, c_base, 'bytes', down='fewer')}{connector(c_best, c_base)}")
    s.b(base.strategy)
    s.t(f" at {fmt_value(sizes[base].center, 'bytes')})")
    s.t(_cost(run, best, base) + ".")
    noise = layout_noise(best.workload, best.backend)
    if (metric_class(run, best, metric) == TIMING_DEPENDENT and c_base and noise is not None
            and abs(c_best / c_base - 1) <= noise[0]):
        s.t(f" Within {noise[0]:.0%}, which is what background compactions moved these "
            f"checkpoint sizes between {noise[1]} identical runs: no difference to act on.")
    return [s]


def _sync_share(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    """Per scenario, the share of task time its checkpoints held the task (synchronous phases
    and barrier waits); a warning when it is large enough to shape the comparison."""
    shares = _stats(run, keys, "checkpoint_sync_share")
    if not shares:
        return []
    ranked = sorted(shares.items(), key=lambda kv: -kv[1].center)
    top = ranked[0][1].center
    s = Sentence(severity="warn" if top >= SYNC_SHARE_WARN else "info")
    s.t(f"On {backend}, checkpoints hold the task (synchronous phases and barrier waits) for ")
    for i, (key, st) in enumerate(ranked):
        s.t(", " if i else "").b(fmt_value(st.center, "share"))
        s.t(f"{'' if i else ' of its time'} ({key.strategy})")
    if top >= SYNC_SHARE_WARN:
        s.t(f": at {SYNC_SHARE_WARN:.0%} or more, checkpoints weigh on these throughputs, as "
            "they would not between checkpoints minutes apart.")
    else:
        s.t(".")
    return [s]


def _correctness(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    returned = _stats(run, keys, "expired_returned")
    if not returned:
        return []
    bad = [k for k in keys if k in returned and returned[k].hi > 0]
    if not bad:
        return []  # the clean case is one line per workload: checks()
    return [
        Sentence(severity="warn")
        .b(k.strategy)
        .t(f" on {backend} returned {fmt_value(returned[k].hi, 'count')} expired values")
        .t(" (at most; NeverReturnExpired requires 0).")
        for k in bad
    ]


def _pareto(run: Run, workload: str) -> list[Sentence]:
    """The Pareto-optimal configurations for throughput vs peak bytes, per engine (the lane
    registry's): statebench's Python lanes and every other engine's lanes each against their
    own (never one front over two engines)."""
    metric, points = pareto_points(run, workload)
    if not points:
        return []
    out = []
    engines = engine_order(p.key.backend for p in points)
    for engine in engines:
        mine = [p for p in points if engine_of(p.key.backend) == engine]
        front = [p.optimal for p in mine]  # (each engine's points against their own)
        context = " (context)" if engine != OWN and OWN in engines else ""
        s = Sentence().t(f"Pareto-optimal for throughput vs peak "
                         f"{str(metric).replace('_', ' ')} on {possessive(engine)} lanes"
                         f"{context}: ")
        for i, p in enumerate(q for q, optimal in zip(mine, front) if optimal):
            s.t(", " if i else "").b(f"{p.key.backend}/{p.key.strategy}")
        out.append(s.t("."))
    return out


def _base(strategy: str) -> str:
    return strategy.split("(", 1)[0].strip()


def _count(value: float, noun: str) -> str:
    """'14 compactions', '1 flush'."""
    n = round(float(value))
    plural = noun if n == 1 else (noun + "es" if noun.endswith("sh") else noun + "s")
    return f"{fmt_value(float(n), 'count')} {plural}"


def _peak(run: Run, key: ScenarioKey) -> tuple[str, Stat] | None:
    for metric, what in ((STORED_ENTRIES, "stored entries"), ("live_entries", "live entries")):
        s = stat(run, key, metric)
        if s is not None:
            return what, s
    return None


def _why_nothing(run: Run, key: ScenarioKey, times_ms: tuple[int, ...]) -> str:
    """Why compactions that ran dropped nothing, from the numbers the run holds."""
    written = stat(run, key, "rocksdb_compaction_write_bytes")
    if written is not None and written.hi == 0:
        return "they were trivial moves that rewrote no data (0 B written by compactions)"
    expired = run.get(key, "expired_present_entries")
    if expired is not None and times_ms:
        at = np.isin(expired.times_ms, np.array(times_ms, dtype=np.int64))
        if at.any() and float(np.nanmax(expired.values[at])) == 0:
            return "no entry had expired yet when they ran"
    return "the entries they rewrote had not expired yet (or expired ones sat in files no " \
        "compaction touched)"


def _compaction_filter(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    """Whether RocksDB's compaction filter removed anything, with its trade-off against
    ``none``, or why it removed nothing (no compaction ran; compactions that dropped nothing)."""
    out: list[tuple[str, ScenarioKey, Sentence]] = []  # (outcome, scenario, sentence)
    base = next((k for k in keys if k.strategy == BASELINE), None)
    for key in (k for k in keys if _base(k.strategy) == COMPACTION_FILTER):
        marks = compaction_marks(run, key)
        if marks is None and not _compacts(backend):
            continue  # a heap stand-in without RocksDB compactions: nothing to explain
        removed_stat = stat(run, key, "cleanup_removed_compaction_filter")
        if removed_stat is None and marks is None:
            continue
        counts = ""
        if marks is not None:
            counts = _count(marks.total or 0.0, "compaction")
            if marks.flushes is not None:
                counts = f"{_count(marks.flushes, 'flush')}, {counts}"
        s = Sentence().t(f"On {backend}, ").b(key.strategy)
        if removed_stat is None:
            # No removal count (Flink's lanes: FlinkCompactionFilter keeps none): never claim
            # "removed nothing"; the state it kept against the baseline is the evidence.
            peak, peak_base = _peak(run, key), _peak(run, base) if base is not None else None
            if peak is None or peak_base is None or base is None:
                continue
            what, mine, theirs = peak[0], peak[1].center, peak_base[1].center
            s.t(f" keeps {compare_phrase(mine, theirs, what, down='fewer')} at peak"
                f"{connector(mine, theirs)}").b(base.strategy)
            s.t(f" ({fmt_value(mine, 'entries')} vs {fmt_value(theirs, 'entries')})")
            s.t(f"{f' with {counts}' if counts else ''}; this backend keeps no count of what "
                "its compaction filter removed.")
            out.append(("peak-only", key, s))
            continue
        removed = removed_stat.center
        if removed > 0:
            peak, peak_base = _peak(run, key), _peak(run, base) if base is not None else None
            if peak is not None and peak_base is not None and base is not None:
                what, mine = peak
                theirs = peak_base[1]
                s.t(f" keeps {compare_phrase(mine.center, theirs.center, what, down='fewer')} "
                    f"at peak{connector(mine.center, theirs.center)}").b(base.strategy)
                s.t(f" ({fmt_value(mine.center, 'entries')} vs "
                    f"{fmt_value(theirs.center, 'entries')})")
                s.t(_cost(run, key, base).replace(", at", " at", 1) + "; it")
            s.t(f" removed {fmt_value(removed, 'entries')} expired entries")
            if marks is not None and marks.total:
                s.t(f" in {_count(marks.total, 'compaction')}")
            out.append(("removed", key, s.t(".")))
            continue
        s.severity = "warn"
        if marks is None:
            out.append(("unknown", key, s.t(" removed nothing, and the run recorded no RocksDB "
                                            "compaction counts to say why.")))
            continue
        if not marks.ran:
            s.t(f" removed nothing: no compaction ran ({counts}), and RocksDB applies the "
                "filter only while compacting")
            expired = stat(run, key, "expired_present_entries")
            if expired is not None and expired.last is not None:
                s.t(f", so {fmt_value(expired.last, 'entries')} expired entries were still "
                    "stored at the end")
            out.append(("no-compaction", key, s.t(".")))
            continue
        s.t(f" removed nothing: compactions ran but dropped nothing ({counts}); "
            f"{_why_nothing(run, key, marks.times_ms)}.")
        out.append(("dropped-nothing", key, s))
    return _merge_alike(out)


def _merge_alike(items: list[tuple[str, ScenarioKey, Sentence]]) -> list[Sentence]:
    """One sentence per way of removing nothing: the swept values of a knob that all ended the
    same way are named after the first one's sentence instead of repeating it."""
    out: list[Sentence] = []
    first: dict[str, Sentence] = {}
    alike: dict[str, list[str]] = {}
    for outcome, key, sentence in items:
        if outcome in ("removed", "peak-only") or outcome not in first:
            out.append(sentence)
            first.setdefault(outcome, sentence)
            continue
        alike.setdefault(outcome, []).append(key.strategy)
    for outcome, labels in alike.items():
        first[outcome].t(" The same for ").b(", ".join(labels)).t(".")
    return out


def _schedule(run: Run, backend: str, keys: list[ScenarioKey]) -> list[Sentence]:
    """How far behind its paced schedule each strategy ran (paced workloads only)."""
    p99 = _stats(run, keys, "schedule_lag_p99_ms")
    if not p99:
        return []
    late = _stats(run, keys, "late_records_share")

    def detail(key: ScenarioKey) -> str:
        parts = [f"p99 {fmt_value(p99[key].center, 'ms')}"]
        if key in late:
            parts.append(f"{fmt_value(late[key].center, 'share')} of records late")
        return ", ".join(parts)

    if _kept_up(late):
        return []  # one line per workload: checks()
    worst = max(p99, key=lambda k: p99[k].center)
    best = min(p99, key=lambda k: p99[k].center)
    s = Sentence().t(f"On {backend}, ").b(worst.strategy)
    s.t(f" ran furthest behind its paced source ({detail(worst)})")
    if best != worst:
        s.t("; ").b(best.strategy).t(f" kept closest to it ({detail(best)})")
    return [s.t(".")]


def _kept_up(late: dict[ScenarioKey, Stat]) -> bool:
    return bool(late) and all(s.hi == 0 for s in late.values())


def _backend_keys(run: Run, workload: str, backend: str) -> list[ScenarioKey]:
    return [k for k in run.scenarios(workload)
            if k.backend == backend and k not in run.not_applicable]


def checks(run: Run, workload: str) -> Sentence | None:
    """The checks that passed, in one line per workload instead of one sentence per backend
    ("no strategy returned an expired value" four times): correctness, and keeping up with a
    paced source. A check that failed stays a warning of its own in :func:`findings`."""
    clean, kept_up = [], []
    for backend in run.backends:
        keys = _backend_keys(run, workload, backend)
        returned = _stats(run, keys, "expired_returned")
        if returned and all(s.hi == 0 for s in returned.values()):
            clean.append(backend_label(backend))
        if _kept_up(_stats(run, keys, "late_records_share")):
            kept_up.append(backend_label(backend))
    parts = []
    if clean:
        parts.append(f"no strategy returned an expired value ({', '.join(clean)})")
    if kept_up:
        parts.append(f"every strategy kept up with its paced source, no record processed late "
                     f"({', '.join(kept_up)})")
    if not parts:
        return None
    return Sentence().t("Checks passed: " + "; ".join(parts) + ".")


def _clock(run: Run, workload: str) -> list[Sentence]:
    if not is_paced(run, workload):
        return []
    return [Sentence(severity="clock").t(paced_note(run, workload))]


def _compacts(backend: str) -> bool:
    """Whether ``backend``'s lane keeps RocksDB files that background compactions rewrite."""
    found = LANES.get(backend)
    return found is not None and found.background_compactions


def _layout_is_its_own(backend: str) -> bool:
    """Whether ``backend`` is one of statebench's backends that reads the [rocksdb] table, whose
    ``state_layout`` option the planner sets (``workloads.run.plan.rocksdb_options``)."""
    found = STORAGE_BACKENDS.get(backend)
    return found is not None and found.takes_rocksdb_options


def _like_for_like(run: Run, workload: str) -> list[Sentence]:
    """Whether RocksDB's compaction filter and its baseline differ only in cleanup."""
    layout = rocksdb_options(run, workload).get("state_layout")
    ran = [  # statebench's RocksDB only: the layout option is its own (Flink's lanes run
        # Flink's RocksDB backend, whose compaction filter needs no layout of its own)
        k for k in run.scenarios(workload)
        if _base(k.strategy) == COMPACTION_FILTER and k not in run.not_applicable
        and _layout_is_its_own(k.backend)
    ]
    if not ran or not isinstance(layout, str):
        return []
    backends = ", ".join(dict.fromkeys(k.backend for k in ran))
    if layout == TTL_DB:
        return [
            Sentence().t(f"Like for like: on {backends} every strategy ran in the TTL-DB "
                         "layout (each state in a RocksDB database of its own, as the "
                         "compaction filter needs), so ").b(COMPACTION_FILTER)
            .t(" differs from ").b(BASELINE).t(" only in its cleanup.")
        ]
    return [
        Sentence(severity="warn").t(f"Not like for like: on {backends} ").b(COMPACTION_FILTER)
        .t(" keeps each state in a TTL database of its own while the other strategies share "
           f"the {layout.replace('_', ' ')} layout, so part of its difference from ")
        .b(BASELINE).t(" is layout, not cleanup.")
    ]


def _sweep(run: Run, workload: str) -> list[Sentence]:
    """Per backend, what moving the swept knob from its lowest to its highest value does."""
    swept = sweep(run)
    if swept is None:
        return []
    ordered = sorted(zip(swept.values, swept.labels))
    out = []
    for backend in run.backends:
        found = [
            (v, ScenarioKey(workload, backend, label)) for v, label in ordered
            if ScenarioKey(workload, backend, label) in run.samples
        ]
        if len(found) < 2:
            continue
        (lo_v, lo), (hi_v, hi) = found[0], found[-1]
        s = Sentence().t(f"On {backend_label(backend)}, raising ")
        s.b(f"{swept.strategy} {swept.knob}")
        s.t(f" from {lo_v:g} to {hi_v:g} gives ")
        parts, left_out = [], ""
        for metric, noun, unit in ((STORED_ENTRIES, "peak stored entries", "entries"),
                                   ("records_per_s", "throughput", "records/s"),
                                   ("latency_p99_us", "p99 latency", "us")):
            a, b = stat(run, lo, metric), stat(run, hi, metric)
            if a is None or b is None:
                continue
            if _lockstep(run, (lo, hi), metric):
                left_out = f"; {LOCKSTEP_LEFT_OUT}"
                continue
            down = "fewer" if unit == "entries" else "lower"
            parts.append(f"{compare_phrase(b.center, a.center, noun, down=down)} "
                         f"({fmt_value(a.center, unit)} to {fmt_value(b.center, unit)})")
        if not parts:
            continue
        head, *rest = parts
        s.t(head + (" at " + " and ".join(rest) if rest else "") + left_out + ".")
        out.append(s)
    return out


def findings(run: Run) -> dict[str, list[Sentence]]:
    """Findings per workload, ordered: which numbers are wall-clock driven; per backend
    throughput, state, checkpoints, the compaction filter, schedule lag, correctness (failures:
    the passed checks are one line, :func:`checks`); then the like-for-like note, the knob sweep
    and the trade-off per engine."""
    result: dict[str, list[Sentence]] = {}
    for workload in run.workloads:
        out: list[Sentence] = _clock(run, workload)
        for backend in run.backends:
            keys = _backend_keys(run, workload, backend)
            if not keys:
                continue
            for part in (_throughput, _state, _checkpoints, _sync_share, _compaction_filter,
                         _schedule, _correctness):
                out.extend(part(run, backend_label(backend), keys))
        out.extend(_like_for_like(run, workload))
        out.extend(_sweep(run, workload))
        out.extend(_pareto(run, workload))
        result[workload] = out
    return result
