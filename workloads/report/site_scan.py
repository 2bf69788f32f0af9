"""What a results folder holds, for the site (``site.py``): its runs, each with its headline
answers, and every other folder with one line saying what it is.

A folder is read as a run when it has a ``run.json`` or a ``rows.parquet``. It is checked as
``report`` and ``diff`` check one (``load.check_run_folder``: never a FIFO, never a truncated
file) and bounded as they bound it (``workloads.limits``), then loaded. Whatever goes wrong with
one folder becomes that folder's one line: one bad folder never stops the site, and none is
dropped. Folders that statebench's other commands and asv write beside the runs (an ``ab``
session, a ``regress`` check, asv's results and its published site, pytest-benchmark's JSON) are
named as what they are, with their page when they have one. Hidden entries (a run still being
written is ``.statebench-partial-*``) and plain files are not folders of results: left out.

The headline answers are the report's own, never a second decision: per workload and backend,
the strategy its decision table recommends and the trade-off sentence under it
(``decision.decisions``), and a TTL sweep's headline (``decision.ttl_headline``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from workloads import limits
from workloads.report.decision import decisions, ttl_headline
from workloads.report.findings import Sentence
from workloads.report.fmt import TIMES
from workloads.report.load import Run, RunFolderError, check_run_folder, load_run
from workloads.results.store import META_FILE, ROWS_FILE

REPORT_FILE = "report.html"
#: A folder another tool wrote into a results folder: (the file that marks it, what it is,
#: its own page or None). The first that matches names the folder.
KNOWN_FOLDERS = (
    ("ab.json", "a statebench ab session: two revisions' runs, interleaved", "diff.html"),
    ("regress.json", "a statebench regress check of a commit", "regress.html"),
    ("asv.js", "asv's published site (asv publish)", "index.html"),
    ("benchmarks.json", "asv's results database (asv publish makes its site)", None),
)
#: pytest-benchmark's storage: ``<machine>/<NNNN>_<name>.json``.
PYTEST_BENCHMARK_GLOB = "*/[0-9][0-9][0-9][0-9]_*.json"
ASV_SITE = "asv.js"


@dataclass(frozen=True)
class Comparison:
    """What a run compared: its scenarios as (workload, backend, strategy), the not applicable
    and, for an incomplete run, the unfinished ones included (run.json lists what it set out to
    run). Two runs are of the same comparison when they compared the same scenarios: the same
    workloads on the same backends with the same strategies (a sweep's knob values are in its
    strategies' labels), whatever their event counts, rounds, commit or machine: those are
    what a diff between them shows (its banner names a changed configuration or machine)."""

    scenarios: frozenset[tuple[str, str, str]]
    label: str

    @property
    def id(self) -> str:
        """A short id stable across publishes (an anchor of the index)."""
        text = "\n".join("\t".join(s) for s in sorted(self.scenarios))
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]

    @classmethod
    def of(cls, run: Run) -> Comparison:
        scenarios = frozenset((k.workload, k.backend, k.strategy) for k in run.scenarios())
        label = f" {TIMES} ".join(", ".join(names) for names in
                                   (run.workloads, run.backends, run.strategies))
        return cls(scenarios, label)


@dataclass(frozen=True)
class Answer:
    """One backend's answer in a workload: the recommended strategy (None: the table makes no
    recommendation) and the sentence that says why and what it costs."""

    backend: str
    strategy: str | None
    sentence: Sentence


@dataclass(frozen=True)
class Headline:
    """One workload's answers, one per backend in the report's order; a TTL sweep's headline."""

    workload: str
    answers: tuple[Answer, ...]
    sweep: Sentence | None = None


@dataclass(frozen=True)
class RunEntry:
    """A run of the results folder, as the index shows it. ``name`` is its folder's name (the
    site's id for it: unique in the folder, whatever run.json says)."""

    folder: Path
    name: str
    run_id: str
    created: str
    commit: str
    comparison: Comparison
    incomplete: str | None
    headlines: tuple[Headline, ...]
    #: Its report.html is there and no older than its rows and run.json (else the site
    #: renders one: a report written before the run's last job would not show that job).
    report_fresh: bool

    @property
    def order(self) -> tuple[str, str]:
        """Oldest first: run.json's creation time, then the run id (it starts with the time)."""
        return (self.created, self.run_id)


