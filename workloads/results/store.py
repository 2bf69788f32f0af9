"""Run directories: ``results/<run-id>/rows.parquet`` plus ``run.json``.

``rows.parquet`` holds the tidy metric rows (``workloads.run.metrics.METRIC_SCHEMA``, what
``workloads/report`` reads); ``run.json`` says what ran where: the spec, the run configuration,
the git commit, library versions, the machine, the Spark master, the strategies that were
reported as not applicable instead of being run, how long it took, and whether the run is
complete (``workloads.results.completion``).

A run folder is published atomically: it is written under a temporary, owner-tagged name in the
same parent (``.statebench-partial-<run-id>-pid...``; see ``workloads.run.run_tempdirs``), with
``run.json`` written last, each file flushed to disk, and then renamed to ``<run-id>``. A run
that writes as it goes (:class:`RunFolder`: ``statebench run`` and ``compare`` do) publishes it
so when its first job finishes, marked ``"complete": false``, and then replaces its two files
after each finished job and when it stops, each file atomically (written to a hidden,
owner-tagged sibling, flushed, renamed over the old one; the rows first, run.json last). So
``results/`` holds whole runs and runs marked incomplete, never a truncated file: an interrupted
run keeps what finished, and a run killed while publishing leaves a hidden partial folder,
which the next run's start-up sweep removes once its owner is gone. Killed (``kill -9``)
between its two renames, a folder's rows can hold one job more than its run.json counts.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from workloads.results.completion import incomplete_line, progress_record
from workloads.run import run_tempdirs
from workloads.run.metrics import METRIC_SCHEMA
from workloads.run.plan import RunOutcome

DEFAULT_RESULTS_DIR = "results"
ROWS_FILE = "rows.parquet"
META_FILE = "run.json"
_VERSIONED = ("pyspark", "rocksdict", "pyarrow", "numpy", "statebench")
_REPO = Path(__file__).resolve().parent.parent


def git_commit(repo: Path = _REPO) -> str:
    """``git rev-parse HEAD`` of the source tree, or "unknown" (not a checkout, no git)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in _VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": psutil.virtual_memory().total,
        "platform": platform.platform(),
    }


def run_metadata(outcome: RunOutcome, created_utc: str | None = None) -> dict[str, Any]:
    """The run.json document of a run: a finished one, or what finished of one that did not
    (``outcome.completion``: ``"complete": false`` and its ``progress``)."""
    cfg = outcome.config
    config = cfg.describe()
    config.update(
        {
            "events": outcome.facts.events,
            "master": outcome.engine,
            "in_process": outcome.engine == "in-process",
            "events_per_task": {str(t): n for t, n in outcome.facts.task_counts},
            "time_frame_ms": [outcome.facts.start_ms, outcome.facts.end_ms],
            "job_seconds": outcome.job_seconds,
            "rounds": outcome.rounds,
            "retried_attempts": outcome.retried_attempts,
            "argv": sys.argv,
        }
    )
    if cfg.spec.operator is not None:  # events made; the rows that reached the operator beside
        from workloads.operators.input import generated_events

        config["events"] = generated_events(cfg.spec)
        config["operator_records"] = outcome.facts.events
    meta: dict[str, Any] = {
        "run_id": cfg.run_id,
        "created_utc": created_utc or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "complete": outcome.completion is None,
    }
    if outcome.completion is not None:  # what finished and what did not
        done = outcome.completion
        meta["progress"] = progress_record([(cfg.spec.name, done)], done.stopped, done.error)
    return meta | {
        "spec": cfg.spec.to_dict(),
        "config": config,
        "git_commit": git_commit(),
        "versions": versions(),
        "machine": machine(),
        "spark_master": outcome.engine,
        "not_applicable": [n.as_dict() for n in outcome.not_applicable],
        "duration_s": round(outcome.duration_s, 3),
    }


class RunExistsError(FileExistsError):
    """The run id is taken in the results folder: a run folder is never overwritten."""


