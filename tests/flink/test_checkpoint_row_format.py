"""The row format as the cause of the real SQL job's larger checkpoints, reproduced.

The report sets the real Flink SQL job (``flink-sql``, ``flink-sql-heap``) beside the same
operator emulated on Flink's own backends (``flink-rocksdb``, ``flink-heap``); the real job's
peak checkpoints are larger (dedup 1.28x / 1.56x, group_agg 1.71x / 2.16x on RocksDB / HashMap
at 100 k events). The cause named: SQL keeps ``BinaryRowData`` keys, rows and accumulators
(``RowDataSerializer``), the lane a long key and a packed value. This module measures how much
of the gap that accounts for:

1. **Bytes per entry, from Flink's own serializers.** ``row_format/RowFormatProbe.java`` plans
   each kind's query exactly as ``SqlJob`` does, takes the keyed operator's key type and the
   type its function registers its state with (``RowTimeDeduplicateFunction``: the input row
   ``(ts, person_id, auction_id, price, event_time)`` as ``deduplicate-state``;
   ``GroupAggFunction``: its accumulator row ``(MAX(price), MAX(ts))`` as ``accState``),
   writes the state's keys (the real values of the run's input) into a fresh HashMap and
   RocksDB keyed backend with the TTL the operator enables, and takes Flink's full
   checkpoint; the same for the lane's state as ``Operators.java`` registers it. Two
   snapshots (half the keys, all of them) give one entry's bytes and the fixed part. A
   Python computation of the serialized layouts (:func:`serialized`, :func:`entry_bytes`:
   BinaryRowData's null bits and 8-byte slots, the length ints, TtlValue's timestamp, the
   namespace byte) gives the same numbers, byte for byte, on HashMap.
2. **HashMap: the format is the cause.** One small run of each kind, the real job (``SqlJob``,
   the flink-sql lanes' program, every job in one JVM) and the lane on the same events, with
   a TTL longer than the run (every value carries its TTL timestamp, as in the report's runs,
   and nothing expires, so a checkpoint holds every key seen before it whatever the cleanup).
   The probe replays the state's history (each input row's write) in each side's format into
   two backends (the key groups' halves, parallelism 2) and snapshots it at each side's own
   checkpoint times: the predicted peak ratio is within 10% of the measured one, the lane's
   format on both sides (everything but the format: where the checkpoints fall) is not.
   The same for the MapState kinds (:data:`MAP_KINDS`, HashMap only): regular_join
   (SQL: ``StreamingJoinOperator``'s ``left-records`` / ``right-records``, no unique key on
   either input: ``MapState<record row, count>``; lane: ``RegularJoin``'s Tuple4 / Tuple6
   keys) and topn (SQL: ``AppendOnlyTopNFunction``'s ``data-state-with-append``,
   ``MapState<sort key row, List<input row>>``; lane: ``TopN``'s ``MapState<Long, byte[]>``),
   their states' types read from the plan as above and their histories (every record put;
   the top-N buffer's writes and removals) replayed the same way.
3. **RocksDB: the format is mostly compressed away.** Flink 2.3's full RocksDB checkpoint
   (``RocksNativeFullSnapshotStrategy``, on both sides: no incremental checkpoints) copies the
   DB's SST files, Snappy-compressed blocks with shared key prefixes: dedup's SQL entry costs
   about the lane's there (1.58x serialized), group_agg's about 1.5x (1.94x serialized), and
   each task's snapshot has ~15 kB of fixed files. The rest of RocksDB's gap is which SST files
   each checkpoint copies (a flush per checkpoint, overwritten keys' versions kept until a
   compaction merges them: background timing) and where the checkpoints fall; the test bounds
   the per-entry ratio and prints the replay beside the measurement.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends import tempdirs
from backends.flink import FlinkUnavailableError
from backends.flink.build import find_jdk
from backends.flink.sql_job import (
    SqlJobConfig,
    ensure_sql_job_built,
    run_sql_jobs,
)
from backends.flink.worker import JVM_OPTIONS
from tests.flink.conftest import fail_or_skip
from tests.flink.lanes_util import events_csv, lane_session
from workloads.lanes.flink_sql_job import events_in_time_order
from workloads.operators.input import select
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import RunConfig
from workloads.spec import WorkloadSpec, load_spec

pytestmark = pytest.mark.slow

PROBE = Path(__file__).resolve().parent / "row_format" / "RowFormatProbe.java"
PROBE_MAIN = "statebench.flink.sql.RowFormatProbe"
KINDS = {"dedup": "nexmark-q18-dedup", "group_agg": "nexmark-q4-agg"}
#: The kinds whose state is MapStates (SQL: StreamingJoinOperator's left-records /
#: right-records, AppendOnlyTopNFunction's data-state-with-append; the lane: Operators.java's
#: RegularJoin and TopN), run and replayed on HashMap only.
MAP_KINDS = {"regular_join": "nexmark-q20-join", "topn": "nexmark-q19-topn"}
SPECS = {**KINDS, **MAP_KINDS}
#: The lanes of each backend: (real SQL job's backend, emulated lane).
BACKENDS = {"hashmap": "flink-heap", "rocksdb": "flink-rocksdb"}
#: The small run: 4 s of events paced at 5 k/s (what the SQL job keeps up with on a busy
#: 2-core machine), a checkpoint every 500 ms, parallelism 2 as the report's runs; a TTL
#: longer than the run (the TTL wrapper on every value, nothing expiring).
EVENTS = 20_000
RATE = 5_000.0
CHECKPOINT_MS = 500
TTL_MS = 60_000
PARALLELISM = 2
#: How far the predicted ratio may be from the measured one (the brief's 10%).
TOLERANCE = 0.10

# ------------------------------------------------------------------------------------------
# The layouts in Python: what one entry costs in a full snapshot
# ------------------------------------------------------------------------------------------

LENGTH = 4  # an int length before a serialized BinaryRowData / byte[] (and RocksDB's k/v)
SLOT = 8  # BinaryRowData's fixed-length slot (BIGINT, INT, TIMESTAMP_LTZ(3): all 8 bytes)
TTL_TIMESTAMP = 8  # TtlValue's last-access time, before the user value (TtlSerializer)
VOID_NAMESPACE = 1  # VoidNamespaceSerializer writes one byte
KEY_GROUP_PREFIX = 1  # RocksDB's key-group prefix at max parallelism 128

#: (key bytes, value bytes) as each side's serializers write one entry's key and value.
#: SQL: the keyed operator's key row and state row (RowDataSerializer: length + BinaryRowData);
#: lane: a long key, and a byte[32] (length + 32) or a Long value.
#: The SQL rows' field counts: dedup's key (bidder, auction), its state the input row
#: (auction, bidder, price, ts, event_time); group_agg's key (auction), its accumulator
#: (MAX(price), MAX(ts)).
SQL_FIELDS = {"dedup": (2, 5), "group_agg": (1, 2)}
LANE_BYTES = {"dedup": (8, LENGTH + 32), "group_agg": (8, 8)}


def binary_row_bytes(fields: int) -> int:
    """A BinaryRowData of fixed-length fields as RowDataSerializer writes it: its length, the
    header and null bits rounded up to 8-byte words, one slot per field."""
    header = (fields + 63 + 8) // 64 * 8
    return LENGTH + header + SLOT * fields


def serialized(kind: str, side: str) -> tuple[int, int]:
    """(key, value) bytes of one entry on ``side`` (``sql`` or ``lane``), TTL not included."""
    if side == "lane":
        return LANE_BYTES[kind]
    key, value = SQL_FIELDS[kind]
    return binary_row_bytes(key), binary_row_bytes(value)


def entry_bytes(kind: str, backend: str, side: str) -> int:
    """One entry in Flink's full checkpoint. HashMap (CopyOnWriteStateMapSnapshot): namespace,
    key, TtlValue(timestamp, value). RocksDB (FullSnapshotAsyncWriter): the RocksDB key
    (key-group prefix, key, namespace) and value (timestamp, value), each as a byte[] with
    its length."""
    key, value = serialized(kind, side)
    value += TTL_TIMESTAMP
    if backend == "hashmap":
        return VOID_NAMESPACE + key + value
    return LENGTH + KEY_GROUP_PREFIX + key + VOID_NAMESPACE + LENGTH + value


# ------------------------------------------------------------------------------------------
# The probe: Flink's serializers and snapshots in one JVM
# ------------------------------------------------------------------------------------------


def scaled_spec(kind: str) -> WorkloadSpec:
    return load_spec(SPECS[kind]).with_overrides(
        events=EVENTS, rate=RATE, ttl_ms=TTL_MS, checkpoint_interval_ms=CHECKPOINT_MS,
        strategies=["none"])


def sql_job(spec: WorkloadSpec, events: Path, count: int, backend: str,
            checkpoint_dir: Path) -> SqlJobConfig:
    """The SQL job as the flink-sql lanes configure it for ``spec`` under EventTime
    (``workloads.lanes.flink_sql_job.sql_job_config``), at speedup 1."""
    op, time = spec.operator, spec.time
    assert op is not None and time is not None and spec.state is not None
    return SqlJobConfig(
        events=events, count=count, kind=op.kind, backend=backend,
        checkpoint_dir=checkpoint_dir, checkpoint_interval_ms=CHECKPOINT_MS,
        ttl_ms=spec.state.ttl_ms or 0, parallelism=PARALLELISM,
        out_of_orderness_ms=time.max_out_of_orderness_ms, window_ms=op.window_ms,
        category=op.category, group_by=op.group_by, agg=op.agg, top_n=op.top_n,
        lower_ms=op.lower_ms, upper_ms=op.upper_ms, sample_interval_ms=100,
        ttl_clock="event")


def operator_input(spec: WorkloadSpec) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The operator's keys and input columns over the spec's events in the job's order."""
    assert spec.operator is not None
    table = events_in_time_order(spec).combine_chunks()
    rows, keys = select(spec.operator, table.to_batches()[0])
    columns = {"auction": "auction_id", "bidder": "person_id", "price": "price", "ts": "ts"}
    return keys, {name: rows.column(c).to_numpy(zero_copy_only=False).astype(np.int64)
                  for name, c in columns.items()}


