"""Start-up checks of the CLI: everything a run will need later is checked before the work.

Why: a results folder under ``/proc``, a report path that cannot be written, a checkpoint URI
whose filesystem does not exist or does not answer, a taken run id, all used to surface as a
traceback *after* the benchmark had run, losing its results. Each check here raises
:class:`~workloads.cli.options.CliError` with one message that starts with the option it is about
(``--results-dir /proc/x: ...``), and numeric options are parsed against the same
:mod:`workloads.limits` as spec fields, so the rule and the message are the same in both.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workloads.cli.options import CliError
from workloads.errors import first_line
from workloads.limits import Limit

#: Seconds a checkpoint filesystem URI gets to answer (create + list + write + delete).
FILESYSTEM_TIMEOUT_S = 15.0


# ------------------------------------------------------------------------------------------------
# Numbers and lists
# ------------------------------------------------------------------------------------------------


def bounded(limit: Limit) -> Callable[[str], Any]:
    """An argparse ``type=`` that parses an int (or float) and checks it against ``limit``;
    argparse prefixes the option name, the message is the spec's."""

    def parse(text: str) -> int | float:
        try:
            value: int | float = int(text) if limit.integer else float(text)
        except ValueError:
            kind = "an integer" if limit.integer else "a number"
            raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
        problem = limit.problem(value)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = "integer" if limit.integer else "number"
    return parse


def non_empty(option: str, items: list[str] | None, given: list[str] | None) -> list[str] | None:
    """``items`` parsed from ``option``'s values; refuse an option that was given but names
    nothing (``--backend ""``, ``--strategy ","``): it must not silently mean "all"."""
    if given is not None and not items:
        raise CliError(f"{option}: empty list {', '.join(repr(g) for g in given)}; name at least "
                     "one, or leave the option out for the default")
    return items


# ------------------------------------------------------------------------------------------------
# Folders and files
# ------------------------------------------------------------------------------------------------


def _blocking_file(path: Path) -> Path | None:
    """The first existing non-folder among ``path`` and its parents (it blocks mkdir)."""
    for candidate in (path, *path.parents):
        if candidate.exists() and not candidate.is_dir():
            return candidate
    return None


def refuse_empty(option: str, text: str | Path) -> None:
    """An empty path is no path: ``Path("")`` is the current folder, so ``report -o ''`` wrote
    the default report and ``--checkpoint-dir ''`` checkpointed into the current folder."""
    if not str(text).strip():
        raise CliError(f"{option} {str(text)!r}: an empty path; give a file or folder name, or "
                       "leave the option out for the default")


