"""This process's one SparkSession: how statebench starts it (loopback only, this Python, no
UI) and the one-line errors when it cannot.

Why a module of its own: the Spark engine (``workloads.run.engines.spark``) and Spark's lanes
(``workloads.lanes.spark_*``) share the session, and the lanes are imported by the planner the
engine imports; the session needs neither.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
LOOPBACK = "127.0.0.1"


class SparkGoneError(RuntimeError):
    """This process's Spark JVM, or its context, ended after it started (it ran out of
    memory, or was killed) and no new one can start here: not the environment's fault (Spark
    did start), but the end of every later Spark job of the run, each of which says so
    (``workloads.run.job_errors``: a job's failure, not a reason to stop the run's other
    lanes)."""




def loopback_environment() -> None:
    """Environment for everything Spark starts from this process: loopback only, this Python."""
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


def session_conf(shuffle_partitions: int = 2) -> dict[str, str]:
    """The SparkSession settings statebench needs (see the module docstring)."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.bindAddress": LOOPBACK,
        "spark.driver.host": LOOPBACK,
        "spark.executorEnv.SPARK_LOCAL_IP": LOOPBACK,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        # AQE would coalesce the P shuffle partitions and put several tasks in one Spark task
        "spark.sql.adaptive.enabled": "false",
        "spark.speculation": "false",
    }


def launched_by_spark_submit() -> bool:
    """True inside ``spark-submit``: its JVM is already up and owns the master setting."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_session(master: str | None = None, app_name: str = "statebench") -> SparkSession:
    """This process's SparkSession (created on first use; later calls return the same one).

    ``master`` None: spark-submit's master when launched by it, else ``local[*]``. A master
    that is not a valid URL or does not answer, or a JVM that will not start, is one
    :class:`~workloads.errors.InfrastructureError` naming the cause (see ``masters.py``)."""
    from workloads.errors import InfrastructureError
    from workloads.run.engines.masters import check_master_reachable, check_master_url

    if master is not None:
        check_master_url(master)
        check_master_reachable(master)
    loopback_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None or not launched_by_spark_submit():
        builder = builder.master(master or DEFAULT_MASTER)
    for key, value in session_conf().items():
        builder = builder.config(key, value)
    shown = master or DEFAULT_MASTER
    from pyspark import SparkContext

    had = SparkContext._active_spark_context is not None  # a session of this process before
    try:
        if shown.startswith("spark://"):
            spark = _create_within(builder, REGISTRATION_TIMEOUT_S, shown)
        else:
            spark = builder.getOrCreate()
        stopped = bool(spark.sparkContext._jsc.sc().isStopped())
    except InfrastructureError:
        raise
    except Exception as exc:  # JAVA_GATEWAY_EXITED, Py4JJavaError, a context stopped while made
        if had and _link_broken(exc):  # it started once: it died since, it is not unreachable
            raise SparkGoneError(
                "Spark's JVM is gone: it ended during an earlier job of this run (out of memory, "
                "or killed), and a new one cannot start in this process") from exc
        text = str(exc).strip()
        if "stopped SparkContext" in text:
            cause = f"All masters are unresponsive (Spark could not register with {shown})"
        else:
            cause = text.splitlines()[0] if text else type(exc).__name__
        raise InfrastructureError(
            f"could not start Spark with master {shown}: {cause}. Check the --master URL, that "
            "the master is running and reachable, and that Java is installed (JAVA_HOME)"
        ) from exc
    if stopped and had:  # it ran earlier jobs of this process: Spark stopped it since
        raise SparkGoneError(
            "Spark's context is gone: Spark stopped it during an earlier job of this run (out "
            "of memory, or killed), and a new one cannot start in this process")
    if stopped:
        raise InfrastructureError(
            f"could not start Spark with master {shown}: All masters are unresponsive (the "
            "context stopped right after it started). Check the --master URL and that the "
            "master is running and reachable")
    # FATAL, not ERROR: a failed task's error reaches the driver as an exception (made one line
    # by driver_error); Spark's ERROR log of the same task printed it again, 30-140 lines
    spark.sparkContext.setLogLevel("FATAL")
    _quiet_accumulator_server(spark)
    return spark


def _quiet_accumulator_server(spark: SparkSession) -> None:
    """pyspark's accumulator server (a socket server of this process) printed a 20-line
    traceback ("Exception occurred during processing of request ... EOFError") when Spark's
    JVM went away mid-job; the job's own error says that in one line. Other errors of the
    server are still printed."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is None or getattr(server, "statebench_quiet", False):
        return
    loud = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], EOFError | ConnectionError):  # the JVM went away
            return
        loud(request, client_address)

    server.handle_error = handle_error
    server.statebench_quiet = True


def _link_broken(exc: BaseException) -> bool:
    """Whether ``exc`` is py4j losing its JVM (a refused or broken connection)."""
    return isinstance(exc, ConnectionError) or type(exc).__name__ == "Py4JNetworkError"


#: Seconds a standalone master gets to register the application. Spark's own retries take about
#: a minute (3 x 20 s, not configurable) before it stops the context; a master that has not
#: answered by then will not, and the user hears so within a minute of starting.
REGISTRATION_TIMEOUT_S = 40.0


def _create_within(builder: Any, timeout_s: float, master: str) -> SparkSession:
    """``builder.getOrCreate()`` on a helper thread, given up after ``timeout_s`` (a master
    port that accepts connections but never registers the application would block it for
    Spark's full retry minute). The abandoned JVM ends with this process."""
    from workloads.errors import InfrastructureError

    box: dict[str, Any] = {}

    def create() -> None:
        try:
            box["spark"] = builder.getOrCreate()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=create, name="statebench-spark-session", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise InfrastructureError(
            f"--master {master}: All masters are unresponsive (no Spark master registered this "
            f"application within {timeout_s:g} s, although the port accepts connections). "
            "Check that the URL is the master's spark:// address (not its web UI port), that "
            "the master is running and that its log shows no errors")
    if "error" in box:
        raise box["error"]
    return box["spark"]
