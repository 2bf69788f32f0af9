"""The fidelity section's "ForSt beside RocksDB" part: for a run with ``flink-rocksdb`` and
``flink-forst``, ForSt's numbers over RocksDB's and each strategy's cost relative to ``none``,
recomputed here from the raw rows, in the rendered report; absent without ForSt.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.flink.lanes_util import lane_session
from tests.runner.conftest import small_spec
from workloads.report.fidelity import FORST_PAIR, forst_findings, forst_html, forst_rows
from workloads.report.load import load_run
from workloads.report.render import report_html
from workloads.results.store import write_run
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import RunConfig

STRATEGIES = ("none", "compaction_filter(1000)")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with lane_session():
        root = tmp_path_factory.mktemp("forst-fidelity")
        out = run_in_process(RunConfig(
            small_spec("sessions-churn", events=4_000), backends=FORST_PAIR,
            strategies=STRATEGIES, repetitions=2, checkpoint_root=str(root / "ckpt"),
            run_id="forst-fidelity"))
        yield write_run(out, root / "results")


def _throughput(rows: list[dict], backend: str, strategy: str) -> float:
    """Median over repetitions of the job-wide records/s."""
    return float(np.median([r["value"] for r in rows if (
        r["backend"], r["strategy"], r["metric"], r["task"]) == (
        backend, strategy, "records_per_s", -1)]))


def test_forst_over_rocksdb_and_relative_costs_match_the_raw_rows(run_dir: Path) -> None:
    rows = pq.read_table(run_dir / "rows.parquet").to_pylist()
    run = load_run(run_dir)
    found = forst_rows(run, "sessions-churn")
    assert [r.strategy for r in found if r.metric == "records_per_s"] == list(STRATEGIES)
    rocks, forst = FORST_PAIR
    for r in found:
        if r.metric == "records_per_s":
            want = _throughput(rows, forst, r.strategy) / _throughput(rows, rocks, r.strategy)
            assert r.forst_over_rocksdb == pytest.approx(want)
        if r.strategy == "none":
            assert r.rocksdb_rel is None and r.forst_rel is None
        elif r.metric == "records_per_s":
            want = _throughput(rows, forst, r.strategy) / _throughput(rows, forst, "none")
            assert r.forst_rel is not None and r.forst_rel.ratio == pytest.approx(want)
    # the same LSM contents under the logical clock: the same peak entries on both
    entries = [r for r in found if r.metric == "stored_entries"]
    assert entries and all(r.forst_over_rocksdb == 1.0 for r in entries)
    restore = [r for r in found if r.metric == "restore_ms"]
    assert restore and all(r.forst is not None and r.forst > 0 for r in restore)
    assert len(forst_findings(found)) == len(STRATEGIES)


def test_the_report_shows_forst_beside_rocksdb(run_dir: Path) -> None:
    html = report_html(load_run(run_dir))
    assert 'id="fidelity"' in html and "ForSt beside RocksDB" in html
    assert html.count('data-group="forst"') == 1


def test_no_forst_lane_no_forst_part(run_dir: Path) -> None:
    run = load_run(run_dir)
    run.backends = [b for b in run.backends if b != "flink-forst"]
    assert forst_html(run) is None
