"""Issue 31, category 4 (late or cryptic errors), beyond readme_tables and
``auction_duration_ms``.

* A TTL sweep value beyond int64 was a traceback after earlier scenarios ran, and values past
  the spec's own 2^53 bound were accepted: a sweep value now gets state.ttl_ms's check.
* A bad ``STATEBENCH_FORST_PRIMARY`` (empty, upper case) was a traceback after the other
  lanes' work: every setting, environment included, is checked before any work.
* A full disk under statebench's own RocksDB was a 53-line traceback (rocksdict raises a plain
  ``Exception``); it is one line now, as on Flink's lanes.
* Messages that misled: latencies printed as ``259.00 kus`` and ``2.79 Mus``; ``report -o ''``
  wrote the default report; the flink-forst-async refusal blamed "ForSt's synchronous
  backend"; ``--checkpoint-dir ''`` checkpointed into the current folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reliability.conftest import GENERATED, SPEC_HEAD, write_spec
from workloads.cli.run import _fmt
from workloads.lanes.flink import operator_reason as lane_reason
from workloads.run.plan import PlanError, RunConfig
from workloads.spec import load_spec

TINY = ("--in-process", "--events", "200", "--backend", "heap", "--no-report")


@pytest.mark.parametrize("value", ["99999999999999999999999", "9007199254740993", "0"])
def test_a_ttl_sweep_value_gets_the_ttl_fields_check_before_any_work(
        value: str, tmp_path: Path, fails: Callable[..., str]) -> None:
    line = fails("run", "ycsb-a", *TINY, "--sweep", f"ttl(ms=1000,{value})",
                 "--results-dir", str(tmp_path / "r"))
    assert "ttl ms value must be in 1..9007199254740992 ms" in line and value in line
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


@pytest.mark.usefixtures("flink_lanes")
@pytest.mark.parametrize("value", ["", "SEPARATE", "s3"])
def test_a_bad_forst_setting_is_refused_when_the_run_is_planned(
        value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEBENCH_FORST_PRIMARY", value)
    spec = load_spec("ycsb-a")
    with pytest.raises(PlanError, match=r"STATEBENCH_FORST_PRIMARY=.*expected one of "
                                        r"separate, checkpoint"):
        RunConfig(spec, backends=("heap", "flink-forst"))
    RunConfig(spec, backends=("heap", "flink-heap"))  # a run without ForSt does not read it
    monkeypatch.setenv("STATEBENCH_FLINK_WARMUP_EVENTS", "many")
    with pytest.raises(PlanError, match="STATEBENCH_FLINK_WARMUP_EVENTS='many'"):
        RunConfig(spec, backends=("heap", "flink-heap"))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (root only; skipped where mounts are not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


FILL = SPEC_HEAD + """
[keys]
count = 100000
distribution = "uniform"
[operations]
value_update = 1.0
[values]
type = "bytes"
size = { distribution = "constant", bytes = 4000 }
[time]
rate = 20000
events = 100000
"""


def test_a_full_disk_under_statebenchs_rocksdb_is_one_line(small_disk: Path,
                                                           tmp_path: Path) -> None:
    spec = write_spec(tmp_path, FILL)
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from workloads.cli import main; sys.exit(main())",
         "run", str(spec), "--in-process", "--backend", "rocksdb", "--no-report",
         "--results-dir", str(tmp_path / "r")],
        env={**os.environ, "TMPDIR": str(small_disk)}, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("statebench: error: [Errno 28] statebench's RocksDB: IO error: "
                           "No space left on device"), last
    assert [p.name for p in small_disk.iterdir()] == []


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (259_000.0, "us", "259 ms"), (2_790_000.0, "us", "2.79 s"), (12.5, "us", "12.5 us"),
    (5_000_000.0, "bytes", "5.00 MB"), (1234.0, "entries", "1,234"),
    (123_456.0, "", "123 k"), (float("nan"), "us", "-")])
def test_summary_cells_use_units_of_time_not_si_prefixes_on_us(value: float, unit: str,
                                                                 shown: str) -> None:
    assert _fmt(value, unit) == shown


@pytest.mark.parametrize("option", ["-o", "--checkpoint-dir", "--results-dir"])
def test_an_empty_path_is_refused(option: str, tmp_path: Path,
                                  fails: Callable[..., str], monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    if option == "-o":
        from workloads import cli

        results = tmp_path / "r"
        assert cli.main(["run", write_spec(tmp_path, SPEC_HEAD + GENERATED).as_posix(), *TINY,
                         "--results-dir", str(results)]) == 0
        (run_dir,) = list(results.iterdir())
        before = sorted(p.name for p in run_dir.iterdir())
        capsys.readouterr()
        line = fails("report", str(run_dir), "-o", "")
        assert sorted(p.name for p in run_dir.iterdir()) == before
    else:
        line = fails("run", "ycsb-a", *TINY, option, "")
    assert f"{option} '': an empty path" in line
    assert "chk" not in {p.name[:3] for p in tmp_path.iterdir()}


def test_the_forst_async_refusal_names_forst_async() -> None:
    reason = lane_reason("flink-forst-async", "dedup")
    assert reason is not None and "synchronous" not in reason
    assert "flink-forst-async" in reason
