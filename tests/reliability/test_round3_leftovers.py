"""Issue 31, category 3 (signals, orphans and leftovers).

* SIGTERM while Spark collected a job's results printed 184 lines and exited 1: the collect's
  clean-up failed with a Java stack while handling the signal's exit, and that error replaced
  it. An error a signal caused now leaves as the signal: exit 143, one line.
* ``kill -9`` of statebench during a flink-sql job left the SQL job's JVM running, and its
  events folder had no owner tag, so no later start-up swept it.
* ``--checkpoint-dir file:///abs`` on flink-sql wrote into ``./file:/abs/...``; its
  checkpoints carried no run id (two runs shared folders) and stayed as empty folders.
* A FIFO named ``_metadata`` in a checkpoint folder blocked ``backends.latest_checkpoint``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from workloads.cli.lifecycle import command_scope
from workloads.lanes.flink_sql_job import prune_empty
from workloads.run import run_tempdirs
from workloads.run.checkpoints import job_checkpoint_dir, local_checkpoint_root
from workloads.run.config import OperatorConfig


def test_an_error_raised_while_sigterm_unwinds_leaves_as_sigterm() -> None:
    """As pyspark's collect does: its ``finally`` joins the JVM's serving thread, which fails
    once the signal broke the socket off; that error must not replace the signal."""
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for sig in previous:
        signal.signal(sig, signal.SIG_DFL if sig == signal.SIGTERM else signal.default_int_handler)
    try:
        assert run_tempdirs.install_signal_handlers()
        with pytest.raises(SystemExit) as exc, command_scope():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler raises here
            finally:
                raise RuntimeError("py4j: An error occurred while calling o123.getResult")
        assert exc.value.code == 143
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def test_the_cli_says_terminated_in_one_line(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from workloads.cli import main; sys.exit(main())",
         "run", "ycsb-a", "--in-process", "--events", "5000000", "--backend", "heap",
         "--strategy", "none", "--no-report", "--results-dir", str(tmp_path / "r")],
        env={**os.environ, "TMPDIR": str(tmp_path)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not any(p.name.startswith("statebench-t") for p in tmp_path.iterdir()):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143
    last = err.strip().splitlines()[-1]
    assert last == "statebench: error: terminated; temporary folders removed"
    assert "Traceback" not in err
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("statebench-")] == []


def _op_cfg(run_id: str) -> OperatorConfig:
    return OperatorConfig(run_id=run_id, workload="w", backend="flink-sql", strategy="none",
                          value_type="long", state_types=(), ttl_ms=None,
                          update_type="OnCreateAndWrite", visibility="NeverReturnExpired",
                          time_characteristic="EventTime", start_ms=0, end_ms=1_000,
                          sample_interval_ms=100, repetition=1)


def test_flink_sql_checkpoints_go_under_the_run_id_and_a_file_uri_is_its_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "ck"
    a = job_checkpoint_dir(_op_cfg("run-a"), f"file://{root}", tmp_path / "work",
                           "flink-sql")
    b = job_checkpoint_dir(_op_cfg("run-b"), str(root), tmp_path / "work", "flink-sql")
    assert a.is_absolute() and a.is_relative_to(root) and b.is_relative_to(root)
    assert a != b and "run-a" in a.parts and "run-b" in b.parts
    assert local_checkpoint_root("file:///") == Path("/")
    with pytest.raises(ValueError, match="local files"):
        local_checkpoint_root("s3://bucket/x")
    # what Flink leaves of a finished job's checkpoints: empty folders, removed up to the root
    (a / "0f3e" / "shared").mkdir(parents=True)
    (a / "0f3e" / "taskowned").mkdir()
    other = root / "run-a" / "another-lane"
    other.mkdir(parents=True)
    (other / "chk-1").write_text("kept")
    prune_empty([a], root)
    assert not a.exists() and (other / "chk-1").exists() and root.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # nothing like ./file:


def test_a_fifo_named_metadata_does_not_block_latest_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "chk-3").mkdir()
    os.mkfifo(tmp_path / "chk-3" / "_metadata")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, backends; "
         "print(backends.latest_checkpoint(sys.argv[1]))", str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "None"
    assert "not a regular file" in proc.stderr


def _sql_jvms(tmp: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if (proc.environ().get("TMPDIR") == str(tmp)
                    and "statebench.flink.sql.SqlJob" in proc.cmdline()
                    and proc.status() != psutil.STATUS_ZOMBIE):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.mark.usefixtures("flink_sql_job")
def test_kill_9_during_a_flink_sql_job_leaves_no_jvm_and_folders_a_sweep_removes(
        tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from workloads.cli import main; sys.exit(main())",
         "run", "nexmark-q18-dedup", "--in-process", "--backend", "flink-sql", "--strategy",
         "compaction_filter", "--events", "20000", "--time-speedup", "0.05", "--no-report",
         "--results-dir", str(tmp_path / "r")],
        env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not _sql_jvms(tmp):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        proc.kill()  # kill -9 of statebench alone
        proc.wait()
        deadline = time.monotonic() + 20
        while _sql_jvms(tmp) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _sql_jvms(tmp)
        for jvm in left:
            jvm.kill()
        assert left == []
        run_tempdirs.sweep([tmp])  # what the next start-up does
        assert sorted(p.name for p in tmp.iterdir() if "statebench" in p.name) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
