"""The data files statebench reads while it decides (the real-engine bands, the checkpoint-noise
calibration) ship with the package: an installed statebench (``pip install .``, asv's build)
must decide as a checkout does, not fall back to "no calibration" because a file stayed in the
repository's docs."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

from workloads.report import checkpoint_noise, real_engine

ROOT = Path(__file__).resolve().parents[1]


def package_data() -> dict[str, list[str]]:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return conf["tool"]["setuptools"]["package-data"]


def shipped(path: Path, data: dict[str, list[str]]) -> bool:
    """Whether `path` lies in a package and one of that package's package-data globs holds it."""
    for package, globs in data.items():
        folder = ROOT.joinpath(*package.split("."))
        if path.is_relative_to(folder):
            rel = path.relative_to(folder).as_posix()
            if any(fnmatch.fnmatch(rel, g) for g in globs):
                return True
    return False


@pytest.mark.parametrize("path", [real_engine.BANDS_PATH, checkpoint_noise.CALIBRATION],
                         ids=["real-engine-bands", "checkpoint-noise"])
def test_the_data_a_decision_reads_is_package_data(path: Path) -> None:
    assert path.is_file()
    assert shipped(path.resolve(), package_data())


def test_the_package_data_check_can_fail() -> None:
    data = package_data()
    assert not shipped(ROOT / "docs" / "results" / "per-op.json", data)
    assert not shipped(ROOT / "workloads" / "report" / "data" / "x.csv", data)


def test_every_java_source_the_lanes_compile_is_package_data() -> None:
    """The Flink worker, the Flink SQL job and Spark's JVM processor are compiled from their
    sources on first use: an installed statebench without them cannot run those lanes."""
    sources = sorted((ROOT / "backends").rglob("*.java"))
    assert sources
    missing = [p.relative_to(ROOT).as_posix() for p in sources if not shipped(p, package_data())]
    assert missing == []
