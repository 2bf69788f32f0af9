"""Issue 16 item 6: CLI fuzzing beyond the spec schema (``test_spec_fuzz.py``): the Flink lanes'
strategy arguments, ``ab`` and ``diff`` arguments, and trace files. Every example runs the CLI
in this process and must end

* without a traceback, either working (exit 0) or with one line and exit 2;
* when refused, before any work: no results folder, no ab session, no diff page;
* with nothing left behind: no statebench folder in the temp dir (TMPDIR is the test's), no new
  entry in the Flink worker cache, and no child process of this one.

Kept to a few seconds per test (in-process runs of a few events; valid Flink-lane strategies
start one JVM each, so they are drawn less often than wild ones)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from tests.reliability.conftest import GENERATED, SPEC_HEAD, need_flink_lanes
from workloads import cli, limits


def fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.filter_too_much])
TTL_SPEC = SPEC_HEAD + GENERATED + "[state]\nttl_ms = 100\n"


class Sandbox:
    """A temp dir of its own (TMPDIR and tempfile's), and what must hold after every example."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root, self.capsys = root, capsys
        self.tmp = root / "tmp"
        self.tmp.mkdir()
        self.n = 0
        self.children = {p.pid for p in psutil.Process().children(recursive=True)}
        from backends.flink.build import cache_root

        self.cache = cache_root()
        self.cache_before = self._cache()

    def _cache(self) -> set[str]:
        return set(os.listdir(self.cache)) if self.cache.is_dir() else set()

    def folder(self) -> Path:
        self.n += 1
        made = self.root / f"ex{self.n}"
        made.mkdir()
        return made

    def cli(self, *argv: str) -> tuple[int, str]:
        try:
            status = cli.main(list(argv))
        except SystemExit as exc:  # argparse's usage errors
            status = int(exc.code or 0)
        err = self.capsys.readouterr().err
        assert "Traceback" not in err, err[-3000:]
        assert status in (0, 2), (status, err[-3000:])
        if status == 2:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("statebench"), err[-3000:]
        self.left_behind()
        return status, err

    def left_behind(self) -> None:
        ours = [n for n in os.listdir(self.tmp) if "statebench" in n]
        assert ours == [], ours
        cache = self._cache()
        assert cache <= self.cache_before | {n for n in cache if not n.startswith(".")
                                             and not n.startswith("classes-")}, cache
        deadline = time.monotonic() + 10
        while True:
            extra = [p for p in psutil.Process().children(recursive=True)
                     if p.pid not in self.children and p.is_running()
                     and p.status() != psutil.STATUS_ZOMBIE]
            if not extra or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert extra == [], [" ".join(p.cmdline()[:3]) for p in extra]


@pytest.fixture
def sandbox(tmp_path: Path, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path, capsys)
    monkeypatch.setenv("TMPDIR", str(box.tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(box.tmp))
    yield box


# ------------------------------------------------------------------------------------------------
# The Flink lanes' strategy arguments
# ------------------------------------------------------------------------------------------------

WILD_INTS = [0, 1, -1, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, 10**23, limits.TEN_YEARS_MS,
             limits.TEN_YEARS_MS + 1, -(2**63)]
wild_arg = st.one_of(st.sampled_from(WILD_INTS).map(str),
                     st.integers(-(2**70), 2**70).map(str),
                     st.sampled_from(["1e23", "1.5", "nan", "inf", "", " ", "x", "0x10", "-0",
                                      "true", "1_000"]))
sane_arg = st.integers(0, 50).map(str)
flag = st.sampled_from(["true", "false", "yes", "no", "maybe", "", "1"])


@st.composite
def lane_strategies(draw: Any) -> tuple[str, str]:
    arg = wild_arg if draw(st.floats(0, 1)) < 0.8 else sane_arg
    text = draw(st.one_of(
        st.builds(lambda a, b: f"incremental({a}, {b})", arg, flag),
        st.builds(lambda a: f"incremental({a})", arg),
        st.builds(lambda a, b: f"compaction_filter({a}, {b})", arg, arg),
        st.builds(lambda a: f"compaction_filter({a})", arg),
        st.sampled_from(["timer(5)", "compaction_filter(1, 2, 3)", "incremental(((",
                         "incremental(5, true", "bogus(1)", "incremental(5,,true)"]),
    ))
    return draw(st.sampled_from(["flink-heap", "flink-rocksdb"])), text


@fuzz(30)
@given(case=lane_strategies())
@example(case=("flink-heap", "incremental(2147483648, false)"))
@example(case=("flink-rocksdb", "compaction_filter(100000000000000000000000)"))
@example(case=("flink-rocksdb", "compaction_filter(1000, 315360000001)"))
def test_lane_strategy_arguments(sandbox: Sandbox, case: tuple[str, str]) -> None:
    need_flink_lanes()
    lane, strategy = case
    folder = sandbox.folder()
    spec = folder / "spec.toml"
    spec.write_text(TTL_SPEC)
    results = folder / "r"
    status, _ = sandbox.cli("run", str(spec), "--in-process", "--events", "20", "--backend",
                            lane, "--strategy", strategy, "--no-report", "--results-dir",
                            str(results))
    if status == 2:
        assert not results.exists()


# ------------------------------------------------------------------------------------------------
# ab and diff arguments: every example has something wrong, and is refused before any work
# ------------------------------------------------------------------------------------------------

BAD_REVS = ["no-such-revision-xyz", "HEAD~999999", "", "-x", "../..", "HEAD:", "\u00e9", "a b"]


def _bad_file(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\0\1\2\3")
    elif kind == "latin-1":
        path.write_bytes('name = "caf\u00e9"\n'.encode("latin-1"))
    elif kind == "huge":
        with open(path, "wb") as out:
            out.truncate(limits.MAX_SPEC_BYTES + 1)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(os.urandom(64))


FILE_KINDS = ["fifo", "folder", "binary", "latin-1", "huge", "missing"]


@fuzz(40)
@given(rev_a=st.sampled_from([".", *BAD_REVS]), rev_b=st.sampled_from([".", *BAD_REVS]),
       spec_kind=st.sampled_from(["ycsb-a", *FILE_KINDS, "no-such-spec-name"]),
       options=st.lists(st.sampled_from([
           ("--rounds", "0"), ("--rounds", "-3"), ("--rounds", "x"), ("--rounds", "2"),
           ("--alpha", "0"), ("--alpha", "1.5"), ("--alpha", "nan"), ("--alpha", "0.05"),
           ("--events", "0"), ("--events", "10"), ("--backend", "heap,heap"),
           ("--backend", "nosuch"), ("--strategy", ","), ("--master", "mesos://h:1"),
           ("--master", "local[99999999999]"), ("--in-process",)]), max_size=3))
@example(rev_a=".", rev_b=".", spec_kind="fifo", options=[("--in-process",)])
@example(rev_a=".", rev_b=".", spec_kind="no-such-spec-name", options=[("--in-process",)])
@example(rev_a=".", rev_b=".", spec_kind="huge", options=[])
def test_ab_arguments(sandbox: Sandbox, rev_a: str, rev_b: str, spec_kind: str,
                      options: list[tuple[str, ...]]) -> None:
    flat = [x for option in options for x in option]
    fine_options = all(o in {("--rounds", "2"), ("--alpha", "0.05"), ("--events", "10"),
                             ("--in-process",)} for o in options)
    assume(not (rev_a == rev_b == "." and spec_kind == "ycsb-a" and fine_options))
    folder = sandbox.folder()
    spec = spec_kind
    if spec_kind not in ("ycsb-a", "no-such-spec-name"):
        spec = str(folder / "spec.toml")
        _bad_file(spec_kind, Path(spec))
    results = folder / "r"
    status, _ = sandbox.cli("ab", rev_a, rev_b, spec, *flat, "--results-dir", str(results))
    assert status == 2
    assert not results.exists() or list(results.iterdir()) == []


ROW_KINDS = ["missing", "fifo", "empty", "random", "sparse-huge", "folder"]
JSON_KINDS = ["missing", "fifo", "empty", "random", "array", "folder", "binary"]


def _run_folder(root: Path, name: str, rows: str, meta: str) -> Path:
    folder = root / name
    folder.mkdir()
    if rows == "sparse-huge":
        with open(folder / "rows.parquet", "wb") as out:
            out.truncate(limits.MAX_RUN_ROWS_BYTES + 1)
    elif rows != "missing":
        _bad_file(rows, folder / "rows.parquet")
    if meta == "array":
        (folder / "run.json").write_text("[1, 2]")
    elif meta != "missing":
        _bad_file(meta, folder / "run.json")
    return folder


@fuzz(40)
@given(a=st.tuples(st.sampled_from(ROW_KINDS), st.sampled_from(JSON_KINDS)),
       b=st.one_of(st.none(), st.tuples(st.sampled_from(ROW_KINDS),
                                        st.sampled_from(JSON_KINDS))),
       rerun=st.booleans(), output=st.sampled_from([None, "out.html", "sub/out.html"]))
def test_diff_arguments(sandbox: Sandbox, a: tuple[str, str], b: tuple[str, str] | None,
                        rerun: bool, output: str | None) -> None:
    folder = sandbox.folder()
    run_a = _run_folder(folder, "a", *a)
    run_b = _run_folder(folder, "b", *b) if b is not None else folder / "nothing-here"
    argv = ["diff", str(run_a), str(run_b), "--results-dir", str(folder / "r")]
    if rerun:
        argv.append("--rerun")
    if output is not None:
        argv += ["-o", str(folder / output)]
    status, _ = sandbox.cli(*argv)
    assert status == 2
    assert not (folder / "r").exists()
    assert output is None or not (folder / output).exists()


# ------------------------------------------------------------------------------------------------
# Trace files
# ------------------------------------------------------------------------------------------------

#: On event time: a paced (ProcessingTime, the default) run of a trace spanning years of
#: timestamps takes years of wall time, by design.
TRACE_SPEC = ('name = "tr"\n[source]\nkind = "trace"\npath = "trace.parquet"\n'
              '[state]\ntime_characteristic = "EventTime"\n')
int64s = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from(
    [0, 1, -1, 2**53, 2**53 + 1, 2**62, -(2**62), 2**63 - 1]), st.integers(0, 1000))


OP_NAMES = ["value_get", "value_update", "map_put", "map_get", "list_add", "reducing_add"]
MUTATIONS = ["drop", "string", "float", "null", "bogus-op", "op-code", "wild-ts", "timestamp",
             "negative-ts", "empty"]


@st.composite
def traces(draw: Any) -> pa.Table | bytes:
    """Mostly valid traces (so runs happen), with a few mutations each: a column dropped or of
    another type, nulls, unknown ops, timestamps far out of range; sometimes raw bytes."""
    if draw(st.floats(0, 1)) < 0.1:
        return draw(st.binary(max_size=300))
    n = draw(st.integers(1, 30))
    ts = sorted(draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n)))
    columns: dict[str, pa.Array] = {
        "key": pa.array(draw(st.lists(st.integers(0, 100), min_size=n, max_size=n)), pa.int64()),
        "ts": pa.array(ts, pa.int64()),
        "op": pa.array(draw(st.lists(st.sampled_from(OP_NAMES), min_size=n, max_size=n))),
        "value": pa.array(draw(st.lists(int64s, min_size=n, max_size=n)), pa.int64()),
    }
    if draw(st.booleans()):
        columns["value_size"] = pa.array([8] * n, pa.int32())
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), max_size=2)):
        name = draw(st.sampled_from(sorted(columns)))
        if mutation == "drop":
            columns.pop(name)
        elif mutation == "string":
            columns[name] = pa.array([str(i) for i in range(n)])
        elif mutation == "float":
            columns[name] = pa.array([i + 0.5 for i in range(n)])
        elif mutation == "null":
            columns[name] = pa.array([None] * n, pa.int64())
        elif mutation == "bogus-op":
            columns["op"] = pa.array(["bogus"] * n)
        elif mutation == "op-code":
            columns["op"] = pa.array(draw(st.lists(st.integers(-3, 20), min_size=n,
                                                   max_size=n)), pa.int8())
        elif mutation == "wild-ts":
            columns["ts"] = pa.array(draw(st.lists(int64s, min_size=n, max_size=n)), pa.int64())
        elif mutation == "negative-ts":
            columns["ts"] = pa.array([-1] * n, pa.int64())
        elif mutation == "timestamp":
            unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
            columns["ts"] = pa.array(draw(st.lists(int64s, min_size=n, max_size=n)),
                                     pa.timestamp(unit))
        else:
            return pa.table({k: v.slice(0, 0) for k, v in columns.items()})
    return pa.table(columns) if columns else pa.table({"x": pa.array([], pa.int64())})


