"""``statebench publish``'s site: every run of a results folder behind one static index.

What goes in the site folder::

    index.html               every run, grouped by comparison, with its answers (site_index.py)
    runs/<run>/report.html   the run's report: a hard link of its own (site_files.py says why),
                             rendered here when the run has none or one older than its rows
    runs/<run>/diff.html     the diff from the previous complete run of the same comparison
    asv/                     asv's published site, when there is one
    other/<folder>/<page>    the page of an ``ab`` session or a ``regress`` check

"The same comparison" is the same scenarios compared (``site_scan.Comparison``: workloads,
backends, strategies). Its runs are ordered by run.json's creation time, and each complete run
is diffed against the one before it that is complete too: an interrupted run is listed and
marked but is no diff's end, so it never hides what changed between the two runs around it. A
run's folder name is its id in the site. Every page is self-contained and opens from disk, like
the reports: nothing is fetched.

The index reads every run once for its answers (``site_scan``) and dropped; the diffs read each
run of a comparison once more, one pair at a time, so memory holds at most two runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from workloads.report.diff import write_diff_page
from workloads.report.load import Run, load_run
from workloads.report.render import render_report
from workloads.report.site_files import MARKER, asv_html_dir, building, link_or_copy, link_tree
from workloads.report.site_index import (
    Asv,
    PlacedFolder,
    PlacedRun,
    Series,
    href,
    index_html,
)
from workloads.report.site_scan import REPORT_FILE, Folder, RunEntry, scan
from workloads.report.verdict import Side
from workloads.results.store import write_text_atomic

RUNS, OTHER, ASV = "runs", "other", "asv"
DIFF_FILE = "diff.html"
INDEX_FILE = "index.html"
#: Why asv's site is linked but will not draw its graphs from disk.
ASV_SERVED = ("asv's pages load their data with requests a browser refuses to a page opened "
              "from disk: serve the site (asv preview, or python -m http.server in the "
              "site folder) to see its graphs.")


@dataclass(frozen=True)
class Published:
    """What :func:`build_site` wrote: the index and what it lists."""

    index: Path
    runs: int
    incomplete: int
    comparisons: int
    diffs: int
    unreadable: list[str]
    asv: Path | None


def series_of(runs: Sequence[RunEntry]) -> list[list[RunEntry]]:
    """The runs grouped by comparison, each group oldest first; the groups newest run first."""
    groups: dict[str, list[RunEntry]] = {}
    for run in runs:
        groups.setdefault(run.comparison.id, []).append(run)
    ordered = [sorted(g, key=lambda r: r.order) for g in groups.values()]
    return sorted(ordered, key=lambda g: g[-1].order, reverse=True)


def consecutive(group: Sequence[RunEntry]) -> list[tuple[RunEntry, RunEntry]]:
    """(previous, run) for each complete run after the first complete one of an oldest-first
    group: incomplete runs are skipped, never a diff's end."""
    complete = [r for r in group if not r.incomplete]
    return list(pairwise(complete))


def _one_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _place_report(run: RunEntry, site: Path) -> tuple[str | None, str]:
    """The run's report in the site: linked when fresh, else rendered; (href, note)."""
    out = site / RUNS / run.name / REPORT_FILE
    try:
        if run.report_fresh:
            link_or_copy(run.folder / REPORT_FILE, out)
            return href(RUNS, run.name, REPORT_FILE), ""
        why = ("rendered for the site: its report.html is older than its rows"
               if (run.folder / REPORT_FILE).is_file() else
               "rendered for the site: the run has no report.html")
        render_report(run.folder, out)
        return href(RUNS, run.name, REPORT_FILE), why
    except Exception as exc:  # one run's page must not stop the site
        return None, f"no report: {_one_line(exc)}"


def _place_diffs(group: Sequence[RunEntry], site: Path) -> dict[str, tuple[str | None, str]]:
    """Each diffed run's (href, previous run's name or the error), one pair loaded at a time."""
    out: dict[str, tuple[str | None, str]] = {}
    loaded: tuple[str, Run] | None = None
    for a, b in consecutive(group):
        try:
            run_a = loaded[1] if loaded is not None and loaded[0] == a.name else load_run(a.folder)
            run_b = load_run(b.folder)
            loaded = (b.name, run_b)
            write_diff_page(Side.of("A", run_a), Side.of("B", run_b),
                            site / RUNS / b.name / DIFF_FILE)
            out[b.name] = (href(RUNS, b.name, DIFF_FILE), a.name)
        except Exception as exc:  # one pair's page must not stop the site
            loaded = None
            out[b.name] = (None, f"no diff from {a.name}: {_one_line(exc)}")
    return out


