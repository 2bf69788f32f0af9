"""One Flink worker JVM per backend kind per test module (module-scoped; tests reset() it).

These tests are statebench's oracle: Flink's own backends run the same ops, and statebench must
match them. The oracle must not go silent, so whether a missing Flink skips or fails depends on
the session, not on a variable CI may forget to set:

* the ``flink`` extra (``apache-flink-libraries``) is installed — as in CI, whose command is the
  README's ``pip install -e '.[test,flink]'`` then ``pytest`` — or STATEBENCH_REQUIRE_FLINK is
  set: a worker that cannot start (no JDK, a broken build) FAILS the test;
* neither: the tests skip with the install hint (a checkout without the extra still tests the
  rest).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NoReturn

import pytest

from backends.flink import FlinkUnavailableError, FlinkWorker
from backends.flink.build import DISTRIBUTION
from tests.required import required

REQUIRE_ENV = "STATEBENCH_REQUIRE_FLINK"


def flink_required() -> str | None:
    """Why this session must run the Flink oracle, or None when it may skip it."""
    return required(REQUIRE_ENV, DISTRIBUTION, "flink")


def fail_or_skip(what: str, exc: FlinkUnavailableError) -> NoReturn:
    """``what`` cannot run: fail when this session must run the oracle, else skip."""
    reason = flink_required()
    if reason:
        pytest.fail(f"{what} cannot run although {reason}: {exc}", pytrace=False)
    pytest.skip(str(exc))


def start_worker(kind: str) -> FlinkWorker:
    try:
        return FlinkWorker(kind)
    except FlinkUnavailableError as exc:
        fail_or_skip("the Flink oracle", exc)


@pytest.fixture(scope="module")
def sql_job_built() -> None:
    """The Flink SQL job compiled (once per checkout), or the module fails or skips as the
    oracle does; a module asks for it with ``pytest.mark.usefixtures("sql_job_built")``."""
    from backends.flink.sql_job import ensure_sql_job_built

    try:
        ensure_sql_job_built()
    except FlinkUnavailableError as exc:
        fail_or_skip("the Flink SQL job", exc)


@pytest.fixture(scope="module")
def flink_heap() -> Iterator[FlinkWorker]:
    with start_worker("heap") as worker:
        yield worker


@pytest.fixture(scope="module")
def flink_rocksdb() -> Iterator[FlinkWorker]:
    with start_worker("rocksdb") as worker:
        yield worker
