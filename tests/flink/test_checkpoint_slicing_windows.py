"""The slicing windows' checkpoint gaps, reproduced: q7's TUMBLE on HashMap, q5's HOP on both.

At 100 k events the real SQL job's peak checkpoints over the emulated operator's are 1.36x-1.38x
(tumbling_window, HashMap; 1.14x on RocksDB) and 0.35x / 0.45x (sliding_window, HashMap /
RocksDB). What each side keeps, from the engines' code:

* **SQL** (``WindowAggOperator`` with ``SliceUnsharedSyncStateWindowAggProcessor`` for TUMBLE,
  ``SliceSharedSyncStateWindowAggProcessor`` + ``HoppingSliceAssigner`` for HOP): one
  ``ValueState<RowData> "window-aggs"`` accumulator per (key, slice) in the slice end's
  ``Long`` namespace, under the group key's ``BinaryRowData``; records are combined in
  ``RecordsWindowBuffer`` and written at each checkpoint (``prepareSnapshotPreBarrier``) and
  before a window fires, so a checkpoint holds every unfired slice. ``AggCombiner`` registers
  an event-time timer at slice end - 1 (namespace the slice end) in the "window-timers"
  service. A timer fires the window ending there; TUMBLE then clears its slice, HOP merges the
  window's ``window_ms / slide_ms`` slices in memory, registers the next window's timer while
  the window is not empty (``nextTriggerWindow``: the key's chain of timers) and clears the
  window's FIRST slice only (``expiredSlices``): a slice lives until the last window holding
  it fires.
* **lane** (``Operators.Window``, DataStream's ``WindowOperator`` + ``EventTimeTrigger``): one
  ``ValueState<Long> "window-contents"`` per (key, window) in a ``TimeWindow`` namespace under
  a long key, and a timer at window end - 1 per (key, window); a HOP bid updates
  ``window_ms / slide_ms`` windows, each cleared when it fires.

Both sides' timers are keyed state in Flink 2.3's backends (HashMap: heap priority-queue
states in the keyed snapshot; RocksDB: the timer-service factory's default ROCKSDB, column
families; neither SqlJob nor the lane sets another), so a full checkpoint writes them.

The test: one small run of each kind and backend, the real job (checkpoints placed at the
lane's checkpoint times, ``SqlJobConfig.checkpoint_times_ms``) and the lane on the same
events. Each operator's history of entry writes, clears and timers is computed here
(:func:`sql_history`, :func:`lane_history`, the rules above) and ``row_format/
SlicingWindowProbe.java`` replays it into fresh Flink keyed backends (two key-group halves,
parallelism 2) in each side's format (read from the plan SqlJob runs: the operator's key
row, its processor's ``accSerializer``) and takes Flink's full checkpoint at each checkpoint
time. Each format replays both histories, which separates the two causes. What it shows
(the small run, HashMap byte for byte: 48 B per SQL entry - Long slice end, auction key row,
accumulator row - and 36 B per SQL timer, against 32 B and 32 B in the lane's format):

* TUMBLE, HashMap: the same entries and timers on both sides (949 and 949 at the peak); the
  row format alone predicts 1.37x against 1.38x-1.42x measured.
* HOP: at the peak SQL holds 1503 (key, slice) accumulators and 952 timers, the lane 4753
  (key, window) entries and 4753 timers; predicted 0.373x against 0.38x measured (HashMap),
  0.524x against 0.53x-0.56x (RocksDB), where SQL's format alone would give 1.32x / 1.06x.
  A 4 s run (as the report's 100 k events at 20 k/s: 5 s) never clears a slice (the first
  clear is when the window ending at window_ms fires), so it is the slices' count, not their
  expiry, that is compared; HOP's chain of next-window timers changes 7 of 952 timers here.
"""

from __future__ import annotations

import dataclasses
import heapq
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends.flink.sql_job import run_sql_jobs
from tests.flink.lanes_util import events_csv, lane_session
from tests.flink.test_checkpoint_row_format import (
    CHECKPOINT_MS,
    EVENTS,
    PROBE,
    RATE,
    TOLERANCE,
    build_probe,
    lane_checkpoints,
    lane_rows,
    operator_input,
    print_replay,
    run_probe,
    sql_job,
)
from workloads.spec import WorkloadSpec, load_spec