def _placed_runs(group: list[RunEntry], site: Path) -> tuple[PlacedRun, ...]:
    diffs = _place_diffs(group, site)
    first_complete = next((r.name for r in group if not r.incomplete), None)
    placed = []
    for run in reversed(group):  # newest first
        report, note = _place_report(run, site)
        diff, diff_from, diff_note = None, None, ""
        if run.name in diffs:
            diff, other = diffs[run.name]
            diff_from, diff_note = (other, "") if diff is not None else (None, other)
        elif run.incomplete:
            diff_note = "not diffed: an incomplete run"
        elif run.name == first_complete:
            diff_note = "the first complete run of this comparison"
        placed.append(PlacedRun(run, report, note, diff, diff_from, diff_note))
    return tuple(placed)


def _place_folder(folder: Folder, site: Path, asv_source: Path | None) -> PlacedFolder:
    if folder.page is None:
        return PlacedFolder(folder)
    if folder.asv_site:  # the asv site the index links, or one more (its line only)
        same = asv_source is not None and asv_source.resolve() == folder.folder.resolve()
        return PlacedFolder(folder, href(ASV, "index.html") if same else None)
    try:
        link_or_copy(folder.page, site / OTHER / folder.name / folder.page.name)
    except OSError as exc:
        return PlacedFolder(Folder(folder.folder, folder.name,
                                   f"{folder.what} (its page: {_one_line(exc)})"))
    return PlacedFolder(folder, href(OTHER, folder.name, folder.page.name))


def find_asv(explicit: Path | None, results_dir: Path, others: Sequence[Folder]
             ) -> tuple[Path | None, str]:
    """asv's published site and where it was looked for: ``explicit``, else asv.conf.json's
    ``html_dir`` (the config in the current folder, else beside the results folder), else a
    folder of the results folder that is one."""
    if explicit is not None:
        return explicit, f"asv's site from {explicit}."
    looked = [Path.cwd(), results_dir.resolve().parent]
    conf_html = asv_html_dir(looked)
    if conf_html is not None and (conf_html / "index.html").is_file():
        return conf_html, f"asv's site from {conf_html} (asv.conf.json's html_dir)."
    found = next((f.folder for f in others if f.asv_site), None)
    if found is not None:
        return found, f"asv's site from {found}."
    where = (f"asv.conf.json's html_dir {conf_html} has no index.html" if conf_html is not None
             else "no asv.conf.json in the current folder or beside the results folder")
    return None, (f"No asv site: {where}. asv run then asv publish make one; "
                  "statebench publish --asv-html DIR names it.")


def build_site(results_dir: Path, out: Path, asv_html: Path | None = None,
               say: Callable[[str], None] = lambda line: None) -> Published:
    """Publish ``results_dir`` as a static site in ``out`` (replaced whole; see the module
    docstring). ``say`` gets a line per step (the CLI's progress)."""
    say(f"reading {results_dir} ...")
    runs, others = scan(results_dir)
    asv_source, asv_note = find_asv(asv_html, results_dir, others)
    groups = series_of(runs)
    with building(out) as site:
        all_series = []
        for group in groups:
            say(f"placing {len(group)} run(s) of {group[-1].comparison.label}")
            all_series.append(Series(group[-1].comparison, _placed_runs(group, site)))
        folders = [_place_folder(f, site, asv_source) for f in others]
        asv = Asv(None, asv_note)
        if asv_source is not None:
            link_tree(asv_source, site / ASV)
            asv = Asv(href(ASV, "index.html"), f"{asv_note} {ASV_SERVED}")
        write_text_atomic(site / INDEX_FILE, index_html(results_dir, all_series, folders, asv))
        write_text_atomic(site / MARKER, json.dumps(
            {"statebench_site": 1, "results_dir": str(results_dir.resolve()),
             "published_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
    placed = [r for s in all_series for r in s.runs]
    return Published(
        index=out / INDEX_FILE, runs=len(placed),
        incomplete=sum(bool(r.entry.incomplete) for r in placed), comparisons=len(all_series),
        diffs=sum(r.diff is not None for r in placed),
        unreadable=[f"{f.folder.name}: {f.folder.what}" for f in folders if f.folder.unreadable],
        asv=asv_source)
