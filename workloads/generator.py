"""The event generator: a spec in, Arrow record batches of events out, one stream per partition.

``generate_partition(spec, p, P)`` is what the Spark source stage runs inside
``spark.range(P).mapInArrow(...)`` (and what in-process runs call directly). Its guarantees:

* **Independent, reproducible streams.** Partition ``p`` draws from
  ``SeedSequence(spec.seed, spawn_key=(p,))`` (the same as ``SeedSequence(seed).spawn(P)[p]``),
  split further into one child stream per column, so changing e.g. the op mix does not change the
  keys. Every column consumes a fixed number of draws per event, so the events do not depend on
  ``batch_size``.
* **Exact split, interleaved time.** Global event ``g`` (0-based, in arrival order) goes to
  partition ``g % P``, so partitions get ``ceil``/``floor`` of ``N / P`` events each, sum to ``N``
  for any ``P``, and all cover the same logical time range.
* **Arithmetic time.** Event ``g`` arrives at ``start_ms + floor(g * 1000 / rate)`` (exact integer
  arithmetic: the rate is taken as a fraction p/q, q <= 1000); with ``sine_amplitude = a`` the
  cumulative event count is
  ``rate/1000 * (t + a*T/(2 pi) * (1 - cos(2 pi t / T)))``, inverted numerically. With
  ``duration_ms = D`` there are exactly as many events as arrive in ``[start, start + D)``.
  ``ts`` is the arrival time jittered back by a uniform ``0..max_out_of_orderness_ms`` (clamped at
  ``start_ms``); rows stay in arrival order, so ``ts`` is out of order by at most that bound.
* **Bounded memory.** Batches of at most ``batch_size`` rows are produced one at a time; nothing
  is proportional to the number of events (the sessions chooser holds O(live sessions)).

Value columns: ``value``/``value_size`` are 0 for ops that write no value (reads, clear,
iterate, remove), and ``map_key`` is 0 except for map put/get/remove.

Trace sources (``[source] kind = "trace"``) stream a recorded Parquet file instead; rows are split
by **row index modulo P** (row ``r`` to partition ``r % P``), the same rule as generated events:
it balances partitions and keeps them interleaved in time whatever the row-group layout, at the
cost of every partition scanning the (projected) file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from workloads import limits
from workloads.distributions import TimeContext, make_key_chooser, sample_sizes
from workloads.errors import first_line
from workloads.ops import (
    CARRIES_VALUE_BY_CODE,
    OP_DTYPE,
    OP_NAMES,
    USES_MAP_KEY_BY_CODE,
    Op,
)
from workloads.spec import TimeSpec, WorkloadSpec

EVENT_SCHEMA = pa.schema(
    [
        pa.field("key", pa.int64()),
        pa.field("ts", pa.int64()),
        pa.field("op", pa.int8()),
        pa.field("value", pa.int64()),
        pa.field("value_size", pa.int32()),
        pa.field("map_key", pa.int32()),
    ]
)
DEFAULT_BATCH_SIZE = 65536

TRACE_REQUIRED_COLUMNS = ("key", "ts", "op", "value")
TRACE_OPTIONAL_COLUMNS = ("value_size", "map_key")

# Child stream indices under a partition's SeedSequence (fixed: changing them changes workloads).
_KEYS, _OPS, _VALUES, _SIZES, _MAP_KEYS, _JITTER = range(6)


class TraceError(ValueError):
    """A recorded trace that cannot be replayed (missing file, bad column, bad value)."""


# ------------------------------------------------------------------------------------------------
# Time line
# ------------------------------------------------------------------------------------------------


class Timeline:
    """Arrival times of global events and the run's length, from a ``[time]`` section.

    A constant rate is used as the nearest fraction ``p/q`` with ``q <= 1000`` (exact for any
    rate written with up to three decimals), so arrival times and the event count of a
    ``duration_ms`` run are exact integer arithmetic and agree with each other.
    """

    def __init__(self, time: TimeSpec) -> None:
        self.spec = time
        self.start_ms = time.start_ms
        self._rate = time.rate
        self._ratio = Fraction(time.rate).limit_denominator(1000)
        self.total_events = self._count_events()
        if time.duration_ms is not None:
            self.duration_ms = time.duration_ms
        elif self.total_events:
            last = self.arrival_ms(np.array([self.total_events - 1], dtype=np.int64))[0]
            self.duration_ms = int(last) - self.start_ms + 1
        else:
            self.duration_ms = 0

    @property
    def _sine(self) -> bool:
        return self.spec.sine_amplitude > 0

    def _count_events(self) -> int:
        t = self.spec
        if t.events is not None:
            return t.events
        assert t.duration_ms is not None
        if not self._sine:
            # exact: the number of g >= 0 with g * 1000 / rate < duration
            return math.ceil(t.duration_ms * self._ratio / 1000)
        expected = float(self._cumulative(np.array([float(t.duration_ms)]))[0])
        return math.ceil(expected - 1e-9)  # an integral count must not gain an event by rounding

    def _cumulative(self, t_rel: np.ndarray) -> np.ndarray:
        """Expected events in ``[start, start + t_rel)`` (the integral of the rate)."""
        a, period = self.spec.sine_amplitude, self.spec.sine_period_ms or 1.0
        wave = a * period / (2 * math.pi) * (1 - np.cos(2 * math.pi * t_rel / period))
        return self._rate / 1000.0 * (t_rel + wave)

    def arrival_ms(self, g: np.ndarray) -> np.ndarray:
        """Arrival time (ms) of global events ``g`` (int64 array)."""
        if self._sine:
            return self.start_ms + np.floor(self._invert(g.astype(np.float64))).astype(np.int64)
        p, q = self._ratio.numerator, self._ratio.denominator
        if g.size and int(g.max()) * 1000 * q >= 2**62:  # beyond int64: float is all we have
            return self.start_ms + np.floor(g * (1000.0 * q / p)).astype(np.int64)
        return self.start_ms + (g * (1000 * q)) // p

    def _invert(self, g: np.ndarray) -> np.ndarray:
        """Solve cumulative(t) = g by safeguarded Newton (the rate is > 0, so it is monotone).

        Each element stops as soon as it has converged and never moves again, so its result
        depends on its own ``g`` only, not on the batch it is solved in.
        """
        a, period = self.spec.sine_amplitude, self.spec.sine_period_ms or 1.0
        per_ms = self._rate / 1000.0
        t = g / per_ms  # an upper bound: the wave term of cumulative() is >= 0 ...
        lo = np.maximum(t - a * period / math.pi - 1.0, 0.0)  # ... and <= a*T/pi
        hi = t.copy()
        tolerance = 1e-12 * g + 1e-9
        todo = np.arange(len(g))
        for _ in range(200):
            f = self._cumulative(t[todo]) - g[todo]
            open_ = np.abs(f) >= tolerance[todo]
            todo, f = todo[open_], f[open_]
            if not todo.size:
                break
            x = t[todo]
            lo[todo] = np.where(f < 0, x, lo[todo])
            hi[todo] = np.where(f < 0, hi[todo], x)
            step = x - f / (per_ms * (1 + a * np.sin(2 * math.pi * x / period)))
            # Newton where it stays inside the bracket, else bisect (always converges)
            inside = (step >= lo[todo]) & (step <= hi[todo])
            t[todo] = np.where(inside, step, (lo[todo] + hi[todo]) / 2)
        return t


def total_events(spec: WorkloadSpec) -> int:
    """Events over all partitions (rows of the trace for trace sources)."""
    if spec.source.kind == "trace":  # its columns checked too: before any work, not in a task
        pf = _open_trace(spec)
        path = str(spec.source.path)
        _check_trace_bounds(path, pf, _check_trace_schema(path, pf.schema_arrow))
        return pf.metadata.num_rows
    assert spec.time is not None
    return Timeline(spec.time).total_events


def partition_events(total: int, partition: int, num_partitions: int) -> int:
    """How many of ``total`` round-robin events fall to ``partition``."""
    _check_partition(partition, num_partitions)
    return max(0, (total - partition + num_partitions - 1) // num_partitions)


def partition_seed(seed: int, partition: int) -> np.random.SeedSequence:
    """Partition ``partition``'s root seed: ``SeedSequence(seed).spawn(P)[partition]``."""
    return np.random.SeedSequence(seed, spawn_key=(partition,))


