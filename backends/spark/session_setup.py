"""What a Spark lane's streaming query needs of the shared session: the events' schema as
Spark DDL, and session configurations set for one query and restored after it.

Why one module: the ``spark-tws`` lane and the throughput mode (``backends.spark.throughput``)
run their queries on the session the other lanes and the tests share, so a configuration one
sets (the state store provider, changelog checkpointing, shuffle partitions) must not outlive
its query.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pyarrow as pa

_PA_DDL = {pa.int8(): "tinyint", pa.int32(): "int", pa.int64(): "bigint", pa.string(): "string",
           pa.large_string(): "string", pa.binary(): "binary"}


def spark_ddl(schema: pa.Schema) -> str:
    """The events' Arrow schema as Spark DDL (the file source needs a schema up front)."""
    return ", ".join(f"{f.name} {_PA_DDL[f.type]}" for f in schema)


def set_confs(spark: Any, confs: dict[str, str]) -> dict[str, str | None]:
    """Set ``confs`` on the session; the values they replace (None: unset), for
    :func:`restore_confs`."""
    old: dict[str, str | None] = {}
    for key, value in confs.items():
        old[key] = spark.conf.get(key, None)
        spark.conf.set(key, value)
    return old


def restore_confs(spark: Any, old: dict[str, str | None]) -> None:
    """Put back what :func:`set_confs` replaced (a session that is stopping may refuse: it
    keeps nothing then)."""
    for key, value in old.items():
        with suppress(Exception):
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextmanager
def session_confs(spark: Any, confs: dict[str, str]) -> Iterator[None]:
    """``confs`` set on the session for the block, the previous values restored after it."""
    old = set_confs(spark, confs)
    try:
        yield
    finally:
        restore_confs(spark, old)


def end_query(spark: Any, query: Any, name: str) -> None:
    """Stop ``query`` (None: it never started) and drop its memory sink's view ``name``, in
    every case and whatever failed before: a query left running would hold the session's
    state stores and its view would shadow the next query's."""
    if query is not None:
        with suppress(Exception):
            query.stop()
    with suppress(Exception):
        spark.catalog.dropTempView(name)
