"""Issue 31, category 1: results that were wrong without a word.

* End of input: the run's samples and checkpoint barriers that fall between the last record
  and the run's end are taken on the state the records left, before the final watermark fires
  every timer (they used to be taken after it: a window open at the end read 0 entries and
  was checkpointed empty).
* Keys that do not exist on the input: grouping bids by category (bids carry none) and a join
  filter on a category no auction has are refused with one line.
* ``--events N`` on an operator spec is recorded and titled as N events (it used to be the bids
  that reached the operator, so ``diff`` read a workload change as an events change).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import need_flink_lanes
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import RunConfig
from workloads.spec import SpecError, load_spec


def _series(rows: list[dict[str, Any]], metric: str) -> list[float]:
    """The job total (task -1) of a sampled metric, in logical-time order."""
    found = sorted((r["logical_time_ms"], r["value"]) for r in rows
                   if r["metric"] == metric and r["task"] == -1 and r["logical_time_ms"] >= 0)
    return [v for _, v in found]


def _run(spec: Any, tmp_path: Path, backend: str = "heap") -> list[dict[str, Any]]:
    cfg = RunConfig(spec=spec, backends=(backend,), strategies=("none",), parallelism=2,
                    measure_latency=False, checkpoint_root=str(tmp_path / "ck"))
    return run_in_process(cfg).rows.to_pylist()


# A 200 ms run (4,000 events at 20 k/s): windows that outlast it never fire before the end.
OPEN_AT_THE_END = {
    # q7's shape with an out-of-orderness longer than the run: the watermark stays before
    # every window's end, so the windows hold every bid until the final watermark
    "q7, watermark behind the whole run": ("nexmark-q7-window",
                                           {"time__max_out_of_orderness_ms": 10_000}),
    # an ordinary tumbling window longer than the run
    "100 s tumbling window": ("nexmark-q7-window", {"operator__window_ms": 100_000}),
    # an interval join whose bounds outlast the run on both sides: both caches hold every row
    # (with Flink's min-cleanup-interval 0 a side's row leaves once the watermark passes its
    # own bound, so both bounds must reach past the run)
    "interval join, 100 s bound": ("nexmark-interval-join", {"operator__lower_ms": -100_000,
                                                             "operator__upper_ms": 100_000}),
}


@pytest.mark.parametrize("backend", ["heap", "rocksdb", "flink-heap"])
@pytest.mark.parametrize("case", sorted(OPEN_AT_THE_END))
def test_samples_and_checkpoints_after_the_last_record_see_the_open_state(
        case: str, backend: str, tmp_path: Path) -> None:
    """Also on a Flink lane (its worker fires the same barriers before OP_FINISH)."""
    if backend.startswith("flink-"):
        need_flink_lanes()
    name, overrides = OPEN_AT_THE_END[case]
    spec = load_spec(name).with_overrides(events=4_000, checkpoint_interval_ms=40, ttl_ms=None,
                                          strategies=["none"], **overrides)
    rows = _run(spec, tmp_path, backend)
    live = _series(rows, "live_entries")
    assert len(live) >= 10
    # nothing fires before the end of input: state only grows, and the last sample (at or
    # after the end) still holds all of it
    assert all(a <= b for a, b in itertools.pairwise(live)), live
    assert live[0] > 0 and live[-1] == max(live), live
    # every checkpoint holds the open state, which only grows: none after the last record is
    # a checkpoint of an emptied operator
    ckpt = _series(rows, "checkpoint_bytes")
    assert len(ckpt) >= 3 and all(b >= 0.9 * a for a, b in itertools.pairwise(ckpt)), ckpt
    outputs = [r["value"] for r in rows if r["metric"] == "operator_outputs" and r["task"] == -1]
    assert outputs and outputs[0] > 0  # the final watermark still fired the windows


@pytest.mark.parametrize("kind,extra", [
    ("tumbling_window", {}), ("sliding_window", {"slide_ms": 1_000}),
    ("session_window", {}), ("topn", {})])
def test_grouping_bids_by_category_is_refused(kind: str, extra: dict[str, Any]) -> None:
    spec = load_spec("nexmark-q18-dedup")
    with pytest.raises(SpecError, match=r"^operator\.group_by: .*carry no category") as info:
        spec.with_overrides(operator__kind=kind, operator__group_by="category",
                            **{f"operator__{k}": v for k, v in extra.items()})
    assert "\n" not in str(info.value)
    # group_agg groups auctions, which have one
    agg = spec.with_overrides(operator__kind="group_agg", operator__group_by="category")
    assert agg.operator is not None and agg.operator.group_by == "category"


@pytest.mark.parametrize("kind", ["regular_join", "interval_join"])
def test_a_join_on_a_category_no_auction_has_is_refused(kind: str) -> None:
    spec = load_spec("nexmark-q18-dedup")
    for category in (0, 9, 15, 2**31 - 1):  # Nexmark's categories: 10..14 by default
        with pytest.raises(SpecError, match=rf"^operator\.category: no auction has category "
                                            rf"{category}: Nexmark's are 10\.\.14"):
            spec.with_overrides(operator__kind=kind, operator__category=category)
    for category in (-1, 10, 14):
        assert spec.with_overrides(operator__kind=kind,
                                   operator__category=category).operator.category == category
    wide = spec.with_overrides(operator__kind=kind, operator__category=29,
                               nexmark__num_categories=20)
    assert wide.operator.category == 29


def test_events_of_an_operator_run_are_the_events_asked_for(tmp_path: Path,
                                                            capsys: Any) -> None:
    """``--events 5000``: run.json and the title say 5,000 events; the rows that reached the
    operator (the bids) are recorded beside them as what they are."""
    from workloads.cli import main

    code = main(["run", "nexmark-q18-dedup", "--in-process", "--events", "5000",
                 "--backend", "heap", "--strategy", "none", "--no-report", "--no-latency",
                 "--results-dir", str(tmp_path / "results"),
                 "--checkpoint-dir", str(tmp_path / "ck")])
    assert code == 0
    out = capsys.readouterr().out
    assert "nexmark-q18-dedup: 5000 events" in out
    (run_dir,) = (tmp_path / "results").iterdir()
    config = json.loads((run_dir / "run.json").read_text())["config"]
    assert config["events"] == 5000
    records = config["operator_records"]
    assert 0 < records < 5000 and sum(config["events_per_task"].values()) == records
