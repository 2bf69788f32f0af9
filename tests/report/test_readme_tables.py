"""The docs' measured tables are remade from the result files kept in the repository
(issue 15 item 7): `python -m workloads.report.readme_tables` on docs/results/ gives exactly the
marked blocks of docs/performance.md, so an edit that does not match the data fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workloads.report import readme_tables as rt

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results"


def test_every_table_has_its_data_in_the_repository() -> None:
    missing = [t.name for t in rt.TABLES if t not in rt.available(RESULTS)]
    assert not missing, f"no source files under docs/results for {missing}"
    for table in rt.TABLES:
        made = table.make(RESULTS)
        assert made.startswith("| ") and "not measured" not in made, table.name


def test_the_performance_page_shows_what_the_data_says() -> None:
    page = REPO / "docs" / "performance.md"
    assert rt.readme_blocks(page.read_text(encoding="utf-8")), "no marked tables in the page"
    assert rt.check(page, RESULTS) == []


def test_paste_remakes_an_edited_block_and_only_the_blocks(tmp_path: Path) -> None:
    page = tmp_path / "performance.md"
    original = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    name, block = next(iter(rt.readme_blocks(original).items()))
    row = next(line for line in block.splitlines() if line.startswith("| ") and "---" not in line)
    page.write_text(original.replace(row, row + " edited"), encoding="utf-8")
    assert rt.check(page, RESULTS) != []
    assert rt.paste(page, RESULTS) == [name]
    assert page.read_text(encoding="utf-8") == original
    assert rt.paste(page, RESULTS) == []


def test_check_catches_a_number_that_the_data_does_not_say(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    assert rt.main(["--results", str(RESULTS)]) == 0
    made = capsys.readouterr().out
    readme = tmp_path / "README.md"
    readme.write_text("# statebench\n\nprose\n" + made, encoding="utf-8")
    assert rt.main(["--results", str(RESULTS), "--check", str(readme)]) == 0
    blocks = rt.readme_blocks(made)
    name, text = next(iter(blocks.items()))
    row = next(line for line in text.splitlines() if line.startswith("| ") and "---" not in line
               and line != text.splitlines()[1])
    edited = row.replace("0.", "9.", 1) if "0." in row else row + " edited"
    assert edited != row
    readme.write_text(made.replace(row, edited), encoding="utf-8")
    assert rt.main(["--results", str(RESULTS), "--check", str(readme)]) == 1
    err = capsys.readouterr().err
    assert f"README {name}" in err and "+" + row in err
    readme.write_text(made.replace(f"<!-- table: {name} -->", "<!-- gone -->"), encoding="utf-8")
    assert rt.check(readme, RESULTS) == [f"{readme}: no <!-- table: {name} --> block"]


def test_trim_keeps_extra_info_and_stats_and_appends_runs(tmp_path: Path) -> None:
    raw = {"datetime": "2026-11-24T15:00:00", "machine_info": {"cpu": {"brand_raw": "cpu X",
                                                                       "count": 2}},
           "commit_info": {"id": "abc"},
           "benchmarks": [{"name": "test_paired_ratio[heap-ttl_nobg-value_update-0.5-False]",
                           "extra_info": {"kind": "heap", "variant": "ttl_nobg",
                                          "op": "value_update:paired", "ratio_median": 0.5,
                                          "ratio_min": 0.4, "ratio_max": 0.6, "rounds": 7},
                           "stats": {"median": 1.0, "min": 0.5, "max": 2.0, "q1": 0.8,
                                     "q3": 1.2, "rounds": 1, "data": [1.0] * 1000}}]}
    path = tmp_path / "state-ops.json"
    rt.add_benchmark_run(path, raw, "state-ops")
    raw["benchmarks"][0]["extra_info"].update(ratio_median=0.7, ratio_min=0.3, ratio_max=0.9)
    doc = rt.add_benchmark_run(path, raw, "state-ops")
    assert len(doc["runs"]) == 2 and "data" not in json.dumps(doc)
    table = rt.state_ops_table(tmp_path)
    row = next(line for line in table.splitlines() if "background cleanup off" in line)
    # two runs: the median of their medians, every round's range, and the runs' medians
    assert "0.60x (rounds 0.30-0.90, 14 rounds; run medians 0.50-0.70)" in row
    assert ">= 0.5x: met (median; not every round)" in row


# -- issue 31: a run of another workload, an empty table, malformed input -----------------------


def _results_copy(tmp_path: Path) -> Path:
    import shutil

    out = tmp_path / "results"
    shutil.copytree(RESULTS, out)
    return out


def _kept_run_as(src: Path, dest: Path, workload: str | None = None,
                 strategy: str | None = None) -> Path:
    """A copy of kept run ``src`` with its rows renamed to another workload or strategy."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.copytree(src, dest)
    rows = pq.read_table(dest / "rows.parquet")
    for column, value in (("workload", workload), ("strategy", strategy)):
        if value is not None:
            i = rows.schema.get_field_index(column)
            rows = rows.set_column(i, column, pa.array([value] * rows.num_rows, pa.string()))
    pq.write_table(rows, dest / "rows.parquet")
    return dest


