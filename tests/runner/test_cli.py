"""``statebench run`` end to end in-process, usage errors, and subcommand registration."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workloads import cli
from workloads.cli.options import split_list
from workloads.report.render import render_report
from workloads.run.metrics import METRIC_SCHEMA


def _run_dir(results: Path) -> Path:
    (run_dir,) = list(results.iterdir())
    return run_dir


def test_run_in_process_writes_a_renderable_run(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    status = cli.main(["run", "ycsb-a", "--events", "20000", "--in-process",
                       "--results-dir", str(results), "--no-report"])
    assert status == 0
    run_dir = _run_dir(results)
    rows = pq.read_table(run_dir / "rows.parquet")
    assert rows.schema == METRIC_SCHEMA
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["run_id"] == run_dir.name
    assert meta["spec"]["name"] == "ycsb-a" and meta["spec"]["time"]["events"] == 20_000
    assert meta["config"]["events"] == 20_000 and meta["config"]["in_process"] is True
    assert meta["spark_master"] == "in-process"
    assert set(meta["versions"]) >= {"python", "pyspark", "rocksdict", "pyarrow", "numpy",
                                     "statebench"}
    assert set(meta["machine"]) == {"cpu_model", "cores", "memory_bytes", "platform"}
    assert len(meta["git_commit"]) == 40 or meta["git_commit"] == "unknown"
    assert {(n["backend"], n["strategy"]) for n in meta["not_applicable"]} == {
        ("heap", "compaction_filter(1000)"), ("rocksdb", "incremental(5, false)"),
        ("rocksdb", "compaction_filter(1000)")}
    assert meta["duration_s"] > 0
    scenarios = set(rows.column("scenario").to_pylist())
    assert len(scenarios) == 10  # 2 backends x 5 strategies, 3 of them flagged
    out = capsys.readouterr().out
    assert "records/s" in out and "not applicable" in out and str(run_dir) in out
    report = render_report(run_dir)
    html = report.read_text()
    assert "ycsb-a" in html and "incremental" in html


def test_run_ids_sort_by_time(tmp_path: Path) -> None:
    from workloads.run.plan import new_run_id

    a, b = new_run_id(), new_run_id()
    assert len(a) == len(b) and a[:16] <= b[:16] and a != b


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "no-such-spec", "--in-process"], "spec file not found"),
        (["run", "ycsb-a", "--in-process", "--backend", "heap,cassandra"],
         "unknown backend 'cassandra'"),
        (["run", "ycsb-a", "--in-process", "--strategy", "sometimes"],
         "unknown cleanup strategy 'sometimes'"),
        (["run", "ycsb-a", "--in-process", "--master", "local[2]"], "exclude each other"),
    ],
)
def test_usage_errors_exit_2_without_traceback(argv, message, tmp_path, capsys) -> None:
    assert cli.main([*argv, "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("statebench: error: ") and message in err
    assert "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_bad_spec_file_names_the_field(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text('name = "bad"\n[keys]\ncount = 10\ndistribution = "zipf"\n'
                    '[operations]\nvalue_get = 1.0\n[time]\nrate = 10\nevents = 10\n')
    assert cli.main(["run", str(spec), "--in-process", "--results-dir", str(tmp_path)]) == 2
    assert "keys.distribution" in capsys.readouterr().err


def test_split_list_keeps_commas_inside_parentheses() -> None:
    assert split_list("none, incremental(5, false),timer(10)") == [
        "none", "incremental(5, false)", "timer(10)"]
    assert split_list("") == []
