"""Issue 16, item 3: no run leaves a folder or a process behind: ``ab`` and ``diff --rerun``
check before they create, forward signals to their child and wait for it, and a Spark run with
a Flink lane leaves neither its workers' folders nor a JVM, on success or on SIGINT.

Processes left behind are found by their environment: every process a test starts carries
``TMPDIR=<the test's folder>``, and so does everything those start.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from workloads import cli

_BOOT = "import sys; from workloads.cli import main; sys.exit(main())"
TINY = ("--in-process", "--events", "200", "--backend", "heap", "--strategy", "none",
        "--no-report")


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("results")
    assert cli.main(["run", "ycsb-a", *TINY, "--results-dir", str(results)]) == 0
    (run_dir,) = list(results.iterdir())
    return run_dir


def test_ab_with_an_unknown_revision_creates_nothing(tmp_path: Path,
                                                     fails: Callable[..., str]) -> None:
    line = fails("ab", "no-such-revision-xyz", ".", "ycsb-a", "--in-process",
                 "--results-dir", str(tmp_path / "r"))
    assert "unknown git revision 'no-such-revision-xyz'" in line
    assert not (tmp_path / "r").exists() or list((tmp_path / "r").iterdir()) == []


def test_ab_with_a_list_naming_a_backend_twice_creates_nothing(tmp_path: Path,
                                                              fails: Callable[..., str]) -> None:
    line = fails("ab", ".", ".", "ycsb-a", "--in-process", "--backend", "heap,heap",
                 "--results-dir", str(tmp_path / "r"))
    assert "--backend: 'heap' given twice" in line
    assert not (tmp_path / "r").exists()


def test_diff_rerun_of_a_foreign_folder_creates_nothing(good_run: Path, tmp_path: Path,
                                                        fails: Callable[..., str]) -> None:
    """A comparison folder (several specs) passes as a run folder but cannot be re-run."""
    foreign = tmp_path / "compare-run"
    shutil.copytree(good_run, foreign)
    meta = json.loads((foreign / "run.json").read_text())
    meta["spec"] = [meta["spec"]]
    (foreign / "run.json").write_text(json.dumps(meta))
    line = fails("diff", str(good_run), str(foreign), "--rerun", "--rounds", "1",
                 "--results-dir", str(tmp_path / "r"))
    assert "cannot re-run" in line
    assert not (tmp_path / "r").exists() or list((tmp_path / "r").iterdir()) == []


# ------------------------------------------------------------------ processes and signals


def _with_tmpdir(tmp: Path) -> list[psutil.Process]:
    """Live processes whose environment says TMPDIR=tmp (ours and their descendants)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("TMPDIR") == str(tmp) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def _left_behind(tmp: Path) -> tuple[list[str], list[str]]:
    """(folders in tmp, processes of the test) after a short grace for exits in flight."""
    deadline = time.monotonic() + 15
    while _with_tmpdir(tmp) and time.monotonic() < deadline:
        time.sleep(0.2)
    procs = [" ".join(p.cmdline()[:3]) for p in _with_tmpdir(tmp)]
    for proc in _with_tmpdir(tmp):  # do not leave them to the next test either
        proc.kill()
    return sorted(p.name for p in tmp.iterdir()), procs


def _wait_for(tmp: Path, prefix: str, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not any(p.name.startswith(prefix) for p in tmp.iterdir()):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"no {prefix}* folder appeared"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_ab_alone_reaches_its_child(signum: int, status: int,
                                               tmp_path: Path) -> None:
    """Before: ab died and its child was killed (SIGKILL) or ran on; its folders stayed."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOT, "ab", ".", ".", "ycsb-a", "--in-process", "--rounds", "1",
         "--events", "2000000", "--backend", "rocksdb", "--strategy", "none",
         "--results-dir", str(tmp_path / "r")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)  # a signal to the group would not test forwarding
    try:
        _wait_for(tmp, "statebench-t", proc)  # the child run is in its hot loop
        proc.send_signal(signum)  # to ab alone
        proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == status
    folders, procs = _left_behind(tmp)
    assert folders == [] and procs == []
    assert not (tmp_path / "r").exists() or list((tmp_path / "r").iterdir()) == []


pytest.importorskip("pyspark")


@pytest.mark.slow
@pytest.mark.usefixtures("flink_lanes")
@pytest.mark.parametrize("interrupt", [False, True], ids=["success", "sigint"])
def test_a_spark_run_with_a_flink_lane_leaves_nothing(interrupt: bool, tmp_path: Path) -> None:
    """Before: two untagged statebench-flink-* folders per run, even on success; after SIGINT
    the CLI said "temporary folders removed" while executors' folders remained."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "STATEBENCH_FLINK_WARMUP_EVENTS": "0"}
    events = "3000000" if interrupt else "4000"
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOT, "run", "ycsb-a", "--master", "local[2]", "--events",
         events, "--backend", "flink-heap", "--strategy", "none", "--no-report",
         "--results-dir", str(tmp_path / "r")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        if interrupt:
            _wait_for(tmp, "statebench-flink-", proc)  # a Flink worker is running
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == (130 if interrupt else 0), err[-3000:]
    if interrupt:
        assert "temporary folders removed" in err
    folders, procs = _left_behind(tmp)
    assert [f for f in folders if f.startswith(("statebench-", ".statebench-"))] == []
    assert procs == []
