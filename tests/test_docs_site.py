"""The docs site builds in strict mode (no broken links, every page in the nav), and the README
stays a short way in (issue 19): at most 200 lines, the two quick-start commands, links into
the site."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
PAGES = ("index.md", "guide.md", "ttl.md", "checkpoints.md", "operators.md", "flink-lanes.md",
         "report.md", "performance.md", "architecture.md")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1",
                                                          "PATH": "/usr/bin:/bin"},
    )


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    proc = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for page in PAGES:
        name = "index.html" if page == "index.md" else f"{page[:-3]}/index.html"
        assert (tmp_path / "site" / name).is_file(), name


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    shutil.copytree(REPO / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("results"))
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    guide = tmp_path / "docs" / "guide.md"
    guide.write_text(guide.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    proc = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0
    assert "no-such-page.md" in proc.stderr


def test_the_readme_is_short_and_points_into_the_site() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines"
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    quick = re.search(r"## Quick start\n\n```sh\n(.+)\n(.+)\n```", text)
    assert quick is not None, "README.md lost its quick-start block"
    assert quick.group(2) == ci, "the README's test command is not what .ci/run runs"
    assert "statebench compare" in quick.group(1)
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", text))
    assert {"guide.md", "ttl.md", "flink-lanes.md", "performance.md", "architecture.md"} <= linked
    for page in linked:
        assert (REPO / "docs" / page).is_file(), page
