"""Temporary folders that do not outlive their run: owner-tagged, removed on exit, swept later.

A run makes temporary folders (the default checkpoint root, each task's local backend folder,
each restore's folder, the results folder while it is written). They must go when the run
ends, however it ends:

* normal exit and exceptions: the code that made a folder removes it (``remove`` in a
  ``finally``, or :func:`temp_dir`), and an ``atexit`` hook removes whatever is still listed;
* SIGTERM and SIGINT: :func:`install_signal_handlers` (called by the CLI, in the main thread)
  ends the process as the signal would (``SystemExit(143)`` for SIGTERM, ``KeyboardInterrupt``
  for SIGINT), so ``finally`` blocks run first and close the RocksDB databases that live in these
  folders; the CLI and the ``atexit`` hook then remove what is still listed. Deleting a folder
  under an open database instead makes its close fail (it flushes into a folder that is gone)
  and turns a clean interrupt into a crash;
* ``kill -9``, a crashed JVM or executor: nothing in the process can run, so every folder's name
  carries its owner, ``pid<PID>.<START>_`` (``START`` = the owner's start time, whole seconds
  since the epoch), and :func:`sweep` (called at start-up) removes the folders whose owner is no
  longer alive. A live process with the same PID but another start time is a reused PID: the
  folder is older than that process, so it is stale too.

The tag is in the name rather than in a marker file inside the folder because these folders are
RocksDB database and checkpoint folders, whose contents belong to their writers.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import psutil

#: ``<prefix>pid<pid>.<start>_<random>``; the prefix names what made it (statebench-t3-, ...).
_TAGGED = re.compile(r"^\.?statebench-[A-Za-z0-9_.-]*?pid(?P<pid>\d+)\.(?P<start>\d+)_")

_live: set[str] = set()
_lock = threading.Lock()
_hooks_installed = False


def _process_start(pid: int | None = None) -> int:
    """Whole seconds since the epoch when process ``pid`` (default: this one) started."""
    return int(psutil.Process(pid).create_time())


def owner_tag() -> str:
    """This process's tag, the part of a folder name that says who owns it."""
    return f"pid{os.getpid()}.{_process_start()}_"


def make(prefix: str, dir: str | Path | None = None) -> str:
    """A new folder ``<dir>/<prefix><owner tag><random>``, removed at exit unless removed before.

    ``prefix`` must start with ``statebench-`` (or ``.statebench-``) so :func:`sweep` knows it.
    """
    if not _TAGGED.match(prefix + owner_tag()):
        raise ValueError(f"temporary folder prefix must start with 'statebench-', got {prefix!r}")
    _install_atexit()
    path = tempfile.mkdtemp(prefix=prefix + owner_tag(), dir=None if dir is None else str(dir))
    with _lock:
        _live.add(path)
    return path


def remove(path: str | Path) -> None:
    """Delete a folder made by :func:`make` (missing is fine) and stop tracking it."""
    shutil.rmtree(path, ignore_errors=True)
    forget(path)


def forget(path: str | Path) -> None:
    """Stop tracking ``path`` without deleting it (it was renamed into its final place)."""
    with _lock:
        _live.discard(str(path))


@contextmanager
def temp_dir(prefix: str, dir: str | Path | None = None) -> Iterator[str]:
    """:func:`make` as a context manager: the folder is removed when the block ends."""
    path = make(prefix, dir)
    try:
        yield path
    finally:
        remove(path)


def live() -> list[str]:
    """Folders made here and not yet removed (tests, diagnostics)."""
    with _lock:
        return sorted(_live)


def remove_all() -> None:
    """Remove every tracked folder (atexit and signal handlers)."""
    with _lock:
        paths = list(_live)
    for path in paths:
        remove(path)


def _install_atexit() -> None:
    global _hooks_installed
    with _lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(remove_all)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


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
    _install_atexit()
    return installed


def _owner_alive(pid: int, start: int) -> bool:
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(int(proc.create_time()) - start) <= 1
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def stale(name: str) -> bool:
    """Whether a folder name carries an owner tag whose process is gone (or a reused PID)."""
    match = _TAGGED.match(name)
    if match is None:
        return False
    return not _owner_alive(int(match["pid"]), int(match["start"]))


def sweep(roots: Iterable[str | Path | None] = (None,)) -> list[str]:
    """Remove stale owner-tagged folders directly under each root (None: the temp dir).

    Only real folders (no symlinks) that this user owns and whose name carries a dead owner's
    tag are touched; anything else in the root is left alone. Returns what was removed.
    """
    removed: list[str] = []
    uid = os.getuid()
    for root in roots:
        base = Path(root) if root is not None else Path(tempfile.gettempdir())
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for entry in entries:
            try:
                if (not entry.is_dir(follow_symlinks=False)
                        or entry.stat(follow_symlinks=False).st_uid != uid):
                    continue
            except OSError:
                continue
            if stale(entry.name):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.path)
    return removed
