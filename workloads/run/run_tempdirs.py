"""Temporary folders that do not outlive their run: owner-tagged, locked, removed on exit, swept.

A run makes temporary folders (the default checkpoint root, each task's local backend folder,
each restore's folder, the Flink worker's folder, the results folder while it is written). They
must go when the run ends, however it ends:

* normal exit and exceptions: the code that made a folder removes it (``remove`` in a
  ``finally``, or :func:`temp_dir`), and an ``atexit`` hook removes whatever is still listed;
* SIGTERM and SIGINT: :func:`install_signal_handlers` (called by the CLI, in the main thread)
  ends the process as the signal would (``SystemExit(143)`` for SIGTERM, ``KeyboardInterrupt``
  for SIGINT), so ``finally`` blocks run first and close the RocksDB databases that live in these
  folders; the CLI and the ``atexit`` hook then remove what is still listed. Deleting a folder
  under an open database instead makes its close fail (it flushes into a folder that is gone)
  and turns a clean interrupt into a crash;
* ``kill -9``, a crashed JVM or executor: nothing in the process can run, so every folder's name
  carries its owner and the owner holds a lock on it (``backends.tempdirs``, where the rules
  are), and :func:`sweep` (called at start-up) removes the folders whose owner is gone, and only
  those: a live owner in another PID namespace (a container sharing the temp dir) keeps its
  folders, because its lock is still held.

The folder mechanics live in :mod:`backends.tempdirs` (the Flink worker, in ``backends``, tags
its folder too); this module adds what only a command line program does: signal handling.
"""

from __future__ import annotations

import signal
import threading
from contextlib import suppress
from types import FrameType

from backends.tempdirs import (  # noqa: F401 - this module's public interface
    GRACE_S,
    forget,
    install_atexit,
    live,
    make,
    owner_tag,
    owners_of,
    pid_namespace,
    remove,
    remove_all,
    retry_removals,
    stale,
    sweep,
    temp_dir,
)


def _held_off(signum: int, frame: FrameType | None) -> None:
    """A second SIGINT/SIGTERM while the first one unwinds: the process is already ending, and
    interrupting its clean-up would leave folders and processes behind (a Ctrl-C reaches
    ``statebench ab`` and its child twice: from the terminal and forwarded)."""


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread: the process ends with 128 + SIGTERM (143) once its
    ``finally`` blocks and the CLI's clean-up ran, and the CLI says so in one line, as for an
    interrupt. A type of its own so an error it causes (a Spark job it broke off, whose
    collect then fails with a Java stack) can be told from a real failure
    (``workloads.cli.lifecycle``)."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(128 + signum)


def _cancel_spark_jobs() -> None:
    """Cancel this process's running Spark jobs, as pyspark's own SIGINT handler does: a job
    whose collect is broken off by SIGTERM otherwise runs on, and its end then fails inside
    the collect's clean-up with a Java stack (never imports pyspark)."""
    import sys

    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or getattr(context, "_jsc", None) is None:
        return
    with suppress(Exception):  # a context already failing: the unwinding ends it
        context.cancelAllJobs()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is _on_signal:
            signal.signal(sig, _held_off)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    _cancel_spark_jobs()
    raise Terminated(signum)


def install_signal_handlers() -> bool:
    """End as the signal would on SIGTERM/SIGINT; the folders go as the process unwinds.

    Only from the main thread, and only where the handler is still Python's default (a host
    program that handles these signals itself keeps its handlers). Returns whether installed.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    installed = False
    defaults = {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}
    for signum, default in defaults.items():
        if signal.getsignal(signum) is default:
            signal.signal(signum, _on_signal)
            installed = True
    install_atexit()
    return installed