@fuzz(60)
@given(trace=traces(), checkpoints=st.sampled_from([None, 2000]))
@example(trace=pa.table({"key": [1, 2, 3], "ts": [-(2**62), 0, 2**62],  # the 22 GB
                         "op": ["value_update"] * 3, "value": [1, 2, 3]}), checkpoints=1000)
@example(trace=pa.table({"key": [1, 2], "ts": [0, 2**53], "op": ["value_update"] * 2,
                         "value": [1, 2]}), checkpoints=1)
def test_trace_files(sandbox: Sandbox, trace: pa.Table | bytes, checkpoints: int | None) -> None:
    folder = sandbox.folder()
    path = folder / "trace.parquet"
    if isinstance(trace, bytes):
        path.write_bytes(trace)
    else:
        pq.write_table(trace, path)
    text = TRACE_SPEC + (f"[checkpoints]\ninterval_ms = {checkpoints}\n" if checkpoints else "")
    (folder / "trace.toml").write_text(text)
    results = folder / "r"
    status, _ = sandbox.cli("run", str(folder / "trace.toml"), "--in-process", "--backend",
                            "heap", "--strategy", "none", "--no-report", "--results-dir",
                            str(results))
    if status == 2:
        assert not results.exists() or list(results.iterdir()) == []


# ------------------------------------------------------------------------------------------------
# Operator specs and sweep values (issue 31): a run of a fuzzed operator spec, with or without a
# fuzzed --sweep, ends working (its events recorded as asked) or in one line before any work
# ------------------------------------------------------------------------------------------------

