"""Temporary folders that carry their owner, so that a later sweep removes only dead owners' ones.

A folder made by :func:`make` is ``<dir>/<prefix>pid<PID>.<START>.n<NS>_<random>`` (``START`` =
the owner's start time in whole seconds since the epoch, ``NS`` = the inode of its PID namespace,
``/proc/self/ns/pid``), and its owner holds an exclusive ``flock`` on the folder itself for as
long as the folder is in use. The lock is what makes a sweep safe: the kernel drops it when the
owner dies, however it dies (``kill -9`` included), and it is seen across PID namespaces, so a
run in another container sharing the temp dir, whose PID means nothing here, still keeps its live
folders. :func:`sweep` removes a tagged folder only when

* nobody holds its lock (the sweep takes it, and keeps it while it deletes), and
* the tag says the owner is gone: same PID namespace as ours and that PID is dead or belongs to
  a younger process (a reused PID); or another namespace, where the PID cannot be checked, and
  the folder is older than :data:`GRACE_S` (the microseconds between ``mkdir`` and ``flock``
  are the only time a live owner's folder is unlocked).

Folders of old versions (a tag without ``.n<NS>``, never locked) are judged by the PID as before.
On a filesystem without ``flock`` a folder of another namespace is never swept (we cannot tell).

The tag is in the name and the lock on the folder itself, rather than a marker file inside it,
because these folders are RocksDB database and checkpoint folders, whose contents belong to
their writers. The module lives in ``backends`` because the Flink worker's own folder needs it
too (``workloads`` re-exports it as ``workloads.run.run_tempdirs``).
"""

from __future__ import annotations

import atexit
import errno
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows; folders are then judged by PID only
    fcntl = None  # type: ignore[assignment]

#: ``<prefix>pid<pid>.<start>[.n<ns>]_<random>``; the prefix names what made it.
_TAGGED = re.compile(
    r"^\.?statebench-[A-Za-z0-9_.-]*?pid(?P<pid>\d+)\.(?P<start>\d+)(?:\.n(?P<ns>\d+))?_")
#: Seconds a folder of another PID namespace is left alone even when unlocked (its owner may be
#: between mkdir and flock).
GRACE_S = 10.0

_live: dict[str, int] = {}  # path -> fd holding the folder's lock (-1: no lock)
_removing: dict[str, bool] = {}  # paths whose removal was asked for but did not complete
_gone: list[str] = []  # the last paths removed here (names are unique: one seen again is stale)
_MAX_GONE = 256
_lock = threading.Lock()
_hooks_installed = False
_owner_pid = os.getpid()


def _process_start(pid: int | None = None) -> int:
    """Whole seconds since the epoch when process ``pid`` (default: this one) started."""
    return int(psutil.Process(pid).create_time())


def pid_namespace() -> int:
    """The inode of this process's PID namespace (0 where there is none to read)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def owner_tag() -> str:
    """This process's tag, the part of a folder name that says who owns it."""
    return f"pid{os.getpid()}.{_process_start()}.n{pid_namespace()}_"


def _hold(path: str) -> int:
    """An open descriptor of ``path`` holding its exclusive lock, or -1 if locks do not work."""
    if fcntl is None:
        return -1
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return -1
    return fd


def make(prefix: str, dir: str | Path | None = None) -> str:
    """A new folder ``<dir>/<prefix><owner tag><random>``, locked by this process and removed at
    exit unless removed before.

    ``prefix`` must start with ``statebench-`` (or ``.statebench-``) so :func:`sweep` knows it.
    """
    if not _TAGGED.match(prefix + owner_tag()):
        raise ValueError(f"temporary folder prefix must start with 'statebench-', got {prefix!r}")
    install_atexit()
    path = tempfile.mkdtemp(prefix=prefix + owner_tag(), dir=None if dir is None else str(dir))
    fd = _hold(path)
    with _lock:
        _live[path] = fd
    return path


def _release(path: str) -> None:
    with _lock:
        fd = _live.pop(str(path), -1)
        _removing.pop(str(path), None)
    if fd >= 0:
        with suppress(OSError):
            os.close(fd)


def remove(path: str | Path) -> None:
    """Delete a folder made by :func:`make` (missing is fine) and stop tracking it.

    A folder that another process is still writing into (a Spark task that is being cancelled)
    may survive the attempt: it then stays listed, and locked, for :func:`retry_removals` and
    the exit hook."""
    with _lock:
        if str(path) in _live:
            _removing[str(path)] = True
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path) and str(path) in _live:
        return
    with _lock:
        if str(path) in _live:
            _gone.append(str(path))
            del _gone[:-_MAX_GONE]
    _release(str(path))


