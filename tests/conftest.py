"""Fixtures shared by every test package: backends of both kinds on a manual clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import backends as B
from backends import BACKEND_KINDS


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