def _rng(seed: int, partition: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(partition, stream)))


def _check_partition(partition: int, num_partitions: int) -> None:
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
    if not 0 <= partition < num_partitions:
        raise ValueError(f"partition must be in 0..{num_partitions - 1}, got {partition}")


# ------------------------------------------------------------------------------------------------
# Synthetic events
# ------------------------------------------------------------------------------------------------


def generate_partition(
    spec: WorkloadSpec,
    partition: int,
    num_partitions: int,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Iterator[pa.RecordBatch]:
    """Partition ``partition``'s events as record batches (``EVENT_SCHEMA``, <= batch_size rows).

    Arguments are checked now (not at the first ``next``); events are made lazily.
    """
    _check_partition(partition, num_partitions)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if spec.source.kind == "trace":
        return _trace_batches(spec, partition, num_partitions, batch_size)
    if spec.operator is not None:
        raise ValueError(
            f"spec {spec.name} has an [operator] table: its input is Nexmark events "
            "(workloads.operators.input.operator_partition), not key-value events")
    return _PartitionStream(spec, partition, num_partitions).batches(batch_size)


def generate_all(
    spec: WorkloadSpec, num_partitions: int = 1, batch_size: int = DEFAULT_BATCH_SIZE
) -> pa.Table:
    """All partitions' events in one table, partition after partition (tests and small runs)."""
    batches = [
        batch
        for p in range(num_partitions)
        for batch in generate_partition(spec, p, num_partitions, batch_size)
    ]
    return pa.Table.from_batches(batches, schema=EVENT_SCHEMA)


class _PartitionStream:
    """One partition's generator state: its time slice, random streams and key chooser."""

    def __init__(self, spec: WorkloadSpec, partition: int, num_partitions: int) -> None:
        assert spec.time is not None and spec.keys is not None and spec.operations is not None
        self._spec = spec
        self._p, self._np = partition, num_partitions
        self._timeline = Timeline(spec.time)
        self._ooo = spec.time.max_out_of_orderness_ms
        seed = spec.seed
        self._rngs = {s: _rng(seed, partition, s) for s in (_OPS, _VALUES, _SIZES, _MAP_KEYS)}
        self._jitter_rng = _rng(seed, partition, _JITTER)
        ctx = TimeContext(self._timeline.start_ms, max(1, self._timeline.duration_ms), self._ooo)
        self._chooser = make_key_chooser(
            spec.keys, _rng(seed, partition, _KEYS), ctx, partition, num_partitions
        )
        ops = [(op, p) for op, p in spec.operations if p > 0]
        self._op_codes = np.array([int(op) for op, _ in ops], dtype=OP_DTYPE)
        cum = np.cumsum([p for _, p in ops])
        self._op_cut = cum[:-1] / cum[-1]  # boundaries between ops; u past the last -> last op
        self._any_map_key = bool(USES_MAP_KEY_BY_CODE[self._op_codes].any())
        self._all_carry = bool(CARRIES_VALUE_BY_CODE[self._op_codes].all())

    def batches(self, batch_size: int) -> Iterator[pa.RecordBatch]:
        count = partition_events(self._timeline.total_events, self._p, self._np)
        for first in range(0, count, batch_size):
            local = np.arange(first, min(first + batch_size, count), dtype=np.int64)
            yield self._batch(self._p + local * self._np)

    def _batch(self, g: np.ndarray) -> pa.RecordBatch:
        n = len(g)
        arrival = self._timeline.arrival_ms(g)
        ts = self._jitter(arrival)
        key = self._chooser.next(arrival, ts)
        op = self._op_codes[np.searchsorted(self._op_cut, self._rngs[_OPS].random(n), "right")]
        value, size = self._values(n, op)
        map_key = self._map_keys(n, op)
        arrays = [key, ts, op, value, size, map_key]
        return pa.RecordBatch.from_arrays([pa.array(a) for a in arrays], schema=EVENT_SCHEMA)

    def _jitter(self, arrival: np.ndarray) -> np.ndarray:
        if self._ooo == 0:
            return arrival
        back = self._jitter_rng.integers(0, self._ooo, size=len(arrival), endpoint=True)
        return np.maximum(arrival - back, self._timeline.start_ms)

    def _values(self, n: int, op: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        spec = self._spec.values
        lo, hi = spec.range
        value = self._rngs[_VALUES].integers(lo, hi, size=n, dtype=np.int64, endpoint=True)
        size = sample_sizes(spec.size, self._rngs[_SIZES], n)
        if not self._all_carry:
            carries = CARRIES_VALUE_BY_CODE[op]
            value = np.where(carries, value, 0)
            size = np.where(carries, size, 0).astype(np.int32)
        return value, size

    def _map_keys(self, n: int, op: np.ndarray) -> np.ndarray:
        if not self._any_map_key:
            return np.zeros(n, dtype=np.int32)
        drawn = self._rngs[_MAP_KEYS].integers(0, self._spec.state.map_keys, size=n, dtype=np.int32)
        return np.where(USES_MAP_KEY_BY_CODE[op], drawn, 0).astype(np.int32)


# ------------------------------------------------------------------------------------------------
# Recorded traces
# ------------------------------------------------------------------------------------------------


def _check_trace_file(path: str) -> None:
    """An untrusted file: a regular file (a FIFO would block), of bounded size, with a Parquet
    footer of bounded size (its length is the file's last 8 bytes but 4)."""
    try:
        fd = limits.open_regular(path, "trace")
    except FileNotFoundError:
        raise TraceError(f"trace {path}: file not found (source.path)") from None
    except limits.FileProblem as exc:
        raise TraceError(str(exc)) from None
    try:
        size = os.fstat(fd).st_size
        if size > limits.MAX_TRACE_BYTES:
            raise TraceError(f"trace {path}: is {size} bytes; at most {limits.MAX_TRACE_BYTES}")
        tail = os.pread(fd, 8, size - 8) if size >= 12 else b""
    except OSError as exc:
        raise TraceError(f"trace {path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(tail) != 8 or tail[4:] != b"PAR1":
        raise TraceError(f"trace {path}: not a Parquet file (no Parquet footer at its end)")
    footer = int.from_bytes(tail[:4], "little")
    if footer > min(size - 12, limits.MAX_TRACE_FOOTER_BYTES):
        raise TraceError(f"trace {path}: its Parquet footer claims {footer} bytes; at most "
                         f"{min(size - 12, limits.MAX_TRACE_FOOTER_BYTES)} (a damaged file?)")


def _open_trace(spec: WorkloadSpec) -> pq.ParquetFile:
    path = spec.source.path
    assert path is not None
    _check_trace_file(path)
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        first = first_line(exc)
        raise TraceError(f"trace {path}: not a readable Parquet file: {first}") from None
    rows = pf.metadata.num_rows
    if rows == 0:
        # as --events 0 and events = 0 are refused: a run without events measures nothing
        raise TraceError(f"trace {path}: has no rows; a run needs at least one event")
    if not 0 < rows <= limits.MAX_EVENTS:
        raise TraceError(f"trace {path}: has {rows} rows; {limits.EVENTS.describe()}")
    return pf


def _check_trace_bounds(path: str, pf: pq.ParquetFile, columns: list[str]) -> None:
    """What the footer says before a row is read: every row group's read columns decode to a
    bounded size, and ``ts`` statistics (where written) stay in 0..MAX_TIME_MS."""
    meta = pf.metadata
    names = [meta.schema.column(i).path for i in range(meta.num_columns)]
    wanted = [i for i, name in enumerate(names) if name in columns]
    ts_index = names.index("ts") if "ts" in names else None
    timestamp = pa.types.is_timestamp(pf.schema_arrow.field("ts").type)
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        size = sum(group.column(i).total_uncompressed_size for i in wanted)
        if size > limits.MAX_TRACE_ROW_GROUP_BYTES:
            raise TraceError(
                f"trace {path}: row group {g} holds {size} bytes of the columns a run reads; at "
                f"most {limits.MAX_TRACE_ROW_GROUP_BYTES} (write it with smaller row groups)")
        stats = group.column(ts_index).statistics if ts_index is not None else None
        if timestamp or stats is None or not stats.has_min_max:
            continue  # timestamps are checked in ms, as they are read
        lo, hi = stats.min, stats.max
        if isinstance(lo, int) and isinstance(hi, int) and not (
                lo >= 0 and hi <= limits.MAX_TIME_MS):
            raise TraceError(
                f"trace {path}: column 'ts' has values in {lo}..{hi} (row group {g}); "
                f"{limits.TIME_MS.describe()}")


def _check_trace_schema(path: str, schema: pa.Schema) -> list[str]:
    """The trace columns to read, after checking names and types."""
    names = set(schema.names)
    missing = [c for c in TRACE_REQUIRED_COLUMNS if c not in names]
    if missing:
        raise TraceError(
            f"trace {path}: missing column(s) {', '.join(missing)}; it has "
            f"{', '.join(schema.names) or 'no columns'} (required: "
            f"{', '.join(TRACE_REQUIRED_COLUMNS)}; optional: {', '.join(TRACE_OPTIONAL_COLUMNS)})"
        )
    for name in ("key", "value", *TRACE_OPTIONAL_COLUMNS):
        if name in names and not pa.types.is_integer(schema.field(name).type):
            raise TraceError(
                f"trace {path}: column '{name}' must be integers, got {schema.field(name).type}"
            )
    ts_type = schema.field("ts").type
    if not (pa.types.is_integer(ts_type) or pa.types.is_timestamp(ts_type)):
        raise TraceError(
            f"trace {path}: column 'ts' must be integer ms or a timestamp, got {ts_type}"
        )
    op_type = schema.field("op").type
    if pa.types.is_dictionary(op_type):
        op_type = op_type.value_type
    if not (pa.types.is_integer(op_type) or pa.types.is_string(op_type)
            or pa.types.is_large_string(op_type)):
        raise TraceError(
            f"trace {path}: column 'op' must be op names (strings) or int codes, got {op_type}"
        )
    return [c for c in (*TRACE_REQUIRED_COLUMNS, *TRACE_OPTIONAL_COLUMNS) if c in names]


def _trace_batches(
    spec: WorkloadSpec, partition: int, num_partitions: int, batch_size: int
) -> Iterator[pa.RecordBatch]:
    pf = _open_trace(spec)
    path = str(spec.source.path)
    columns = _check_trace_schema(path, pf.schema_arrow)
    _check_trace_bounds(path, pf, columns)
    return _TraceReader(spec, path, partition, num_partitions).read(pf, columns, batch_size)


class _TraceReader:
    """Converts one partition's share (rows r with r % P == p) of a trace to ``EVENT_SCHEMA``."""

    def __init__(self, spec: WorkloadSpec, path: str, partition: int, num_partitions: int) -> None:
        self._spec = spec
        self._path = path
        self._p, self._np = partition, num_partitions
        self._size_rng = _rng(spec.seed, partition, _SIZES)
        self._map_rng = _rng(spec.seed, partition, _MAP_KEYS)

    def read(
        self, pf: pq.ParquetFile, columns: list[str], batch_size: int
    ) -> Iterator[pa.RecordBatch]:
        row = 0  # global index of the first row of the current input batch
        # read P times more rows than we emit, so output batches are close to batch_size
        for raw in pf.iter_batches(batch_size=batch_size * self._np, columns=columns):
            first = (self._p - row) % self._np
            idx = np.arange(first, raw.num_rows, self._np)
            if idx.size:
                mine = raw if self._np == 1 else raw.take(pa.array(idx))
                for start in range(0, mine.num_rows, batch_size):
                    part = mine.slice(start, batch_size)
                    rows = row + idx[start : start + batch_size]
                    yield self._convert(part, rows)
            row += raw.num_rows

    def _convert(self, batch: pa.RecordBatch, rows: np.ndarray) -> pa.RecordBatch:
        n = batch.num_rows
        key = self._int_column(batch, "key", pa.int64(), rows)
        ts = self._ts_column(batch, rows)
        op = self._op_column(batch, rows)
        value = self._int_column(batch, "value", pa.int64(), rows)
        if "value_size" in batch.schema.names:
            size = self._int_column(batch, "value_size", pa.int32(), rows)
        else:
            size = sample_sizes(self._spec.values.size, self._size_rng, n)
            size = np.where(CARRIES_VALUE_BY_CODE[op], size, 0).astype(np.int32)
        if "map_key" in batch.schema.names:
            map_key = self._int_column(batch, "map_key", pa.int32(), rows)
        else:
            drawn = self._map_rng.integers(0, self._spec.state.map_keys, size=n, dtype=np.int32)
            map_key = np.where(USES_MAP_KEY_BY_CODE[op], drawn, 0).astype(np.int32)
        arrays = [key, ts, op, value, size, map_key]
        return pa.RecordBatch.from_arrays([pa.array(a) for a in arrays], schema=EVENT_SCHEMA)

    def _fail(self, column: str, problem: str, rows: np.ndarray, bad: np.ndarray) -> TraceError:
        where = int(rows[np.flatnonzero(bad)[0]])
        return TraceError(f"trace {self._path}: column '{column}': {problem} at row {where}")

    def _column(self, batch: pa.RecordBatch, name: str, rows: np.ndarray) -> pa.Array:
        col = batch.column(name)
        if col.null_count:
            raise self._fail(name, "null value", rows, np.asarray(col.is_null()))
        return col

    def _int_column(
        self, batch: pa.RecordBatch, name: str, target: pa.DataType, rows: np.ndarray
    ) -> np.ndarray:
        col = self._column(batch, name, rows)
        try:
            return col.cast(target).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid as exc:
            raise TraceError(
                f"trace {self._path}: column '{name}' does not fit {target}: {exc}"
            ) from None

    def _ts_column(self, batch: pa.RecordBatch, rows: np.ndarray) -> np.ndarray:
        col = self._column(batch, "ts", rows)
        if not pa.types.is_timestamp(col.type):
            raw = col.to_numpy(zero_copy_only=False)
            return self._in_time_range(raw, rows, "").astype(np.int64)
        raw = col.view(pa.int64()).to_numpy(zero_copy_only=False)
        unit = col.type.unit
        if unit == "s":  # checked before * 1000, which could wrap int64
            return self._in_time_range(raw, rows, " s", per_ms=0.001) * 1000
        ms = raw // {"ms": 1, "us": 1_000, "ns": 1_000_000}[unit]  # floor to whole ms
        return self._in_time_range(ms, rows, " ms")

    def _in_time_range(self, ts: np.ndarray, rows: np.ndarray, unit: str,
                       per_ms: float = 1.0) -> np.ndarray:
        """Every timestamp in 0..MAX_TIME_MS ms (as the generator's, so ts + ttl fits int64
        and a run's checkpoints and samples are bounded), else one TraceError at its row."""
        if not ts.size:
            return ts
        high = limits.MAX_TIME_MS * per_ms
        if ts.dtype.kind == "u":
            bad = ts > high
        else:
            bad = (ts < 0) | (ts > high)
        if bad.any():
            value = ts[np.flatnonzero(bad)[0]]
            raise self._fail("ts", f"{value}{unit} is outside 0..{limits.MAX_TIME_MS} ms "
                             "(logical time must fit int64 ms)", rows, bad)
        return ts

    def _op_column(self, batch: pa.RecordBatch, rows: np.ndarray) -> np.ndarray:
        col = self._column(batch, "op", rows)
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        if pa.types.is_integer(col.type):
            codes = col.cast(pa.int64()).to_numpy(zero_copy_only=False)
            bad = (codes < 0) | (codes >= len(Op))
            if bad.any():
                value = int(codes[np.flatnonzero(bad)[0]])
                raise self._fail("op", f"unknown op code {value} (codes are 0..{len(Op) - 1})",
                                 rows, bad)
            return codes.astype(OP_DTYPE)
        index = pc.index_in(col, value_set=pa.array(OP_NAMES)).to_numpy(zero_copy_only=False)
        bad = np.isnan(index) if index.dtype.kind == "f" else np.zeros(len(index), dtype=bool)
        if bad.any():
            name = col[int(np.flatnonzero(bad)[0])].as_py()
            raise self._fail(
                "op", f"unknown operation {name!r}; expected one of {', '.join(OP_NAMES)}",
                rows, bad,
            )
        return index.astype(OP_DTYPE)
