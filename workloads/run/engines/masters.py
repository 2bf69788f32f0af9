"""Spark master URLs: which forms are valid, and whether a standalone master answers at all.

Why before starting Spark: an invalid URL (``foo``) makes the JVM gateway exit with
``JAVA_GATEWAY_EXITED``, and an unreachable standalone master (``spark://nowhere:7077``) makes
Spark retry its registration for about a minute before stopping the context, after which the
only Python-visible error is "Cannot call methods on a stopped SparkContext". Both are checked
here in well under a second (a TCP connect to each master with a short timeout), and reported
as one :class:`~workloads.errors.InfrastructureError` with Spark's own wording of the cause
("All masters are unresponsive") and what to check.
"""

from __future__ import annotations

import re
import socket

from workloads.errors import InfrastructureError

#: Seconds to wait for a TCP connection to one standalone master.
CONNECT_TIMEOUT_S = 5.0

_LOCAL = re.compile(r"^local(\[(\*|[1-9]\d*)(,\s*[1-9]\d*)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]$")
_HOST_PORT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")
EXPECTED = "local, local[N], local[*], spark://HOST:PORT[,HOST:PORT...], yarn or k8s://HOST:PORT"


def standalone_masters(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a ``spark://`` URL (several for a ZooKeeper HA setup)."""
    rest = master[len("spark://"):]
    pairs: list[tuple[str, int]] = []
    for part in rest.split(","):
        match = _HOST_PORT.match(part.strip())
        if match is None or not 0 < int(match["port"]) < 65536:
            raise InfrastructureError(
                f"--master {master}: '{part}' is not HOST:PORT; expected spark://HOST:PORT "
                "(e.g. spark://127.0.0.1:7077)")
        pairs.append((match["host"].strip("[]"), int(match["port"])))
    return pairs


def check_master_url(master: str) -> None:
    """Refuse a master string Spark would not understand (one message, no JVM started)."""
    if _LOCAL.match(master) or _LOCAL_CLUSTER.match(master) or master == "yarn":
        return
    if master.startswith("spark://"):
        standalone_masters(master)
        return
    if master.startswith(("k8s://", "mesos://")) and len(master.split("://", 1)[1]) > 0:
        return
    raise InfrastructureError(f"--master {master!r}: not a Spark master URL; expected {EXPECTED}")


def check_master_reachable(master: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """For ``spark://``: at least one listed master accepts a TCP connection within
    ``timeout_s``, else the error Spark would give after a minute of retries, now."""
    if not master.startswith("spark://"):
        return
    causes: list[str] = []
    for host, port in standalone_masters(master):
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            causes.append(f"{host}:{port}: {reason}")
    raise InfrastructureError(
        f"--master {master}: All masters are unresponsive ({'; '.join(causes)}). Check the "
        "URL (host and port as the master's web UI shows them, default port 7077), that the "
        "master is running (sbin/start-master.sh) and that this machine can reach it")
