"""The planted-regression kit: a plant lands where it is named, runs, and costs what it says."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workloads.cli.options import CliError
from workloads.regress import plants as P

SOURCE = textwrap.dedent('''\
    class Backend:
        def make(self):
            """Builds the closure."""
            calls = []

            def set_current_key(key):
                """Runs once per record."""
                calls.append(key)

            return set_current_key, calls
    ''')


def test_a_plant_goes_first_in_the_named_closure_after_its_docstring() -> None:
    planted = P.plant_source(SOURCE, "Backend.make.set_current_key", P.Plant("heap.key", 3))
    lines = planted.splitlines()
    at = lines.index('            """Runs once per record."""')
    assert lines[at + 1] == "            for _ in range(3):  # planted regression"
    assert lines[at + 2] == "                pass"
    assert lines[at + 3] == "            calls.append(key)"
    namespace: dict = {}
    exec(compile(planted, "planted", "exec"), namespace)  # the planted code still runs
    select, calls = namespace["Backend"]().make()
    select(5)
    assert calls == [5]


def test_every_site_exists_in_this_tree() -> None:
    root = Path(__file__).resolve().parents[2]
    for name, site in P.SITES.items():
        source = (root / site.path).read_text(encoding="utf-8")
        assert "planted regression" in P.plant_source(source, site.function, P.Plant(name, 1))


def test_a_missing_function_or_a_bad_plant_is_refused_in_one_line() -> None:
    with pytest.raises(CliError, match="missing 'nope'"):
        P.plant_source(SOURCE, "Backend.nope", P.Plant("heap.key", 1))
    for text in ("heap.key", "nowhere=3", "heap.key=-1", "heap.key=x"):
        with pytest.raises(CliError, match="SITE=LOOPS"):
            P.Plant.parse(text)
    assert P.Plant.parse("rocksdb.key=25") == P.Plant("rocksdb.key", 25)


def test_a_planted_commit_differs_from_its_parent_only_by_the_plant(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    site = P.SITES["heap.key"]
    (repo / site.path).parent.mkdir(parents=True)
    (repo / site.path).write_text(SOURCE.replace("class Backend", "class HeapKeyedStateBackend")
                                  .replace("def make", "def _make_key_selector"))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    base = P.commit(repo, [], "base with the file")
    planted = P.commit(repo, [P.Plant("heap.key", 4)], "planted")
    diff = subprocess.run(["git", "diff", "--unified=0", base, planted], cwd=repo,
                          capture_output=True, text=True, check=True).stdout
    added = [line for line in diff.splitlines() if line.startswith("+") and
             not line.startswith("+++")]
    assert added == ["+            for _ in range(4):  # planted regression",
                     "+                pass"]
    assert not [line for line in diff.splitlines() if line.startswith("-") and
                not line.startswith("---")]


def test_a_layout_only_commit_adds_unused_classes_that_backends_imports(tmp_path: Path) -> None:
    """The layout null changes no code on a measured path: one new module, one import line,
    and the package still imports (with the classes made)."""
    repo = tmp_path / "repo"
    (repo / "backends").mkdir(parents=True)
    (repo / P.LAYOUT_IMPORTER).write_text('"""Doc."""\n\nfrom __future__ import annotations\n'
                                          "\nVALUE = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    base = P.commit(repo, [], "base")
    layout = P.layout_commit(repo, 3, "layout")
    names = subprocess.run(["git", "diff", "--name-status", base, layout], cwd=repo,
                           capture_output=True, text=True, check=True).stdout.split()
    assert names == ["M", P.LAYOUT_IMPORTER, "A", P.LAYOUT_MODULE]
    done = subprocess.run([sys.executable, "-c", "import backends, backends._layout_null as m; "
                           "print(backends.VALUE, sum(n.startswith('Unused') for n in vars(m)))"],
                          cwd=repo, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "6"]
    (repo / P.LAYOUT_IMPORTER).write_text("VALUE = 1\n")
    with pytest.raises(CliError, match="no 'from __future__ import annotations'"):
        P.add_layout_null(repo, 1)


def test_the_experiments_rounds_rotate_the_commits_order() -> None:
    from bench.regress_experiment import KINDS, round_kinds

    orders = [round_kinds(i, planted=True) for i in range(len(KINDS))]
    assert sorted(orders) == sorted(set(orders)) and len(set(orders)) == len(KINDS)
    for position in range(len(KINDS)):  # each kind goes first, second and last once
        assert sorted(o[position] for o in orders) == sorted(KINDS)
    assert round_kinds(4, planted=False) == tuple(k for k in round_kinds(4, True)
                                                  if k != "planted")


def test_the_planted_share_counts_the_loop_once_per_operation_of_the_matching_benchmarks(
        ) -> None:
    plants = [P.Plant("heap.key", 0), P.Plant("rocksdb.key", 10)]
    cost = {"heap.key": 50.0, "rocksdb.key": 100.0}
    assert P.planted_share("state/heap/plain/value_get", plants, cost, 1000, 500_000) == 0.1
    assert P.planted_share("state/rocksdb/ttl/map_get", plants, cost, 1000, 2_000_000) == 0.05
    assert P.planted_share("raw/heap/value_get", plants, cost, 1000, 100_000) == 0.0


def test_a_longer_loop_costs_more() -> None:
    assert 0 < P.loop_ns(0, number=20_000) < P.loop_ns(40, number=20_000)
