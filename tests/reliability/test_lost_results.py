"""Issue 16, items 1 and 2: results neither lost nor counted twice, files written whole, and
names that become paths stay inside their folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workloads import cli
from workloads.run.checkpoints import MAX_SLUG, slug
from workloads.run.plan import PlanError, RunConfig
from workloads.spec import load_spec

TINY = ("--in-process", "--events", "200", "--strategy", "none", "--no-report")


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("results")
    assert cli.main(["run", "ycsb-a", *TINY, "--backend", "heap",
                     "--results-dir", str(results)]) == 0
    (run_dir,) = list(results.iterdir())
    return run_dir


# ------------------------------------------------------------------ folders that collide


@pytest.mark.parametrize("form", ["{r}", "{r}/", "file://{r}", "{r}/../r"])
def test_results_and_checkpoints_in_one_folder_are_refused_up_front(
        form: str, tmp_path: Path, fails: Callable[..., str]) -> None:
    results = tmp_path / "r"
    line = fails("run", "ycsb-a", *TINY, "--backend", "heap", "--results-dir", str(results),
                 "--checkpoint-dir", form.format(r=results))
    assert "is the --results-dir" in line
    assert not results.exists()  # refused before anything was made


def test_checkpoints_beside_the_results_still_run(tmp_path: Path) -> None:
    assert cli.main(["run", "ycsb-a", *TINY, "--backend", "heap", "--results-dir",
                     str(tmp_path / "r"), "--checkpoint-dir", str(tmp_path / "r" / "ck")]) == 0
    assert [p.name for p in (tmp_path / "r").iterdir() if p.name != "ck"]


@pytest.mark.parametrize("name", ["rows.parquet", "run.json"])
def test_an_output_that_is_a_runs_own_data_is_refused(name: str, good_run: Path,
                                                      fails: Callable[..., str]) -> None:
    before = (good_run / name).read_bytes()
    line = fails("report", str(good_run), "-o", str(good_run / name))
    assert f"is {good_run}'s {name}" in line
    line = fails("diff", str(good_run), str(good_run), "-o", str(good_run / name))
    assert (good_run / name).read_bytes() == before


# ------------------------------------------------------------------ lists that repeat


@pytest.mark.parametrize(("option", "value", "fragment"), [
    ("--backend", "heap,heap", "--backend: 'heap' given twice"),
    ("--backend", "heap,rocksdb,heap", "--backend: 'heap' given twice"),
    ("--strategy", "none,none", "--strategy: 'none' given twice"),
    ("--strategy", "incremental(5,false),incremental(5, false)",
     "'incremental(5,false)' and 'incremental(5, false)' (the same strategy) given twice"),
])
def test_a_list_naming_something_twice_is_refused(option: str, value: str, fragment: str,
                                                  tmp_path: Path,
                                                  fails: Callable[..., str]) -> None:
    argv = ["run", "ycsb-a", "--in-process", "--events", "200", "--no-report",
            "--results-dir", str(tmp_path)]
    argv += [option, value] + (["--backend", "heap"] if option == "--strategy" else [])
    assert fragment in fails(*argv)
    assert list(tmp_path.iterdir()) == []


def test_a_repeated_option_counts_as_one_list(tmp_path: Path, fails: Callable[..., str]) -> None:
    line = fails("run", "ycsb-a", "--in-process", "--backend", "heap", "--backend", "heap",
                 "--results-dir", str(tmp_path))
    assert "'heap' given twice" in line


def test_compare_refuses_a_spec_given_twice(tmp_path: Path, fails: Callable[..., str]) -> None:
    line = fails("compare", "ycsb-a", "ycsb-a", "--in-process", "--results-dir", str(tmp_path))
    assert line == "statebench: error: SPEC: 'ycsb-a' given twice; name each once"
    spec = tmp_path / "other.toml"
    spec.write_text(_shipped("ycsb-a"), encoding="utf-8")
    line = fails("compare", "ycsb-a", str(spec), "--in-process", "--results-dir", str(tmp_path))
    assert line.endswith("workload 'ycsb-a' is given twice (two SPECs of one name)")


def _shipped(name: str) -> str:
    from workloads.spec import builtin_specs

    return builtin_specs()[name].read_text(encoding="utf-8")


def test_the_api_refuses_a_backend_given_twice() -> None:
    with pytest.raises(PlanError, match="backend 'heap' is given twice"):
        RunConfig(spec=load_spec("ycsb-a"), backends=("heap", "heap"))


# ------------------------------------------------------------------ files written whole

_RENDER_UNDER_A_FILE_SIZE_LIMIT = """
import resource, signal, sys
from workloads.report import render
run = render.load_run(sys.argv[1])  # read first: only the write meets the limit
html = render.report_html(run)
render.load_run = lambda _: run
render.report_html = lambda _: html
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
try:
    render.render_report(sys.argv[1])
