"""Knob sweeps: parsing, the scenarios they add (labelled by knob value, configured from the
canonical strategy), and run.json's "sweep" entry, end to end through `statebench compare`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.runner.conftest import small_spec
from workloads import cli
from workloads.run.compare import comparison_configs
from workloads.run.engines.inprocess import data_facts
from workloads.run.plan import Scenario, operator_config, plan_scenarios
from workloads.run.source import keyed_table
from workloads.run.state_setup import ttl_config_of
from workloads.run.sweep import SweepError, parse_sweep


def test_parse_sweep_labels_and_strategies() -> None:
    sweep = parse_sweep("incremental(size=1,5,20,100)")
    assert sweep.labels == ("incremental(size=1)", "incremental(size=5)",
                            "incremental(size=20)", "incremental(size=100)")
    assert dict(sweep.strategies)["incremental(size=20)"] == "incremental(20, false)"
    assert sweep.as_dict() == {"strategy": "incremental", "knob": "size",
                               "values": [1, 5, 20, 100], "labels": list(sweep.labels)}
    assert dict(parse_sweep("timer(granularity_ms=0,100)").strategies) == {
        "timer(granularity_ms=0)": "timer(0)", "timer(granularity_ms=100)": "timer(100)"}
    cf = dict(parse_sweep("compaction_filter(periodic_compaction_ms=500, 2000)").strategies)
    assert cf["compaction_filter(periodic_compaction_ms=500)"] == "compaction_filter(1000, 500)"
    per = dict(parse_sweep("incremental(per_record=0,1)").strategies)
    assert per["incremental(per_record=1)"] == "incremental(5, true)"


@pytest.mark.parametrize(("text", "message"), [
    ("incremental", "must look like"),
    ("none(size=1,2)", "no knob to sweep"),
    ("incremental(depth=1,2)", "no knob 'depth'"),
    ("incremental(size=1,x)", "'x' is not an integer"),
    ("incremental(size=5)", "at least two values"),
    ("incremental(size=5,5)", "given twice"),
    ("incremental(size=0,5)", "cleanup_size: must be >= 1"),
    ("incremental(per_record=0,2)", "0 \\(false\\) or 1"),
])
def test_bad_sweeps_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_sweep(text)


def test_swept_scenarios_run_their_knob_value(tmp_path: Path) -> None:
    sweep = parse_sweep("incremental(size=1,50)")
    (cfg,) = comparison_configs([small_spec(events=3_000)], sweep=sweep, backends=("heap",),
                                parallelism=1)
    assert cfg.strategy_labels == ("none", "incremental(size=1)", "incremental(size=50)")
    runnable, skipped = plan_scenarios(cfg)
    assert [s.strategy for s in runnable] == list(cfg.strategy_labels) and not skipped
    table = keyed_table(cfg.spec, cfg.partitions, cfg.parallelism, cfg.max_parallelism,
                        cfg.batch_size)
    facts = data_facts(table, cfg)
    op_cfg = operator_config(cfg, Scenario("heap", "incremental(size=50)"), 0, facts)
    assert op_cfg.scenario.strategy == "incremental(size=50)"
    ttl = ttl_config_of(op_cfg)
    assert ttl is not None
    assert ttl.get_cleanup_strategies().get_incremental_cleanup_strategy().get_cleanup_size() == 50


def test_compare_with_a_sweep_records_it(tmp_path: Path, capsys) -> None:
    status = cli.main(["compare", "ycsb-a", "--in-process", "--events", "40000",
                       "--repetitions", "1", "--backend", "heap",
                       "--sweep", "incremental(size=1,20)", "--results-dir", str(tmp_path)])
    assert status == 0
    (run_dir,) = list(tmp_path.iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["sweep"] == {"strategy": "incremental", "knob": "size", "values": [1, 20],
                             "labels": ["incremental(size=1)", "incremental(size=20)"]}
    rows = pq.read_table(run_dir / "rows.parquet").to_pylist()
    ran = {r["strategy"] for r in rows if r["metric"] == "records" and r["task"] == -1}
    assert ran == {"none", "incremental(size=1)", "incremental(size=20)"}
    removed = {r["strategy"]: r["value"] for r in rows
               if r["metric"] == "cleanup_removed_incremental" and r["task"] == -1}
    assert removed["none"] == 0 and removed["incremental(size=20)"] > 0
    assert cli.main(["compare", "--sweep", "incremental(size=1)", "--in-process"]) == 2
    assert "--sweep" in capsys.readouterr().err


def test_run_with_a_sweep_records_it_in_its_config(tmp_path: Path) -> None:
    status = cli.main(["run", "ycsb-a", "--in-process", "--events", "20000", "--repetitions",
                       "1", "--backend", "heap", "--sweep", "timer(granularity_ms=0,200)",
                       "--no-report", "--results-dir", str(tmp_path)])
    assert status == 0
    (run_dir,) = list(tmp_path.iterdir())
    config = json.loads((run_dir / "run.json").read_text())["config"]
    assert config["sweep"]["labels"] == ["timer(granularity_ms=0)", "timer(granularity_ms=200)"]
    assert config["strategies"] == ["none", *config["sweep"]["labels"]]