def retry_removals() -> list[str]:
    """Remove again what :func:`remove` could not remove, and what a late writer made again
    after it was removed (a cancelled Spark task's ``makedirs`` recreates a checkpoint root);
    call it once those writers have stopped. Returns what is still there."""
    with _lock:
        paths = [p for p in _live if _removing.get(p)]
        again = [p for p in _gone if os.path.lexists(p)]
    stuck = []
    for path in paths:
        remove(path)
        if os.path.lexists(path):
            stuck.append(path)
    for path in again:
        shutil.rmtree(path, ignore_errors=True)
        if os.path.lexists(path):
            stuck.append(path)
    return stuck


def forget(path: str | Path) -> None:
    """Stop tracking ``path`` without deleting it (it was renamed into its final place); its
    lock is released, so a folder renamed to a name without a tag is just a folder."""
    _release(str(path))


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
    """Remove every tracked folder (atexit and signal handlers); only in the process that
    made them (a forked child inherits the table, not the folders)."""
    if os.getpid() != _owner_pid:
        return
    with _lock:
        paths = list(_live)
    for path in paths:
        remove(path)


def _after_fork_in_child() -> None:
    """A forked child owns none of its parent's folders: drop their table (and this copy of
    their descriptors; the parent's copies keep the locks)."""
    global _owner_pid
    fds = list(_live.values())
    _live.clear()
    _removing.clear()
    _gone.clear()
    for fd in fds:
        if fd >= 0:
            with suppress(OSError):
                os.close(fd)
    _owner_pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def install_atexit() -> None:
    """Remove what is still listed when the process exits (once per process)."""
    global _hooks_installed
    with _lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(remove_all)


def _owner_alive(pid: int, start: int) -> bool:
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(int(proc.create_time()) - start) <= 1
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def _try_lock(path: str) -> tuple[str, int]:
    """("held", -1) when someone holds ``path``'s lock, ("free", fd) with the lock now ours, or
    ("unknown", -1) where locks cannot be taken (no flock, cannot open)."""
    if fcntl is None:
        return "unknown", -1
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return "unknown", -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return "held", -1
        return "unknown", -1
    return "free", fd


def _judge(name: str, path: str | None) -> tuple[bool, int]:
    """(stale?, fd of the lock taken to delete it or -1)."""
    match = _TAGGED.match(name)
    if match is None:
        return False, -1
    state, fd = _try_lock(path) if path is not None else ("unknown", -1)
    if state == "held":
        return False, -1
    ns = match["ns"]
    same_namespace = ns is None or int(ns) == pid_namespace()
    if same_namespace:
        stale_ = not _owner_alive(int(match["pid"]), int(match["start"]))
    elif state == "free":  # another namespace: its PID means nothing here, the lock decides
        try:
            age = time.time() - os.stat(path).st_mtime  # type: ignore[arg-type]
        except OSError:
            age = 0.0
        stale_ = age > GRACE_S
    else:
        stale_ = False  # another namespace and no lock to ask: cannot tell, leave it
    if not stale_ and fd >= 0:
        os.close(fd)
        fd = -1
    return stale_, fd


def stale(path: str | Path) -> bool:
    """Whether a tagged folder's owner is gone (see the module docstring). ``path`` is the
    folder; a bare name that is no folder here is judged by its tag alone."""
    text = str(path)
    where = text if os.path.isdir(text) else None
    result, fd = _judge(os.path.basename(text.rstrip("/")), where)
    if fd >= 0:
        os.close(fd)
    return result


def sweep(roots: Iterable[str | Path | None] = (None,)) -> list[str]:
    """Remove stale owner-tagged folders directly under each root (None: the temp dir).

    Only real folders (no symlinks) that this user owns and whose name carries a dead owner's
    tag are touched; anything else in the root is left alone. Returns what was removed.
    """
    removed: list[str] = []
    uid = os.getuid()
    seen: set[str] = set()
    for root in roots:
        base = Path(root) if root is not None else Path(tempfile.gettempdir())
        key = os.path.realpath(base)
        if key in seen:
            continue
        seen.add(key)
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
            if entry.path in _live:
                continue
            is_stale, fd = _judge(entry.name, entry.path)
            if is_stale:
                try:
                    shutil.rmtree(entry.path, ignore_errors=True)
                finally:
                    if fd >= 0:
                        os.close(fd)
                removed.append(entry.path)
    return removed


def owners_of(roots: Iterable[str | Path | None]) -> set[int]:
    """PIDs (of this PID namespace) that own tagged folders under ``roots``: who to wait for
    before a final sweep."""
    out: set[int] = set()
    ns = pid_namespace()
    for root in roots:
        base = Path(root) if root is not None else Path(tempfile.gettempdir())
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            match = _TAGGED.match(name)
            if match and (match["ns"] is None or int(match["ns"]) == ns):
                out.add(int(match["pid"]))
    return out
