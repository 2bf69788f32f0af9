"""Restore across: load a statebench canonical full snapshot into Flink's keyed state backend.

Why this direction: statebench's snapshot format is documented and open (per state one Arrow IPC
file: key group, key, user key, value, last-access timestamp; JSON `_metadata`), and Flink's
public state API can reproduce every unit exactly: a write stamps the TTL time provider's `now`
under both update types, so setting the worker's logical clock to a unit's stored timestamp
before writing it recreates the unit with that timestamp. The other direction would need
Flink's internal savepoint layout (KeyedBackendSerializationProxy with Java serializer
snapshots, key-group offsets kept in the job's checkpoint metadata, per-backend key and value
framing), which has no stable outside reader.

Scope: value and map states whose keys are all ints or all strings and whose values/user keys
use the plain Arrow encoding (LONG, INT, DOUBLE, BOOLEAN, STRING). Units are written in
ascending timestamp order; Flink's own background cleanup (heap incremental) may already drop,
during the load, a unit that was expired at a later unit's timestamp. Such a unit is expired at
every time after the load anyway, so only ReturnExpiredIfNotCleanedUp could have shown it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from backends.descriptors import StateDescriptor
from backends.flink.register import FlinkState
from backends.flink.worker import FlinkWorker

SUPPORTED_KINDS = ("value", "map")
ROWS_PER_BATCH = 20_000
_KEY_TYPES = {"int64": "long", "string": "string"}


def _metadata(folder: Path) -> dict:
    try:
        meta = json.loads((folder / "_metadata").read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{folder} holds no statebench snapshot (_metadata missing)") from None
    if meta.get("format") != "statebench-snapshot":
        raise ValueError(f"{folder}/_metadata is not a statebench snapshot")
    return meta["body"]


def load_statebench_snapshot(worker: FlinkWorker, snapshot: str | os.PathLike,
                             descriptors: Iterable[StateDescriptor],
                             now: int | None = None) -> dict[str, FlinkState]:
    """Registers each descriptor in the worker's (fresh) backend and writes the snapshot's units
    into it with their stored timestamps; sets the clock to `now` afterwards if given.

    The snapshot is first restored by statebench's own reader, so a corrupt or incomplete
    snapshot fails with statebench's checksum error before anything reaches Flink.
    """
    import backends

    folder = Path(os.fspath(snapshot))
    body = _metadata(folder)
    backends.restore_backend("heap", [str(folder)]).close()  # checksums, completeness
    by_name = {s["name"]: s for s in body["states"]}
    handles = {}
    for desc in descriptors:
        name = desc.get_name()
        spec = by_name.get(name)
        if spec is None:
            raise ValueError(f"state '{name}' is not in the snapshot {folder}")
        handles[name] = _load_state(worker, folder, spec, desc)
    if now is not None:
        worker.batch().set_time(now).flush()
    return handles


def _load_state(worker: FlinkWorker, folder: Path, spec: dict,
                desc: StateDescriptor) -> FlinkState:
    name, kind, enc = spec["name"], spec["kind"], spec["encodings"]
    if kind not in SUPPORTED_KINDS or desc.kind != kind:
        raise ValueError(
            f"state '{name}' is {kind} state (descriptor: {desc.kind}); loading into Flink "
            f"covers {' and '.join(SUPPORTED_KINDS)} states")
    key_type = _KEY_TYPES.get(enc["key"])
    if key_type is None or any(enc.get(c, "arrow") != "arrow" for c in ("value", "user_key")):
        raise ValueError(f"state '{name}' uses encodings {enc}; loading into Flink needs int or "
                         "str keys and plain Arrow values")
    if (key_type == "long") != (worker.key_code == 1):
        raise ValueError(f"state '{name}' has {key_type} keys; open the worker with "
                         f"key_type='{key_type}'")
    if spec.get("ttl_layout") and not desc.ttl_enabled:
        raise ValueError(f"state '{name}' was written with TTL; give a descriptor with TTL")
    with pa.memory_map(str(folder / spec["file"])) as source:
        table = ipc.open_file(source).read_all()
    if "ts" in table.column_names:
        table = table.sort_by([("ts", "ascending")])
    state = worker.register(desc)
    rows = table.to_pylist()
    for start in range(0, len(rows), ROWS_PER_BATCH):
        b = worker.batch()
        for row in rows[start:start + ROWS_PER_BATCH]:
            _write(b, state, row)
        b.flush()
    return state


def _write(b: Any, state: FlinkState, row: dict) -> None:
    if "ts" in row:
        b.set_time(row["ts"])
    b.set_key(row["key"])
    if state.kind == "value":
        b.value_update(state, row["value"])
    else:
        b.map_put(state, row["user_key"], row["value"])
