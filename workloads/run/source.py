"""The source stage: generated events tagged with their task and a global sequence number.

``seq`` is the event's global index (partition ``p``'s ``i``-th event is ``p + i * P``, the
generator's round-robin split). Sorting each task's events by ``(ts, seq)`` is then a total
order that does not depend on how a shuffle interleaved them, which is what makes in-process
and Spark runs (and two Spark runs) see exactly the same event order per task.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from workloads.generator import EVENT_SCHEMA, generate_partition
from workloads.operators.input import OPERATOR_INPUT_SCHEMA, operator_partition
from workloads.run.keying import tasks_for_keys
from workloads.spec import WorkloadSpec

KEYED_SCHEMA = EVENT_SCHEMA.append(pa.field("task", pa.int32())).append(
    pa.field("seq", pa.int64())
)
#: An ``[operator]`` spec's keyed events: its Nexmark input (workloads.operators.input) + task.
OPERATOR_KEYED_SCHEMA = OPERATOR_INPUT_SCHEMA.append(pa.field("task", pa.int32()))
SORT_COLUMNS = ("task", "ts", "seq")
_SPARK_TYPES = {pa.int8(): "tinyint", pa.int32(): "int", pa.int64(): "bigint"}


def source_schema(spec: WorkloadSpec) -> pa.Schema:
    """The keyed events' schema: key-value events, or an operator spec's Nexmark input."""
    return OPERATOR_KEYED_SCHEMA if spec.operator is not None else KEYED_SCHEMA


def source_ddl(schema: pa.Schema) -> str:
    """``schema`` as a Spark DDL string (integer columns only)."""
    return ", ".join(f"{f.name} {_SPARK_TYPES[f.type]}" for f in schema)


def keyed_partition(
    spec: WorkloadSpec,
    partition: int,
    num_partitions: int,
    parallelism: int,
    max_parallelism: int,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    """Partition ``partition``'s events (``source_schema(spec)``): task by key group, global
    seq."""
    if spec.operator is not None:
        for batch in operator_partition(spec, partition, num_partitions, batch_size):
            keys = batch.column("key").to_numpy(zero_copy_only=False)
            task = tasks_for_keys(keys, parallelism, max_parallelism)
            yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(task, pa.int32())],
                                             schema=OPERATOR_KEYED_SCHEMA)
        return
    offset = 0
    for batch in generate_partition(spec, partition, num_partitions, batch_size):
        n = batch.num_rows
        keys = batch.column("key").to_numpy(zero_copy_only=False)
        task = tasks_for_keys(keys, parallelism, max_parallelism)
        seq = partition + (offset + np.arange(n, dtype=np.int64)) * num_partitions
        offset += n
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array(task, pa.int32()), pa.array(seq, pa.int64())],
            schema=KEYED_SCHEMA,
        )


def keyed_table(
    spec: WorkloadSpec,
    num_partitions: int,
    parallelism: int,
    max_parallelism: int,
    batch_size: int,
) -> pa.Table:
    """Every partition's keyed events, sorted by (task, ts, seq): the in-process shuffle."""
    batches = [
        b
        for p in range(num_partitions)
        for b in keyed_partition(spec, p, num_partitions, parallelism, max_parallelism,
                                 batch_size)
    ]
    table = pa.Table.from_batches(batches, schema=source_schema(spec))
    return table.sort_by([(c, "ascending") for c in SORT_COLUMNS])
