"""Operator specs' input: the Nexmark events each kind reads, keyed as its keyBy, the same rows
whatever the source partitioning; the key-value generator refuses an operator spec."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from workloads.generator import generate_partition
from workloads.nexmark import AUCTION, BID, generate_nexmark
from workloads.operators.input import OPERATOR_INPUT_SCHEMA, nexmark_config, operator_partition
from workloads.run.source import keyed_table
from workloads.spec import builtin_specs, load_spec

OPERATOR_SPECS = sorted(n for n, p in builtin_specs().items() if load_spec(p).operator)


def _input(spec, partitions: int) -> pa.Table:
    return pa.Table.from_batches(
        [b for p in range(partitions) for b in operator_partition(spec, p, partitions, 999)],
        schema=OPERATOR_INPUT_SCHEMA)


@pytest.mark.parametrize("name", OPERATOR_SPECS)
def test_every_shipped_operator_spec_reads_its_events(name: str) -> None:
    spec = load_spec(name).with_overrides(events=5_000)
    one, three = _input(spec, 1), _input(spec, 3)
    assert one.equals(three)  # contiguous slices: the same rows in the same order
    kinds = set(one.column("event_type").to_pylist())
    op = spec.operator
    if op.kind in ("regular_join", "interval_join"):
        assert kinds == {BID, AUCTION}
        assert one.column("key").equals(one.column("auction_id"))
    else:
        assert kinds == {BID}
    if op.kind == "dedup":
        key = np.asarray(one.column("person_id")) * 2**32 + np.asarray(one.column("auction_id"))
        assert (np.asarray(one.column("key")) == key).all()
    seq = np.asarray(one.column("seq"))
    assert (np.diff(seq) > 0).all() and seq.max() < 5_000


def test_q20_reads_only_category_10_auctions() -> None:
    spec = load_spec("nexmark-q20-join").with_overrides(events=20_000)
    rows = _input(spec, 2).to_pylist()
    all_events = generate_nexmark(nexmark_config(spec)).to_pylist()
    auctions = [r for r in rows if r["event_type"] == AUCTION]
    assert auctions and all(r["category"] == 10 for r in auctions)
    expected = sum(1 for r in all_events if r["event_type"] == BID or (
        r["event_type"] == AUCTION and r["category"] == 10))
    assert len(rows) == expected


def test_keyed_table_tags_tasks_and_sorts_by_time() -> None:
    spec = load_spec("nexmark-q4-agg").with_overrides(events=5_000)
    table = keyed_table(spec, 2, 2, 128, 1000)
    tasks = np.asarray(table.column("task"))
    assert set(tasks.tolist()) == {0, 1} and (np.diff(tasks) >= 0).all()
    for t in (0, 1):
        ts = np.asarray(table.column("ts"))[tasks == t]
        assert (np.diff(ts) >= 0).all()


def test_the_key_value_generator_refuses_an_operator_spec() -> None:
    with pytest.raises(ValueError, match=r"\[operator\] table"):
        generate_partition(load_spec("nexmark-q18-dedup"), 0, 1)