sweep_value = st.one_of(st.integers(1, 400).map(str), st.sampled_from(
    [str(v) for v in WILD_INTS] + ["1e3", "x", "", "-5", "0", "1_000", "nan"]))


@st.composite
def sweeps(draw: Any) -> str:
    strategy, knob = draw(st.sampled_from([
        ("ttl", "ms"), ("ttl", "ms"), ("incremental", "size"), ("incremental", "per_record"),
        ("timer", "granularity_ms"), ("compaction_filter", "query_time_after_num_entries"),
        ("ttl", "nope"), ("nope", "ms")]))
    values = draw(st.lists(sweep_value, min_size=0, max_size=3))
    return f"{strategy}({knob}={','.join(values)})"


@fuzz(40)
@given(doc=st.deferred(lambda: _operator_documents(max_events=300)),
       sweep=st.one_of(st.none(), sweeps()))
@example(doc={"name": "op", "operator": {"kind": "dedup"}, "time": {"rate": 1000, "events": 1},
              "state": {"time_characteristic": "EventTime", "ttl_ms": 10}}, sweep=None)
@example(doc={"name": "op", "operator": {"kind": "tumbling_window", "slide_ms": 10},
              "time": {"rate": 1000, "events": 100},
              "state": {"time_characteristic": "EventTime"}}, sweep=None)
