"""The event generator: schema, determinism, partition split, time arithmetic, traces."""

from __future__ import annotations

import math
import pickle
import tracemalloc
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.generator import (
    EVENT_SCHEMA,
    Timeline,
    TraceError,
    generate_all,
    generate_partition,
    partition_events,
    partition_seed,
    total_events,
)
from workloads.ops import Op
from workloads.spec import SpecError, WorkloadSpec, builtin_specs, load_spec, parse_spec


def make_spec(**sections: Any) -> WorkloadSpec:
    data: dict[str, Any] = {
        "name": "gen",
        "seed": 11,
        "keys": {"count": 1_000, "distribution": "uniform"},
        "operations": {"value_get": 0.5, "value_update": 0.5},
        "time": {"rate": 1_000, "events": 10_000},
    }
    for name, value in sections.items():
        data[name] = value
    return parse_spec(data)


def col(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy()


# -- schema and determinism --------------------------------------------------------------------


def test_batches_have_the_event_schema() -> None:
    batches = list(generate_partition(make_spec(), 0, 1, batch_size=4_000))
    assert [b.num_rows for b in batches] == [4_000, 4_000, 2_000]
    assert all(b.schema == EVENT_SCHEMA for b in batches)
    assert EVENT_SCHEMA.names == ["key", "ts", "op", "value", "value_size", "map_key"]
    assert [f.type for f in EVENT_SCHEMA] == [
        pa.int64(), pa.int64(), pa.int8(), pa.int64(), pa.int32(), pa.int32()
    ]


def test_same_seed_same_events_other_seed_other_events() -> None:
    spec = make_spec(keys={"count": 10_000, "distribution": "zipfian"})
    a = generate_all(spec, 2)
    assert a.equals(generate_all(spec, 2))
    assert a.equals(generate_all(spec, 2, batch_size=999))  # batching does not matter
    other = generate_all(spec.with_overrides(seed=12), 2)
    assert not np.array_equal(col(a, "key"), col(other, "key"))


def test_partition_seed_is_the_documented_spawn() -> None:
    spawned = np.random.SeedSequence(11).spawn(4)[2]
    assert partition_seed(11, 2).generate_state(4).tolist() == spawned.generate_state(4).tolist()


def test_partitions_are_independent_streams() -> None:
    spec = make_spec(time={"rate": 1_000, "events": 20_000})
    p0 = pa.Table.from_batches(list(generate_partition(spec, 0, 2)))
    p1 = pa.Table.from_batches(list(generate_partition(spec, 1, 2)))
    assert p0.num_rows == p1.num_rows == 10_000
    assert not np.array_equal(col(p0, "key"), col(p1, "key"))
    assert not np.array_equal(col(p0, "op"), col(p1, "op"))


def test_changing_the_op_mix_keeps_the_keys() -> None:
    a = generate_all(make_spec())
    b = generate_all(make_spec(operations={"list_add": 0.2, "map_get": 0.8}))
    assert np.array_equal(col(a, "key"), col(b, "key"))
    assert not np.array_equal(col(a, "op"), col(b, "op"))


@pytest.mark.parametrize("partitions", [1, 2, 3, 7])
def test_partition_count_changes_the_split_not_the_total(partitions: int) -> None:
    spec = make_spec(time={"rate": 3_000, "events": 10_001})
    counts = [
        sum(b.num_rows for b in generate_partition(spec, p, partitions))
        for p in range(partitions)
    ]
    assert sum(counts) == 10_001 == total_events(spec)
    assert counts == [partition_events(10_001, p, partitions) for p in range(partitions)]
    assert max(counts) - min(counts) <= 1
    # the same logical time line, whatever the split: partitions interleave in time
    table = generate_all(spec, partitions)
    assert np.array_equal(np.sort(col(table, "ts")), (np.arange(10_001) * 1000) // 3_000)
    for p in range(partitions):
        ts = col(pa.Table.from_batches(list(generate_partition(spec, p, partitions))), "ts")
        assert ts[0] == (p * 1000) // 3_000 and ts[-1] >= 3_333 - 3


def test_spec_pickles_for_spark_executors() -> None:
    spec = load_spec("sessions-churn")
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec
    assert generate_all(again.with_overrides(events=1_000), 2).equals(
        generate_all(spec.with_overrides(events=1_000), 2)
    )
    err = pickle.loads(pickle.dumps(SpecError("keys.count", "bad", "x.toml")))
    assert (err.field, str(err)) == ("keys.count", "keys.count: bad (in x.toml)")


def test_argument_errors_are_raised_eagerly() -> None:
    with pytest.raises(ValueError, match=r"partition must be in 0\.\.1"):
        generate_partition(make_spec(), 2, 2)
    with pytest.raises(ValueError, match="num_partitions"):
        generate_partition(make_spec(), 0, 0)
    with pytest.raises(ValueError, match="batch_size"):
        generate_partition(make_spec(), 0, 1, batch_size=0)


# -- operations and values ---------------------------------------------------------------------


def test_operation_proportions() -> None:
    mix = {"value_get": 0.4, "value_rmw": 0.1, "list_add": 0.2, "map_put": 0.15,
           "map_iterate": 0.05, "reducing_add": 0.1, "value_clear": 0.0}
    spec = make_spec(operations=mix, time={"rate": 100_000, "events": 200_000})
    ops = col(generate_all(spec, 2), "op")
    n = len(ops)
    for name, p in mix.items():
        observed = np.mean(ops == int(Op.from_name(name)))
        assert abs(observed - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12, name
    assert not np.any(ops == int(Op.VALUE_CLEAR))  # proportion 0 never drawn


def test_value_columns_follow_the_op() -> None:
    spec = make_spec(
        operations={"value_get": 0.3, "value_update": 0.3, "map_put": 0.2, "map_get": 0.1,
                    "map_iterate": 0.1},
        values={"type": "bytes", "size": {"distribution": "uniform", "min": 10, "max": 20},
                "range": [-5, 5]},
        state={"map_keys": 4},
        time={"rate": 10_000, "events": 50_000},
    )
    t = generate_all(spec)
    op, value = col(t, "op"), col(t, "value")
    size, map_key = col(t, "value_size"), col(t, "map_key")
    writes = (op == Op.VALUE_UPDATE) | (op == Op.MAP_PUT)
    assert np.all((size[writes] >= 10) & (size[writes] <= 20))
    assert set(np.unique(size[writes]).tolist()) == set(range(10, 21))
    assert np.all((value[writes] >= -5) & (value[writes] <= 5))
    assert np.all(size[~writes] == 0) and np.all(value[~writes] == 0)
    addressed = (op == Op.MAP_PUT) | (op == Op.MAP_GET)
    assert set(np.unique(map_key[addressed]).tolist()) == {0, 1, 2, 3}
    assert np.all(map_key[~addressed] == 0)


# -- time --------------------------------------------------------------------------------------


def test_constant_rate_arithmetic_is_exact() -> None:
    t = generate_all(make_spec(time={"rate": 3, "events": 10, "start_ms": 1_000}))
    assert col(t, "ts").tolist() == [1_000 + (g * 1_000) // 3 for g in range(10)]
    # duration: exactly the events arriving in [start, start + duration)
    spec = make_spec(time={"rate": 2_500, "duration_ms": 1_000, "start_ms": 5})
    ts = col(generate_all(spec, 3), "ts")
    assert len(ts) == 2_500 and ts.min() == 5 and ts.max() == 5 + 999
    assert np.array_equal(np.sort(ts), 5 + (np.arange(2_500) * 1_000) // 2_500)
    # a fractional rate: 2.5 events/s for 1 s -> events at 0, 400, 800 ms
    frac = make_spec(time={"rate": 2.5, "duration_ms": 1_000})
    assert col(generate_all(frac), "ts").tolist() == [0, 400, 800]
    assert Timeline(frac.time).duration_ms == 1_000
    assert Timeline(make_spec().time).duration_ms == 10_000  # 10 000 events at 1000/s


@settings(max_examples=60, deadline=None, database=None)  # no .hypothesis/ in the repo
@given(
    rate=st.one_of(st.integers(1, 10**6), st.decimals("1", "5000", places=3).map(float)),
    duration=st.integers(1, 10**6),
)
def test_duration_counts_exactly_the_events_before_the_end(rate: float, duration: int) -> None:
    timeline = Timeline(make_spec(time={"rate": rate, "duration_ms": duration}).time)
    n = timeline.total_events
    assert n == math.ceil(Fraction(duration) * Fraction(str(rate)) / 1000)
    last_two = timeline.arrival_ms(np.array([n - 1, n], dtype=np.int64))
    assert last_two[0] < duration <= last_two[1]  # event n-1 is in, event n would be out


def test_sine_rate() -> None:
    period = 1_000
    spec = make_spec(time={"rate": 20_000, "duration_ms": 4 * period, "sine_amplitude": 0.5,
                           "sine_period_ms": period})
    ts = col(generate_all(spec, 2), "ts")
    # over whole periods the sine averages out: exactly rate * duration events
    assert len(ts) == 80_000 and ts.max() < 4 * period
    phase = ts % period
    first_half = np.mean(phase < period / 2)
    # events in the rising half: (1/2 + a/pi) of them
    assert first_half == pytest.approx(0.5 + 0.5 / math.pi, abs=0.005)
    peak = np.sum((phase >= 240) & (phase < 260))
    trough = np.sum((phase >= 740) & (phase < 760))
    assert peak / trough == pytest.approx(1.5 / 0.5, rel=0.1)
    assert np.all(np.diff(np.sort(ts)) >= 0)


def test_out_of_orderness_is_bounded() -> None:
    spec = make_spec(time={"rate": 1_000, "events": 50_000, "max_out_of_orderness_ms": 30,
                           "start_ms": 10})
    ts = col(generate_all(spec), "ts")
    arrival = 10 + np.arange(50_000)  # 1 event per ms, one partition
    lateness = arrival - ts
    assert lateness.min() == 0 and lateness.max() == 30
    assert ts.min() >= 10  # never before the stream starts
    assert np.any(np.diff(ts) < 0)  # really out of order
    # in arrival order, no event is more than the bound behind the newest seen so far
    assert np.all(np.maximum.accumulate(ts) - ts <= 30)


# -- keys through the generator ----------------------------------------------------------------


def test_sessions_through_the_generator() -> None:
    spec = make_spec(
        keys={"distribution": "sessions", "concurrent": 50,
              "length": {"distribution": "constant", "ms": 200}},
        time={"rate": 10_000, "events": 100_000, "max_out_of_orderness_ms": 40},
    )
    parts = [pa.Table.from_batches(list(generate_partition(spec, p, 3))) for p in range(3)]
    key_sets = [set(col(t, "key").tolist()) for t in parts]
    assert not (key_sets[0] & key_sets[1] or key_sets[1] & key_sets[2]
                or key_sets[0] & key_sets[2])
    t = pa.concat_tables(parts)
    keys, ts = col(t, "key"), col(t, "ts")
    order = np.lexsort((ts, keys))
    k, s = keys[order], ts[order]
    first = np.r_[True, k[1:] != k[:-1]]
    last = np.r_[k[1:] != k[:-1], True]
    assert np.all(s[last] - s[first] < 200)  # a key lives within one 200 ms session
    # ~50 live sessions replaced every 200 ms over 10 s: ~2500 sessions
    assert len(np.unique(keys)) == pytest.approx(50 * 10_000 / 200, rel=0.1)


def test_latest_through_the_generator() -> None:
    spec = make_spec(
        keys={"count": 100_000, "distribution": "latest", "initial_keys": 1_000},
        time={"rate": 10_000, "events": 100_000},
    )
    t = generate_all(spec, 2)
    keys, ts = col(t, "key"), col(t, "ts")
    frontier = 1_000 + np.floor(ts * (99_000 / 10_000)).astype(np.int64)
    assert np.all(keys < frontier)
    assert np.mean(keys >= frontier - 1_000) > 0.6  # mostly the newest keys
    assert np.median(keys[ts > 9_000]) > keys[ts < 1_000].max()  # the hot spot moved on


def test_saturating_latest_lifetime_is_refused_at_generation() -> None:
    spec = make_spec(
        keys={"count": 2_000, "distribution": "latest", "initial_keys": 10, "insert_rate": 1_000,
              "lifetime_ms": 100},
        time={"rate": 1_000, "events": 10_000},
    )
    with pytest.raises(SpecError, match=r"^keys\.count"):
        generate_partition(spec, 0, 1)


# -- shipped specs and scale (speed: bench/pytest/test_bench_generator.py) -------------------------


@pytest.mark.parametrize("name", sorted(n for n, path in builtin_specs().items()
                                        if load_spec(path).operator is None))
def test_every_shipped_spec_generates(name: str) -> None:
    """Key-value specs (operator specs' Nexmark input: tests/operators/test_input.py)."""
    spec = load_spec(name).with_overrides(events=10_000)
    t = generate_all(spec, 2)
    assert t.num_rows == 10_000 and t.schema == EVENT_SCHEMA
    keys, ops = col(t, "key"), col(t, "op")
    assert keys.min() >= 0
    if spec.keys.count is not None:
        assert keys.max() < spec.keys.count
    assert set(np.unique(ops).tolist()) <= {int(op) for op, p in spec.operations if p > 0}
    assert col(t, "ts").min() >= spec.time.start_ms


def _peak_bytes(step: Any) -> tuple[Any, int]:
    """``step()``'s result and the most memory it held at once: Python and numpy objects
    (tracemalloc) plus Arrow buffers (pyarrow's pool, sampled after each batch, when the
    generator has handed out one batch and holds its working set)."""
    arrow_base = pa.total_allocated_bytes()
    arrow_peak = [0]

    def note() -> None:
        arrow_peak[0] = max(arrow_peak[0], pa.total_allocated_bytes() - arrow_base)

    tracemalloc.start()
    try:
        result = step(note)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak + arrow_peak[0]


def test_memory_is_bounded_by_the_batch() -> None:
    # the same batches over 1 M and 3 M events: memory follows the batch (and the key space's
    # tables), not the number of events, which as one table would be 33 B per event

    def peak_for(events: int) -> int:
        spec = make_spec(keys={"count": 1_000_000, "distribution": "zipfian"},
                         time={"rate": 1_000_000, "events": events})

        def drain(note: Any) -> tuple[int, int]:
            total = biggest = 0
            for batch in generate_partition(spec, 0, 1, batch_size=65_536):
                note()
                total += batch.num_rows
                biggest = max(biggest, batch.num_rows)
            return total, biggest

        (total, biggest), peak = _peak_bytes(drain)
        assert total == events and biggest == 65_536
        return peak

    small, large = peak_for(1_000_000), peak_for(3_000_000)
    whole = 3_000_000 * sum(f.type.bit_width // 8 for f in EVENT_SCHEMA)
    assert large < small * 1.2 + (1 << 20), f"{small / 1e6:.1f} MB -> {large / 1e6:.1f} MB"
    assert large < whole / 2, f"peak {large / 1e6:.1f} MB for {whole / 1e6:.0f} MB of events"


def test_generation_is_lazy() -> None:
    # 10**10 events (the most a spec may ask for) would need 260 GB if materialised; the
    # first batch needs about a batch
    spec = make_spec(time={"rate": 1_000_000, "events": 10**10})

    def first(note: Any) -> pa.RecordBatch:
        batch = next(generate_partition(spec, 3, 4, batch_size=1_000))
        note()
        return batch

    batch, peak = _peak_bytes(first)
    assert batch.num_rows == 1_000 and peak < 16 << 20
    assert col(pa.Table.from_batches([batch]), "ts")[-1] == (3 + 999 * 4) // 1_000


# -- traces ------------------------------------------------------------------------------------


def write_trace(path: Path, **columns: Any) -> None:
    pq.write_table(pa.table(columns), path, row_group_size=7)


def trace_spec(path: Path, **extra: Any) -> WorkloadSpec:
    data = {"name": "trace", "seed": 3, "source": {"kind": "trace", "path": str(path)}, **extra}
    return parse_spec(data)


def test_trace_replay_and_split(tmp_path: Path) -> None:
    n = 50
    names = ["value_get", "map_put", "list_add", "value_update", "map_iterate"]
    path = tmp_path / "t.parquet"
    write_trace(
        path,
        key=pa.array(np.arange(n) % 7, pa.int32()),
        ts=pa.array(np.arange(n) * 10, pa.int64()),
        op=pa.array([names[i % 5] for i in range(n)]),
        value=pa.array(np.arange(n) * 3, pa.int64()),
        map_key=pa.array(np.arange(n) % 4, pa.int16()),
        extra=pa.array(["ignored"] * n),
    )
    spec = trace_spec(path, values={"type": "string",
                                    "size": {"distribution": "constant", "bytes": 64}})
    assert total_events(spec) == n
    whole = generate_all(spec, batch_size=8)
    assert whole.schema == EVENT_SCHEMA and whole.num_rows == n
    assert col(whole, "key").tolist() == (np.arange(n) % 7).tolist()
    assert col(whole, "op").tolist() == [int(Op.from_name(names[i % 5])) for i in range(n)]
    assert col(whole, "value").tolist() == (np.arange(n) * 3).tolist()
    sizes = col(whole, "value_size")  # not in the trace: from the spec, 0 for reads
    assert set(sizes[np.isin(col(whole, "op"), [1, 4, 6])].tolist()) == {64}
    assert set(sizes[np.isin(col(whole, "op"), [0, 8])].tolist()) == {0}
    # row r goes to partition r % 3
    for p in range(3):
        part = pa.Table.from_batches(list(generate_partition(spec, p, 3, batch_size=4)))
        assert col(part, "ts").tolist() == (np.arange(p, n, 3) * 10).tolist()
        assert all(b.num_rows <= 4 for b in generate_partition(spec, p, 3, batch_size=4))


def test_trace_with_int_codes_and_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "codes.parquet"
    write_trace(
        path,
        key=pa.array([1, 2, 3], pa.int64()),
        ts=pa.array([0, 1_500, 3_000_000], pa.timestamp("us")),
        op=pa.array([0, 6, 11], pa.int8()),
        value=pa.array([5, 6, 7], pa.int64()),
        value_size=pa.array([1, 2, 3], pa.int32()),
    )
    t = generate_all(trace_spec(path))
    assert col(t, "ts").tolist() == [0, 1, 3_000]
    assert col(t, "op").tolist() == [0, 6, 11] and col(t, "value_size").tolist() == [1, 2, 3]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"key": [1], "ts": [1], "value": [1]}, "missing column(s) op"),
        ({"key": ["a"], "ts": [1], "op": ["value_get"], "value": [1]},
         "column 'key' must be integers"),
        ({"key": [1], "ts": [1.5], "op": ["value_get"], "value": [1]}, "column 'ts' must be"),
        ({"key": [1, 2], "ts": [1, 2], "op": ["value_get", "value_gett"], "value": [1, 1]},
         "unknown operation 'value_gett'"),
        ({"key": [1, 2], "ts": [1, 2], "op": [0, 12], "value": [1, 1]},
         "unknown op code 12"),
        ({"key": [1, None], "ts": [1, 2], "op": [0, 1], "value": [1, 1]},
         "column 'key': null value at row 1"),
    ],
)
def test_bad_traces_fail_clearly(tmp_path: Path, columns: dict, message: str) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(TraceError) as info:
        generate_all(trace_spec(path))
    assert message in str(info.value) and str(path) in str(info.value)


def test_missing_trace_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="file not found"):
        generate_partition(trace_spec(tmp_path / "nope.parquet"), 0, 1)
