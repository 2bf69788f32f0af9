"""Issue 16, item 3: the Flink worker's build cache is checked and rebuilt atomically, and the
worker's own temporary folder carries its owner.

Each test compiles into its own cache (``STATEBENCH_CACHE``), about 3 s of javac.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backends import tempdirs

pytest.importorskip("pyflink")
build = pytest.importorskip("backends.flink.build")
try:
    build.find_flink_jar()
    build.find_jdk()
except Exception as exc:  # the oracle's rule: fail where the flink extra is installed
    from tests.flink.conftest import flink_required

    if flink_required():
        pytest.fail(f"the Flink lanes cannot run although {flink_required()}: {exc}",
                    pytrace=False)
    pytest.skip(f"the Flink lanes cannot run here: {exc}", allow_module_level=True)

from backends.flink import FlinkWorker  # noqa: E402


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STATEBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _classes(cache: Path) -> Path:
    (target,) = (cache / "flink-worker").iterdir()
    return target / "classes"


def _leftovers(cache: Path) -> list[str]:
    target = _classes(cache).parent
    return sorted(p.name for p in target.iterdir() if p.name not in ("classes", ".build.lock"))


def _starts() -> None:
    with FlinkWorker("heap", startup_timeout_s=60) as worker:
        assert worker.flink_version


@pytest.mark.parametrize("damage", ["truncate", "delete"])
def test_a_damaged_class_is_rebuilt(damage: str, cache: Path) -> None:
    build.ensure_worker_built()
    classes = _classes(cache)
    worker = classes / "statebench" / "flink" / "Worker.class"
    victim = worker if damage == "truncate" else next(
        p for p in sorted(worker.parent.glob("*.class")) if p != worker)
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:100])
    else:
        victim.unlink()
    assert build.build_problem(classes) is not None
    _starts()  # before: ClassFormatError / ClassNotFoundException on every run
    assert build.build_problem(classes) is None
    assert _leftovers(cache) == []


def test_a_build_without_its_manifest_is_rebuilt(cache: Path) -> None:
    """A `classes/` renamed into place by an older version or left half-done has no manifest."""
    build.ensure_worker_built()
    (_classes(cache) / build.MANIFEST).unlink()
    build.ensure_worker_built()
    assert build.build_problem(_classes(cache)) is None


@pytest.mark.slow
def test_a_build_killed_during_javac_leaves_nothing_for_good(cache: Path) -> None:
    env = {**os.environ, "STATEBENCH_CACHE": str(cache)}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from backends.flink.build import ensure_worker_built as e; e()"],
        env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    try:
        while True:  # javac is writing into the build's temporary folder
            target = cache / "flink-worker"
            found = [p for t in target.glob("*") for p in t.iterdir()
                     if p.name.startswith((".statebench-build-", "classes-"))
                     and any(p.rglob("*.class"))] if target.exists() else []
            if found:
                break
            assert proc.poll() is None and time.monotonic() < deadline, "javac never started"
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its javac, as kill -9 of the group
        proc.wait()
    assert not (found[0].parent / "classes").exists()
    build.ensure_worker_built()
    assert build.build_problem(_classes(cache)) is None
    assert _leftovers(cache) == []


def test_the_worker_folder_is_tagged_and_goes_with_the_worker(cache: Path) -> None:
    with FlinkWorker("heap", startup_timeout_s=60) as worker:
        folder = worker._tmp
        assert folder.name.startswith("statebench-flink-" + tempdirs.owner_tag())
        assert str(folder) in tempdirs.live()
    assert not folder.exists() and str(folder) not in tempdirs.live()


@pytest.mark.slow
def test_a_killed_workers_folder_is_swept(tmp_path: Path, cache: Path) -> None:
    """The Spark worker that held a Flink worker dies without atexit (SIGHUP from pyspark's
    daemon): its folder must be recognised as a dead owner's and swept."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "STATEBENCH_CACHE": str(cache)}
    code = ("import os, signal; from backends.flink import FlinkWorker; "
            "w = FlinkWorker('heap'); print('up', flush=True); "
            # SIGHUP as pyspark sends it, whatever mask or disposition the test process had
            "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP}); "
            "signal.signal(signal.SIGHUP, signal.SIG_DFL); os.kill(os.getpid(), signal.SIGHUP)")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert "up" in done.stdout, done.stderr
    left = [p for p in tmp.iterdir() if p.name.startswith("statebench-flink-")]
    # what a Spark run left before, untagged and never swept
    assert len(left) == 1, (sorted(p.name for p in tmp.iterdir()), done.stderr[-2000:])
    assert tempdirs.sweep([tmp]) == [str(left[0])]


def test_a_javac_that_does_not_finish_is_one_error_and_leaves_nothing(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from backends.flink.errors import FlinkUnavailableError

    monkeypatch.setattr(build, "JAVAC_TIMEOUT_S", 0.05)
    with pytest.raises(FlinkUnavailableError, match="did not finish within") as info:
        build.ensure_worker_built()
    assert "\n" not in str(info.value)
    target = next((cache / "flink-worker").iterdir())
    assert sorted(p.name for p in target.iterdir()) == [".build.lock"]
    assert not tempdirs.live() or all(str(target) not in p for p in tempdirs.live())
