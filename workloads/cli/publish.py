"""``statebench publish RESULTS_DIR -o SITE``: every run of a results folder as a static site.

SITE/index.html lists every run, grouped by comparison (the same workloads, backends and
strategies), newest first: its date, commit, each workload's recommended strategy per backend
(the report's own answer, its reason one click down), a link to its report and one to the diff
from the comparison's previous complete run. Incomplete runs are listed and marked; folders
that cannot be read are listed with one line of why; asv's published site is linked where
there is one. Every page is a static, self-contained file that opens from disk. Reports are
hard links of the runs' own (no space taken), copies where the filesystem cannot link.

SITE is replaced whole, so it must be a new folder, an empty one, or an earlier site; it must
be outside RESULTS_DIR (the site is no run). Bad input ends in one line, exit 2, before any
work.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from workloads.cli.options import CliError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "publish", help="a static site of every run in a results folder, with diffs",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="the folder the runs are in")
    p.add_argument("-o", "--output", required=True, metavar="SITE",
                   help="the site's folder (new, empty, or an earlier site: it is replaced)")
    p.add_argument("--asv-html", default=None, metavar="DIR",
                   help="asv's published site to link (default: asv.conf.json's html_dir, "
                        "when it holds an index.html)")
    p.set_defaults(handler=publish_command)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def results_folder(text: str) -> Path:
    """RESULTS_DIR: a readable folder with at least one folder in it."""
    from workloads.cli.checks import refuse_empty
    from workloads.report.site_scan import visible_folders

    refuse_empty("RESULTS_DIR", text)
    path = Path(text)
    if not path.exists():
        raise CliError(f"RESULTS_DIR {text}: no such folder")
    if not path.is_dir():
        raise CliError(f"RESULTS_DIR {text}: is a file, not a folder of runs")
    try:
        found = visible_folders(path)
    except OSError as exc:
        raise CliError(f"RESULTS_DIR {text}: cannot be read ({exc.strerror or exc})") from None
    if not found:
        raise CliError(f"RESULTS_DIR {text}: holds no folders, so no runs to publish (a run "
                       "writes results/<run-id>/)")
    return path


def site_folder(text: str, results: Path) -> Path:
    """SITE: outside RESULTS_DIR (and not around it), replaceable, its parent writable."""
    from workloads.cli.checks import refuse_empty, writable_dir
    from workloads.report.site_files import MARKER, replaceable

    refuse_empty("-o", text)
    out = Path(text)
    where, inputs = out.resolve(), results.resolve()
    if _inside(where, inputs):
        raise CliError(f"-o {text}: is inside RESULTS_DIR {results}; the next publish would "
                       "read the site as a folder of results: give a folder outside it")
    if _inside(inputs, where):
        raise CliError(f"-o {text}: holds RESULTS_DIR {results}, and the site replaces its "
                       "folder whole: give a folder of its own")
    if out.exists() and not out.is_dir():
        raise CliError(f"-o {text}: is a file, not a folder")
    if not replaceable(out):
        raise CliError(f"-o {text}: is a folder with files and not an earlier site (no "
                       f"{MARKER}); the site replaces its folder whole: give a new or empty "
                       "folder")
    writable_dir("-o", out.parent, shown=text)
    if out.exists() and not os.access(out, os.W_OK | os.X_OK):
        raise CliError(f"-o {text}: cannot be replaced (not writable)")
    return out


def asv_folder(text: str | None) -> Path | None:
    if text is None:
        return None
    path = Path(text)
    if not (path / "index.html").is_file():
        raise CliError(f"--asv-html {text}: has no index.html (not a site `asv publish` wrote)")
    return path


def publish_command(args: argparse.Namespace) -> int:
    from workloads.report.site import build_site
    from workloads.report.site_index import count

    results = results_folder(args.results_dir)
    out = site_folder(args.output, results)
    asv = asv_folder(args.asv_html)
    done = build_site(results, out, asv, say=lambda line: print(line, file=sys.stderr))
    print(f"{count(done.runs, 'run')} ({done.incomplete} incomplete) in "
          f"{count(done.comparisons, 'comparison')}, {count(done.diffs, 'diff')}"
          + (f"; asv's site from {done.asv}" if done.asv else ""))
    for line in done.unreadable:
        print(f"unreadable: {line}", file=sys.stderr)
    print(f"site:    {done.index}")
    return 0