@dataclass(frozen=True)
class Folder:
    """A folder that is not a readable run: what it is, in one line, and its page if any.
    ``unreadable``: it was taken for a run (or nothing else) and could not be read."""

    folder: Path
    name: str
    what: str
    page: Path | None = None
    unreadable: bool = False

    @property
    def asv_site(self) -> bool:
        return (self.folder / ASV_SITE).is_file() and self.page is not None


def headlines(run: Run) -> tuple[Headline, ...]:
    """The report's answers, per workload: each backend's recommended strategy and sentence."""
    out = []
    for workload in run.workloads:
        answers = tuple(
            Answer(row.backend, None if row.recommended is None else row.recommended.strategy,
                   row.tradeoff)
            for rows in decisions(run, workload).values() for row in rows)
        out.append(Headline(workload, answers, ttl_headline(run, workload)))
    return tuple(out)


def _bounded(folder: Path) -> None:
    """A run's files are read whole: refuse one beyond the bound ``report`` and ``diff`` keep
    (``workloads.limits``) rather than fill memory building a site."""
    for name, cap in ((META_FILE, limits.MAX_RUN_JSON_BYTES),
                      (ROWS_FILE, limits.MAX_RUN_ROWS_BYTES)):
        path = folder / name
        if path.is_file() and (size := path.stat().st_size) > cap:
            raise RunFolderError(f"{path}: is {size} bytes; a run folder's {name} is read "
                                 f"whole, at most {cap} bytes")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("inf")


def _fresh_report(folder: Path) -> bool:
    report = folder / REPORT_FILE
    if not report.is_file():
        return False
    return _mtime(report) >= max(_mtime(folder / ROWS_FILE), _mtime(folder / META_FILE))


def _text(value: object) -> str:
    return "" if value is None else str(value)


def read_run(folder: Path) -> RunEntry:
    """One run folder with its answers; a :class:`RunFolderError` (or whatever loading raises)
    when it cannot be read."""
    _bounded(folder)
    check_run_folder(folder)
    run = load_run(folder)
    return RunEntry(
        folder=folder, name=folder.name, run_id=run.run_id,
        created=_text(run.meta.get("created_utc")), commit=_text(run.meta.get("git_commit")),
        comparison=Comparison.of(run), incomplete=run.incomplete, headlines=headlines(run),
        report_fresh=_fresh_report(folder))


def _one_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, RunFolderError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _known(folder: Path) -> Folder | None:
    for marker, what, page in KNOWN_FOLDERS:
        if (folder / marker).is_file():
            found = folder / page if page is not None else None
            return Folder(folder, folder.name, what,
                          found if found is not None and found.is_file() else None)
    if any(folder.glob(PYTEST_BENCHMARK_GLOB)):
        return Folder(folder, folder.name, "pytest-benchmark's saved runs (JSON)")
    return None


def read_folder(folder: Path) -> RunEntry | Folder:
    """A run, or what the folder is instead; never raises for a folder's content."""
    is_run = (folder / ROWS_FILE).exists() or (folder / META_FILE).exists()
    if not is_run:
        known = _known(folder)
        if known is not None:
            return known
    try:
        return read_run(folder)
    except Exception as exc:  # one folder's problem, whatever it is, is its line
        return Folder(folder, folder.name, _one_line(exc), unreadable=True)


def scan(results_dir: Path) -> tuple[list[RunEntry], list[Folder]]:
    """Every visible folder directly under ``results_dir``, by name: the runs, and the rest."""
    runs: list[RunEntry] = []
    others: list[Folder] = []
    for name in visible_folders(results_dir):
        found = read_folder(results_dir / name)
        (runs if isinstance(found, RunEntry) else others).append(found)
    return runs, others


def visible_folders(results_dir: Path) -> list[str]:
    """Names of the folders :func:`scan` would read (the CLI refuses a folder without any)."""
    with os.scandir(results_dir) as entries:
        return sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir())