def writable_dir(option: str, text: str | Path, shown: str | Path | None = None) -> Path:
    """Create ``text`` (and parents) if needed and prove a file can be written in it.
    ``shown`` is the option's value as given, when it is not the folder itself."""
    refuse_empty(option, text if shown is None else shown)
    path = Path(text)
    given = text if shown is None else shown
    blocker = _blocking_file(path)
    if blocker is not None:
        where = "is a file" if blocker == Path(given) else f"is under {blocker}, which is a file"
        raise CliError(f"{option} {given}: {where}, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".statebench-probe-"):
            pass
    except OSError as exc:
        what = "this folder" if shown is None else f"its folder {path}"
        raise CliError(f"{option} {given}: cannot create or write {what} "
                     f"({exc.strerror or exc})") from None
    return path


def writable_file(option: str, text: str | Path) -> Path:
    """``text`` can be written as a file: its folder exists or can be made and is writable,
    and it is not itself a folder."""
    refuse_empty(option, text)
    path = Path(text)
    if path.is_dir():
        raise CliError(f"{option} {text}: is a folder; give a file name (e.g. report.html)")
    writable_dir(option, path.parent, shown=text)
    if path.exists() and not os.access(path, os.W_OK):
        raise CliError(f"{option} {text}: the file exists and is not writable")
    return path


# ------------------------------------------------------------------------------------------------
# Run folders given to report, diff and ab --rerun: untrusted files
# ------------------------------------------------------------------------------------------------


def run_folder_files(run_dir: str | Path) -> None:
    """The files of a run folder that are read whole (run.json, rows.parquet) are regular files
    of bounded size: a FIFO blocked the reader, a 10 GB file filled memory. Missing files are
    left to the run folder check, which says what a complete folder has."""
    from workloads import limits

    for name, cap in (("run.json", limits.MAX_RUN_JSON_BYTES),
                      ("rows.parquet", limits.MAX_RUN_ROWS_BYTES)):
        path = Path(run_dir) / name
        try:
            fd = limits.open_regular(path, "run folder file")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except limits.FileProblem as exc:
            raise CliError(str(exc)) from None
        try:
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > cap:
            raise CliError(f"{path}: is {size} bytes; a run folder's {name} is read whole, at "
                         f"most {cap} bytes")


# ------------------------------------------------------------------------------------------------
# Checkpoint target
# ------------------------------------------------------------------------------------------------


def lane_checkpoint_target(option: str, location: str, backends: tuple[str, ...]) -> None:
    """Flink's lanes write their checkpoints as local files (Flink's FsCheckpointStreamFactory
    on a local folder): a URI of another filesystem used to pass here and fail mid-run."""
    from workloads.lanes import runs_on_flink

    lanes = [b for b in backends if runs_on_flink(b)]
    if not lanes or "://" not in location or location.startswith("file://"):
        return
    raise CliError(f"{option} {location}: the Flink lanes ({', '.join(lanes)}) write checkpoints "
                 "as local files; give a local folder or a file:// URI")


def checkpoint_target(option: str, location: str, timeout_s: float = FILESYSTEM_TIMEOUT_S) -> None:
    """A local folder that can be written, or a pyarrow.fs URI whose filesystem exists and
    answers (folder made, probe written and deleted) within ``timeout_s``."""
    if "://" not in location:
        writable_dir(option, location)
        return
    scheme = location.split("://", 1)[0]
    if scheme == "file":
        writable_dir(option, location[len("file://"):] or "/")
        return
    outcome: dict[str, BaseException | None] = {}

    def probe() -> None:
        try:
            import pyarrow.fs as pafs

            fs, path = pafs.FileSystem.from_uri(location)
            fs.create_dir(path, recursive=True)
            probe_file = path.rstrip("/") + "/.statebench-probe"
            with fs.open_output_stream(probe_file) as out:
                out.write(b"ok")
            fs.delete_file(probe_file)
            outcome["error"] = None
        except BaseException as exc:  # reported below, in the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=probe, name="statebench-fs-probe", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise CliError(f"{option} {location}: the {scheme}:// filesystem did not answer within "
                     f"{timeout_s:g} s; check the bucket/host name, the network and credentials")
    exc = outcome.get("error")
    if exc is None:
        return
    text = first_line(exc)
    if "Unrecognized filesystem type" in text or "unknown filesystem" in text.lower():
        raise CliError(f"{option} {location}: unknown URI scheme '{scheme}://'; use a local "
                     "path or a pyarrow.fs URI (file://, s3://, gs://, hdfs://)")
    raise CliError(f"{option} {location}: cannot write there ({text}); check the bucket/host "
                 "name, that it exists, the network and credentials")


# ------------------------------------------------------------------------------------------------
# Disk
# ------------------------------------------------------------------------------------------------


def mean_value_bytes(size: Any, value_type: str) -> float:
    """Expected bytes of one written value for a ``[values]`` section (Pareto: capped mean)."""
    if value_type == "long":
        return 8.0
    if size.distribution == "constant":
        return float(size.bytes)
    if size.distribution == "uniform":
        return (size.min + size.max) / 2
    a, xm, cap = size.shape, size.scale, float(size.max)
    if cap <= xm:
        return cap
    # E[min(X, cap)] = xm + integral_xm^cap (xm/x)^a dx
    if abs(a - 1.0) < 1e-12:
        return xm + xm * math.log(cap / xm)
    return xm + xm**a * (cap ** (1 - a) - xm ** (1 - a)) / (1 - a)


def expected_write_bytes(spec: Any, events: int) -> float:
    """Bytes one scenario may write into its backend: every value-carrying event's value plus
    a key (an upper bound of its live state; RocksDB keeps them until compaction)."""
    from workloads.ops import CARRIES_VALUE_BY_CODE

    if spec.operations is None:
        writing = 1.0  # a trace's ops are only known while reading it
    else:
        writing = sum(p for op, p in spec.operations if CARRIES_VALUE_BY_CODE[int(op)])
    return events * writing * (mean_value_bytes(spec.values.size, spec.values.type) + 24.0)


def disk_warning(spec: Any, events: int, folder: str | None) -> str | None:
    """A warning when a scenario's expected state exceeds the free disk where it is kept."""
    where = folder or tempfile.gettempdir()
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return None
    need = expected_write_bytes(spec, events)
    if need <= free:
        return None
    return (f"this run may write up to {need / 1e9:.3g} GB of state per scenario ({events} "
            f"events), but only {free / 1e9:.3g} GB are free in {where}; lower --events or the "
            "value sizes, or free disk space")
