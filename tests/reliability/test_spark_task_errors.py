"""Issue 16 item 5: an error raised inside a Spark task reached the user as a 100-140-line
PythonException. statebench's own errors (a trace with a bad value) are now one line, as they
are in-process, and an unexpected one is one line naming its type, its trace behind
``--verbose``. One local Spark session for the module (the CLI reuses it and leaves it be)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.runner.conftest import spark_session
from workloads import cli
from workloads.generator import TraceError
from workloads.run.engines.spark import TaskError, _reported, _unwrapped

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from spark_session("local[2]")


def _trace(folder: Path, ops: list[str], key: list[Any] | None = None) -> Path:
    n = len(ops)
    pq.write_table(pa.table({"key": key or list(range(n)), "ts": list(range(n)), "op": ops,
                             "value": [1] * n}), folder / "trace.parquet")
    spec = folder / "trace.toml"
    spec.write_text('name = "tr"\n[source]\nkind = "trace"\npath = "trace.parquet"\n')
    return spec


def test_a_bad_trace_value_found_in_a_task_is_one_line(
        spark: Any, tmp_path: Path, fails: Callable[..., str]) -> None:
    spec = _trace(tmp_path, ["value_update"] * 99 + ["bogus"])
    line = fails("run", str(spec), "--backend", "heap", "--results-dir", str(tmp_path / "r"))
    assert line.startswith("statebench: error: trace ") and "unknown operation 'bogus'" in line
    assert "at row 99" in line and "PythonException" not in line


def test_a_bad_trace_column_type_is_refused_before_spark(
        tmp_path: Path, fails: Callable[..., str]) -> None:
    spec = _trace(tmp_path, ["value_update"] * 5, key=[str(i) for i in range(5)])
    line = fails("run", str(spec), "--backend", "heap", "--master", "local[2]",
                 "--results-dir", str(tmp_path / "r"))
    assert "column 'key' must be integers, got string" in line
    assert not (tmp_path / "r").exists()


def _job(spark: Any, raise_: Callable[[], None], tagged: bool = True) -> Callable[[], Any]:
    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def inner() -> Iterator[pa.RecordBatch]:
            for batch in batches:
                raise_()
                yield batch

        yield from (_reported(inner()) if tagged else inner())

    return spark.range(2, numPartitions=1).mapInArrow(fn, "id long").toArrow


def _raise_trace() -> None:
    raise TraceError("trace x.parquet: column 'ts': null value at row 3")


def _raise_zero() -> None:
    raise ZeroDivisionError("division by zero\nsecond line")


def test_statebench_errors_come_back_as_themselves(spark: Any) -> None:
    with pytest.raises(TraceError) as err:
        _unwrapped(_job(spark, _raise_trace))
    assert str(err.value) == "trace x.parquet: column 'ts': null value at row 3"


def test_unexpected_errors_are_one_line_naming_their_type(spark: Any) -> None:
    with pytest.raises(TaskError) as err:
        _unwrapped(_job(spark, _raise_zero))
    assert str(err.value) == "a Spark task failed: ZeroDivisionError: division by zero"
    assert not err.value.own and err.value.kind == "builtins.ZeroDivisionError"
    with pytest.raises(TaskError) as err:  # a task that never reached statebench's wrapper
        _unwrapped(_job(spark, _raise_zero, tagged=False))
    assert str(err.value).startswith("a Spark task failed: ZeroDivisionError: division by zero")


def test_the_cli_prints_an_unexpected_task_error_in_one_line(
        spark: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def handler(args: Any) -> int:
        _unwrapped(_job(spark, _raise_zero))
        return 0

    monkeypatch.setattr("workloads.cli.run.run_command", handler)
    assert cli.main(["run", "ycsb-a"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["statebench: error: a Spark task failed: ZeroDivisionError: division by "
                   "zero (--verbose shows the task's full trace)"]
    assert cli.main(["run", "ycsb-a", "--verbose"]) == 1
    assert "Traceback" in capsys.readouterr().err
