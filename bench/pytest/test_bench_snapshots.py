"""Snapshot benchmarks: full-snapshot write speed beside a same-run pyarrow baseline, the upload
ratio of a RocksDB incremental checkpoint after changing 1% of the keys, and restore time.

Run: `python -m pytest bench/pytest/test_bench_snapshots.py --benchmark-only`. Targets:
a full snapshot writes within 2x of the time pyarrow alone takes to write the same rows (same
compression, same run: `extra_info["ratio_vs_pyarrow"]`), and an incremental checkpoint after a
1% change uploads <= 5% of the full checkpoint's bytes (`extra_info["upload_ratio"]`, asserted:
it is a size, not a timing). Sizes are small by default so the file runs in well under a minute;
STATEBENCH_SNAPSHOT_KEYS scales them.
"""

from __future__ import annotations

import itertools
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import backends as B
from backends.snapshot.arrowfile import IPC_OPTIONS

KEYS = int(os.environ.get("STATEBENCH_SNAPSHOT_KEYS", "50000"))
ROUNDS = 5
SEED = 20261122
KINDS = ("heap", "rocksdb")
TTL = B.StateTtlConfig.new_builder(3_600_000).disable_cleanup_in_background().build()


def _descriptor() -> B.ValueStateDescriptor:
    desc = B.ValueStateDescriptor("v", B.Types.LONG())
    desc.enable_time_to_live(TTL)
    return desc


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("snapshots")


@pytest.fixture(scope="module")
def filled(workdir: Path) -> Iterator[dict[str, B.KeyedStateBackend]]:
    """A TTL value state of KEYS int keys (flink-benchmarks' Long -> Long) in each backend."""
    clock = B.ManualClock(0)
    out = {}
    for kind in KINDS:
        b = B.create_backend(kind, clock=clock, path=workdir / f"live-{kind}")
        state = b.get_state(_descriptor())
        for k in range(KEYS):
            clock.set(k)
            b.set_current_key(k)
            state.update((k * 2654435761 + SEED) % (1 << 40))
        out[kind] = b
    yield out
    for b in out.values():
        b.close()


def _rows(backend: B.KeyedStateBackend) -> tuple[list, list, list]:
    """The rows a snapshot holds, as Python lists: what any pyarrow writer starts from."""
    if backend.kind == "heap":
        table = backend.raw_state("v").table
        return list(table.keys()), [c[0] for c in table.values()], [c[1] for c in table.values()]
    keys, values, stamps = [], [], []
    for _, key, (value, ts) in backend.raw_state("v").iter_entries():
        keys.append(key)
        values.append(value)
        stamps.append(ts)
    return keys, values, stamps


def _pyarrow_write(backend: B.KeyedStateBackend, path: Path) -> None:
    """The baseline: the same rows read from the same backend, written by pyarrow directly as
    one compressed Arrow IPC file (key, value, ts; same codec) and fsynced."""
    keys, values, stamps = _rows(backend)
    table = pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array(values, pa.int64()),
                      "ts": pa.array(stamps, pa.int64())})
    with open(path, "wb") as out:
        with ipc.new_file(out, table.schema, options=IPC_OPTIONS) as writer:
            writer.write_table(table)
        out.flush()
        os.fsync(out.fileno())  # a checkpoint file must be durable, the snapshot's are too


def _seconds(fn: Callable[[], object], rounds: int = ROUNDS) -> list[float]:
    fn()  # warm-up, as the benchmark's own warm-up round
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


