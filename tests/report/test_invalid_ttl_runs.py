"""A TTL run its lane marked invalid (``ttl_run_valid`` 0: it did not keep up with its TTL, so
what expired was its lag's) is shown but never ranked: the decision table leaves it out of
every cell and the recommendation, and its row names it with the figures that made it so."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.report.test_one_answer import W, write_run
from workloads.report.decision import decide, kept_up
from workloads.report.front import front_html
from workloads.report.load import ScenarioKey, load_run


def _mark(folder: Path, backend: str, strategy: str, valid: list[float]) -> None:
    """Add the lane's validity rows (one per repetition) and the batch figures beside them."""
    rows = pq.read_table(folder / "rows.parquet").to_pylist()
    for rep, flag in enumerate(valid):
        for metric, value, unit in (("ttl_run_valid", flag, "flag"),
                                    ("data_batch_duration_p50_ms", 2400.0, "ms"),
                                    ("ttl_wall_ms", 2000.0, "ms")):
            rows.append({"run_id": "x", "scenario": f"{W}/{backend}/{strategy}",
                         "backend": backend, "strategy": strategy, "workload": W, "task": -1,
                         "step": rep, "logical_time_ms": -1, "metric": metric,
                         "value": value, "unit": unit})
    pq.write_table(pa.Table.from_pylist(rows), folder / "rows.parquet")


def test_an_invalid_ttl_run_is_named_and_never_ranked(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", seed=3)
    _mark(folder, "heap", "timer", [1, 1, 0, 1, 1, 1, 1, 1])  # behind its TTL in one round
    _mark(folder, "rocksdb", "timer", [1] * 8)
    run = load_run(folder)
    heap = decide(run, W, "heap")
    rocksdb = decide(run, W, "rocksdb")
    assert heap is not None and rocksdb is not None
    # the same timer, valid on rocksdb, is what the table recommends there: its smallest state
    assert rocksdb.recommended == ScenarioKey(W, "rocksdb", "timer")
    assert not kept_up(run, ScenarioKey(W, "heap", "timer"))
    assert heap.recommended is not None and heap.recommended.strategy != "timer"
    for found in heap.picks.values():
        assert found is None or "timer" not in {k.strategy for k in (found.best, *found.tied)}
    text = heap.tradeoff.text
    assert "Not ranked" in text and "timer" in text and "median batch 2.40 s, TTL 2.00 s" in text
    assert "Not ranked" not in rocksdb.tradeoff.text
    assert "Not ranked" in front_html(run)


def test_a_backend_whose_every_run_was_invalid_has_an_empty_row_that_says_why(
        tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", seed=4)
    for strategy in ("none", "full_snapshot", "timer", "incremental"):
        _mark(folder, "heap", strategy, [0] * 8)
    heap = decide(load_run(folder), W, "heap")
    assert heap is not None and heap.recommended is None
    assert all(found is None for found in heap.picks.values())
    assert heap.tradeoff.text.startswith("Not ranked")
