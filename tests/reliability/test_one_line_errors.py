"""Issue 16 item 5: errors that used to be many lines (a struct.error, a Java stack, a Spark
task's PythonException, a master Spark rejects after starting its JVM) end in one line.

Each test runs the CLI in this process (``fails``: exit 2, one line on stderr, no traceback).
The Flink-lane ones need the flink extra and a JDK 17 and skip without them."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.reliability.conftest import GENERATED, SPEC_HEAD, need_flink_lanes, write_spec

TTL_SPEC = SPEC_HEAD + GENERATED + "[state]\nttl_ms = 100\n"


# ------------------------------------------------------------------------------------------------
# Numbers the Flink wire cannot carry
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("backend", "strategy", "words"), [
    ("flink-heap", "incremental(2147483648, false)", "cleanup_size must be in 1..2147483647"),
    ("flink-heap", "incremental(0, false)", None),  # statebench's own parser: >= 1
    ("flink-rocksdb", "compaction_filter(100000000000000000000000)",
     "query_time_after_num_entries must be in 0..9223372036854775807"),
    ("flink-rocksdb", "compaction_filter(1000, 315360000001)",
     "periodic_compaction_ms must be in 0..315360000000 ms"),
])
def test_a_lane_refuses_numbers_its_wire_cannot_carry(
        backend: str, strategy: str, words: str | None, tmp_path: Path,
        fails: Callable[..., str]) -> None:
    need_flink_lanes()
    spec = write_spec(tmp_path, TTL_SPEC)
    line = fails("run", str(spec), "--in-process", "--backend", backend, "--strategy", strategy,
                 "--results-dir", str(tmp_path / "r"))
    if words is not None:
        assert words in line and backend in line, line
    assert not (tmp_path / "r").exists()  # before any work


def test_statebench_own_heap_keeps_its_larger_incremental_sizes() -> None:
    from workloads.limits import flink_lane_problem

    assert flink_lane_problem("flink-heap", "incremental(2147483647, true)") is None
    assert flink_lane_problem("flink-rocksdb", "compaction_filter(0, 0)") is None
    assert "cleanup_size" in (flink_lane_problem("flink-heap", "incremental(2147483648)") or "")


# ------------------------------------------------------------------------------------------------
# Checkpoint targets the lanes cannot write
# ------------------------------------------------------------------------------------------------


def test_a_lane_refuses_a_checkpoint_uri_up_front(tmp_path: Path,
                                                  fails: Callable[..., str]) -> None:
    need_flink_lanes()
    spec = write_spec(tmp_path, TTL_SPEC)
    line = fails("run", str(spec), "--in-process", "--backend", "heap,flink-heap",
                 "--checkpoint-dir", "mock:///ck", "--results-dir", str(tmp_path / "r"))
    assert "--checkpoint-dir mock:///ck" in line and "local" in line
    assert not (tmp_path / "r").exists()


CHECKPOINTING = """name = "ck"
[keys]
count = 1000
distribution = "uniform"
[operations]
value_get = 0.5
value_update = 0.5
[time]
rate = 1000
events = 20000
[state]
ttl_ms = 1000
[checkpoints]
interval_ms = 500
"""


def _chattr(flag: str, root: Path) -> bool:
    ok = True
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        done = subprocess.run(["chattr", flag, str(folder)], capture_output=True)
        ok = ok and done.returncode == 0
    return ok


def test_a_checkpoint_folder_made_unwritable_mid_run_is_one_line(
        tmp_path: Path, fails: Callable[..., str]) -> None:
    """Root ignores permissions, so the run's checkpoint folders are made immutable
    (``chattr +i``) once the run has made them; an event-time spec, not a paced one."""
    need_flink_lanes()
    if shutil.which("chattr") is None:
        pytest.skip("needs chattr to make a folder unwritable for root")
    probe = tmp_path / "probe"
    probe.mkdir()
    if not _chattr("+i", probe):
        pytest.skip("this filesystem or user cannot make a folder immutable (chattr +i)")
    _chattr("-i", probe)
    spec = write_spec(tmp_path, CHECKPOINTING)
    checkpoints = tmp_path / "ck"
    checkpoints.mkdir()
    stop = threading.Event()

    def freeze() -> None:
        while not stop.is_set():
            runs = [p for p in checkpoints.iterdir() if p.is_dir()]
            if runs:
                _chattr("+i", runs[0])
                return
            time.sleep(0.02)

    freezer = threading.Thread(target=freeze, daemon=True)
    freezer.start()
    try:
        line = fails("run", str(spec), "--in-process", "--backend", "flink-rocksdb",
                     "--strategy", "none", "--checkpoint-dir", str(checkpoints),
                     "--results-dir", str(tmp_path / "r"))
    finally:
        stop.set()
        freezer.join()
        _chattr("-i", checkpoints)
    assert f"could not write into {checkpoints}/" in line, line
    assert "Operation not permitted" in line


# ------------------------------------------------------------------------------------------------
# Spark masters: refused before a JVM starts (it printed 12-306 lines of Java stack)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("master", "words"), [
    ("yarn", "neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set"),
    ("mesos://127.0.0.1:5050", "Spark 4 no longer supports Mesos"),
    ("k8s://cluster", "expected k8s://HOST:PORT or k8s://https://HOST:PORT"),
    ("k8s://https://cluster/api", "expected k8s://HOST:PORT"),
    ("local[99999999999]", "Java int, at most 2147483647"),
    ("local[2,99999999999]", "Java int, at most 2147483647"),
])
@pytest.mark.parametrize("command", ["run", "compare"])
def test_a_master_spark_cannot_start_with_is_one_line(
        command: str, master: str, words: str, tmp_path: Path, fails: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    spec = write_spec(tmp_path, TTL_SPEC)
    line = fails(command, str(spec), "--backend", "heap", "--master", master,
                 "--results-dir", str(tmp_path / "r"))
    assert line.startswith(f"statebench: error: --master {master}") and words in line, line
    assert not (tmp_path / "r").exists()


def test_an_unreachable_kubernetes_api_server_is_one_line(tmp_path: Path,
                                                          fails: Callable[..., str]) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = write_spec(tmp_path, TTL_SPEC)
    line = fails("run", str(spec), "--backend", "heap", "--master",
                 f"k8s://https://127.0.0.1:{port}", "--results-dir", str(tmp_path / "r"))
    assert "Kubernetes API server does not answer" in line and "Connection refused" in line


def test_compare_refuses_a_master_with_in_process(tmp_path: Path,
                                                  fails: Callable[..., str]) -> None:
    spec = write_spec(tmp_path, TTL_SPEC)
    line = fails("compare", str(spec), "--backend", "heap", "--in-process", "--master",
                 "local[2]", "--results-dir", str(tmp_path / "r"))
    assert "--in-process and --master exclude each other" in line
