"""The Flink oracle cannot go silent: with the extra installed, a worker that cannot start (here:
no JDK on the path) fails the test instead of skipping it; without the extra it skips."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from tests.flink import conftest


def _no_jdk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("JAVA_HOME", str(empty))
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv(conftest.REQUIRE_ENV, raising=False)


def test_installed_extra_without_a_jdk_fails(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    metadata.version(conftest.DISTRIBUTION)  # this environment has the extra (CI's does)
    _no_jdk(monkeypatch, tmp_path)
    assert "flink extra is installed" in (conftest.flink_required() or "")
    with pytest.raises(pytest.fail.Exception, match="the Flink oracle cannot run although"):
        conftest.start_worker("heap")


def _hide_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.version

    def version(name: str) -> str:
        if name == conftest.DISTRIBUTION:
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)  # as tests.required reads it


def test_without_the_extra_it_skips_unless_required(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    _no_jdk(monkeypatch, tmp_path)
    _hide_extra(monkeypatch)
    assert conftest.flink_required() is None
    with pytest.raises(pytest.skip.Exception):
        conftest.start_worker("heap")
    monkeypatch.setenv(conftest.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="STATEBENCH_REQUIRE_FLINK is set"):
        conftest.start_worker("heap")
