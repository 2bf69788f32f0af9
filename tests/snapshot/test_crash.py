"""Crash safety: kill -9 real processes while they write checkpoints; the newest complete
checkpoint always restores exactly, interrupted ones are ignored and cleaned up."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

import backends as B
from backends.snapshot.fsio import Location
from backends.snapshot.latest import checkpoint_dirs, clean_up_incomplete
from backends.snapshot.metadata import is_complete
from tests.snapshot.crash_child import dump, expected

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = [("heap", "full"), ("rocksdb", "full"), ("rocksdb", "incremental")]
RUNS_PER_CONFIG = 8  # 24 kill -9 runs in all


def _run_and_kill(kind: str, mode: str, target: Path, workdir: Path, rounds: int,
                  delay: float) -> int:
    """Start a child; once it committed `rounds` checkpoints, kill -9 it `delay` s after it
    starts writing the next one. Returns the last commit it reported."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.snapshot.crash_child", kind, mode, str(target),
         str(workdir)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    committed, lines = 0, []
    while True:
        line = child.stdout.readline()
        assert line, child.stderr.read() if child.poll() is not None else "child stopped"
        lines.append(line)
        if line.startswith("committed"):
            committed += 1
        elif line.startswith("writing") and committed >= rounds:
            break
    time.sleep(delay)
    child.kill()  # SIGKILL: no cleanup, no flush, wherever the write is
    out, _ = child.communicate()
    lines += out.splitlines()
    reported = [int(line.split()[1]) for line in lines if line.startswith("committed")]
    return max(reported)


@pytest.mark.slow
@pytest.mark.parametrize("kind,mode", CONFIGS)
def test_kill_minus_9_while_checkpointing(kind, mode, tmp_path):
    rnd = random.Random(f"{kind}-{mode}")
    target, workdir = tmp_path / "checkpoints", tmp_path / "work"
    clock = B.ManualClock(0)
    interrupted_seen = 0
    for run in range(RUNS_PER_CONFIG):
        reported = _run_and_kill(kind, mode, target, workdir, rnd.randrange(1, 4),
                                 rnd.uniform(0.0, 0.04))
        dirs = checkpoint_dirs(Location.parse(target))
        interrupted_seen += sum(not is_complete(loc) for _, loc in dirs)
        latest = B.latest_checkpoint(target)
        assert latest is not None
        # the child may have committed one more than it managed to print
        assert reported <= latest.checkpoint_id <= reported + 1, (run, reported, latest)
        restored = B.restore_backend(kind, [latest], clock=clock, path=tmp_path / f"r{run}")
        assert dump(restored) == expected(latest.checkpoint_id)  # nothing lost
        restored.close()
    assert interrupted_seen > 0  # some kills did land in the middle of a checkpoint
    clean_up_incomplete(target)
    assert all(is_complete(loc) for _, loc in checkpoint_dirs(Location.parse(target)))