def final_entries(spec: WorkloadSpec) -> np.ndarray:
    """What the state holds per key at the end of the input when nothing expires, one row per
    key: dedup's last bid per (bidder, auction) as (auction, bidder, price, ts), group_agg's
    (auction, MAX(price), MAX(ts)) - the values the probe writes in each side's format."""
    assert spec.operator is not None
    keys, c = operator_input(spec)
    if spec.operator.kind == "dedup":
        last = len(keys) - 1 - np.unique(keys[::-1], return_index=True)[1]
        return np.stack([c["auction"][last], c["bidder"][last], c["price"][last],
                         c["ts"][last]], axis=1)
    groups, inverse = np.unique(keys, return_inverse=True)
    price = np.full(len(groups), np.iinfo(np.int64).min)
    ts = price.copy()
    np.maximum.at(price, inverse, c["price"])
    np.maximum.at(ts, inverse, c["ts"])
    return np.stack([groups, price, ts], axis=1)


def replayed_states(spec: WorkloadSpec) -> np.ndarray:
    """Each input row's new state value, in the job's order, then the row's ts: dedup writes
    the row itself, group_agg its key's running maxima (both operators write on every row,
    the TTL's refresh) - what the probe replays into the backends between checkpoints."""
    assert spec.operator is not None
    keys, c = operator_input(spec)
    if spec.operator.kind == "dedup":
        return np.stack([c["auction"], c["bidder"], c["price"], c["ts"], c["ts"]], axis=1)
    price: dict[int, int] = {}
    ts: dict[int, int] = {}
    out = np.empty((len(keys), 4), dtype=np.int64)
    for i, (key, p, t) in enumerate(zip(keys.tolist(), c["price"].tolist(), c["ts"].tolist())):
        price[key] = max(price.get(key, p), p)
        ts[key] = max(ts.get(key, t), t)
        out[i] = (key, price[key], ts[key], t)
    return out


