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


def test_forked_benchmarks_leave_no_rocksdb_folders(
        asv_env: tuple[Path, dict[str, str]]) -> None:
    """Under asv's forkserver a benchmark's process ends with os._exit, where no finalizer
    runs: the RocksDB fixtures of bench_state_ops must live in the working directory asv makes
    and removes for each benchmark, not in a temporary folder of their own (every run left one
    behind per RocksDB parameter set)."""
    tmp, env = asv_env
    scratch = tmp / "tmpdir"
    scratch.mkdir()
    proc = _asv(tmp, "run", "--python=same", "--quick", "--show-stderr", "--bench",
                r"^bench_state_ops\.(StateOps\.time_op\('rocksdb', 'plain', 'value_get'\)|"
                r"RawBaselines\.time_op\('rocksdb', 'value_get'\))",
                env={**env, "TMPDIR": str(scratch)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "failed" not in out.lower(), out
    assert out.count("time_op") >= 2, out  # both ran
    assert sorted(p.name for p in scratch.iterdir()) == [], out


def test_flink_ops_run_asvs_quick_protocol_unless_asked_for_another(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """asv gives a benchmark no sign of --quick, so FlinkOps' setup_cache runs asv's quick
    protocol (the quick one, one process per side) unless $STATEBENCH_PEROP_PROTOCOL names one
    or $STATEBENCH_ASV_PROTOCOL=full (the suite's one switch) asks for the full one; the
    protocol is part of the benchmarks' version (one protocol's history never mixes with
    another's), and a wrong name in either variable is refused with the names it takes."""
    import importlib

    import bench.bench_flink as bench_flink
    from bench.asv_protocol import ASV_PROTOCOL_ENV
    from bench.flink_ops import FULL, LEAN, PROTOCOL_ENV, QUICK

    def load(asv: str | None, perop: str | None) -> object:
        for name, value in ((ASV_PROTOCOL_ENV, asv), (PROTOCOL_ENV, perop)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        return importlib.reload(bench_flink)

    try:
        default = load(None, None)
        assert default.PROTOCOL is default.ASV_QUICK
        assert default.FlinkOps.version == "flink-ops-7-asv-quick"
        # the quick protocol's rounds, keys and gate; one JVM per op and mode, one worker
        assert (default.PROTOCOL.forks, default.PROTOCOL.workers) == (1, 1)
        assert default.PROTOCOL.jvm_iterations == QUICK.jvm_iterations
        assert default.PROTOCOL.keys == QUICK.keys and not default.PROTOCOL.retake
        full = load("full", None)
        assert full.PROTOCOL is FULL and full.FlinkOps.version == "flink-ops-7-full"
        assert load("full", "lean").PROTOCOL is LEAN  # the per-op variable picks its own
        assert load(None, "quick").PROTOCOL is QUICK
        with pytest.raises(ValueError, match=r"'fast' is not a protocol; expected one of "
                                             r"\['ci', 'full', 'lean', 'quick', 'wide'\]"):
            load(None, "fast")
        with pytest.raises(ValueError, match=r"'fast' is not an asv protocol"):
            load("fast", "full")
    finally:
        load(None, None)
    assert QUICK.forks >= 2 and QUICK.workers >= 2  # an interval over processes, not one value
    assert QUICK.jvm_iterations % 3 == 0 and QUICK.py_values % 3 == 0  # every mode in every
    # position of a round as often as the others (the modes' order rotates each round)


def test_asv_forks_the_suite_which_imports_without_threads_or_jvms() -> None:
    """asv.conf.json's forkserver forks the process that imported the suite once per
    benchmark: that is only safe while importing it starts no Python thread and no JVM (Spark's
    py4j gateway, a Flink worker). Checked in a fresh interpreter, as asv's server imports it."""
    from asv import util

    conf = util.load_json(str(REPO / "asv.conf.json"), js_comments=True)
    assert conf["launch_method"] == "forkserver"
    code = ("import threading, sys\n"
            "import bench.bench_scenarios, bench.bench_flink, bench.bench_operators, "
            "bench.bench_state_ops\n"
            "print(threading.active_count(), "
            "sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'py4j'}))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "[]"], proc.stdout


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