pytestmark = pytest.mark.slow

SLICING_PROBE = Path(__file__).resolve().parent / "row_format" / "SlicingWindowProbe.java"
SLICING_MAIN = "statebench.flink.sql.SlicingWindowProbe"
KINDS = {"tumbling_window": "nexmark-q7-window", "sliding_window": "nexmark-q5-sliding"}
#: The lanes of each backend: (real SQL job's backend, emulated lane).
BACKENDS = {"hashmap": "flink-heap", "rocksdb": "flink-rocksdb"}
#: How far the predicted RocksDB ratio may be from the measured one. A full RocksDB checkpoint
#: copies SST files, and which of them a checkpoint holds depends on when the real job's
#: flushes and compactions fell: its coordinator's own early checkpoint adds a flush when it
#: lands after the first records (on a loaded machine), which moves its compactions by one
#: checkpoint. Measured over runs: 0.53x-0.60x against 0.524x predicted (beside the whole
#: suite on 2 cores: 0.603x); the contrast, SQL's format alone, is 1.06x.
SST_TOLERANCE = 0.20
#: The backends each kind runs on: q7's RocksDB gap (1.14x) is within the report's band, and
#: at this size its SST files' flush and compaction timing moves it more than its entries do.
KIND_BACKENDS = {"tumbling_window": ("hashmap",), "sliding_window": ("hashmap", "rocksdb")}

#: The history rows' ops (SlicingWindowProbe's): an entry written, cleared; a timer
#: registered (one not yet in the queue), fired.
PUT, CLEAR, ADD_TIMER, DELETE_TIMER = 0, 1, 2, 3


def scaled_spec(kind: str) -> WorkloadSpec:
    return load_spec(KINDS[kind]).with_overrides(
        events=EVENTS, rate=RATE, checkpoint_interval_ms=CHECKPOINT_MS, strategies=["none"])


# ------------------------------------------------------------------------------------------
# Each operator's history of entries and timers
# ------------------------------------------------------------------------------------------


def accumulate(agg: str, acc: int | None, price: int) -> int:
    if agg == "count":
        return (acc or 0) + 1
    if agg == "sum":
        return (acc or 0) + price
    return price if acc is None else max(acc, price)


class Timers:
    """An event-time timer queue as InternalTimerServiceImpl keeps it: a set of (time, key,
    namespace), fired in time order while at or before the watermark; every registration of
    a new timer and every firing is written to ``out`` (``ts``: the record's)."""

    def __init__(self, out: list[tuple[int, int, int, int, int]]) -> None:
        self.heap: list[tuple[int, int, int]] = []
        self.live: set[tuple[int, int]] = set()
        self.out = out

    def add(self, key: int, ns: int, ts: int) -> None:
        if (key, ns) not in self.live:
            self.live.add((key, ns))
            heapq.heappush(self.heap, (ns - 1, key, ns))
            self.out.append((ADD_TIMER, key, ns, 0, ts))

    def due(self, watermark: int, ts: int) -> tuple[int, int] | None:
        """The next timer at or before ``watermark``, polled, or None."""
        if not self.heap or self.heap[0][0] > watermark:
            return None
        _, key, ns = heapq.heappop(self.heap)
        self.live.discard((key, ns))
        self.out.append((DELETE_TIMER, key, ns, 0, ts))
        return key, ns


def records(spec: WorkloadSpec) -> tuple[list[int], list[int], list[int]]:
    keys, columns = operator_input(spec)
    return keys.tolist(), columns["ts"].tolist(), columns["price"].tolist()


def window_params(spec: WorkloadSpec) -> tuple[int, int, int, str]:
    """(window, slide, bound, agg): a tumbling window slides by its size."""
    op, time = spec.operator, spec.time
    assert op is not None and time is not None
    slide = op.slide_ms if op.kind == "sliding_window" else op.window_ms
    return op.window_ms, slide, time.max_out_of_orderness_ms, op.agg


