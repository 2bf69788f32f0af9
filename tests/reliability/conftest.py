"""Helpers for the reliability tests: run the CLI in-process and read its one-line error."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from backends.flink.errors import FlinkUnavailableError
from tests.flink.conftest import fail_or_skip
from workloads import cli

#: A progress line on stderr (``workloads.cli.progress``): a job that runs over 10 s, as one
#: under load does, prints them while it runs; they are not the command's one line.
PROGRESS = re.compile(r"^statebench: \S+ \d+/\d+ (jobs|runs)\b")
SPEC_HEAD = 'name = "t"\n'
GENERATED = """
[keys]
count = 100
distribution = "uniform"
[operations]
value_get = 0.5
value_update = 0.5
[time]
rate = 1000
events = 50
"""


def write_spec(folder: Path, text: str, name: str = "spec.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def fails(capsys: pytest.CaptureFixture[str]) -> Callable[..., str]:
    """Run ``statebench ARGV`` in-process; demand exit status 2, one line on stderr, no
    traceback; return that line."""

    def run(*argv: str, status: int = 2) -> str:
        assert cli.main(list(argv)) == status
        err = capsys.readouterr().err
        lines = [line for line in err.strip().splitlines() if not PROGRESS.match(line)]
        assert len(lines) == 1, err
        assert "Traceback" not in err
        assert lines[0].startswith("statebench")
        return lines[0]

    return run


@pytest.fixture
def usage_error(capsys: pytest.CaptureFixture[str]) -> Callable[..., str]:
    """Like ``fails`` for argparse errors (raised as SystemExit(2) by the option parser)."""

    def run(*argv: str) -> str:
        with pytest.raises(SystemExit) as exc:
            cli.main(list(argv))
        assert exc.value.code == 2
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert "Traceback" not in err
        return lines[0]

    return run


def need_flink_lanes() -> None:
    """Flink's lanes can run here; else the shared rule: fail where the oracle is required
    (the flink extra installed), skip elsewhere - never a silent skip where they should run.
    For a test of which only some cases need them; the others use :func:`flink_lanes`."""
    from backends.flink.lanes import check_available

    try:
        check_available()
    except FlinkUnavailableError as exc:
        fail_or_skip("the Flink lanes", exc)


@pytest.fixture(scope="session")
def flink_lanes() -> None:
    """:func:`need_flink_lanes`, once per session."""
    need_flink_lanes()


@pytest.fixture(scope="session")
def flink_sql_job() -> None:
    """The Flink SQL job is built (compiled once per session); the same rule as
    :func:`flink_lanes`."""
    from backends.flink.sql_job import ensure_sql_job_built

    try:
        ensure_sql_job_built()
    except FlinkUnavailableError as exc:
        fail_or_skip("the Flink SQL job", exc)
