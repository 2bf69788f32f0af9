"""``statebench publish``: a results folder of real (tiny, in-process) runs becomes a static site
whose index lists every run with the report's own answers, links each report and the diff
between consecutive runs of a comparison, keeps incomplete runs (marked) and unreadable folders
(one line each), links asv's site, and is clicked through in Chromium without an error.
"""

from __future__ import annotations

import json
import os
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.report import browsing
from workloads import cli
from workloads.report.decision import decisions
from workloads.report.load import load_run
from workloads.report.site_files import MARKER, asv_html_dir

SPEC = """name = "{name}"
description = "a tiny keyed workload for the site's tests"
seed = 1

[keys]
count = 500
distribution = "uniform"

[operations]
value_get = 0.5
value_update = 0.5

[values]
type = "bytes"
size = {{ distribution = "constant", bytes = 16 }}

[time]
rate = 20_000
events = 4_000

[state]
ttl_ms = 20
update_type = "OnCreateAndWrite"
visibility = "NeverReturnExpired"
time_characteristic = "EventTime"
strategies = ["none", "timer"]

[checkpoints]
interval_ms = 100
mode = "full"
"""


def _compare(spec: Path, backends: str, results: Path) -> Path:
    before = set(results.iterdir()) if results.exists() else set()
    status = cli.main(["compare", str(spec), "--in-process", "--repetitions", "2",
                       "--backend", backends, "--results-dir", str(results)])
    assert status == 0
    (made,) = set(results.iterdir()) - before
    return made


def _incomplete_copy(run: Path, name: str) -> Path:
    """``run`` again as a run that was interrupted after its first scenario (run.json says so;
    written after its report, so the site renders that run's report itself)."""
    copy = run.parent / name
    copy.mkdir()
    for f in ("rows.parquet", "report.html"):
        os.link(run / f, copy / f)
    meta = json.loads((run / "run.json").read_text())
    later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 5))
    meta.update(run_id=name, created_utc=later, complete=False, progress={
        "stopped": "interrupted", "error": "", "scenarios": 2, "scenarios_finished": 1,
        "jobs": 4, "jobs_finished": 2, "finished": [], "unfinished": [], "failed": []})
    (copy / "run.json").write_text(json.dumps(meta))
    later_mtime = (run / "report.html").stat().st_mtime + 10
    os.utime(copy / "run.json", (later_mtime, later_mtime))
    return copy


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A results folder: two runs of one comparison, one of another, an incomplete run of the
    first, a folder that is no run, a broken run, a regress check and asv's site."""
    root = tmp_path_factory.mktemp("publish")
    specs = root / "specs"
    specs.mkdir()
    for name in ("tiny-a", "tiny-b"):
        (specs / f"{name}.toml").write_text(SPEC.format(name=name))
    res = root / "results"
    a1 = _compare(specs / "tiny-a.toml", "heap", res)
    time.sleep(1.1)  # run.json's creation time has whole seconds: the runs' order is certain
    a2 = _compare(specs / "tiny-a.toml", "heap", res)
    b1 = _compare(specs / "tiny-b.toml", "heap,rocksdb", res)
    a3 = _incomplete_copy(a2, "a3-interrupted")
    (res / "notes").mkdir()
    (res / "notes" / "todo.txt").write_text("not a run\n")
    (res / "broken").mkdir()
    (res / "broken" / "rows.parquet").write_bytes(b"this is not parquet at all")
    (res / "broken" / "run.json").write_text("{}")
    (res / "regress-x").mkdir()
    (res / "regress-x" / "regress.json").write_text("{}")
    (res / "regress-x" / "regress.html").write_text("<!DOCTYPE html><title>regress</title>")
    (res / "html").mkdir()  # what `asv publish` writes (its html_dir here)
    for f, text in (("index.html", "<!DOCTYPE html><title>asv</title>"), ("asv.js", ""),
                    ("index.json", "{}")):
        (res / "html" / f).write_text(text)
    return {"root": root, "results": res, "a1": a1, "a2": a2, "a3": a3, "b1": b1}


@pytest.fixture(scope="module")
def site(results: dict[str, Path]) -> Path:
    out = results["root"] / "site"
    cwd = Path.cwd()
    os.chdir(results["root"])  # no asv.conf.json here: asv's site is the folder found
    try:
        assert cli.main(["publish", str(results["results"]), "-o", str(out)]) == 0
    finally:
        os.chdir(cwd)
    return out


