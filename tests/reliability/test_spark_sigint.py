"""Issue 16 item 5: a SIGINT during a Spark compare exited 130 and cleaned up, but printed a
50-line py4j traceback first (py4j logs "KeyboardInterrupt while sending command" to the root
logger). Now: exit 130, the CLI's one line, no Python traceback, nothing left behind. Issue 31:
SIGTERM too (exit 143): an error the signal caused inside Spark's collect no longer replaces
it (``workloads.cli.lifecycle.signal_cause``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import PROGRESS
from tests.reliability.test_children import _BOOT, _left_behind, _wait_for

pytest.importorskip("pyspark")

LONG = """name = "long"
[keys]
count = 10000
distribution = "uniform"
[operations]
value_get = 0.5
value_update = 0.5
[time]
rate = 10000
events = 3000000
[state]
ttl_ms = 1000
"""


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "status", "said"), [
    (signal.SIGINT, 130, "interrupted"),
    # issue 31: SIGTERM while Spark collected a job's results printed 184 lines and exited 1
    (signal.SIGTERM, 143, "terminated")], ids=["sigint", "sigterm"])
def test_a_signal_during_a_spark_compare_is_one_line(signum: int, status: int, said: str,
                                                     tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    spec = tmp_path / "long.toml"
    spec.write_text(LONG)
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOT, "compare", str(spec), "--master", "local[2]",
         "--backend", "heap", "--repetitions", "1", "--results-dir", str(tmp_path / "r")],
        env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    try:
        _wait_for(tmp, "statebench-", proc)  # the job's tasks have started
        time.sleep(2)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == status, err[-3000:]
    assert "Traceback" not in err and "py4j" not in err, err[-3000:]
    ours = [line for line in err.splitlines()  # not the progress lines (issue 42: the ETA
            if line.startswith("statebench") and not PROGRESS.match(line)]  # while Spark starts)
    assert ours == [f"statebench: error: {said}; temporary folders removed"], err[-3000:]
    folders, procs = _left_behind(tmp)
    assert [f for f in folders if f.startswith(("statebench-", ".statebench-"))] == []
    assert procs == []
