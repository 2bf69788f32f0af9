"""Issue 10, defects 1 and 2: results are checked before the work and written atomically;
``report`` and ``diff`` on an incomplete or foreign folder say what is wrong in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workloads import cli
from workloads.report.load import RunFolderError, check_run_folder
from workloads.results.store import RunExistsError, write_run_dir
from workloads.run import run_tempdirs
from workloads.run.metrics import METRIC_SCHEMA

TINY = ("--in-process", "--events", "200", "--backend", "heap", "--strategy", "none",
        "--no-report")


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("results")
    assert cli.main(["run", "ycsb-a", *TINY, "--results-dir", str(results)]) == 0
    (run_dir,) = list(results.iterdir())
    return run_dir


# ------------------------------------------------------------------ fail before the work


def test_results_dir_under_proc_fails_before_the_run(tmp_path: Path,
                                                     fails: Callable[..., str]) -> None:
    line = fails("run", "ycsb-a", *TINY, "--results-dir", "/proc/statebench")
    assert line == ("statebench: error: --results-dir /proc/statebench: cannot create or "
                    "write this folder (No such file or directory)")


def test_results_dir_under_a_file(tmp_path: Path, fails: Callable[..., str]) -> None:
    (tmp_path / "file").write_text("x")
    line = fails("run", "ycsb-a", *TINY, "--results-dir", str(tmp_path / "file" / "sub"))
    assert f"--results-dir {tmp_path}/file/sub: is under {tmp_path}/file, which is a file" in line


def test_taken_run_id_is_refused(tmp_path: Path) -> None:
    rows = pa.Table.from_pylist([], schema=METRIC_SCHEMA)
    write_run_dir("r1", rows, {"run_id": "r1"}, tmp_path)
    with pytest.raises(RunExistsError, match="run id r1 is taken"):
        write_run_dir("r1", rows, {"run_id": "r1"}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1"]  # no partial folder left


@pytest.mark.parametrize(("target", "fragment"), [
    ("{tmp}/file/ckpt", "is under {tmp}/file, which is a file, not a folder"),
    ("/proc/statebench-ckpt", "cannot create or write this folder"),
    ("foo://bucket/ckpt", "unknown URI scheme 'foo://'"),
])
def test_checkpoint_target_is_checked_up_front(target: str, fragment: str, tmp_path: Path,
                                               fails: Callable[..., str]) -> None:
    (tmp_path / "file").write_text("x")
    target = target.format(tmp=tmp_path)
    line = fails("run", "ycsb-a", *TINY, "--results-dir", str(tmp_path / "r"),
                 "--checkpoint-dir", target)
    assert line.startswith(f"statebench: error: --checkpoint-dir {target}: ")
    assert fragment.format(tmp=tmp_path) in line


def test_unreachable_checkpoint_filesystem_answers_within_the_timeout() -> None:
    from workloads.cli import CliError
    from workloads.cli.checks import checkpoint_target

    # a closed port on loopback: nothing answers; the probe is bounded by the timeout
    uri = "s3://bucket/ckpt?endpoint_override=127.0.0.1:9&scheme=http"
    with pytest.raises(CliError, match=r"^--checkpoint-dir s3://bucket/ckpt.*(did not answer "
                                       r"within 2 s|cannot write there)"):
        checkpoint_target("--checkpoint-dir", uri, timeout_s=2)


# ------------------------------------------------------------------ atomic run folders


def test_a_run_folder_appears_complete(good_run: Path) -> None:
    assert sorted(p.name for p in good_run.iterdir()) == ["rows.parquet", "run.json"]
    assert [p.name for p in good_run.parent.iterdir()] == [good_run.name]  # no partial left
    assert json.loads((good_run / "run.json").read_text())["run_id"] == good_run.name
    assert check_run_folder(good_run) == good_run


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    bad_rows = pa.table({"not": ["metric rows"]})  # cannot be cast to METRIC_SCHEMA
    with pytest.raises((ValueError, pa.ArrowInvalid, KeyError)):
        write_run_dir("r2", bad_rows, {"run_id": "r2"}, tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert not [p for p in run_tempdirs.live() if str(tmp_path) in p]


def test_a_writer_killed_mid_write_leaves_only_a_hidden_partial_that_is_swept(
    tmp_path: Path,
) -> None:
    # a real process makes its partial folder (as write_run_dir does) and is killed -9
    code = ("import sys, os, signal; from workloads.run import run_tempdirs; "
            "p = run_tempdirs.make('.statebench-partial-r3-', dir=sys.argv[1]); "
            "open(os.path.join(p, 'rows.parquet'), 'wb').write(b'PAR1'); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=False)
    assert done.returncode == -9
    (partial,) = list(tmp_path.iterdir())
    assert partial.name.startswith(".statebench-partial-r3-pid")
    assert run_tempdirs.sweep([tmp_path]) == [str(partial)]
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ report / diff


def _copy(run: Path, dest: Path, *names: str) -> Path:
    dest.mkdir()
    for name in names:
        (dest / name).write_bytes((run / name).read_bytes())
    return dest


def test_report_on_a_truncated_rows_file(good_run: Path, tmp_path: Path,
                                         fails: Callable[..., str]) -> None:
    bad = _copy(good_run, tmp_path / "bad", "run.json")
    (bad / "rows.parquet").write_bytes(b"PAR1")
    line = fails("report", str(bad))
    assert line == (f"statebench: error: {bad}/rows.parquet: incomplete, 4 bytes (the run was "
                    "interrupted while writing it; run it again)")


def test_report_on_an_empty_rows_file_without_run_json(tmp_path: Path,
                                                       fails: Callable[..., str]) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "rows.parquet").write_bytes(b"")
    assert "rows.parquet: incomplete, 0 bytes" in fails("report", str(bad))


def test_report_without_run_json(good_run: Path, tmp_path: Path,
                                 fails: Callable[..., str]) -> None:
    bad = _copy(good_run, tmp_path / "bad", "rows.parquet")
    assert fails("report", str(bad)) == (f"statebench: error: {bad}: incomplete run folder: "
                                         "run.json is missing (a complete run writes it last)")


def test_report_on_parquet_with_the_wrong_columns(good_run: Path, tmp_path: Path,
                                                  fails: Callable[..., str]) -> None:
    bad = _copy(good_run, tmp_path / "bad", "run.json")
    pq.write_table(pa.table({"x": [1], "metric": ["m"]}), bad / "rows.parquet")
    line = fails("report", str(bad))
    assert line.endswith("rows.parquet: not statebench metric rows: missing column(s) "
                         "workload, backend, strategy, value (has x, metric)")


def test_report_on_a_file_that_is_not_parquet(good_run: Path, tmp_path: Path,
                                              fails: Callable[..., str]) -> None:
    bad = _copy(good_run, tmp_path / "bad", "run.json")
    (bad / "rows.parquet").write_text("this is not parquet at all, just text\n" * 3)
    assert "rows.parquet: not a readable Parquet file (" in fails("report", str(bad))


def test_report_on_a_foreign_folder(tmp_path: Path, fails: Callable[..., str]) -> None:
    assert fails("report", str(tmp_path)).endswith(
        "not a statebench run folder: rows.parquet is missing")
    assert fails("report", str(tmp_path / "nope")).endswith(
        "nope: not a statebench run folder: no such folder")


@pytest.mark.parametrize(("output", "fragment"), [
    ("/proc/statebench/report.html", "cannot create or write its folder /proc/statebench"),
    ("{tmp}/file/report.html", "is under {tmp}/file, which is a file"),
    ("{tmp}", "is a folder; give a file name"),
])
def test_report_to_an_unwritable_path(output: str, fragment: str, good_run: Path,
                                      tmp_path: Path, fails: Callable[..., str]) -> None:
    (tmp_path / "file").write_text("x")
    output = output.format(tmp=tmp_path)
    line = fails("report", str(good_run), "-o", output)
    assert line.startswith(f"statebench: error: -o {output}: ")
    assert fragment.format(tmp=tmp_path) in line


def test_diff_on_an_incomplete_folder(good_run: Path, tmp_path: Path,
                                      fails: Callable[..., str]) -> None:
    bad = _copy(good_run, tmp_path / "bad", "run.json")
    (bad / "rows.parquet").write_bytes(b"PAR1\x00")
    line = fails("diff", str(good_run), str(bad))
    assert "rows.parquet: incomplete, 5 bytes" in line


def test_check_run_folder_reports_json_that_is_not_an_object(good_run: Path,
                                                             tmp_path: Path) -> None:
    bad = _copy(good_run, tmp_path / "bad", "rows.parquet")
    (bad / "run.json").write_text("[1, 2]")
    with pytest.raises(RunFolderError, match=r"run\.json: expected a JSON object, got list"):
        check_run_folder(bad)
    assert os.path.isdir(bad)


def test_compare_checks_its_results_folder_first(fails: Callable[..., str]) -> None:
    line = fails("compare", "ycsb-a", "--in-process", "--events", "100", "--repetitions", "1",
                 "--results-dir", "/proc/statebench")
    assert line.startswith("statebench: error: --results-dir /proc/statebench: cannot create")


def test_compare_refuses_an_empty_backend_list(tmp_path: Path, fails: Callable[..., str]) -> None:
    line = fails("compare", "ycsb-a", "--in-process", "--backend", ",", "--results-dir",
                 str(tmp_path))
    assert line.startswith("statebench: error: --backend: empty list")


def test_diff_with_a_side_without_run_json(good_run: Path, tmp_path: Path,
                                           fails: Callable[..., str]) -> None:
    bad = _copy(good_run, tmp_path / "bad", "rows.parquet")
    assert fails("diff", str(good_run), str(bad)) == (
        f"statebench: error: {bad}: incomplete run folder: run.json is missing (a complete run "
        "writes it last)")