def lane_history(spec: WorkloadSpec) -> np.ndarray:
    """Operators.Window's writes: before each record the watermark (max ts - bound - 1) fires
    the windows ending at or before it + 1 (their entry cleared), then the record updates
    each window holding it (window_ms / slide_ms of them; a late one skipped) and registers
    its timer at the window's end - 1."""
    size, slide, bound, agg = window_params(spec)
    out: list[tuple[int, int, int, int, int]] = []
    state: dict[tuple[int, int], int] = {}
    timers = Timers(out)
    watermark = -(1 << 62)
    for key, ts, price in zip(*records(spec)):
        if ts - bound - 1 > watermark:
            watermark = ts - bound - 1
            while (fired := timers.due(watermark, ts)) is not None:
                if state.pop(fired, None) is not None:
                    out.append((CLEAR, *fired, 0, ts))
        start = ts - ts % slide
        while start > ts - size:
            end = start + size
            start -= slide
            if end - 1 <= watermark:
                continue
            state[(key, end)] = accumulate(agg, state.get((key, end)), price)
            out.append((PUT, key, end, state[(key, end)], ts))
            timers.add(key, end, ts)
    return np.array(out, dtype=np.int64)


def sql_history(spec: WorkloadSpec) -> np.ndarray:
    """WindowAggOperator's writes: each record's slice (slice end: the next multiple of the
    slide) accumulated and its timer registered (AggCombiner); after the record its
    watermark fires the due timers: TUMBLE clears the window's slice; HOP registers the next
    window's timer when one of the window's slices holds a row and clears the window's first
    slice (SliceSharedSyncStateWindowAggProcessor.fireWindow, clearWindow)."""
    size, slide, bound, agg = window_params(spec)
    slices = size // slide
    out: list[tuple[int, int, int, int, int]] = []
    state: dict[tuple[int, int], int] = {}
    timers = Timers(out)
    watermark = -(1 << 62)
    for key, ts, price in zip(*records(spec)):
        end = ts - ts % slide + slide
        assert end - 1 > watermark, "a late record: the history has no rule for it"
        state[(key, end)] = accumulate(agg, state.get((key, end)), price)
        out.append((PUT, key, end, state[(key, end)], ts))
        timers.add(key, end, ts)
        if ts - bound - 1 <= watermark:
            continue
        watermark = ts - bound - 1
        while (fired := timers.due(watermark, ts)) is not None:
            k, window_end = fired
            if slices > 1 and any((k, window_end - i * slide) in state for i in range(slices)):
                timers.add(k, window_end + slide, ts)
            first = window_end - size + slide
            if state.pop((k, first), None) is not None:
                out.append((CLEAR, k, first, 0, ts))
    return np.array(out, dtype=np.int64)