@example(doc={"name": "op", "operator": {"kind": "dedup"}, "time": {"rate": 1000,
                                                                     "events": 200},
              "state": {"time_characteristic": "EventTime", "ttl_ms": 10}},
         sweep="ttl(ms=5,99999999999999999999)")
def test_operator_specs_and_sweep_values(sandbox: Sandbox, doc: dict[str, Any],
                                         sweep: str | None) -> None:
    import json

    from tests.reliability.test_spec_fuzz import _toml_doc

    folder = sandbox.folder()
    spec = folder / "op.toml"
    spec.write_text(_toml_doc(doc))
    results = folder / "r"
    argv = ["run", str(spec), "--in-process", "--backend", "heap", "--no-report", "--no-latency",
            "--parallelism", "1", "--results-dir", str(results)]
    if sweep is not None:
        argv += ["--sweep", sweep]
    status, _ = sandbox.cli(*argv)
    if status == 2:
        assert not results.exists() or list(results.iterdir()) == []
        return
    (run_dir,) = results.iterdir()
    config = json.loads((run_dir / "run.json").read_text())["config"]
    assert config["events"] == doc["time"]["events"]  # what was asked, not the bids
    assert config["operator_records"] > 0  # a run in which nothing reached the operator is refused


def _operator_documents(max_events: int) -> st.SearchStrategy[dict[str, Any]]:
    from tests.reliability.test_spec_fuzz import operator_documents

    return operator_documents(max_events=max_events)
