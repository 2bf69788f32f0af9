"""Issue 10, defect 5: temporary folders go on normal exit, on exceptions, on SIGTERM and
SIGINT (a real subprocess gets the signal), and stale ones of killed runs are swept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from workloads.run import run_tempdirs

_BOOT = "import sys; from workloads.cli import main; sys.exit(main())"


def _ours(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("statebench-"))


def test_folder_names_carry_their_owner(tmp_path: Path) -> None:
    path = run_tempdirs.make("statebench-t3-", dir=tmp_path)
    start = int(psutil.Process().create_time())
    ns = os.stat("/proc/self/ns/pid").st_ino
    assert Path(path).name.startswith(f"statebench-t3-pid{os.getpid()}.{start}.n{ns}_")
    assert path in run_tempdirs.live() and not run_tempdirs.stale(Path(path).name)
    run_tempdirs.remove(path)
    assert not Path(path).exists() and path not in run_tempdirs.live()


def test_prefix_must_be_ours(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must start with 'statebench-'"):
        run_tempdirs.make("other-", dir=tmp_path)


def test_removed_on_an_exception(tmp_path: Path) -> None:
    with (pytest.raises(RuntimeError, match="boom"),
          run_tempdirs.temp_dir("statebench-checkpoints-", dir=tmp_path) as path):
        (Path(path) / "chk-1").mkdir()
        raise RuntimeError("boom")
    assert _ours(tmp_path) == []


def test_removed_at_normal_exit_of_a_process(tmp_path: Path) -> None:
    code = ("import sys; from workloads.run import run_tempdirs; "
            "run_tempdirs.make('statebench-restore-', dir=sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    assert _ours(tmp_path) == []


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_sweep_removes_dead_owners_and_reused_pids_only(tmp_path: Path) -> None:
    me = int(psutil.Process().create_time())
    dead = tmp_path / f"statebench-t0-pid{_dead_pid()}.{me}_abc"
    reused = tmp_path / f"statebench-restore-pid{os.getpid()}.{me - 3600}_abc"  # older owner
    alive = Path(run_tempdirs.make("statebench-checkpoints-", dir=tmp_path))
    foreign = tmp_path / "statebench-rocksdb-untagged"
    other = tmp_path / "something-pid1.1_x"
    for folder in (dead, reused, foreign, other):
        folder.mkdir()
        (folder / "data").write_text("x")
    link = tmp_path / f"statebench-t1-pid{_dead_pid()}.{me}_link"
    link.symlink_to(foreign)
    removed = run_tempdirs.sweep([tmp_path])
    assert sorted(removed) == sorted([str(dead), str(reused)])
    assert alive.is_dir() and foreign.is_dir() and other.is_dir() and link.is_symlink()
    run_tempdirs.remove(alive)


def test_a_run_sweeps_what_killed_runs_left(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    stale = tmp / f"statebench-checkpoints-pid{_dead_pid()}.{int(time.time())}_x"
    stale.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    subprocess.run([sys.executable, "-c", _BOOT, "run", "ycsb-a", "--in-process", "--events",
                    "100", "--backend", "heap", "--strategy", "none", "--no-report",
                    "--results-dir", str(tmp_path / "r")], env=env, check=True,
                   capture_output=True)
    assert _ours(tmp) == []


def _started_run(tmp: Path, results: Path) -> subprocess.Popen[bytes]:
    """A long in-process run whose temp folders live in ``tmp``; returned once a task's
    local folder exists (the run is inside its hot loop)."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOT, "run", "ycsb-a", "--in-process", "--events", "2000000",
         "--backend", "rocksdb", "--strategy", "none", "--no-report",
         "--results-dir", str(results)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not any(n.startswith("statebench-t") for n in _ours(tmp)):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        assert time.monotonic() < deadline, "the run never made its task folder"
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_removes_temporary_folders(signum: int, status: int, tmp_path: Path) -> None:
    tmp, results = tmp_path / "tmp", tmp_path / "results"
    tmp.mkdir()
    proc = _started_run(tmp, results)
    assert any(n.startswith("statebench-checkpoints-") for n in _ours(tmp))
    proc.send_signal(signum)
    try:
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status
    assert _ours(tmp) == []
    assert not results.exists() or list(results.iterdir()) == []  # nothing half-written