@pytest.mark.parametrize("kind", KINDS)
def test_full_snapshot_write(benchmark, kind, filled, workdir):
    backend = filled[kind]
    target = workdir / f"full-{kind}"
    ids = itertools.count(1)

    def setup() -> tuple[tuple, dict]:
        shutil.rmtree(target, ignore_errors=True)
        return (next(ids),), {}

    handle = benchmark.pedantic(lambda cid: backend.snapshot(cid, target), setup=setup,
                                rounds=ROUNDS, iterations=1, warmup_rounds=1)
    baseline_path = workdir / f"baseline-{kind}.arrow"
    baseline = _seconds(lambda: _pyarrow_write(backend, baseline_path))
    ratio = benchmark.stats.stats.median / statistics.median(baseline)
    best_ratio = benchmark.stats.stats.min / min(baseline)
    benchmark.extra_info.update({
        "kind": kind, "rows": KEYS, "snapshot_bytes": handle.stats.total_bytes,
        "pyarrow_bytes": baseline_path.stat().st_size,
        "pyarrow_baseline_median_s": statistics.median(baseline),
        "ratio_vs_pyarrow": round(ratio, 3), "best_ratio_vs_pyarrow": round(best_ratio, 3),
        "sync_ms": handle.stats.sync_ms,
        "total_ms": handle.stats.total_ms,
    })
    print(f"\n{kind} full snapshot: {ratio:.2f}x the pyarrow baseline (medians; best rounds "
          f"{best_ratio:.2f}x), {handle.stats.total_bytes} vs {baseline_path.stat().st_size} "
          "bytes")


def test_incremental_checkpoint_after_one_percent(benchmark, filled, workdir):
    """Each round: compact, take a base checkpoint (untimed), change 1% of the keys, then time
    the incremental checkpoint that follows. (Without the compaction, RocksDB's own L0
    compactions would every few rounds rewrite all SST files, and the checkpoint after that
    uploads them all, as in Flink.)"""
    backend = filled["rocksdb"]
    target = workdir / "incremental"
    state = backend.get_state(_descriptor())
    ids = itertools.count(1)
    ratios: list[float] = []

    def change_one_percent() -> tuple[tuple, dict]:
        backend.compact()
        backend.snapshot(next(ids), target, mode="incremental")
        offset = len(ratios) + 1
        for k in range(offset, KEYS, 100):
            backend.set_current_key(k)
            state.update(-k)
        return (next(ids),), {}

    def checkpoint(cid: int) -> B.SnapshotHandle:
        handle = backend.snapshot(cid, target, mode="incremental")
        ratios.append(handle.stats.upload_ratio)
        return handle

    handle = benchmark.pedantic(checkpoint, setup=change_one_percent, rounds=ROUNDS,
                                iterations=1)
    stats = handle.stats
    benchmark.extra_info.update({
        "rows": KEYS, "uploaded_bytes": stats.uploaded_bytes, "full_bytes": stats.total_bytes,
        "upload_ratio": round(stats.upload_ratio, 4), "max_upload_ratio": round(max(ratios), 4),
        "sync_ms": stats.sync_ms,
    })
    print(f"\nincremental checkpoint after a 1% change: uploaded {stats.uploaded_bytes} of "
          f"{stats.total_bytes} bytes ({stats.upload_ratio:.2%}; max over rounds "
          f"{max(ratios):.2%})")
    assert max(ratios) <= 0.05


@pytest.mark.parametrize("dest", KINDS)
@pytest.mark.parametrize("share", ["all", "half"])
def test_restore(benchmark, dest, share, filled, workdir):
    handle = B.latest_checkpoint(workdir / "full-heap") or filled["heap"].snapshot(
        1, workdir / "full-heap")
    options = {} if share == "all" else {"key_group_range": B.KeyGroupRange.of_operator(0, 2, 128)}
    paths = itertools.count()

    def restore() -> B.KeyedStateBackend:
        return B.restore_backend(dest, [handle], clock=B.ManualClock(0),
                                 path=workdir / f"restored-{dest}-{share}-{next(paths)}",
                                 **options)

    restored = benchmark.pedantic(restore, rounds=ROUNDS, iterations=1)
    stats = restored.restore_stats
    benchmark.extra_info.update({"dest": dest, "key_groups": share, "rows": KEYS,
                                 "bytes_read": stats.bytes_read,
                                 "restore_ms": stats.duration_ms})
    print(f"\nrestore into {dest} ({share} key groups): {stats.duration_ms:.1f} ms, "
          f"{stats.bytes_read} bytes read")
    restored.close()
