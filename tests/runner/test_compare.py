"""`statebench compare`, `report` and `diff` end to end (in-process, small), and usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workloads import cli


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("compare-results")
    status = cli.main(["compare", "--in-process", "--events", "30000", "--repetitions", "2",
                       "--results-dir", str(results)])
    assert status == 0
    (run_dir,) = list(results.iterdir())
    return run_dir


def test_compare_covers_the_default_matrix(compared: Path, capsys) -> None:
    meta = json.loads((compared / "run.json").read_text())
    assert [s["name"] for s in meta["spec"]] == ["sessions-churn", "ycsb-a"]
    assert meta["config"]["kind"] == "comparison"
    assert set(meta["config"]["workloads"]) == {"sessions-churn", "ycsb-a"}
    rows = pq.read_table(compared / "rows.parquet").to_pylist()
    ran = {(r["workload"], r["backend"], r["strategy"]) for r in rows
           if r["metric"] == "records_per_s" and r["task"] == -1}
    skipped = {(n["workload"], n["backend"], n["strategy"]) for n in meta["not_applicable"]}
    for workload in ("sessions-churn", "ycsb-a"):
        for backend in ("heap", "rocksdb"):
            for strategy in ("none", "full_snapshot", "incremental(5, false)",
                             "compaction_filter(1000)", "timer"):
                key = (workload, backend, strategy)
                assert (key in ran) != (key in skipped), key  # each ran, or is reported n/a
    assert ("ycsb-a", "rocksdb", "incremental(5, false)") in skipped
    assert ("ycsb-a", "heap", "incremental(5, false)") in ran
    reps = {r["step"] for r in rows if r["metric"] == "records_per_s" and r["task"] == -1}
    assert reps == {0, 1}
    assert max(r["value"] for r in rows if r["metric"] == "expired_returned") == 0
    html = (compared / "report.html").read_text()
    assert "sessions-churn" in html and "ycsb-a" in html and "timer" in html


def test_report_re_renders_from_stored_rows(compared: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "again.html"
    assert cli.main(["report", str(compared), "-o", str(out)]) == 0
    assert out.read_text().count("js-plotly-plot") >= 1
    assert str(out) in capsys.readouterr().out


def test_diff_renders_two_runs_side_by_side(compared: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "diff.html"
    assert cli.main(["diff", str(compared), str(compared), "-o", str(out)]) == 0
    html = out.read_text()
    assert "1.00" in html  # a run against itself: every ratio is 1


@pytest.mark.parametrize(("argv", "message"), [
    (["compare", "--in-process", "no-such-spec"], "no-such-spec"),
    (["compare", "--in-process", "--backend", "mysql"], "mysql"),
    (["compare", "--in-process", "--strategy", "lazy"], "lazy"),
    (["report", "/nonexistent/run"], "not a statebench run folder"),
])
def test_usage_errors_exit_2_with_a_message(argv: list[str], message: str, capsys) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
