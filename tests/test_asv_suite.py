"""The asv suite under real asv: its own discovery (`asv check`) over every benchmark, and one
quick pass (`asv run --python=same --quick`) over the Flink per-op benchmarks with the `flink`
extra hidden, so a benchmark that errors where it should skip (as FlinkOps once did: asv calls
the benchmarks without the cache argument when setup_cache returns None) fails CI.

The extra is hidden by a sitecustomize on $PYTHONPATH (asv's "existing" environment, which
--python=same uses, hands the environment on to its benchmark processes) that makes
`importlib.metadata` report apache-flink-libraries as not installed: to statebench that is
exactly an environment without the extra (backends.flink.build finds Flink's jars through that
distribution). asv itself is not touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_flink import UNAVAILABLE, FlinkOps
from bench.bench_scenarios import TtlSweep

REPO = Path(__file__).resolve().parents[1]

HIDE_EXTRA = '''\
import importlib.metadata as _md

_real = _md.distribution


def _distribution(name):
    if name.replace("_", "-").lower() == "apache-flink-libraries":
        raise _md.PackageNotFoundError(name)
    return _real(name)


_md.distribution = _distribution
'''


def _asv(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "asv", *args, "--config",
                           str(tmp_path / "asv.conf.json")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def asv_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The repository's asv.conf.json with its output folders moved under a temp dir, a
    machine file there (HOME), and the sitecustomize hiding the extra."""
    from asv import util

    tmp = tmp_path_factory.mktemp("asv")
    conf = util.load_json(str(REPO / "asv.conf.json"), js_comments=True)
    conf.update(repo=str(REPO), benchmark_dir=str(REPO / "bench"),
                env_dir=str(tmp / "env"), results_dir=str(tmp / "results"),
                html_dir=str(tmp / "html"))
    (tmp / "asv.conf.json").write_text(json.dumps(conf))
    hide = tmp / "hide-flink"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE_EXTRA)
    env = {**os.environ, "HOME": str(tmp), "PYTHONPATH": str(hide)}
    env.pop("ASV_PYTHONPATH", None)
    made = _asv(tmp, "machine", "--yes", env=env)
    assert made.returncode == 0, made.stdout + made.stderr
    return tmp, env


def test_asv_discovers_every_benchmark(asv_env: tuple[Path, dict[str, str]]) -> None:
    tmp, env = asv_env
    proc = _asv(tmp, "check", "--python=same", env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out


def test_quick_pass_without_the_extra_skips_flink_ops(
        asv_env: tuple[Path, dict[str, str]]) -> None:
    tmp, env = asv_env
    proc = _asv(tmp, "run", "--python=same", "--quick", "--show-stderr",
                "--bench", r"^bench_flink\.FlinkOps\.track_flink_time_per_op\('heap', 'on', "
                r"'value_get'\)", env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "failed" not in out.lower(), out
    assert "asv: skipped: NotImplementedError" in out, out  # skipped, with the reason:
    assert "apache-flink-libraries' is missing" in out, out


def test_flink_ops_run_the_quick_protocol_unless_asked_for_another(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """asv gives a benchmark no sign of --quick, so FlinkOps' setup_cache runs the quick
    protocol unless $STATEBENCH_PEROP_PROTOCOL names lean or full; the protocol is part of the
    benchmarks' version (one protocol's history never mixes with another's), and a wrong name
    is refused with the names it takes."""
    import importlib

    import bench.bench_flink as bench_flink
    from bench.flink_ops import FULL, PROTOCOL_ENV, QUICK

    try:
        monkeypatch.delenv(PROTOCOL_ENV, raising=False)
        default = importlib.reload(bench_flink)
        assert default.PROTOCOL is QUICK and default.FlinkOps.version == "flink-ops-6-quick"
        monkeypatch.setenv(PROTOCOL_ENV, "full")
        full = importlib.reload(bench_flink)
        assert full.PROTOCOL is FULL and full.FlinkOps.version == "flink-ops-6-full"
        monkeypatch.setenv(PROTOCOL_ENV, "fast")
        with pytest.raises(ValueError, match=r"'fast' is not a protocol; expected one of "
                                             r"\['full', 'lean', 'quick'\]"):
            importlib.reload(bench_flink)
    finally:
        monkeypatch.delenv(PROTOCOL_ENV, raising=False)
        importlib.reload(bench_flink)
    assert QUICK.forks >= 2 and QUICK.workers >= 2  # an interval over processes, not one value
    assert QUICK.jvm_iterations % 3 == 0 and QUICK.py_values % 3 == 0  # every mode in every
    # position of a round as often as the others (the modes' order rotates each round)


def test_setup_skips_with_the_reason() -> None:
    """setup raises NotImplementedError (asv's skip) naming why, for a cache without Flink and
    for the sweep's not-applicable and not-run combinations."""
    with pytest.raises(NotImplementedError, match="statebench"):
        FlinkOps().setup({UNAVAILABLE: "Flink's lanes cannot run here: pip install "
                                        "'statebench[flink]'"}, "heap", "on", "value_get")
    cache = {(100, "heap", "none"): {"peak_stored_entries": 5.0},
             (100, "flink-heap", "timer"): {"not_applicable": 1.0}}
    sweep = TtlSweep()
    sweep.setup(cache, 100, "heap", "none")
    assert sweep.track_peak_stored_entries(cache, 100, "heap", "none") == 5.0
    with pytest.raises(NotImplementedError, match="not applicable"):
        sweep.setup(cache, 100, "flink-heap", "timer")
    with pytest.raises(NotImplementedError, match="did not run here"):
        sweep.setup(cache, 100, "flink-rocksdb", "none")
