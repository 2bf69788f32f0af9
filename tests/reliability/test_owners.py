"""Issue 16, item 4: a sweep tells a dead owner from an invisible one.

A run in another PID namespace (another container sharing the temp dir) has PIDs that mean
nothing here; its folders must survive our sweep while it lives, and go once it is dead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workloads.run import run_tempdirs

_HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _holder(folder: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(folder)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _age(folder: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(folder, (old, old))


def test_a_held_lock_keeps_a_folder_whose_pid_looks_dead(tmp_path: Path) -> None:
    """The owner's PID is not visible here (another namespace, or a reused number), but it
    holds the folder's lock: it is alive, the sweep leaves it."""
    folder = tmp_path / f"statebench-t0-pid{_dead_pid()}.{int(time.time())}_abc"
    folder.mkdir()
    (folder / "LOCK").write_text("rocksdb")
    holder = _holder(folder)
    try:
        assert run_tempdirs.sweep([tmp_path]) == []
        assert (folder / "LOCK").is_file()
    finally:
        holder.kill()
        holder.wait()
    assert run_tempdirs.sweep([tmp_path]) == [str(folder)]  # the lock went with its owner


def test_another_namespace_unlocked_is_swept_only_after_the_grace(tmp_path: Path) -> None:
    other_ns = run_tempdirs.pid_namespace() + 1
    folder = tmp_path / f"statebench-t0-pid1.{int(time.time())}.n{other_ns}_abc"
    folder.mkdir()
    assert run_tempdirs.sweep([tmp_path]) == []  # could be between its mkdir and its flock
    _age(folder, run_tempdirs.GRACE_S + 5)
    assert run_tempdirs.sweep([tmp_path]) == [str(folder)]


def test_another_namespace_locked_is_kept_however_old(tmp_path: Path) -> None:
    folder = tmp_path / f"statebench-t0-pid1.1.n{run_tempdirs.pid_namespace() + 1}_abc"
    folder.mkdir()
    _age(folder, 3600)
    holder = _holder(folder)
    try:
        assert run_tempdirs.sweep([tmp_path]) == []
    finally:
        holder.kill()
        holder.wait()


def test_our_own_folders_hold_their_lock(tmp_path: Path) -> None:
    path = Path(run_tempdirs.make("statebench-t1-", dir=tmp_path))
    code = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
            "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)")
    taken = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True)
    assert taken.returncode != 0 and b"BlockingIOError" in taken.stderr
    run_tempdirs.remove(path)
    assert not path.exists()


def _unshare() -> list[str]:
    tool = shutil.which("unshare")
    if tool is None or os.geteuid() != 0:
        return []
    probe = subprocess.run([tool, "--pid", "--fork", "--mount-proc", "true"],
                           capture_output=True)
    flags = ["--pid", "--fork", "--mount-proc", "--kill-child"]
    return [tool, *flags] if probe.returncode == 0 else []


_OWNER = """
import sys, time
from workloads.run import run_tempdirs
path = run_tempdirs.make("statebench-t7-", dir=sys.argv[1])
open(path + "/CURRENT", "w").write("MANIFEST-000001")
print(path, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not _unshare(), reason="needs root and unshare(1) for a PID namespace")
def test_a_live_run_in_another_pid_namespace_keeps_its_folders(tmp_path: Path) -> None:
    """The reproduction: a real owner in its own PID namespace (it is PID 1 there, which here
    is init, started long before); our sweep must not delete its live folder."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    owner = subprocess.Popen([*_unshare(), sys.executable, "-c", _OWNER, str(tmp_path)],
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert owner.stdout is not None
        path = Path(owner.stdout.readline().strip())
        assert path.parent == tmp_path and path.name.startswith("statebench-t7-pid1.")
        _age(path, 3600)
        assert run_tempdirs.sweep([tmp_path]) == []
        assert (path / "CURRENT").is_file()
    finally:
        owner.kill()  # unshare's child, PID 1 of its namespace, dies with it
        owner.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not run_tempdirs.sweep([tmp_path]):
        time.sleep(0.1)
    assert not path.exists()


def test_a_folder_a_late_writer_made_again_is_removed_again(tmp_path: Path) -> None:
    """A cancelled Spark task's makedirs recreates the checkpoint root after the driver removed
    it; the end of the command removes it again (its name is unique: nobody else's)."""
    path = Path(run_tempdirs.make("statebench-checkpoints-", dir=tmp_path))
    run_tempdirs.remove(path)
    (path / "run" / "task-00000").mkdir(parents=True)  # the late writer
    assert run_tempdirs.retry_removals() == []
    assert not path.exists()