# ------------------------------------------------------------------------------------------
# The runs and the probe
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], list]:
    """(kind, backend, side) -> [(checkpoint time ms, checkpoint bytes)], the whole job's: the
    lane first, then the real job with its checkpoints placed at the lane's times."""
    root = tmp_path_factory.mktemp("slicing-runs")
    out: dict[tuple[str, str, str], list] = {}
    with lane_session():
        for kind in KINDS:
            rows = lane_rows(scaled_spec(kind),
                             tuple(BACKENDS[b] for b in KIND_BACKENDS[kind]), root / kind)
            for backend in KIND_BACKENDS[kind]:
                out[(kind, backend, "lane")] = lane_checkpoints(rows, BACKENDS[backend])
    jobs, names = [], []
    for kind in KINDS:
        spec = scaled_spec(kind)
        assert spec.operator is not None
        events, count = events_csv(root, kind, spec)
        for backend in KIND_BACKENDS[kind]:
            times = tuple(int(t) for t, _ in out[(kind, backend, "lane")])
            job = sql_job(spec, events, count, backend, root / f"{kind}-{backend}")
            jobs.append(dataclasses.replace(job, slide_ms=spec.operator.slide_ms,
                                            checkpoint_times_ms=times))
            names.append((kind, backend, "sql"))
    for name, report in zip(names, run_sql_jobs(jobs)):
        out[name] = [(c["clock_ms"], c["state_bytes"]) for c in report["checkpoints"]
                     if c["status"] == "COMPLETED" and c["state_bytes"] > 0]
    return out


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, runs: dict[tuple[str, str, str], list]
          ) -> dict[tuple[str, str, str, str], dict]:
    """(kind, backend, format, history) -> the probe's row: the format's serializers and one
    key's, value's, namespace's and timer's bytes, and ``replay``: [time, snapshot bytes,
    entries, timers] of the history in that format at every checkpoint time."""
    root = tmp_path_factory.mktemp("slicing-probe")
    classpath = build_probe(root / "classes", sources=(PROBE, SLICING_PROBE))
    events = root / "events.csv"
    events.write_text("2,0,1,1,1,1,1,1\n", encoding="utf-8")
    jobs = []
    for kind in KINDS:
        spec = scaled_spec(kind)
        assert spec.operator is not None
        job = dataclasses.replace(sql_job(spec, events, 1, "hashmap", root / "ck"),
                                  slide_ms=spec.operator.slide_ms).as_request()
        job["history"] = {}
        for side, history in (("sql", sql_history(spec)), ("lane", lane_history(spec))):
            job["history"][side] = str(root / f"{kind}-{side}.bin")
            history.astype(">i8").tofile(job["history"][side])
        job["times"] = {b: [int(t) for t, _ in runs[(kind, b, "lane")]]
                        for b in KIND_BACKENDS[kind]}
        jobs.append(job)
    report = run_probe(root, classpath, SLICING_MAIN,
                       {"jobs": jobs, "dir": str(root / "rocksdb")})
    return {(r["kind"], r["backend"], r["side"], r["history"]): r for r in report["rows"]}


# ------------------------------------------------------------------------------------------
# The tests
# ------------------------------------------------------------------------------------------


def peak(row: dict[str, Any]) -> list[int]:
    """The replay's point of most bytes: [time, bytes, entries, timers]."""
    return max(row["replay"], key=lambda p: p[1])


def ratios(kind: str, backend: str, probe: dict[tuple[str, str, str, str], dict],
           runs: dict[tuple[str, str, str], list]) -> dict[str, float]:
    """Peak checkpoint bytes, real over lane: ``measured``; ``predicted`` (each history in
    its side's format); ``format`` (the lane's history in both formats: the format alone);
    ``history`` (both histories in the lane's format: the entries and timers alone)."""
    real, lane = runs[(kind, backend, "sql")], runs[(kind, backend, "lane")]
    assert real and lane, (real, lane)

    def replayed(fmt: str, history: str) -> int:
        return peak(probe[(kind, backend, fmt, history)])[1]

    out = {"measured": max(b for _, b in real) / max(b for _, b in lane),
           "predicted": replayed("sql", "sql") / replayed("lane", "lane"),
           "format": replayed("sql", "lane") / replayed("lane", "lane"),
           "history": replayed("lane", "sql") / replayed("lane", "lane")}
    for side, cps in (("sql", real), ("lane", lane)):
        row = probe[(kind, backend, side, side)]
        t, b, entries, timers = peak(row)
        print(f"{kind} {backend} {side}: {row['state']}; key {row['key_bytes']} B, value "
              f"{row['value_bytes']} B, namespace {row['namespace_bytes']} B, timer "
              f"{row['timer_bytes']} B; replayed peak t={t} {b} B: {entries} entries, "
              f"{timers} timers, {b / max(1, entries + timers):.1f} B per entry or timer")
        at = {p[0]: p[1] for p in row["replay"]}
        print_replay(side, cps, [at.get(int(t), 0) for t, _ in cps])
    print(f"{kind} {backend}: " + ", ".join(f"{k} {v:.3f}x" for k, v in out.items()))
    return out


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_side_registers_the_state_its_operator_does(
        kind: str, probe: dict[tuple[str, str, str, str], dict]) -> None:
    """SQL's state read from the plan: window-aggs, a BinaryRowData key (auction: 20 B), a
    Long slice-end namespace, timers of (timestamp, key row, Long); the lane's: a long key, a
    TimeWindow namespace (16 B), timers of (timestamp, long, TimeWindow); neither a TTL."""
    sql, lane = probe[(kind, "hashmap", "sql", "sql")], probe[(kind, "hashmap", "lane", "lane")]
    for row in (sql, lane):
        print(f"{kind} {row['side']}: {row['state']}; {row['key_serializer']} "
              f"{row['key_bytes']} B, {row['value_serializer']} {row['value_bytes']} B, "
              f"{row['namespace_serializer']} {row['namespace_bytes']} B, timer "
              f"{row['timer_bytes']} B")
        assert not row["ttl"]
    assert sql["state"].startswith("SliceSharedSyncStateWindowAggProcessor window-aggs"
                                   if kind == "sliding_window" else
                                   "SliceUnsharedSyncStateWindowAggProcessor window-aggs")
    assert (sql["key_serializer"], sql["key_bytes"]) == ("RowDataSerializer", 20)
    assert (sql["namespace_bytes"], sql["timer_bytes"]) == (8, 8 + 20 + 8)
    assert (lane["key_bytes"], lane["value_bytes"], lane["namespace_bytes"],
            lane["timer_bytes"]) == (8, 8, 16, 8 + 8 + 16)


