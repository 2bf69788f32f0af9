"""The site's index page: a summary of the comparisons first, then every run with its answers.

Laid out as asv's and Criterion's published sites are: one index, the summary first (one line
per comparison: what it compared, how many runs, the newest), then each comparison's history,
newest run first, each run with its date, commit, the report's answer per workload and backend
(the recommended strategy; the sentence that says why one click down), a link to its report
and one to the diff from the comparison's previous complete run. Folders that are not runs
follow, each with one line, and asv's site. Self-contained like the reports (inline CSS, no
script, nothing fetched): it opens from disk.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import quote

from workloads.report.fmt import MISSING, TIMES
from workloads.report.site_scan import Comparison, Folder, Headline, RunEntry
from workloads.report.template import page

#: A few rules the report's stylesheet lacks (the page reuses it: one look for every page).
CSS = """
table.runs td.answers { min-width: 24rem; }
div.answers { margin: 0 0 .35rem; }
div.answers .workload { font-weight: 600; }
div.answers .none { color: var(--muted); font-style: italic; }
div.answers details summary { cursor: pointer; color: var(--accent); font-size: .8rem; }
div.answers details ul { margin: .2rem 0; padding-left: 1.1rem; font-size: .8rem; }
tr[data-complete="no"] td { background: var(--warn-bg); }
.warn-line { color: var(--warn); font-size: .8rem; display: block; }
.note { color: var(--muted); font-size: .8rem; display: block; }
"""


@dataclass(frozen=True)
class PlacedRun:
    """A run as the site placed it: hrefs relative to the index (None: no page, and why)."""

    entry: RunEntry
    report: str | None
    report_note: str = ""
    diff: str | None = None
    diff_from: str | None = None
    diff_note: str = ""


@dataclass(frozen=True)
class Series:
    """One comparison's runs, newest first."""

    comparison: Comparison
    runs: tuple[PlacedRun, ...]


@dataclass(frozen=True)
class PlacedFolder:
    """A folder that is not a readable run, with its page in the site (if it has one)."""

    folder: Folder
    page: str | None = None


@dataclass(frozen=True)
class Asv:
    """asv's published site: its href in the site (None: none found) and a line about it."""

    href: str | None
    note: str