class _Index(HTMLParser):
    """The index's run rows (data-run -> their attributes, links and answers) and every href."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict] = {}
        self.hrefs: list[str] = []
        self.folders: dict[str, str] = {}
        self._row: dict | None = None
        self._workload: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and a.get("data-run"):
            self._row = self.rows[a["data-run"]] = {
                "complete": a["data-complete"], "links": [], "answers": {}}
        elif tag == "li" and a.get("data-folder"):
            self.folders[a["data-folder"]] = a["data-state"] or ""
        elif tag == "a" and a.get("href"):
            self.hrefs.append(a["href"] or "")
            if self._row is not None:
                self._row["links"].append(a["href"])
        elif tag == "div" and a.get("data-workload") and self._row is not None:
            self._workload = a["data-workload"]
        elif tag == "span" and a.get("data-backend") and self._row is not None:
            self._row["answers"][(self._workload, a["data-backend"])] = a["data-strategy"] or None

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None


def _index(site: Path) -> _Index:
    parsed = _Index()
    parsed.feed((site / "index.html").read_text(encoding="utf-8"))
    return parsed


def test_the_index_lists_every_run_with_the_reports_answers(
        results: dict[str, Path], site: Path) -> None:
    index = _index(site)
    runs = {k: results[k] for k in ("a1", "a2", "a3", "b1")}
    assert set(index.rows) == {p.name for p in runs.values()}
    assert index.rows[results["a3"].name]["complete"] == "no"  # listed and marked
    assert {index.rows[p.name]["complete"] for k, p in runs.items() if k != "a3"} == {"yes"}
    for run_dir in runs.values():
        run = load_run(run_dir)
        expected = {(w, row.backend): None if row.recommended is None else row.recommended.strategy
                    for w in run.workloads for rows in decisions(run, w).values() for row in rows}
        assert index.rows[run_dir.name]["answers"] == expected
    # a real answer, not only "no recommendation": the TTL removes expired entries
    assert index.rows[results["a1"].name]["answers"][("tiny-a", "heap")] == "timer"
    text = (site / "index.html").read_text(encoding="utf-8")
    assert "interrupted" in text and "incomplete run" in text


def test_links_resolve_reports_are_hard_links_and_diffs_follow_the_comparison(
        results: dict[str, Path], site: Path) -> None:
    index = _index(site)
    for link in index.hrefs:
        if not link.startswith("#"):
            assert (site / unquote(link)).is_file(), link
            assert "://" not in link and not link.startswith("/")  # relative: opens from disk
    a1, a2, a3, b1 = (results[k].name for k in ("a1", "a2", "a3", "b1"))
    assert f"runs/{a1}/report.html" in index.rows[a1]["links"]
    same = (site / "runs" / a1 / "report.html").stat()
    assert same.st_ino == (results["a1"] / "report.html").stat().st_ino  # no space taken
    # the incomplete run's report is older than its run.json: rendered for the site
    assert (site / "runs" / a3 / "report.html").stat().st_ino != (
        results["a3"] / "report.html").stat().st_ino
    assert 'data-banner="incomplete"' in (site / "runs" / a3 / "report.html").read_text()
    # a2 is diffed from a1 (same comparison, the one before); a3 (incomplete) and b1 (another
    # comparison, alone) are not; no diff of a1 (the first)
    assert f"runs/{a2}/diff.html" in index.rows[a2]["links"]
    assert sorted(p.parent.name for p in site.glob("runs/*/diff.html")) == [a2]
    diff = (site / "runs" / a2 / "diff.html").read_text(encoding="utf-8")
    assert a1 in diff and a2 in diff
    assert not any("diff.html" in link for r in (a1, a3, b1) for link in index.rows[r]["links"])
    assert (site / MARKER).is_file()


def test_folders_that_are_not_runs_are_listed_and_asv_is_linked(site: Path) -> None:
    index = _index(site)
    assert index.folders == {"notes": "unreadable", "broken": "unreadable",
                             "regress-x": "other", "html": "other"}
    text = (site / "index.html").read_text(encoding="utf-8")
    assert "rows.parquet is missing" in text and "not a readable Parquet file" in text
    assert "other/regress-x/regress.html" in index.hrefs
    assert "asv/index.html" in index.hrefs and (site / "asv" / "asv.js").is_file()


def test_publishing_again_replaces_the_site(results: dict[str, Path], site: Path,
                                            tmp_path: Path) -> None:
    out = tmp_path / "again"
    assert cli.main(["publish", str(results["results"]), "-o", str(out)]) == 0
    (out / "runs" / "stale.html").write_text("from an earlier publish")
    assert cli.main(["publish", str(results["results"]), "-o", str(out)]) == 0
    assert not (out / "runs" / "stale.html").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".statebench")]


def test_asv_html_dir_is_read_from_a_commented_config(tmp_path: Path) -> None:
    (tmp_path / "asv.conf.json").write_text(
        '{\n  // asv allows comments\n  "version": 1, "url": "http://x//y",\n'
        '  "html_dir": "results/html"  // where the site goes\n}\n')
    assert asv_html_dir([tmp_path / "nowhere", tmp_path]) == tmp_path / "results/html"
    assert asv_html_dir([tmp_path / "nowhere"]) is None


@pytest.mark.parametrize("case", ["missing", "file", "empty", "inside", "around", "under-file",
                                  "foreign"])
def test_bad_input_is_one_line_and_exit_2_before_any_work(
        case: str, results: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    res = results["results"]
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "mine.txt").write_text("keep me")
    args, says = {
        "missing": ([str(tmp_path / "nope"), "-o", str(tmp_path / "s")], "no such folder"),
        "file": ([str(tmp_path / "a-file"), "-o", str(tmp_path / "s")], "is a file"),
        "empty": ([str(tmp_path / "empty"), "-o", str(tmp_path / "s")], "holds no folders"),
        "inside": ([str(res), "-o", str(res / "site")], "is inside RESULTS_DIR"),
        "around": ([str(res), "-o", str(res.parent)], "holds RESULTS_DIR"),
        "under-file": ([str(res), "-o", str(tmp_path / "a-file" / "s")], "which is a file"),
        "foreign": ([str(res), "-o", str(tmp_path / "foreign")], "not an earlier site"),
    }[case]
    before = sorted(p.name for p in res.iterdir())
    assert cli.main(["publish", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("statebench: error: ") and says in err[0], err
    assert sorted(p.name for p in res.iterdir()) == before
    assert not (tmp_path / "s").exists()
    assert (tmp_path / "foreign" / "mine.txt").read_text() == "keep me"


@pytest.mark.browser
def test_the_site_is_clicked_through_in_chromium(browser: object, results: dict[str, Path],
                                                 site: Path) -> None:
    """Index -> a run's report (its decision table says what the index said) -> back -> the
    diff; every page from disk, the network blocked, no console error."""
    offline = browsing.offline_page(browser)
    page, errors, external = offline.page, offline.errors, offline.external
    page.goto((site / "index.html").as_uri(), wait_until="load")
    a1, a2 = results["a1"].name, results["a2"].name
    rows = page.locator("tr[data-run]")
    assert rows.count() == 4
    pick = page.locator(f'tr[data-run="{a2}"] div[data-workload="tiny-a"] '
                        'span[data-backend="heap"] strong').inner_text()
    assert pick == "timer"
    page.locator(f'tr[data-run="{a2}"] div[data-workload="tiny-a"] summary').click()
    assert "fewer stored entries" in page.locator(
        f'tr[data-run="{a2}"] div[data-workload="tiny-a"] details').inner_text()

    page.locator(f'tr[data-run="{a2}"] a[href$="report.html"]').click()
    page.wait_for_load_state("load")
    assert page.url.endswith(f"/runs/{a2}/report.html")
    page.wait_for_function("() => document.querySelector('.js-plotly-plot .main-svg')",
                           timeout=15_000)
    recommended = page.locator('table.decision[data-workload="tiny-a"] tr[data-backend="heap"] '
                               'td[data-cell="recommended"] strong').first.inner_text()
    assert recommended == pick

    page.go_back(wait_until="load")
    page.locator(f'tr[data-run="{a2}"] a[href$="diff.html"]').click()
    page.wait_for_load_state("load")
    assert page.url.endswith(f"/runs/{a2}/diff.html")
    heading = page.locator("h1").inner_text()
    assert "statebench diff" in heading and a1 in heading and a2 in heading

    page.go_back(wait_until="load")
    page.locator('li[data-folder="regress-x"] a').click()
    page.wait_for_load_state("load")
    assert page.title() == "regress"
    page.close()
    assert errors == [] and external == []