@pytest.mark.parametrize("kind", list(KINDS))
def test_on_hashmap_the_replay_is_each_sides_state(
        kind: str, probe: dict[tuple[str, str, str, str], dict],
        runs: dict[tuple[str, str, str], list]) -> None:
    """A HashMap full checkpoint writes every entry and timer: the lane's replayed checkpoints
    are its measured ones within 1%, at every checkpoint. The real job's hold at least the
    replayed state: its barrier follows the record at the checkpoint's time or the few the
    source releases while the trigger travels (SqlJob.EventCheckpoints; more under load), and
    its other operators' state (the source's split, the window operator's watermark list)."""
    for side in ("sql", "lane"):
        at = {p[0]: p[1] for p in probe[(kind, "hashmap", side, side)]["replay"]}
        for t, measured in runs[(kind, "hashmap", side)]:
            replayed = at[int(t)]
            low = 0.99 if side == "lane" else 0.0
            assert low * measured <= replayed <= 1.01 * measured, (side, t, measured, replayed)


def test_tumbling_on_hashmap_the_format_is_the_cause(
        probe: dict[tuple[str, str, str, str], dict],
        runs: dict[tuple[str, str, str], list]) -> None:
    """TUMBLE: one slice is one window, so both histories hold the same entries and timers;
    the predicted ratio is within 10% of the measured one, and both histories in the lane's
    format (everything but the format) are not."""
    r = ratios("tumbling_window", "hashmap", probe, runs)
    assert abs(r["predicted"] / r["measured"] - 1) <= TOLERANCE, r
    assert abs(r["history"] - 1) <= 0.02, r
    assert abs(r["history"] / r["measured"] - 1) > TOLERANCE, r


@pytest.mark.parametrize("backend", KIND_BACKENDS["sliding_window"])
def test_hop_keeps_fewer_entries_the_slices_are_the_cause(
        backend: str, probe: dict[tuple[str, str, str, str], dict],
        runs: dict[tuple[str, str, str], list]) -> None:
    """HOP: the predicted ratio is within 10% of the measured one on HashMap (20% on RocksDB:
    :data:`SST_TOLERANCE`); the lane's history in both formats (the format alone, SQL's
    larger rows) is not - it is above 1 where the measured one is far below, more than twice
    the tolerance away: the slices are the cause."""
    tolerance = SST_TOLERANCE if backend == "rocksdb" else TOLERANCE
    r = ratios("sliding_window", backend, probe, runs)
    assert abs(r["predicted"] / r["measured"] - 1) <= tolerance, r
    assert r["format"] > 1 > r["measured"], r
    assert abs(r["format"] / r["measured"] - 1) > 2 * tolerance, r