def join_history(spec: WorkloadSpec) -> np.ndarray:
    """regular_join's state history: per input record (the job's order) its map entry, as
    (auction, 0 bid / 1 auction, the record's fields, ts): a bid's (auction, bidder, price,
    ts), an auction's (id, seller, category, expires, ts, initial bid). Both operators put
    every record in its side's MapState (record -> count) and nothing expires."""
    assert spec.operator is not None
    table = events_in_time_order(spec).combine_chunks()
    rows, keys = select(spec.operator, table.to_batches()[0])

    def col(name: str) -> np.ndarray:
        return rows.column(name).to_numpy(zero_copy_only=False).astype(np.int64)

    ts, auction, person, price = col("ts"), col("auction_id"), col("person_id"), col("price")
    is_auction = (col("event_type") == 1).astype(np.int64)
    zeros = np.zeros(len(keys), dtype=np.int64)
    bid_fields = [auction, person, price, ts, zeros, zeros]
    auction_fields = [auction, person, col("category"), col("expires_ms"), ts, price]
    fields = [np.where(is_auction == 1, a, b) for a, b in zip(auction_fields, bid_fields)]
    return np.stack([keys, is_auction, *fields, ts], axis=1)


def topn_history(spec: WorkloadSpec) -> np.ndarray:
    """topn's state writes, in order: per bid that enters its auction's top N, (auction,
    price, the bids at that price after the write, bidder, ts), and when the buffer then
    holds N + 1 bids, the write of its worst price's (one bid fewer; 0: the price removed).
    AppendOnlyTopNFunction's and Operators.TopN's rule: a bid whose price is not above the
    worst does not enter a full buffer (ties rank after the bids there)."""
    assert spec.operator is not None
    top_n = spec.operator.top_n
    keys, c = operator_input(spec)
    buffers: dict[int, dict[int, int]] = {}
    out: list[tuple[int, int, int, int, int]] = []
    for key, bidder, price, ts in zip(keys.tolist(), c["bidder"].tolist(),
                                      c["price"].tolist(), c["ts"].tolist()):
        buffer = buffers.setdefault(key, {})
        count = sum(buffer.values())
        if buffer and price <= min(buffer) and count >= top_n:
            continue
        buffer[price] = buffer.get(price, 0) + 1
        out.append((key, price, buffer[price], bidder, ts))
        if count + 1 > top_n:
            worst = min(buffer)
            buffer[worst] -= 1
            if buffer[worst] == 0:
                del buffer[worst]
            out.append((key, worst, buffer.get(worst, 0), bidder, ts))
    return np.array(out, dtype=np.int64)


