"""An operator's input: the spec's Nexmark events, filtered and keyed as the job's keyBy would.

Which events reach the operator and which key they carry, per kind (what Flink SQL's planner
puts in front of the stateful operator: the event-type filter, the category filter of q20, the
partition / join / group key):

* ``dedup``: bids, key ``bidder * 2**32 + auction`` (q18's ``PARTITION BY bidder, auction``;
  ids stay below 2**31 for any run of at most 10^10 events);
* ``regular_join`` and ``interval_join``: bids and auctions (with ``category >= 0``, only the
  auctions of that category), key the auction id;
* windows, ``topn`` and ``group_agg``: bids keyed by ``group_by`` (auction or bidder), or for
  ``group_agg`` with ``group_by = "category"`` auctions keyed by their category.

Source partitions: partition ``p`` of ``P`` generates the contiguous global events
``[p * N // P, (p + 1) * N // P)`` (``workloads.nexmark`` generates any slice exactly) and
``seq`` is the global event index, so sorting each task's events by ``(ts, seq)`` is the same
total order whatever the partitioning.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workloads.nexmark import AUCTION, BID, NEXMARK_SCHEMA, NexmarkConfig, nexmark_batches
from workloads.spec import OperatorSpec, WorkloadSpec, planned_events

#: The operator input's columns before tagging: Nexmark's, the key and the global sequence.
OPERATOR_INPUT_SCHEMA = NEXMARK_SCHEMA.append(pa.field("key", pa.int64())).append(
    pa.field("seq", pa.int64()))
JOIN_KINDS = frozenset({"regular_join", "interval_join"})


def nexmark_config(spec: WorkloadSpec) -> NexmarkConfig:
    """The Nexmark generator config of an operator spec: ``seed`` and ``[time]`` give the
    seed, rate, events, start and out-of-orderness, ``[nexmark]`` the rest."""
    op, time = spec.operator, spec.time
    if op is None or time is None:
        raise ValueError(f"spec {spec.name}: not an operator spec with a [time] section")
    if time.events is not None:
        events = time.events
    else:  # exactly the events that arrive in [start, start + duration), as the generator's
        events = planned_events(time)
    n = op.nexmark
    return NexmarkConfig(
        seed=spec.seed, events=events, events_per_s=time.rate,
        out_of_orderness_ms=time.max_out_of_orderness_ms, start_ms=time.start_ms,
        hot_auction_ratio=n.hot_auction_ratio, hot_bidder_ratio=n.hot_bidder_ratio,
        hot_seller_ratio=n.hot_seller_ratio, auction_duration_ms=n.auction_duration_ms,
        num_active_people=n.num_active_people, in_flight_auctions=n.in_flight_auctions,
        num_categories=n.num_categories,
    )


def generated_events(spec: WorkloadSpec) -> int:
    """The Nexmark events an operator spec makes (``[time]``'s events; ``--events``): what the
    run records and titles as its events. The rows that reach the operator (the bids, and the
    auctions of a join) are fewer; they are its records (``operator_records``)."""
    return nexmark_config(spec).events


def _count_of_type(cfg: NexmarkConfig, lo: int, hi: int) -> int:
    """Events of global index ``0..events-1`` whose place in each cycle of
    ``total_proportion`` events is in ``lo..hi-1`` (``workloads.nexmark.event_types``)."""
    cycles, rest = divmod(cfg.events, cfg.total_proportion)
    return cycles * (hi - lo) + max(0, min(rest, hi) - lo)


def input_rows_bound(spec: WorkloadSpec) -> int:
    """Rows that can reach the operator, at most (exact unless a join filters auctions by
    category): the events of the types its kind reads, counted from Nexmark's fixed mix."""
    assert spec.operator is not None
    cfg = nexmark_config(spec)
    people, auctions = cfg.person_proportion, cfg.auction_proportion
    bids = _count_of_type(cfg, people + auctions, cfg.total_proportion)
    auction_rows = _count_of_type(cfg, people, people + auctions)
    op = spec.operator
    if op.kind in JOIN_KINDS:
        return bids + auction_rows
    if op.kind == "group_agg" and op.group_by == "category":
        return auction_rows
    return bids


def empty_input_problem(spec: WorkloadSpec) -> str | None:
    """None when rows reach an operator spec's operator, else why none does (one line): a run
    that measured nothing must not look like one that measured zero."""
    if spec.operator is None or spec.time is None:
        return None
    if input_rows_bound(spec) > 0:
        return None
    op = spec.operator
    reads = ("auctions" if op.kind == "group_agg" and op.group_by == "category"
             else "bids and auctions" if op.kind in JOIN_KINDS else "bids")
    cfg = nexmark_config(spec)
    return (f"{spec.name}: none of its {cfg.events} events is one of the {reads} its "
            f"{op.kind} reads (Nexmark makes people, auctions and bids "
            f"{cfg.person_proportion}:{cfg.auction_proportion}:{cfg.bid_proportion}, in that "
            "order in every cycle), so no row would reach the operator; give more events")


def select(op: OperatorSpec, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, np.ndarray]:
    """The rows of ``batch`` the operator reads and their keys (module docstring)."""
    kind = batch.column("event_type")
    if op.kind in JOIN_KINDS:
        mask = pc.equal(kind, BID)
        auctions = pc.equal(kind, AUCTION)
        if op.category >= 0:
            auctions = pc.and_(auctions, pc.equal(batch.column("category"), op.category))
        mask = pc.or_(mask, auctions)
    elif op.kind == "group_agg" and op.group_by == "category":
        mask = pc.equal(kind, AUCTION)
    else:
        mask = pc.equal(kind, BID)
    rows = batch.filter(mask)
    person = rows.column("person_id").to_numpy(zero_copy_only=False)
    auction = rows.column("auction_id").to_numpy(zero_copy_only=False)
    if op.kind == "dedup":
        key = person * (1 << 32) + auction
    elif op.kind in JOIN_KINDS or op.group_by == "auction":
        key = auction
    elif op.group_by == "bidder":
        key = person
    else:
        key = rows.column("category").to_numpy(zero_copy_only=False).astype(np.int64)
    return rows, key


def partition_range(events: int, partition: int, num_partitions: int) -> tuple[int, int]:
    """Partition ``partition``'s contiguous slice of the global events."""
    return (partition * events // num_partitions, (partition + 1) * events // num_partitions)


def operator_partition(
    spec: WorkloadSpec, partition: int, num_partitions: int, batch_size: int
) -> Iterator[pa.RecordBatch]:
    """Partition ``partition``'s operator input (``OPERATOR_INPUT_SCHEMA``)."""
    assert spec.operator is not None
    cfg = nexmark_config(spec)
    first, stop = partition_range(cfg.events, partition, num_partitions)
    g = first
    for batch in nexmark_batches(cfg, first, stop, batch_size):
        seq = np.arange(g, g + batch.num_rows, dtype=np.int64)
        g += batch.num_rows
        tagged = pa.RecordBatch.from_arrays([*batch.columns, pa.array(seq)],
                                            schema=NEXMARK_SCHEMA.append(pa.field("seq",
                                                                                  pa.int64())))
        rows, key = select(spec.operator, tagged)
        yield pa.RecordBatch.from_arrays(
            [*rows.columns[:-1], pa.array(key, pa.int64()), rows.column("seq")],
            schema=OPERATOR_INPUT_SCHEMA)