def count(n: int, noun: str) -> str:
    """'1 run', '3 runs'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def href(*parts: str) -> str:
    """A relative URL from path parts (folder names may hold any character)."""
    return "/".join(quote(p) for p in parts)


def _link(url: str | None, text: str) -> str:
    return escape(text) if url is None else f'<a href="{escape(url)}">{escape(text)}</a>'


def _when(created: str) -> str:
    return created.replace("T", " ") if created else MISSING


def _answers(headline: Headline) -> str:
    picks = []
    for a in headline.answers:
        pick = (f"<strong>{escape(a.strategy)}</strong>" if a.strategy is not None
                else '<span class="none">no recommendation</span>')
        picks.append(f'<span class="answer" data-backend="{escape(a.backend)}" '
                     f'data-strategy="{escape(a.strategy or "")}">{escape(a.backend)} → '
                     f"{pick}</span>")
    why = [f"<li>{headline.sweep.html}</li>"] if headline.sweep is not None else []
    why += [f"<li><strong>{escape(a.backend)}</strong>: {a.sentence.html}</li>"
            for a in headline.answers]
    details = (f"<details><summary>why</summary><ul>{''.join(why)}</ul></details>"
               if why else "")
    body = ", ".join(picks) or f'<span class="none">{MISSING} nothing ran to decide on</span>'
    return (f'<div class="answers" data-workload="{escape(headline.workload)}">'
            f'<span class="workload">{escape(headline.workload)}</span>: {body}{details}</div>')


def _run_row(placed: PlacedRun) -> str:
    run = placed.entry
    status = ""
    if run.incomplete:
        status = f'<span class="warn-line">{escape(run.incomplete)}</span>'
    report = _link(placed.report, run.name)
    if placed.report_note:
        report += f'<span class="note">{escape(placed.report_note)}</span>'
    answers = "".join(_answers(h) for h in run.headlines) or MISSING
    if placed.diff is not None:
        diff = _link(placed.diff, f"diff from {placed.diff_from}")
    else:
        diff = f'<span class="note">{escape(placed.diff_note)}</span>'
    commit = escape(run.commit[:12]) if run.commit else MISSING
    complete = "no" if run.incomplete else "yes"
    return (f'<tr data-run="{escape(run.name)}" data-complete="{complete}">'
            f"<td>{escape(_when(run.created))}</td><td>{report}{status}</td>"
            f'<td><code title="{escape(run.commit)}">{commit}</code></td>'
            f'<td class="answers">{answers}</td><td>{diff}</td></tr>')


def _series(series: Series) -> str:
    cid = series.comparison.id
    rows = "".join(_run_row(r) for r in series.runs)
    return (f'<div class="comparison" id="cmp-{cid}" data-comparison="{cid}">'
            f"<h3>{escape(series.comparison.label)}</h3><div class=\"scroll\">"
            '<table class="runs"><thead><tr><th>created (UTC)</th><th>run, its report</th>'
            "<th>commit</th><th>what to pick: each workload's recommended strategy per "
            "backend</th><th>against the previous run</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div></div>")


def _summary(all_series: list[Series]) -> str:
    if not all_series:
        return "<p>No readable run in this folder.</p>"
    rows = []
    for s in all_series:
        diffs = sum(r.diff is not None for r in s.runs)
        rows.append(f'<tr data-comparison="{s.comparison.id}">'
                    f"<td>{_link('#cmp-' + s.comparison.id, s.comparison.label)}</td>"
                    f'<td class="num">{len(s.runs)}</td><td class="num">{diffs}</td>'
                    f"<td>{escape(_when(s.runs[0].entry.created))}</td></tr>")
    return ('<p class="evidence">Runs are of the same comparison when they compared the same '
            "scenarios: the same workloads on the same backends with the same strategies. Each "
            "complete run is diffed against the comparison's previous complete one.</p>"
            '<div class="scroll"><table class="summary"><thead><tr><th>comparison: workloads '
            f"{TIMES} backends {TIMES} strategies</th><th>runs</th><th>diffs</th>"
            "<th>newest (UTC)</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></div>")


def _folders(folders: list[PlacedFolder]) -> str:
    items = []
    for f in folders:
        name = _link(f.page, f.folder.name)
        state = "unreadable" if f.folder.unreadable else "other"
        what = f"not readable as a run: {f.folder.what}" if f.folder.unreadable else f.folder.what
        items.append(f'<li data-folder="{escape(f.folder.name)}" data-state="{state}">'
                     f"<code>{name}</code>: {escape(what)}</li>")
    return f'<ul class="findings">{"".join(items)}</ul>'


def _asv(asv: Asv) -> str:
    text = "asv: every benchmark across commits"
    link = "" if asv.href is None else f"<p>{_link(asv.href, text)}</p>"
    return f'{link}<p class="evidence">{escape(asv.note)}</p>'


def index_html(results_dir: Path, all_series: list[Series], folders: list[PlacedFolder],
               asv: Asv) -> str:
    """The whole index page."""
    runs = [r for s in all_series for r in s.runs]
    incomplete = sum(bool(r.entry.incomplete) for r in runs)
    diffs = sum(r.diff is not None for r in runs)
    unreadable = sum(f.folder.unreadable for f in folders)
    published = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime())
    facts = [f"published {published}", f"{count(len(runs), 'run')} ({incomplete} incomplete)",
             count(len(all_series), "comparison"), count(diffs, "diff")]
    if unreadable:
        facts.append(f"{count(unreadable, 'folder')} unreadable")
    header = (f"<h1>statebench runs — <code>{escape(str(results_dir))}</code></h1>"
              f"<p>{escape(' · '.join(facts))}"
              + (f" · {_link(asv.href, 'asv')}" if asv.href else "") + "</p>")
    sections = [("comparisons", "Comparisons", f"<style>{CSS}</style>{_summary(all_series)}"),
                ("runs", "Runs, newest first",
                 "\n".join(_series(s) for s in all_series) or f"<p>{MISSING}</p>")]
    if folders:
        sections.append(("folders", "Folders that are not runs", _folders(folders)))
    sections.append(("asv", "asv", _asv(asv)))
    return page(f"statebench runs: {results_dir}", header, sections, with_plotly=False)