def map_history(kind: str) -> np.ndarray:
    spec = scaled_spec(kind)
    return join_history(spec) if kind == "regular_join" else topn_history(spec)


def map_entries_at(history: np.ndarray, kind: str, t: float) -> tuple[int, int]:
    """(keys, map entries) the state holds once the input passed time ``t``."""
    done = history[history[:, -1] <= t]
    if kind == "regular_join":
        entries = len(np.unique(done[:, :-1], axis=0))
        return len(np.unique(done[:, 0])), entries
    state: dict[tuple[int, int], int] = {}
    for key, price, n in done[:, :3].tolist():
        if n:
            state[(key, price)] = n
        else:
            state.pop((key, price), None)
    return len({k for k, _ in state}), len(state)


def build_probe(target: Path, sources: tuple[Path, ...] = (PROBE,)) -> str:
    """javac the probe (and the probes built on it: ``sources``) beside the SQL job's build
    (it reads SqlJob's package-private query and DDL); the classpath to run it with."""
    try:
        build = ensure_sql_job_built()
        javac, _ = find_jdk()
    except FlinkUnavailableError as exc:
        fail_or_skip("the row format probe", exc)
    target.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-d", str(target),
                           "-cp", build.classpath, *map(str, sources)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return os.pathsep.join([str(target), build.classpath])


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, runs: dict[tuple[str, str, str], list]
          ) -> dict[tuple[str, str, str], dict]:
    """(kind, backend, side) -> the probe's row: serializers, bytes of one key and value,
    bytes per entry and fixed bytes of Flink's full checkpoint, and ``replay``: the state's
    history in that side's format snapshotted at every checkpoint time of both runs."""
    root = tmp_path_factory.mktemp("row-format")
    classpath = build_probe(root / "classes")
    events = root / "events.csv"
    events.write_text("2,0,1,1,1,1,1,1\n", encoding="utf-8")
    jobs = []
    for kind in KINDS:
        job = sql_job(scaled_spec(kind), events, 1, "hashmap", root / "ck").as_request()
        entries = final_entries(scaled_spec(kind))
        job["data"] = str(root / f"{kind}.bin")
        job["columns"] = entries.shape[1]
        entries.astype(">i8").tofile(job["data"])
        history = replayed_states(scaled_spec(kind))
        job["replay"] = str(root / f"{kind}-replay.bin")
        job["replay_columns"] = history.shape[1]
        history.astype(">i8").tofile(job["replay"])
        times = {b: checkpoint_times(runs, kind, b) for b in BACKENDS}
        job["times"] = {"sql": times, "lane": times}
        jobs.append(job)
    for kind in MAP_KINDS:
        job = sql_job(scaled_spec(kind), events, 1, "hashmap", root / "ck").as_request()
        job["replay"] = str(root / f"{kind}-replay.bin")
        map_history(kind).astype(">i8").tofile(job["replay"])
        times = {"hashmap": checkpoint_times(runs, kind, "hashmap")}
        job["times"] = {"sql": times, "lane": times}
        jobs.append(job)
    report = run_probe(root, classpath, PROBE_MAIN,
                       {"jobs": jobs, "dir": str(root / "rocksdb")})
    return {(r["kind"], r["backend"], r["side"]): r for r in report["rows"]}


