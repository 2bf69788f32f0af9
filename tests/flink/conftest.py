"""One Flink worker JVM per backend kind per test module (module-scoped; tests reset() it).

Without the extra or a JDK the Flink tests skip with the install hint; CI sets
STATEBENCH_REQUIRE_FLINK=1 so that a missing Flink fails instead of skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from backends.flink import FlinkUnavailableError, FlinkWorker


def start_worker(kind: str) -> FlinkWorker:
    try:
        return FlinkWorker(kind)
    except FlinkUnavailableError as exc:
        if os.environ.get("STATEBENCH_REQUIRE_FLINK"):
            raise
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def flink_heap() -> Iterator[FlinkWorker]:
    with start_worker("heap") as worker:
        yield worker


@pytest.fixture(scope="module")
def flink_rocksdb() -> Iterator[FlinkWorker]:
    with start_worker("rocksdb") as worker:
        yield worker
