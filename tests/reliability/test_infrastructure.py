"""Issue 10, defect 4: an invalid or unreachable Spark master is one message with the cause
and what to check, fast; the full trace only with ``--verbose``. Only loopback is used: a
closed port on 127.0.0.1 stands for an unreachable master."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from workloads import cli
from workloads.errors import InfrastructureError
from workloads.run.engines.masters import check_master_reachable, check_master_url


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A loopback port that accepts connections but is no Spark master."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])


def test_unreachable_master_is_one_message_with_the_cause(tmp_path: Path,
                                                           fails: Callable[..., str]) -> None:
    master = f"spark://127.0.0.1:{_closed_port()}"
    line = fails("run", "ycsb-a", "--master", master, "--events", "10", "--results-dir",
                 str(tmp_path))
    assert line.startswith(f"statebench: error: --master {master}: All masters are "
                           "unresponsive (127.0.0.1:")
    assert "Connection refused" in line and "that the master is running" in line


@pytest.mark.parametrize("master", ["foo", "spark://", "spark://host", "spark://h:99999",
                                    "local[0]", "local[x]"])
def test_invalid_master_is_one_message(master: str, tmp_path: Path,
                                       fails: Callable[..., str]) -> None:
    line = fails("run", "ycsb-a", "--master", master, "--events", "10", "--results-dir",
                 str(tmp_path))
    assert line.startswith("statebench: error: --master ")
    assert "JAVA_GATEWAY_EXITED" not in line


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,2]",
                                    "local[2147483647]", "local-cluster[2, 1, 1024]", "yarn",
                                    "spark://127.0.0.1:7077", "spark://a:7077,b:7078",
                                    "k8s://https://127.0.0.1:6443", "k8s://127.0.0.1:6443",
                                    "k8s://http://[::1]:8080"])
def test_valid_master_urls_pass(master: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop/conf")  # yarn needs one (below)
    check_master_url(master)


def test_a_listening_port_counts_as_reachable(silent_listener: int) -> None:
    # what is left for Spark to judge (and get_session to report if it stops the context)
    check_master_reachable(f"spark://127.0.0.1:{silent_listener}")


def test_ha_master_list_is_unreachable_only_when_every_master_is() -> None:
    one, two = _closed_port(), _closed_port()
    with pytest.raises(InfrastructureError, match=rf"127.0.0.1:{one}: .*; 127.0.0.1:{two}: "):
        check_master_reachable(f"spark://127.0.0.1:{one},127.0.0.1:{two}")


def test_verbose_adds_the_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    master = f"spark://127.0.0.1:{_closed_port()}"
    argv = ["run", "ycsb-a", "--master", master, "--events", "10", "--results-dir",
            str(tmp_path)]
    assert cli.main([*argv, "--verbose"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "InfrastructureError" in err
    assert err.strip().splitlines()[-1].startswith("statebench: error: --master ")
    assert cli.main(["--verbose", *argv]) == 2  # before the command works too
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.slow
def test_a_port_that_is_no_master_fails_within_a_minute(silent_listener: int,
                                                        tmp_path: Path) -> None:
    """A port that accepts connections but never registers the application: Spark would retry
    for a minute and then stop the context; get_session gives up after its registration
    timeout with one message (slow: a real JVM waits that long). In a subprocess, so no
    session of this test process is reused."""
    import subprocess
    import sys

    from workloads.run.engines.spark_session import REGISTRATION_TIMEOUT_S

    master = f"spark://127.0.0.1:{silent_listener}"
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from workloads.cli import main; sys.exit(main())",
         "run", "ycsb-a", "--master", master, "--events", "10", "--results-dir",
         str(tmp_path)], capture_output=True, text=True, timeout=REGISTRATION_TIMEOUT_S + 60)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"statebench: error: --master {master}: All masters are "
                           f"unresponsive (no Spark master registered this application within "
                           f"{REGISTRATION_TIMEOUT_S:g} s")
    assert "Traceback" not in done.stderr