def run_probe(root: Path, classpath: str, main: str, request: dict[str, Any]) -> dict[str, Any]:
    """Run probe ``main`` (this module's or one built on it) on ``request`` in a JVM of its
    own, its temporary files under ``root``; the JSON object it prints."""
    path = root / "request.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    _, java = find_jdk()
    local = Path(tempdirs.make("statebench-probe-", dir=root))
    proc = subprocess.run([java, "-Xmx512m", f"-Djava.io.tmpdir={local}", *JVM_OPTIONS,
                           "-cp", classpath, main, str(path)],
                          capture_output=True, text=True, timeout=600)
    tempdirs.remove(local)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------
# The small runs: the real job and the lane on the same events
# ------------------------------------------------------------------------------------------


def first_seen(spec: WorkloadSpec) -> np.ndarray:
    """The time each of the operator's keys first reaches it, sorted: the keys a checkpoint
    at time t holds when nothing expires are those seen at or before t."""
    keys, columns = operator_input(spec)
    ts = columns["ts"]
    order = np.lexsort((ts, keys))
    keys, ts = keys[order], ts[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return np.sort(ts[first])


def checkpoint_times(runs: dict[tuple[str, str, str], list], kind: str,
                     backend: str) -> list[int]:
    """Every checkpoint time of both sides' runs of ``kind`` on ``backend``, in order."""
    return sorted({int(t) for side in ("sql", "lane") for t, _ in runs[(kind, backend, side)]})


def keys_at(seen: np.ndarray, t: float) -> int:
    return int(np.searchsorted(seen, t, side="right"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], list]:
    """(kind, backend, side) -> [(checkpoint time ms, checkpoint bytes)], the whole job's."""
    root = tmp_path_factory.mktemp("row-format-runs")
    out: dict[tuple[str, str, str], list] = {}
    jobs, names = [], []
    for kind in KINDS:
        spec = scaled_spec(kind)
        events, count = events_csv(root, kind, spec)
        for backend in BACKENDS:
            jobs.append(sql_job(spec, events, count, backend, root / f"{kind}-{backend}"))
            names.append((kind, backend, "sql"))
    for kind in MAP_KINDS:
        spec = scaled_spec(kind)
        events, count = events_csv(root, kind, spec)
        jobs.append(sql_job(spec, events, count, "hashmap", root / f"{kind}-hashmap"))
        names.append((kind, "hashmap", "sql"))
    for name, report in zip(names, run_sql_jobs(jobs)):
        out[name] = [(c["clock_ms"], c["state_bytes"]) for c in report["checkpoints"]
                     if c["status"] == "COMPLETED" and c["state_bytes"] > 0]
    with lane_session():
        for kind in KINDS:
            rows = lane_rows(scaled_spec(kind), tuple(BACKENDS.values()), root / kind)
            for backend, lane in BACKENDS.items():
                out[(kind, backend, "lane")] = lane_checkpoints(rows, lane)
        for kind in MAP_KINDS:
            rows = lane_rows(scaled_spec(kind), (BACKENDS["hashmap"],), root / kind)
            out[(kind, "hashmap", "lane")] = lane_checkpoints(rows, BACKENDS["hashmap"])
    return out


def print_replay(label: str, checkpoints: list, replayed_bytes: list) -> None:
    """One side's measured checkpoints beside its replay's, for the test's output."""
    print(f"  {label} (measured/replayed): " + ", ".join(
        f"t={t:.0f} {b:.0f}/{p:.0f}" for (t, b), p in zip(checkpoints, replayed_bytes)))


def lane_rows(spec: WorkloadSpec, lanes: tuple[str, ...], root: Path,
              speedup: float = 1.0) -> list[dict[str, Any]]:
    """The emulated lanes' rows of one small in-process run of ``spec`` at parallelism 2,
    checkpointing under ``root`` (inside a ``lane_session``)."""
    root.mkdir(parents=True, exist_ok=True)
    cfg = RunConfig(spec, backends=lanes, parallelism=PARALLELISM,
                    checkpoint_root=str(root / "ck"), local_dir=str(root), time_speedup=speedup)
    return run_in_process(cfg).rows.to_pylist()


def lane_checkpoints(rows: list[dict[str, Any]], lane: str) -> list[tuple[float, float]]:
    """The lane's whole-job checkpoint bytes by checkpoint (its tasks' summed)."""
    by_step: dict[int, list] = {}
    for r in rows:
        if r["backend"] == lane and r["metric"] == "checkpoint_bytes" and r["task"] >= 0:
            entry = by_step.setdefault(r["step"], [r["logical_time_ms"], 0.0])
            entry[1] += r["value"]
    return [tuple(v) for _, v in sorted(by_step.items())]


# ------------------------------------------------------------------------------------------
# The tests
# ------------------------------------------------------------------------------------------


def describe(row: dict[str, Any]) -> str:
    return (f"{row['kind']} {row['backend']} {row['side']}: {row['state']} key "
            f"{row['key_serializer']} {row['key_bytes']} B, value {row['value_serializer']} "
            f"{row['value_bytes']} B; {row['bytes_per_entry']:.2f} B per entry, "
            f"{row['fixed_bytes']:.0f} B fixed; {row['entries']} keys: {row['bytes_all']} B")


@pytest.mark.parametrize("kind", list(KINDS))
def test_flinks_serializers_write_the_layout_computed_in_python(
        kind: str, probe: dict[tuple[str, str, str], dict]) -> None:
    """Flink's serializers write the rows :func:`serialized` computes (the SQL operator's key
    and state rows as RowDataSerializer writes them, the lane's long and packed value), and a
    HashMap full checkpoint costs :func:`entry_bytes` per entry, byte for byte (the
    difference of two snapshots over their keys)."""
    for backend in BACKENDS:
        for side in ("sql", "lane"):
            row = probe[(kind, backend, side)]
            print(describe(row))
            assert row["ttl"]
            assert (row["key_bytes"], row["value_bytes"]) == serialized(kind, side)
    assert probe[(kind, "hashmap", "sql")]["key_serializer"] == "RowDataSerializer"
    for side in ("sql", "lane"):
        per_entry = probe[(kind, "hashmap", side)]["bytes_per_entry"]
        assert abs(per_entry - entry_bytes(kind, "hashmap", side)) < 0.5, (side, per_entry)


def replayed(row: dict[str, Any], checkpoints: list) -> list[float]:
    """The probe's replayed snapshot bytes at each of ``checkpoints``' times."""
    at = {t: b for t, b in row["replay"]}
    return [at[int(t)] for t, _ in checkpoints]


def ratios(kind: str, backend: str, probe: dict[tuple[str, str, str], dict],
           runs: dict[tuple[str, str, str], list]) -> tuple[float, float, float]:
    """(measured, predicted, lane format on both sides): peak checkpoint bytes, real job over
    lane. Predicted: the state's history replayed in each side's format and snapshotted at
    that side's own checkpoint times; the third replays the lane's format at both sides'
    times, so it holds everything but the row format (where the checkpoints fall)."""
    seen = first_seen(scaled_spec(kind))
    real, lane = runs[(kind, backend, "sql")], runs[(kind, backend, "lane")]
    assert real and lane, (real, lane)
    sql_row, lane_row = probe[(kind, backend, "sql")], probe[(kind, backend, "lane")]
    measured = max(b for _, b in real) / max(b for _, b in lane)
    ratio = max(replayed(sql_row, real)) / max(replayed(lane_row, lane))
    same_format = max(replayed(lane_row, real)) / max(replayed(lane_row, lane))
    peak_real = max(real, key=lambda c: c[1])
    peak_lane = max(lane, key=lambda c: c[1])
    per_entry = sql_row["bytes_per_entry"] / lane_row["bytes_per_entry"]
    print(f"{kind} {backend}: bytes/entry real {sql_row['bytes_per_entry']:.1f} lane "
          f"{lane_row['bytes_per_entry']:.1f} ({per_entry:.3f}x); keys at the peak checkpoint "
          f"real {keys_at(seen, peak_real[0])} (t={peak_real[0]:.0f}) lane "
          f"{keys_at(seen, peak_lane[0])} (t={peak_lane[0]:.0f}); peak bytes real "
          f"{peak_real[1]:.0f} lane {peak_lane[1]:.0f}; predicted {ratio:.3f}x, measured "
          f"{measured:.3f}x, lane format on both sides {same_format:.3f}x")
    for side, cps, row in (("real", real, sql_row), ("lane", lane, lane_row)):
        print_replay(side, cps, replayed(row, cps))
    return measured, ratio, same_format


@pytest.mark.parametrize("kind", list(KINDS))
def test_on_hashmap_the_row_format_predicts_the_real_jobs_larger_checkpoints(
        kind: str, probe: dict[tuple[str, str, str], dict],
        runs: dict[tuple[str, str, str], list]) -> None:
    """HashMap's full checkpoint writes every entry in its serializers' bytes, uncompressed:
    the predicted peak ratio, real over lane, is within 10% of the measured one, and the
    lane's format on both sides (same entries, same checkpoint times) is not - the row format
    is the cause. Every replayed lane checkpoint is the measured one within 1%: the replay is
    the lane's state."""
    measured, ratio, same_format = ratios(kind, "hashmap", probe, runs)
    assert abs(ratio / measured - 1) <= TOLERANCE, (ratio, measured)
    assert abs(same_format / measured - 1) > TOLERANCE, (same_format, measured)
    lane = runs[(kind, "hashmap", "lane")]
    for (t, b), p in zip(lane, replayed(probe[(kind, "hashmap", "lane")], lane)):
        assert abs(p / b - 1) <= 0.01, (t, b, p)


#: On RocksDB, Flink's full checkpoint (RocksNativeFullSnapshotStrategy) copies the DB's SST
#: files: Snappy-compressed blocks with shared key prefixes, where BinaryRowData's zero null
#: bits and length ints cost little. The SQL entry over the lane's there, bounds (probe).
SST_ENTRY_RATIO = {"dedup": (0.95, 1.2), "group_agg": (1.3, 1.8)}


@pytest.mark.parametrize("kind", list(KINDS))
def test_on_rocksdb_the_row_format_is_mostly_compressed_away(
        kind: str, probe: dict[tuple[str, str, str], dict],
        runs: dict[tuple[str, str, str], list]) -> None:
    """RocksDB's full checkpoints are SST files, not the serialized entries: the SQL entry's
    extra bytes (1.58x-1.94x serialized) mostly compress away - dedup's entry costs about
    the lane's, group_agg's about 1.5x - and each snapshot's fixed part (the files' own
    blocks, MANIFEST, OPTIONS; one set per task) weighs as much as a thousand keys. What the
    checkpoints add beyond the state depends on which SST files they copy (a flush per
    checkpoint, versions of overwritten keys until a compaction merges them: background
    timing), and on where each side's checkpoints fall; the replay is printed beside the
    measurement, not bounded."""
    lo, hi = SST_ENTRY_RATIO[kind]
    sql, lane = probe[(kind, "rocksdb", "sql")], probe[(kind, "rocksdb", "lane")]
    sst = sql["bytes_per_entry"] / lane["bytes_per_entry"]
    serialized_ratio = entry_bytes(kind, "rocksdb", "sql") / entry_bytes(kind, "rocksdb", "lane")
    print(f"{kind} rocksdb: SST bytes per entry {sql['bytes_per_entry']:.1f} / "
          f"{lane['bytes_per_entry']:.1f} = {sst:.2f}x (serialized {serialized_ratio:.2f}x); "
          f"all {sql['entries']} keys in one flush {sql['bytes_all']} / {lane['bytes_all']} = "
          f"{sql['bytes_all'] / lane['bytes_all']:.2f}x")
    ratios(kind, "rocksdb", probe, runs)
    assert lo <= sst <= hi, sst
    assert sst < serialized_ratio - 0.3


# ------------------------------------------------------------------------------------------
# The MapState kinds: regular_join and topn on HashMap
# ------------------------------------------------------------------------------------------

#: One map entry's (user key, value) bytes as each side's serializers write it, TTL not
#: included. regular_join's first record is a bid: SQL's record row (auction, bidder, price,
#: ts) and its Integer count; the lane's Tuple4 of longs and the count. topn's: SQL's sort key
#: row (price) and a List of one input row (auction, bidder, price, ts); the lane's Long price
#: and a byte[32].
MAP_LAYOUT = {
    "regular_join": {"sql": (binary_row_bytes(4), 4), "lane": (32, 4)},
    "topn": {"sql": (binary_row_bytes(1), LENGTH + binary_row_bytes(4)),
             "lane": (8, LENGTH + 32)},
}


@pytest.mark.parametrize("kind", list(MAP_KINDS))
def test_map_kinds_serializers_write_the_layout_computed_in_python(
        kind: str, probe: dict[tuple[str, str, str], dict]) -> None:
    """SQL's states as the plan registers them (a BinaryRowData key, BinaryRowData map keys
    and rows) and the lane's (long key, Tuples / Long and byte[]) write the bytes
    :data:`MAP_LAYOUT` computes, with the TTL on every state on both sides."""
    for side in ("sql", "lane"):
        row = probe[(kind, "hashmap", side)]
        print(f"{kind} {side}: {row['state']}; key {row['key_serializer']} "
              f"{row['key_bytes']} B; {row['first_state']} entry {row['user_key_bytes']} + "
              f"{row['value_bytes']} B; {row['states']}")
        assert all(st["ttl"] for st in row["states"])
        assert (row["user_key_bytes"], row["value_bytes"]) == MAP_LAYOUT[kind][side]
        assert row["key_bytes"] == (binary_row_bytes(1) if side == "sql" else 8)
    assert probe[(kind, "hashmap", "sql")]["key_serializer"] == "RowDataSerializer"


def map_ratios(kind: str, probe: dict[tuple[str, str, str], dict],
               runs: dict[tuple[str, str, str], list]) -> tuple[float, float, float]:
    """(measured, predicted, lane format on both sides), as :func:`ratios`, with each side's
    keys, map entries and bytes per entry at its peak checkpoint printed."""
    history = map_history(kind)
    real, lane = runs[(kind, "hashmap", "sql")], runs[(kind, "hashmap", "lane")]
    assert real and lane, (real, lane)
    sql_row, lane_row = probe[(kind, "hashmap", "sql")], probe[(kind, "hashmap", "lane")]
    measured = max(b for _, b in real) / max(b for _, b in lane)
    ratio = max(replayed(sql_row, real)) / max(replayed(lane_row, lane))
    same_format = max(replayed(lane_row, real)) / max(replayed(lane_row, lane))
    for side, cps, row in (("real", real, sql_row), ("lane", lane, lane_row)):
        t, b = max(cps, key=lambda c: c[1])
        keys, entries = map_entries_at(history, kind, t)
        p = max(replayed(row, cps))
        print(f"{kind} hashmap {side}: peak t={t:.0f} {b:.0f} B measured, {p:.0f} B replayed; "
              f"{keys} keys, {entries} map entries, {p / entries:.1f} B per entry")
        print_replay(side, cps, replayed(row, cps))
    print(f"{kind} hashmap: predicted {ratio:.3f}x, measured {measured:.3f}x, lane format on "
          f"both sides {same_format:.3f}x")
    return measured, ratio, same_format


@pytest.mark.parametrize("kind", list(MAP_KINDS))
def test_on_hashmap_the_row_format_predicts_the_map_kinds_larger_checkpoints(
        kind: str, probe: dict[tuple[str, str, str], dict],
        runs: dict[tuple[str, str, str], list]) -> None:
    """As for dedup and group_agg: the history replayed in each side's format at its own
    checkpoint times predicts the measured peak ratio within 10%, the lane's format on both
    sides does not, and the replayed lane checkpoints are the measured ones within 1%."""
    measured, ratio, same_format = map_ratios(kind, probe, runs)
    assert abs(ratio / measured - 1) <= TOLERANCE, (ratio, measured)
    assert abs(same_format / measured - 1) > TOLERANCE, (same_format, measured)
    lane = runs[(kind, "hashmap", "lane")]
    for (t, b), p in zip(lane, replayed(probe[(kind, "hashmap", "lane")], lane)):
        assert abs(p / b - 1) <= 0.01, (t, b, p)
