"""Headless Chromium for every browser test, got one way (the ``browser`` fixture,
tests/conftest.py), whichever test runs first or alone.

Chromium comes from Debian (``/usr/bin/chromium``, or ``chromium`` on the PATH), driven by
Playwright's Python API; we never call ``playwright install`` (it downloads browsers, which this
environment cannot do). A missing Chromium is installed with ``apt-get`` once per machine (a
lock keeps two pytest-xdist workers from running apt at once).

Whether a browser that cannot be had skips or fails depends on the session, as for the Flink
oracle (tests/flink/conftest.py), not on a variable CI may forget to set:

* the ``test`` extra is installed (Playwright is one of its packages: CI's
  ``pip install -e '.[test,flink]'``), or ``STATEBENCH_REQUIRE_BROWSER`` is set: no Chromium,
  or one that does not start, FAILS the test;
* neither: the test skips, saying why (a checkout without the extra still tests the rest).
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

from tests.required import required

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REQUIRE_ENV = "STATEBENCH_REQUIRE_BROWSER"
#: The test extra's package that drives the browser: installed means the extra is.
DISTRIBUTION = "playwright"
INSTALL = "apt-get update && apt-get install -y chromium"
INSTALL_TIMEOUT_S = 900


def browser_required() -> str | None:
    """Why this session must run the browser tests, or None when it may skip them."""
    return required(REQUIRE_ENV, DISTRIBUTION, "test")


def fail_or_skip(why: str) -> NoReturn:
    """The browser cannot be had: fail when this session must run browser tests, else skip."""
    reason = browser_required()
    if reason:
        pytest.fail(f"no headless browser although {reason}: {why}", pytrace=False)
    pytest.skip(f"{why} (install the test extra: pip install -e '.[test]')")


def sync_api() -> ModuleType:
    """``playwright.sync_api``, or fail/skip saying it is missing."""
    try:
        import playwright.sync_api as api
    except ImportError as exc:
        fail_or_skip(f"playwright cannot be imported ({exc})")
    return api


def find() -> Path | None:
    """Chromium's executable, if this machine has one."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return Path(found)
    return CHROMIUM if CHROMIUM.exists() else None


def _install() -> str | None:
    """Install Debian's chromium (we run as root); None on success, else why it failed."""
    if shutil.which("apt-get") is None:
        return "apt-get is unavailable"
    lock_path = Path(tempfile.gettempdir()) / "statebench-chromium-install.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install per machine; the others wait for it
        if find() is not None:
            return None
        try:
            subprocess.run(INSTALL, shell=True, check=True, timeout=INSTALL_TIMEOUT_S,
                           capture_output=True)
        except (subprocess.SubprocessError, OSError) as exc:
            return f"`{INSTALL}` failed: {exc}"
    return None


def executable() -> Path:
    """Chromium's path, installed if missing; fails or skips (:func:`fail_or_skip`) without."""
    found = find()
    if found is None:
        problem = _install()
        found = find()
        if found is None:
            fail_or_skip(f"chromium is missing and {problem or 'apt-get did not install it'}")
    return found