def _one_line(err: str) -> str:
    """The error line (one per table or input at fault: per-op.json makes two tables)."""
    lines = [line for line in err.splitlines() if line.startswith("readme_tables: error:")]
    assert lines and "Traceback" not in err, err
    assert len({line.rsplit("): ", 1)[-1] for line in lines}) == 1, err
    return lines[0]


def test_keep_run_refuses_a_run_of_another_workload(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    kept = sorted((RESULTS / "sessions-paced").iterdir())[0]
    other = _kept_run_as(kept, tmp_path / "ycsb-run", workload="ycsb-a")
    out = tmp_path / "out"
    assert rt.main(["--results", str(out), "keep-run", str(other), "sessions-paced"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "a run of ycsb-a" in line and "sessions-paced" in line
    assert not out.exists()  # nothing kept
    # a run of the workload without the table's scenarios keeps nothing either
    odd = _kept_run_as(kept, tmp_path / "odd-run", strategy="timer")
    assert rt.main(["--results", str(out), "keep-run", str(odd), "sessions-paced"]) == 2
    assert "none of the table's scenarios" in _one_line(capsys.readouterr().err)
    assert rt.main(["--results", str(out), "keep-run", str(tmp_path / "nope"),
                    "sessions-paced"]) == 2
    assert "no such folder" in _one_line(capsys.readouterr().err)
    # the run it is for is kept
    assert rt.main(["--results", str(out), "keep-run", str(kept), "sessions-paced"]) == 0
    assert (out / "sessions-paced" / kept.name / "rows.parquet").is_file()


def test_show_never_prints_an_empty_table_or_counts_a_foreign_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _results_copy(tmp_path)
    paced = results / "sessions-paced"
    kept = sorted(paced.iterdir())
    # a run of another workload dropped into the folder: named, not counted
    _kept_run_as(kept[0], paced / "zz-other", workload="ycsb-a")
    assert rt.main(["--results", str(results)]) == 2
    captured = capsys.readouterr()
    assert "zz-other: a run of ycsb-a" in _one_line(captured.err)
    assert "<!-- table: state-ops -->" in captured.out  # the other tables are still made
    assert "<!-- table: sessions-paced -->" not in captured.out
    # runs without the table's scenarios: no empty table captioned with repetitions
    import shutil

    shutil.rmtree(paced)
    paced.mkdir()
    source = RESULTS / "sessions-paced" / kept[0].name
    _kept_run_as(source, paced / kept[0].name, strategy="timer")
    assert rt.main(["--results", str(results)]) == 2
    captured = capsys.readouterr()
    assert "no kept run has any of the table's scenarios" in _one_line(captured.err)
    assert "<!-- table: sessions-paced -->" not in captured.out


@pytest.mark.parametrize("name,content,fragment", [
    ("state-ops.json", "{not json", "not valid JSON"),
    ("state-ops.json", "[1, 2]", "not a statebench-readme-bench-1 document"),
    ("runner.json", '{"schema": "statebench-readme-bench-1", "runs": [{}]}', "malformed"),
    ("per-op.json", "{}", "malformed"),
])
def test_malformed_input_is_one_line_and_exit_2(name: str, content: str, fragment: str,
                                                tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    results = _results_copy(tmp_path)
    (results / name).write_text(content, encoding="utf-8")
    assert rt.main(["--results", str(results)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert fragment in line


def test_missing_input_is_one_line_and_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bench.json"
    for argv, fragment in (
            (["--results", str(tmp_path / "none")], "no such folder"),
            (["--results", str(RESULTS), "--check", str(tmp_path / "README.md")],
             "no such file"),
            (["--results", str(tmp_path), "trim", "runner", str(bad)], "no such file"),
    ):
        assert rt.main(argv) == 2, argv
        assert fragment in _one_line(capsys.readouterr().err)
    bad.write_text("[]", encoding="utf-8")
    assert rt.main(["--results", str(tmp_path), "trim", "runner", str(bad)]) == 2
    assert "not a pytest-benchmark document" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "runner.json").exists()
