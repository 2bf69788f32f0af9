"""Fixtures shared by every test package: backends of both kinds on a manual clock, the
default comparison's run folder, and headless Chromium (``browser``: every browser test's)."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import backends as B
from backends import BACKEND_KINDS
from tests import chromium as browsers


@pytest.fixture
def clock() -> B.ManualClock:
    return B.ManualClock(0)


@pytest.fixture
def make_backend(tmp_path: Path) -> Iterator[Callable[..., B.KeyedStateBackend]]:
    """Create backends of any kind in tmp_path; all are closed at the end of the test."""
    made: list[B.KeyedStateBackend] = []

    def make(kind: str, clock: object = None, **options: object) -> B.KeyedStateBackend:
        if kind == "rocksdb" and "path" not in options:
            options["path"] = tmp_path / f"rocksdb-{len(made)}"
        backend = B.create_backend(kind, clock=clock, **options)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


@pytest.fixture(params=BACKEND_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def backend(kind: str, clock: B.ManualClock, make_backend) -> B.KeyedStateBackend:
    """One backend per kind, on the manual clock: every TTL rule is tested on both."""
    return make_backend(kind, clock)


#: The default matrix's in-process comparison the CLI tests and the browser check share (one
#: run: each took a minute or more of CI on its own).
DEFAULT_COMPARISON_ARGS = ("--in-process", "--events", "30000", "--repetitions", "2")


def once_per_session(factory: pytest.TempPathFactory, name: str,
                     make: Callable[[Path], None]) -> Path:
    """A folder that ``make`` fills once per test session. Under pytest-xdist a session-scoped
    fixture runs once per worker; here the first worker to need the folder fills it under a
    lock in the workers' shared temp folder and the others wait for it and reuse it."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        folder = factory.mktemp(name)
        make(folder)
        return folder
    root = factory.getbasetemp().parent
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def default_comparison(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`statebench compare` of the shipped default workloads, small and in-process: its run
    folder (rows, run.json, report.html). One run per session, whichever worker needs it
    first (two modules read it)."""
    from workloads import cli

    def compare(results: Path) -> None:
        status = cli.main(["compare", *DEFAULT_COMPARISON_ARGS, "--results-dir", str(results)])
        assert status == 0

    (run_dir,) = list(once_per_session(tmp_path_factory, "compare-results", compare).iterdir())
    return run_dir


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Chromium's executable, installed if missing; a session without it fails where the test
    extra is installed, else skips (tests/chromium.py)."""
    return browsers.executable()


@pytest.fixture(scope="session")
def browser(chromium: Path) -> Iterator[object]:
    """One headless Chromium per test session (per pytest-xdist worker), driven by Playwright:
    every browser test takes it, so none depends on another having run first."""
    api = browsers.sync_api()
    with api.sync_playwright() as pw:
        try:
            instance = pw.chromium.launch(executable_path=str(chromium), args=browsers.ARGS,
                                          headless=True)
        except api.Error as exc:
            browsers.fail_or_skip(f"{chromium} does not start: {str(exc).splitlines()[0]}")
        yield instance
        instance.close()
