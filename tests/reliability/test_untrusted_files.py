"""Issue 16 items 5-6: any file a spec or a trace names is untrusted input (any encoding, any
file type, any size): it gets one line naming the file, exit 2, and never blocks or exhausts
memory; and what a trace can ask for (its time span, hence checkpoints and samples) is bounded
as the generator's specs are. Every run here is in-process and refused before any work."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.reliability.conftest import GENERATED, SPEC_HEAD, write_spec
from workloads import limits

TRACE_SPEC = 'name = "tr"\n[source]\nkind = "trace"\npath = "trace.parquet"\n'


def _within(seconds: float, action: Callable[[], str]) -> str:
    """``action()``, failing the test (instead of hanging it) if it blocks."""
    box: dict[str, object] = {}
    worker = threading.Thread(target=lambda: box.setdefault("out", action()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"blocked for more than {seconds} s"
    return str(box["out"])


# ------------------------------------------------------------------------------------------------
# Spec files
# ------------------------------------------------------------------------------------------------


def _make(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":
        path.write_text("# " + "x" * limits.MAX_SPEC_BYTES + "\n")
    elif kind == "binary":
        path.write_bytes(b'name = "t"\n\0\x01\x02')
    elif kind == "latin-1":
        path.write_bytes('name = "caf\u00e9"\n'.encode("latin-1"))
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize(("kind", "words"), [
    ("fifo", "is not a regular file"),
    ("folder", "is a folder, not a file"),
    ("huge", f"is {limits.MAX_SPEC_BYTES + 3} bytes; at most {limits.MAX_SPEC_BYTES} are read"),
    ("binary", "is a binary file"),
    ("latin-1", "is not UTF-8 text"),
])
def test_an_unusable_spec_file_is_one_line_and_never_blocks(
        kind: str, words: str, tmp_path: Path, fails: Callable[..., str]) -> None:
    spec = tmp_path / "spec.toml"
    _make(kind, spec)
    line = _within(10, lambda: fails("run", str(spec), "--in-process",
                                     "--results-dir", str(tmp_path / "r")))
    assert f"spec file {spec}: {words}" in line, line
    assert not (tmp_path / "r").exists()


def test_a_device_is_not_read_as_a_spec(tmp_path: Path, fails: Callable[..., str]) -> None:
    line = _within(10, lambda: fails("run", "/dev/zero", "--in-process",
                                     "--results-dir", str(tmp_path / "r")))
    assert "spec file /dev/zero: is not a regular file" in line


# ------------------------------------------------------------------------------------------------
# Trace files
# ------------------------------------------------------------------------------------------------


def _table(ts: list[int], ops: str = "value_update") -> pa.Table:
    n = len(ts)
    return pa.table({"key": list(range(n)), "ts": ts, "op": [ops] * n, "value": [1] * n})


@pytest.mark.parametrize(("kind", "words"), [
    ("fifo", "is not a regular file"),
    ("folder", "is a folder, not a file"),
    ("random", "not a Parquet file"),
    ("truncated", "not a Parquet file"),
    ("footer", "its Parquet footer claims"),
])
def test_an_unusable_trace_file_is_one_line_and_never_blocks(
        kind: str, words: str, tmp_path: Path, fails: Callable[..., str]) -> None:
    trace = tmp_path / "trace.parquet"
    if kind == "fifo":
        os.mkfifo(trace)
    elif kind == "folder":
        trace.mkdir()
    elif kind == "random":
        trace.write_bytes(os.urandom(5000))
    else:
        pq.write_table(_table(list(range(100))), trace)
        data = trace.read_bytes()
        if kind == "truncated":
            trace.write_bytes(data[: len(data) // 2])
        else:  # the footer length (4 bytes before the closing PAR1) claims 2 GB
            trace.write_bytes(data[:-8] + (2**31 - 1).to_bytes(4, "little") + b"PAR1")
    spec = write_spec(tmp_path, TRACE_SPEC)
    line = _within(10, lambda: fails("run", str(spec), "--in-process",
                                     "--results-dir", str(tmp_path / "r")))
    assert line.startswith(f"statebench: error: trace {trace}: {words}"), line
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("statistics", [True, False], ids=["footer-stats", "as-read"])
def test_trace_timestamps_beyond_2_53_are_refused(
        statistics: bool, tmp_path: Path, fails: Callable[..., str]) -> None:
    """The issue's reproduction: timestamps spanning +-2^62 with checkpoints grew to 22 GB."""
    trace = tmp_path / "trace.parquet"
    pq.write_table(_table([-(2**62), 0, 2**62]), trace, write_statistics=statistics)
    spec = write_spec(tmp_path, TRACE_SPEC + "[checkpoints]\ninterval_ms = 1000\n")
    line = fails("run", str(spec), "--in-process", "--results-dir", str(tmp_path / "r"))
    assert line.startswith(f"statebench: error: trace {trace}: column 'ts'"), line
    assert "0..9007199254740992" in line