except OSError as exc:
    print("failed:", exc.errno)
"""


def test_a_report_is_complete_or_absent_never_truncated(good_run: Path, tmp_path: Path) -> None:
    """A full disk (here: a file size limit) while the page is written: before, a truncated
    report.html that looked complete; now none, and no partial file beside it."""
    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    (run_dir / "report.html").unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", _RENDER_UNDER_A_FILE_SIZE_LIMIT, str(run_dir)],
                          capture_output=True, text=True, timeout=120)
    assert "failed: 27" in done.stdout, done.stderr  # EFBIG: the page is larger than the limit
    assert sorted(p.name for p in run_dir.iterdir()) == ["rows.parquet", "run.json"]


def test_a_failed_rewrite_keeps_the_old_page(good_run: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    (run_dir / "report.html").write_text("<html>old, complete</html>")
    subprocess.run([sys.executable, "-c", _RENDER_UNDER_A_FILE_SIZE_LIMIT, str(run_dir)],
                   capture_output=True, text=True, timeout=120, check=True)
    assert (run_dir / "report.html").read_text() == "<html>old, complete</html>"
    assert sorted(p.name for p in run_dir.iterdir()) == ["report.html", "rows.parquet",
                                                         "run.json"]


# ------------------------------------------------------------------ names that become paths


@pytest.mark.parametrize("name", ["../../escaped", "..", ".", "", "a/b", "/abs", "x" * 300,
                                  "é" * 200, "..\\..\\win", ".statebench-t0-pid1.1_x"])
def test_a_slug_is_one_safe_bounded_component(name: str) -> None:
    out = slug(name)
    assert out and out not in (".", "..") and not out.startswith(".")
    assert "/" not in out and "\\" not in out and len(out.encode()) <= MAX_SLUG
    assert slug(name) == out  # stable: a retried task finds its folder


def test_long_names_that_share_a_prefix_stay_apart() -> None:
    assert slug("x" * 300 + "a") != slug("x" * 300 + "b")


def _spec_named(folder: Path, name: str) -> Path:
    text = _shipped("ycsb-a")
    lines = [f"name = {json.dumps(name)}" if line.startswith("name =")
             else "rate = 1_000" if line.startswith("rate =")  # checkpoints within few events
             else "interval_ms = 1_000" if line.startswith("interval_ms =")
             else line for line in text.splitlines()]
    path = folder / "spec.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["../../escaped-ckpt", "n" * 300])
def test_compare_keeps_a_hostile_workload_name_inside_its_folders(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``../../escaped-ckpt`` wrote checkpoints two levels above the temporary
    checkpoint folder and left them there; 300 characters failed at the first checkpoint."""
    tmp = tmp_path / "a" / "b" / "tmp"
    tmp.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", None)
    spec = _spec_named(tmp_path, name)
    status = cli.main(["compare", str(spec), "--in-process", "--events", "3000",
                       "--repetitions", "1", "--backend", "rocksdb", "--strategy", "none",
                       "--results-dir", str(tmp_path / "r")])
    assert status == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "r", "spec.toml"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["tmp"]
    assert list(tmp.iterdir()) == []
    (run_dir,) = list((tmp_path / "r").iterdir())
    rows = pq.read_table(run_dir / "rows.parquet")
    assert set(rows.column("workload").to_pylist()) == {name}
    assert "checkpoint_bytes" in set(rows.column("metric").to_pylist())


def test_a_long_workload_name_runs_with_checkpoints(tmp_path: Path) -> None:
    spec = _spec_named(tmp_path, "w" * 300)
    assert cli.main(["run", str(spec), *TINY, "--events", "3000", "--backend", "rocksdb",
                     "--results-dir",
                     str(tmp_path / "r"), "--checkpoint-dir", str(tmp_path / "ck")]) == 0
    names = [p.name for p in (tmp_path / "ck").rglob("*")]
    assert any(n.startswith("chk-") for n in names)
    assert max(len(n) for n in names) <= 255
    assert os.path.isdir(tmp_path / "r")


@pytest.mark.parametrize("run_id", ["../x", "a/b", "..", "", "r" * 200, ".hidden"])
def test_a_run_id_that_is_no_folder_name_is_refused(run_id: str, tmp_path: Path) -> None:
    import pyarrow as pa

    from workloads.results.store import RunIdError, write_run_dir
    from workloads.run.metrics import METRIC_SCHEMA

    with pytest.raises(RunIdError, match="cannot be a folder name"):
        write_run_dir(run_id, pa.table({f.name: pa.array([], f.type) for f in METRIC_SCHEMA}),
                      {}, tmp_path / "r")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
