"""The site's files: pages placed by hard link, asv's site found, the folder swapped in whole.

Reports are placed by hard link, a copy only where the filesystem cannot link (another device,
no links). A report is ~5-7 MB, most of it plotly.js inlined so it opens offline; a link costs no
space, and the site stays one folder that opens from disk and can be copied or served anywhere
(a relative link into the results folder would break when either moved, and serving the site
would mean serving the whole results folder). A link cannot change a run either: every writer of
these pages replaces the file by a rename (``results.store.write_text_atomic``; ``asv publish``
deletes its folder first), so re-rendering a run's report detaches the site's link, and the site
keeps the page it published until it is published again.

The site is built in a hidden, owner-tagged sibling of its folder (``run_tempdirs``: removed if
the build fails, swept if the process is killed) and renamed into place, so a reader never sees
half a site and a failed publish leaves the old one. Only a folder that is new, empty or an
earlier site (it holds :data:`MARKER`) is ever replaced: the CLI refuses any other.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from workloads.run import run_tempdirs

#: The file that marks a folder as a statebench site (publish may replace it).
MARKER = ".statebench-site.json"
ASV_CONF = "asv.conf.json"
#: asv's own default html_dir (when its config names none).
ASV_DEFAULT_HTML = "html"


def link_or_copy(src: str | Path, dst: str | Path) -> Path:
    """``dst`` as a hard link of ``src``; a copy where the filesystem cannot link."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:  # EXDEV (another device), EPERM/ENOTSUP (no hard links there)
        shutil.copy2(src, dst)
    return dst


def link_tree(src: Path, dst: Path) -> Path:
    """A folder's files placed as :func:`link_or_copy` places one (symlinks followed)."""
    shutil.copytree(src, dst, copy_function=link_or_copy)
    return dst


def _without_comments(text: str) -> str:
    """asv.conf.json is JSON with ``//`` comments (asv reads it with json5): drop them,
    leaving ``//`` inside strings alone."""
    out: list[str] = []
    i, quoted = 0, False
    while i < len(text):
        ch = text[i]
        if quoted:
            out.append(ch)
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def asv_html_dir(conf_dirs: Iterable[Path]) -> Path | None:
    """Where ``asv publish`` writes its site: ``html_dir`` of the first asv.conf.json found in
    ``conf_dirs``, relative to that folder (asv is run where its config is); None when there
    is no config, or it cannot be read."""
    for folder in conf_dirs:
        conf = folder / ASV_CONF
        if not conf.is_file():
            continue
        try:
            doc = json.loads(_without_comments(conf.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None
        html = doc.get("html_dir", ASV_DEFAULT_HTML) if isinstance(doc, dict) else None
        return folder / html if isinstance(html, str) and html else None
    return None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def is_site(folder: Path) -> bool:
    """An earlier statebench site (publish may replace it)."""
    return (folder / MARKER).is_file()


def replaceable(folder: Path) -> bool:
    """A folder publish may write its site to: missing, empty, or an earlier site."""
    if not folder.exists():
        return True
    return folder.is_dir() and (is_site(folder) or not any(folder.iterdir()))


@contextmanager
def building(out: Path) -> Iterator[Path]:
    """A new folder to build the site in; when the block ends without an error it replaces
    ``out`` (an earlier site, an empty folder, or nothing), else it is removed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    run_tempdirs.sweep([out.parent])  # builds killed earlier (kill -9)
    tmp = Path(run_tempdirs.make(".statebench-site-", dir=out.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # a folder like any other (mkdtemp's is private)
        yield tmp
        old = Path(run_tempdirs.make(".statebench-site-old-", dir=out.parent))
        try:
            if out.exists():
                os.rename(out, old / "site")
            os.rename(tmp, out)
            run_tempdirs.forget(tmp)
        finally:
            run_tempdirs.remove(old)
    finally:
        run_tempdirs.remove(tmp)  # (missing is fine: renamed into place)