def test_a_trace_whose_span_asks_for_too_many_checkpoints_is_refused(
        tmp_path: Path, fails: Callable[..., str]) -> None:
    trace = tmp_path / "trace.parquet"
    pq.write_table(_table([0, 1, 2**53]), trace)
    spec = write_spec(tmp_path, TRACE_SPEC + "[checkpoints]\ninterval_ms = 1000\n")
    line = _within(30, lambda: fails("run", str(spec), "--in-process", "--backend", "heap",
                                     "--strategy", "none", "--results-dir", str(tmp_path / "r")))
    assert f"trace {trace}: the run over its timestamps spans 9007199254740993 ms" in line, line
    assert "checkpoints; at most 100000 per scenario" in line


def test_a_generated_run_is_bounded_in_checkpoints_and_samples(
        tmp_path: Path, fails: Callable[..., str]) -> None:
    long = GENERATED.replace("events = 50", "events = 1000000").replace("rate = 1000", "rate = 1")
    spec = write_spec(tmp_path, SPEC_HEAD + long + "[checkpoints]\ninterval_ms = 1\n")
    line = fails("run", str(spec), "--in-process", "--results-dir", str(tmp_path / "r"))
    assert "checkpoints.interval_ms = 1: the run spans" in line and "at most 100000" in line
    spec = write_spec(tmp_path, SPEC_HEAD + long, name="samples.toml")
    line = fails("run", str(spec), "--in-process", "--sample-interval-ms", "1",
                 "--results-dir", str(tmp_path / "r"))
    assert "--sample-interval-ms 1: the run spans" in line and "at most 1000000" in line
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------------------------
# Run folders (report, diff): their files are read whole
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["report", "diff"])
def test_a_run_folder_with_a_huge_rows_file_is_refused_before_reading(
        command: str, tmp_path: Path, fails: Callable[..., str]) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    with open(folder / "rows.parquet", "wb") as out:  # sparse: 5 GB on no disk
        out.truncate(5 << 30)
    (folder / "run.json").write_text("{}")
    argv = [command, str(folder)] + ([str(folder)] if command == "diff" else [])
    line = _within(10, lambda: fails(*argv))
    assert f"{folder}/rows.parquet: is {5 << 30} bytes" in line, line


def test_a_run_folder_whose_run_json_is_a_fifo_does_not_block(
        tmp_path: Path, fails: Callable[..., str]) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    pq.write_table(_table([0, 1]), folder / "rows.parquet")
    os.mkfifo(folder / "run.json")
    line = _within(10, lambda: fails("diff", str(folder), str(folder)))
    assert f"{folder}/run.json: is not a regular file" in line, line


def test_a_paced_run_that_would_take_years_is_refused(tmp_path: Path,
                                                      fails: Callable[..., str]) -> None:
    """ProcessingTime (the default) releases records at their timestamps in real time: a trace
    spanning 10^12 ms waited for 31 years; a generated spec of that span too."""
    trace = tmp_path / "trace.parquet"
    pq.write_table(_table([0, 5, 10**12]), trace)
    spec = write_spec(tmp_path, TRACE_SPEC)
    line = _within(30, lambda: fails("run", str(spec), "--in-process", "--backend", "heap",
                                     "--strategy", "none", "--results-dir", str(tmp_path / "r")))
    assert "days of wall time per scenario; at most 7 days" in line, line
    long = GENERATED.replace("events = 50", "duration_ms = 1000000000000").replace(
        "rate = 1000", "rate = 1")
    spec = write_spec(tmp_path, SPEC_HEAD + long, name="paced.toml")
    line = fails("run", str(spec), "--in-process", "--results-dir", str(tmp_path / "r"))
    assert line.startswith("statebench: error: the paced run of t spans 1000000000000 ms"), line
    assert list((tmp_path / "r").iterdir()) == []  # the trace's: before any job, no run folder