class RunIdError(ValueError):
    """A run id that cannot be one folder name (a separator, ``..``, too long)."""


def check_run_id(run_id: str) -> None:
    """A run id names ``<results_dir>/<run_id>``: it must be exactly one safe folder name."""
    from workloads.run.checkpoints import slug

    if not isinstance(run_id, str) or slug(run_id) != run_id:
        raise RunIdError(f"run id {run_id!r} cannot be a folder name: use letters, digits, "
                         "'.', '_' and '-' only, at most 96 characters")


def run_dir_free(results_dir: str | Path, run_id: str) -> None:
    """Raise :class:`RunExistsError` if ``<results_dir>/<run_id>`` exists (checked up front,
    before a run, and again when publishing), :class:`RunIdError` if the id is no folder name."""
    check_run_id(run_id)
    target = Path(results_dir) / run_id
    if target.exists() or target.is_symlink():
        raise RunExistsError(f"run id {run_id} is taken: {target} exists (results are never "
                             "overwritten; pick another --results-dir or remove it)")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sibling(target: Path) -> Path:
    """A hidden, owner-tagged name beside ``target`` to write it under before the rename
    (``.<name>.statebench-tmp-pid...``); the siblings that dead owners left are removed."""
    from backends.tempdirs import owner_tag, stale

    prefix = f".{target.name}.statebench-tmp-"
    try:
        for old in target.parent.glob(glob.escape(prefix) + "*"):
            if stale("statebench-" + old.name[len(prefix):]):  # judged by its owner tag
                old.unlink(missing_ok=True)
    except OSError:
        pass
    return target.parent / f"{prefix}{owner_tag()}{secrets.token_hex(4)}"


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` so that it appears complete or not at all, never truncated.

    The bytes go to a hidden, owner-tagged sibling (``.<name>.statebench-tmp-pid...``), are
    flushed to disk, and the file is renamed over ``path``; the folder is flushed too. A kill or
    a full disk leaves the old file (or none) and at most that sibling, which the next write of
    the same name removes once its owner is gone. Every file the CLI writes goes through here
    (report.html, diff.html, ab.json, the run folder's run.json has its own).
    """
    target = Path(path)
    folder = target.parent
    tmp = _sibling(target)
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync(folder)
    return target


def write_run_dir(run_id: str, rows: pa.Table, meta: dict[str, Any],
                  results_dir: str | Path = DEFAULT_RESULTS_DIR) -> Path:
    """Write ``<results_dir>/<run_id>/`` (rows.parquet + run.json) atomically and return it.

    Everything is written into a hidden partial folder next to the target, ``run.json`` last,
    flushed, and then renamed to ``<run_id>``; on any failure the partial folder is removed, so
    the results folder never holds a run without its rows or its run.json.
    """
    root = Path(results_dir)
    check_run_id(run_id)  # before anything is made
    root.mkdir(parents=True, exist_ok=True)
    run_dir_free(root, run_id)
    run_dir = root / run_id
    partial = Path(run_tempdirs.make(f".statebench-partial-{run_id}-", dir=root))
    try:
        os.chmod(partial, 0o777 & ~_umask())  # mkdtemp makes it 0700; a run folder is not private
        pq.write_table(rows.cast(METRIC_SCHEMA), partial / ROWS_FILE)
        _fsync(partial / ROWS_FILE)
        meta_tmp = partial / (META_FILE + ".tmp")
        meta_tmp.write_text(_meta_text(meta), encoding="utf-8")
        _fsync(meta_tmp)
        os.replace(meta_tmp, partial / META_FILE)  # run.json appears last, complete
        _fsync(partial)
        run_dir_free(root, run_id)  # rename(2) would replace an empty folder made meanwhile
        os.rename(partial, run_dir)
        _fsync(root)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        run_tempdirs.forget(partial)
    return run_dir


def _meta_text(meta: dict[str, Any]) -> str:
    return json.dumps(meta, indent=2, sort_keys=False) + "\n"


def replace_run_files(run_dir: Path, rows: pa.Table, meta: dict[str, Any]) -> Path:
    """Replace a published run folder's rows.parquet and run.json, each atomically: both are
    written to hidden siblings and flushed first, then renamed, the rows first and run.json
    last (a kill between the two renames leaves rows one job ahead of run.json's count)."""
    rows_tmp, meta_tmp = _sibling(run_dir / ROWS_FILE), _sibling(run_dir / META_FILE)
    try:
        pq.write_table(rows.cast(METRIC_SCHEMA), rows_tmp)
        _fsync(rows_tmp)
        meta_tmp.write_text(_meta_text(meta), encoding="utf-8")
        _fsync(meta_tmp)
        for tmp in (rows_tmp, meta_tmp):
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(rows_tmp, run_dir / ROWS_FILE)
        os.replace(meta_tmp, run_dir / META_FILE)
    finally:
        rows_tmp.unlink(missing_ok=True)
        meta_tmp.unlink(missing_ok=True)
    _fsync(run_dir)
    return run_dir


class RunFolder:
    """One run's ``<results_dir>/<run_id>/``, written as the run goes, so that a run that stops
    (SIGINT, SIGTERM, an error in a later scenario) keeps what finished.

    :meth:`save` is the runner's ``on_result`` (``workloads.run.runner.run``): the first time a
    job has finished it publishes the folder atomically (:func:`write_run_dir`), marked
    ``"complete": false``; after that each call replaces its files (:func:`replace_run_files`).
    The run's last :meth:`write` is the complete run, exactly the folder a run written only at
    its end would be, with ``"complete": true``. A run stopped before any job finished leaves
    nothing, as before.
    """

    def __init__(self, run_id: str, results_dir: str | Path = DEFAULT_RESULTS_DIR) -> None:
        check_run_id(run_id)
        self.run_id = run_id
        self.results_dir = Path(results_dir)
        #: the published folder (None until the first write)
        self.path: Path | None = None
        #: the run.json last written
        self.meta: dict[str, Any] | None = None

    def save(self, outcome: RunOutcome) -> None:
        """Write what finished of a run (``outcome.completion``); nothing while no job has."""
        done = outcome.completion
        if self.path is None and done is not None and not done.jobs_finished:
            return
        self.write(outcome.rows, run_metadata(outcome))

    def write(self, rows: pa.Table, meta: dict[str, Any]) -> Path:
        """Publish the folder, or replace its files, with ``rows`` and ``meta``."""
        if self.path is not None:
            replace_run_files(self.path, rows, meta)
        else:
            target = self.results_dir / self.run_id
            try:
                self.path = write_run_dir(self.run_id, rows, meta, self.results_dir)
            except RunExistsError:
                raise
            except BaseException:  # broken off (SIGINT) after its rename went through: ours
                if (target / META_FILE).is_file() and not (target / META_FILE).is_symlink():
                    self.path = target
                raise
        self.meta = meta
        return self.path

    def kept(self, report: Path | None = None) -> str | None:
        """One line for a run that stopped: what its folder kept, and where (its ``report``
        when one was rendered, else how to render it); None when nothing was kept or the run
        is complete."""
        if self.path is None or self.meta is None:
            return None
        line = incomplete_line(self.meta)
        if line is None:
            return None
        if report is not None:
            return f"{line}; kept in {self.path}, report: {report}"
        return f"{line}; kept in {self.path} (statebench report {self.path} renders it)"


def write_run(outcome: RunOutcome, results_dir: str | Path = DEFAULT_RESULTS_DIR,
              folder: RunFolder | None = None) -> Path:
    """Write one run's ``<results_dir>/<run-id>/`` and return it; with ``folder`` (the
    :class:`RunFolder` the run was saved to as it went), replace what it holds."""
    if folder is None:
        folder = RunFolder(outcome.config.run_id, results_dir)
    return folder.write(outcome.rows, run_metadata(outcome))
