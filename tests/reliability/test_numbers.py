"""Issue 10, defect 3: numeric edge cases give one clean message, before any work.

Each case is a reproduction from the issue as a user meets it: a spec file or an option on
``statebench run``. None may reach a numpy warning, an OverflowError or an int64 wrap, so
warnings are errors here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.reliability.conftest import write_spec
from workloads import limits

pytestmark = pytest.mark.filterwarnings("error")

KEYS = 'count = 100\ndistribution = "uniform"\n'
OPS = "value_get = 0.5\nvalue_update = 0.5\n"


def spec_text(keys: str = KEYS, time: str = "rate = 1000\nevents = 50\n", extra: str = "") -> str:
    return (f'name = "t"\n[keys]\n{keys}[operations]\n{OPS}[time]\n{time}{extra}'
            '[state]\nttl_ms = 1000\nstrategies = ["none", "compaction_filter"]\n')


SESSIONS = 'distribution = "sessions"\nlength = { distribution = "constant", ms = 1000 }\n'

CASES = [
    # (id, spec text, field named, fragment of the message)
    ("rate 1e300", spec_text(time="rate = 1e300\nevents = 50\n"), "time.rate",
     "must be in 1..1e+09 events per logical second"),
    ("rate 0.0001", spec_text(time="rate = 0.0001\nevents = 50\n"), "time.rate",
     "at least one event per second"),
    ("sessions start_rate 1e300", spec_text(keys=SESSIONS + "start_rate = 1e300\n"),
     "keys.start_rate", "must be in (0, 1e+09] sessions per logical second"),
    ("sessions implied concurrency", spec_text(keys=SESSIONS + "start_rate = 1e8\n"),
     "keys.start_rate", "live sessions"),
    ("latest insert_rate 1e300",
     spec_text(keys='distribution = "latest"\ncount = 100\ninsert_rate = 1e300\n'),
     "keys.insert_rate", "keys per logical second"),
    ("latest key ids beyond int64",
     spec_text(keys='distribution = "latest"\ninsert_rate = 1e9\n',
               time="rate = 1\nevents = 10000000000\n"),
     "keys.insert_rate", "key ids must stay below 4611686018427387904"),
    ("events 0", spec_text(time="rate = 1000\nevents = 0\n"), "time.events",
     "must be in 1..10000000000 events"),
    ("events 9e18", spec_text(time="rate = 1000\nevents = 9000000000000000000\n"),
     "time.events", "a run must have events and must end"),
    ("duration 2**63-1", spec_text(time="rate = 1000\nduration_ms = 9223372036854775807\n"),
     "time.duration_ms", "must fit int64 ms"),
    ("duration makes too many events",
     spec_text(time="rate = 1e9\nduration_ms = 100000000\n"), "time.duration_ms",
     "makes 100000000000000 events"),
    ("start_ms near 2**63", spec_text(time="rate = 1000\nevents = 50\n"
                                           "start_ms = 9223372036854775000\n"),
     "time.start_ms", "must fit int64 ms"),
    ("start_ms + duration beyond the limit",
     spec_text(time=f"rate = 1\nevents = 50\nstart_ms = {limits.MAX_TIME_MS - 10}\n"),
     "time.start_ms", "must stay <= 9007199254740992 ms"),
    ("pareto shape 1e-300", spec_text(extra=(
        '[values]\ntype = "bytes"\n'
        'size = { distribution = "pareto", shape = 1e-300, scale = 10, max = 1000 }\n')),
     "values.size.shape", "must be in 0.1..100"),
    ("value of 2 GB", spec_text(extra=(
        '[values]\ntype = "bytes"\nsize = { distribution = "constant", bytes = 2000000000 }\n')),
     "values.size.bytes", "64 MiB per value at most"),
    ("exponential percentile ~0", spec_text(
        keys='count = 100\ndistribution = "exponential"\npercentile = 1e-300\n'),
     "keys.percentile", "must be in 0.001..99.999"),
    ("ttl beyond int64 ms", spec_text(extra="").replace("ttl_ms = 1000",
                                                        "ttl_ms = 9223372036854775807"),
     "state.ttl_ms", "must fit int64 ms"),
]


@pytest.mark.parametrize(("text", "field", "fragment"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_numeric_edge_case_is_one_message(text: str, field: str, fragment: str, tmp_path: Path,
                                          fails: Callable[..., str]) -> None:
    spec = write_spec(tmp_path, text)
    line = fails("run", str(spec), "--in-process", "--results-dir", str(tmp_path / "r"))
    assert line.startswith(f"statebench: error: {field}: "), line
    assert fragment in line
    assert not (tmp_path / "r").exists()  # refused before the results folder is even made


@pytest.mark.parametrize(("option", "value", "fragment"), [
    ("--events", "0", "must be in 1..10000000000 events"),
    ("--events", "99999999999999999999", "must be in 1..10000000000 events"),
    ("--sample-interval-ms", "99999999999999999999", "logical time must fit int64 ms"),
    ("--source-partitions", "99999999999", "must be in 1..10000 partitions"),
    ("--time-speedup", "inf", "must be a finite number in 0.001..1e+06"),
    ("--time-speedup", "1e-300", "must be in 0.001..1e+06"),
    ("--time-speedup", "nan", "must be a finite number"),
    ("--warmup", "1", "must be in [0, 1)"),
    ("--repetitions", "0", "must be in 1..1000 repetitions"),
    ("--batch-size", "1e3", "expected an integer, got '1e3'"),
])
def test_numeric_option_is_one_message(option: str, value: str, fragment: str, tmp_path: Path,
                                       usage_error: Callable[..., str]) -> None:
    line = usage_error("run", "ycsb-a", "--in-process", "--results-dir", str(tmp_path),
                       option, value)
    assert f"argument {option}: " in line and fragment in line


def test_spec_and_option_use_the_same_rule_and_words(
    tmp_path: Path, fails: Callable[..., str], usage_error: Callable[..., str]
) -> None:
    spec = write_spec(tmp_path, spec_text(time="rate = 1000\nevents = 0\n"))
    from_spec = fails("run", str(spec), "--in-process", "--results-dir", str(tmp_path / "r"))
    from_cli = usage_error("run", "ycsb-a", "--in-process", "--events", "0")
    rule = limits.EVENTS.problem(0)
    assert rule is not None and rule in from_spec and rule in from_cli


@pytest.mark.parametrize(("option", "value"), [("--backend", ""), ("--backend", ",,"),
                                                ("--strategy", ","), ("--strategy", " ")])
def test_empty_list_is_refused_not_all(option: str, value: str, tmp_path: Path,
                                       fails: Callable[..., str]) -> None:
    line = fails("run", "ycsb-a", "--in-process", "--events", "10", "--results-dir",
                 str(tmp_path), option, value)
    assert line.startswith(f"statebench: error: {option}: empty list")


def test_empty_trace_is_refused_like_events_0(tmp_path: Path, fails: Callable[..., str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"key": pa.array([], pa.int64()), "ts": pa.array([], pa.int64()),
                             "op": pa.array([], pa.string()),
                             "value": pa.array([], pa.int64())}), trace)
    spec = write_spec(tmp_path, 'name = "t"\n[source]\nkind = "trace"\npath = "empty.parquet"\n')
    line = fails("run", str(spec), "--in-process", "--results-dir", str(tmp_path / "r"))
    assert "has no rows; a run needs at least one event" in line
    assert not (tmp_path / "r").exists()  # refused before any folder is made


def test_no_strictly_between_none_wording(tmp_path: Path, fails: Callable[..., str]) -> None:
    spec = write_spec(tmp_path, spec_text(keys='count = 100\ndistribution = "zipfian"\n'
                                               "theta = 0\n"))
    line = fails("run", str(spec), "--in-process", "--results-dir", str(tmp_path / "r"))
    assert "keys.theta: must be strictly between 0.0 and 1.0, got 0" in line
    assert "None" not in line
