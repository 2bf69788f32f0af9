"""Issue 10, defect 5 (disk): a run whose expected state exceeds the free disk is warned about
up front, and the expected size follows the spec's value sizes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from workloads.cli.checks import disk_warning, expected_write_bytes, mean_value_bytes
from workloads.distributions import sample_sizes
from workloads.spec import SizeSpec, load_spec, parse_spec


def _spec(size: dict, events: int = 1000, ops: dict | None = None):  # type: ignore[no-untyped-def]
    return parse_spec({
        "name": "d", "keys": {"count": 10, "distribution": "uniform"},
        "operations": ops or {"value_update": 1.0},
        "values": {"type": "bytes", "size": size},
        "time": {"rate": 1000, "events": events}})


@pytest.mark.parametrize("size", [
    SizeSpec("pareto", shape=1.5, scale=32.0, max=4096),
    SizeSpec("pareto", shape=1.0, scale=10.0, max=100_000),
    SizeSpec("pareto", shape=0.5, scale=100.0, max=10_000),
    SizeSpec("uniform", min=50, max=150),
])
def test_mean_value_size_matches_the_sampler(size: SizeSpec) -> None:
    drawn = sample_sizes(size, np.random.default_rng(7), 400_000).astype(np.float64)
    # within 4 standard errors, plus the sampler's floor to whole bytes (at most 1 byte)
    tolerance = 4 * drawn.std() / np.sqrt(drawn.size) + 1.0
    assert abs(mean_value_bytes(size, "bytes") - drawn.mean()) < tolerance


def test_only_value_writes_count() -> None:
    writes = _spec({"distribution": "constant", "bytes": 100}, ops={"value_update": 1.0})
    half = _spec({"distribution": "constant", "bytes": 100},
                 ops={"value_update": 0.5, "value_get": 0.5})
    assert expected_write_bytes(half, 1000) == pytest.approx(expected_write_bytes(writes, 1000)
                                                             / 2)
    assert expected_write_bytes(writes, 1000) == pytest.approx(1000 * (100 + 24))


def test_warns_when_the_state_exceeds_the_free_disk(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    per_event = 64 << 20
    events = free // per_event + 10
    spec = _spec({"distribution": "constant", "bytes": per_event}, events=events)
    warning = disk_warning(spec, events, str(tmp_path))
    assert warning is not None and f"free in {tmp_path}" in warning and "GB" in warning
    assert disk_warning(spec, 1, str(tmp_path)) is None


def test_shipped_specs_fit_here(tmp_path: Path) -> None:
    spec = load_spec("ycsb-a")
    assert disk_warning(spec, 300_000, str(tmp_path)) is None


def test_the_cli_warns_before_the_run(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    # 64 MiB values on every event; an unreachable --master then stops it before any work, so only
    # the up-front warning is observed
    from workloads import cli

    free = shutil.disk_usage(tempfile.gettempdir()).free
    events = min(free // (64 << 20) + 10, 10**10)
    spec = tmp_path / "big.toml"
    spec.write_text('name = "big"\n[keys]\ncount = 10\ndistribution = "uniform"\n'
                    '[operations]\nvalue_update = 1.0\n[values]\ntype = "bytes"\n'
                    'size = { distribution = "constant", bytes = 67108864 }\n'
                    f"[time]\nrate = 1000\nevents = {events}\n")
    import socket

    with socket.socket() as sock:  # a port nobody listens on: the master check after preflight
        sock.bind(("127.0.0.1", 0))
        master = f"spark://127.0.0.1:{sock.getsockname()[1]}"
    assert cli.main(["run", str(spec), "--master", master, "--results-dir",
                     str(tmp_path / "r")]) == 2
    warning, error = capsys.readouterr().err.strip().splitlines()
    assert warning.startswith("statebench: warning: this run may write up to ")
    assert "GB are free in" in warning and "lower --events" in warning
    assert error.startswith(f"statebench: error: --master {master}: All masters are unresponsive")
