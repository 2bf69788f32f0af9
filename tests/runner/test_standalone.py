"""A real Spark standalone cluster on 127.0.0.1 (master + one worker started from the
pip-installed pyspark) runs a workload through ``--master spark://...`` with the same
deterministic numbers as a ``local[2]`` run. Both runs are subprocesses, so their SparkSessions
do not meet any other test's; the cluster is always stopped, and nothing it opens may listen
beyond loopback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest

from tests.runner.conftest import deterministic

pytestmark = [pytest.mark.slow, pytest.mark.spark]
LOOPBACK = "127.0.0.1"
REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _spark_env(tmp: Path) -> dict[str, str]:
    import pyspark

    env = dict(os.environ)
    env.update(
        SPARK_HOME=os.path.dirname(pyspark.__file__),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_PID_DIR=str(tmp / "pids"),
        # no REST submission server: one listener fewer
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        PYSPARK_PYTHON=sys.executable,
    )
    return env


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[1:3]} exited early:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"no '{text}' in {log} after {timeout} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # the group of the process this test started
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _listen_addresses(proc: subprocess.Popen) -> set[str]:
    root = psutil.Process(proc.pid)
    addrs = set()
    for p in [root, *root.children(recursive=True)]:
        for conn in p.net_connections(kind="inet"):
            if conn.status == psutil.CONN_LISTEN:
                addrs.add(conn.laddr.ip)
    return addrs


@contextmanager
def standalone_cluster(tmp: Path) -> Iterator[str]:
    env = _spark_env(tmp)
    spark_class = os.path.join(env["SPARK_HOME"], "bin", "spark-class")
    port = _free_port()
    url = f"spark://{LOOPBACK}:{port}"
    procs: list[subprocess.Popen] = []
    try:
        master = _start([spark_class, "org.apache.spark.deploy.master.Master",
                         "--host", LOOPBACK, "--port", str(port),
                         "--webui-port", str(_free_port())], env, tmp / "master.log")
        procs.append(master)
        _wait_for(tmp / "master.log", "I have been elected leader", master)
        worker = _start([spark_class, "org.apache.spark.deploy.worker.Worker", url,
                         "--host", LOOPBACK, "--webui-port", str(_free_port()),
                         "--cores", "2", "--memory", "2g", "--work-dir", str(tmp / "work")],
                        env, tmp / "worker.log")
        procs.append(worker)
        _wait_for(tmp / "worker.log", "Successfully registered with master", worker)
        yield url
        for proc in procs:
            listening = _listen_addresses(proc)
            assert listening <= {LOOPBACK, f"::ffff:{LOOPBACK}"}, listening
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _cli_run(master: str, results: Path, env: dict[str, str]) -> Path:
    argv = [sys.executable, "-m", "workloads.cli", "run", "ycsb-a", "--events", "30000",
            "--master", master, "--backend", "heap,rocksdb", "--strategy", "none,timer",
            "--results-dir", str(results), "--no-report"]
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    (run_dir,) = list(results.iterdir())
    return run_dir


def test_standalone_cluster_matches_local_run(tmp_path: Path) -> None:
    env = _spark_env(tmp_path)
    with standalone_cluster(tmp_path) as url:
        on_cluster = _cli_run(url, tmp_path / "cluster", env)
    local = _cli_run("local[2]", tmp_path / "local", env)
    a = pq.read_table(on_cluster / "rows.parquet")
    b = pq.read_table(local / "rows.parquet")
    assert deterministic(a) == deterministic(b)
    assert len(deterministic(a)) > 100
    assert url in (on_cluster / "run.json").read_text()
