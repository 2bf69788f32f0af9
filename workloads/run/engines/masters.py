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

import os
import re
import socket

from workloads.errors import InfrastructureError

#: Seconds to wait for a TCP connection to one standalone master.
CONNECT_TIMEOUT_S = 5.0

_LOCAL = re.compile(r"^local(\[(\*|(?P<threads>[1-9]\d*))(,\s*(?P<failures>[1-9]\d*))?\])?$")
_LOCAL_CLUSTER = re.compile(
    r"^local-cluster\[\s*(?P<a>\d+)\s*,\s*(?P<b>\d+)\s*,\s*(?P<c>\d+)\s*\]$")
_HOST_PORT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")
#: Spark's form of a Kubernetes master: k8s://HOST:PORT, with an optional http(s):// scheme of
#: the API server (https when none), the port always given (Spark's running-on-kubernetes doc).
_K8S = re.compile(r"^k8s://(?P<scheme>https?://)?(?P<hostport>[^/]+)/?$")
EXPECTED = ("local, local[N], local[*], spark://HOST:PORT[,HOST:PORT...], yarn or "
            "k8s://[https://]HOST:PORT")
#: Spark's thread and failure counts are Java ints.
MAX_JAVA_INT = 2**31 - 1


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


def k8s_api_server(master: str) -> tuple[str, int]:
    """The (host, port) of a ``k8s://`` master's API server, or one error saying the form."""
    match = _K8S.match(master)
    hostport = _HOST_PORT.match(match["hostport"]) if match is not None else None
    if hostport is None or not 0 < int(hostport["port"]) < 65536:
        raise InfrastructureError(
            f"--master {master}: expected k8s://HOST:PORT or k8s://https://HOST:PORT, the "
            "Kubernetes API server with its port (e.g. k8s://https://127.0.0.1:6443)")
    return hostport["host"].strip("[]"), int(hostport["port"])


def _check_java_ints(master: str, *counts: str | None) -> None:
    for count in counts:
        if count is not None and int(count) > MAX_JAVA_INT:
            raise InfrastructureError(
                f"--master {master}: {count} does not fit Spark's thread/failure counts "
                f"(Java int, at most {MAX_JAVA_INT}); e.g. local[4] or local[*]")


def check_master_url(master: str) -> None:
    """Refuse a master string Spark would not understand, or one this Spark cannot start with
    (one message, no JVM started): counts beyond a Java int, Mesos (removed in Spark 4), yarn
    without a Hadoop configuration, a malformed k8s:// URL."""
    local = _LOCAL.match(master)
    if local is not None:
        _check_java_ints(master, local["threads"], local["failures"])
        return
    cluster = _LOCAL_CLUSTER.match(master)
    if cluster is not None:
        _check_java_ints(master, cluster["a"], cluster["b"], cluster["c"])
        return
    if master == "yarn":
        if not (os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")):
            raise InfrastructureError(
                "--master yarn: neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set; Spark finds "
                "the YARN ResourceManager through the Hadoop configuration in one of them "
                "(export HADOOP_CONF_DIR=/etc/hadoop/conf)")
        return
    if master.startswith("spark://"):
        standalone_masters(master)
        return
    if master.startswith("mesos://"):
        raise InfrastructureError(
            f"--master {master}: Spark 4 no longer supports Mesos (removed in Spark 4.0); "
            f"use one of {EXPECTED}")
    if master.startswith("k8s://"):
        k8s_api_server(master)
        return
    raise InfrastructureError(f"--master {master!r}: not a Spark master URL; expected {EXPECTED}")


def check_master_reachable(master: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """For ``spark://``: at least one listed master accepts a TCP connection within
    ``timeout_s``, else the error Spark would give after a minute of retries, now. For
    ``k8s://``: the API server accepts one (else Spark prints 300 lines of its client's
    retries before the same cause)."""
    if master.startswith("k8s://"):
        servers = [k8s_api_server(master)]
    elif master.startswith("spark://"):
        servers = standalone_masters(master)
    else:
        return
    causes: list[str] = []
    for host, port in servers:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            causes.append(f"{host}:{port}: {reason}")
    if master.startswith("k8s://"):
        raise InfrastructureError(
            f"--master {master}: the Kubernetes API server does not answer ({causes[0]}). "
            "Check the URL (`kubectl cluster-info` shows it) and that this machine can reach it")
    raise InfrastructureError(
        f"--master {master}: All masters are unresponsive ({'; '.join(causes)}). Check the "
        "URL (host and port as the master's web UI shows them, default port 7077), that the "
        "master is running (sbin/start-master.sh) and that this machine can reach it")
