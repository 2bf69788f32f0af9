"""The browser tests' one rule (tests/chromium.py): a Chromium that cannot be had fails the
session where the test extra is installed (or STATEBENCH_REQUIRE_BROWSER is set), and skips
only where neither is so; nothing here needs a browser."""

from __future__ import annotations

from importlib import metadata

import pytest

from tests import chromium


@pytest.fixture
def no_chromium(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chromium, "find", lambda: None)
    monkeypatch.setattr(chromium, "_install", lambda: "apt-get is unavailable")
    monkeypatch.delenv(chromium.REQUIRE_ENV, raising=False)


def _without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    def version(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", version)


def test_a_missing_chromium_fails_where_the_test_extra_is_installed(
        no_chromium: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "version", lambda name: "1.50.0")
    with pytest.raises(pytest.fail.Exception, match="the test extra is installed"):
        chromium.executable()


def test_a_missing_chromium_fails_when_required_by_the_environment(
        no_chromium: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _without_the_extra(monkeypatch)
    monkeypatch.setenv(chromium.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get is unavailable"):
        chromium.executable()


def test_a_missing_chromium_skips_without_the_extra(
        no_chromium: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _without_the_extra(monkeypatch)
    with pytest.raises(pytest.skip.Exception, match="chromium is missing"):
        chromium.executable()
