"""An ``[operator]`` spec's input as the emulated task and the real SQL job read it: the events
by time, then arrival, through the operator's own selection. Shared by the pure-Python
operator tests and the Flink SQL tests, so both replay the very rows the job reads."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from workloads.lanes.flink_sql_job import events_in_time_order
from workloads.operators.input import select
from workloads.spec import WorkloadSpec

#: The operator input's columns, in the order the emulated operators take a row.
COLUMNS = ("event_type", "ts", "person_id", "auction_id", "price", "category", "expires_ms")


def operator_input(spec: WorkloadSpec) -> tuple[Any, list[tuple]]:
    """The operator's keys and input rows over the spec's events in the job's order (ts, then
    arrival), as the emulated task reads them."""
    assert spec.operator is not None
    table = events_in_time_order(spec).combine_chunks()
    batch = pa.RecordBatch.from_arrays(
        [*(column.chunk(0) for column in table.columns),
         pa.array(range(table.num_rows), pa.int64())],
        names=[*table.column_names, "seq"])
    rows, keys = select(spec.operator, batch)
    return keys, list(zip(*(rows.column(c).to_pylist() for c in COLUMNS)))
