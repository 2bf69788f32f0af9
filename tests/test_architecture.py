"""Structural rules of `backends/` and `workloads/`, read from the source's syntax trees
(nothing is imported).

1. No import cycle inside `backends/` nor inside `workloads/`, counting imports inside functions
   too: a function-level import hides a cycle from Python's import machinery but not from a
   reader, who then cannot understand one module without the other. (A submodule's implicit
   import of its parent package is not an edge, as in import-linter: every package's `__init__`
   re-exports. An explicit `from pkg import name` of a submodule is one.)
2. Only a class writes its objects' private attributes: `x._name = ...` (or `del`, augmented
   assignment, `setattr(x, "_name", ...)`) is allowed on `self`/`cls`, or on a local name a
   method bound to `self` (a hot-path closure's `backend = self`). Snapshot code once wrote
   `backend._raw[...]`, so a backend could not change its own storage without breaking it.

Each rule is also run on a small bad example, so the checks are shown to be able to fail.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "backends"
#: Every package whose modules must form no import circle, with one module it surely has (so a
#: walk that found nothing cannot pass).
ACYCLIC_PACKAGES = {"backends": "backends.keyed_backend", "workloads": "workloads.cli.run"}


# --------------------------------------------------------------------------- import graph
def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of `package` (packages by __init__)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(module: str, is_package: bool, node: ast.AST, known: set[str]) -> Iterator[str]:
    """The known modules one import statement (anywhere in the file) names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:  # "import a.b.c" names a.b.c (or its package)
                name = name.rpartition(".")[0]
            if name:
                yield name
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            if sub in known:  # "from pkg import module"
                yield sub
            elif source in known:
                yield source


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    files = module_files(root, package)
    known = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        deps = set()
        for node in ast.walk(tree):
            deps.update(_imported(module, path.name == "__init__.py", node, known))
        deps.discard(module)
        graph[module] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _edges_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    members = set(component)
    return [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]


@pytest.mark.parametrize("package", sorted(ACYCLIC_PACKAGES))
def test_package_has_no_import_cycle(package: str) -> None:
    graph = import_graph(ROOT, package)
    assert ACYCLIC_PACKAGES[package] in graph and len(graph) > 20  # the walk found the package
    found = cycles(graph)
    assert not found, f"import cycles in {package}/: " + "; ".join(
        ", ".join(_edges_in(c, graph)) for c in found)


def test_cycle_check_sees_function_level_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n    return a\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]


def test_cycle_check_sees_a_circle_through_a_package_init(tmp_path: Path) -> None:
    """The two shapes workloads/ had: a package's `__init__` importing its submodules inside a
    function while they import a name from the package (cli's CliError, engines'
    check_schedule), and two submodules importing each other inside functions (cli's ab and
    diff). Moving the shared name to a module of its own breaks both."""
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "class AppError(Exception):\n    pass\n"
        "def build():\n    from app import ab, diff\n    return ab, diff\n")
    (pkg / "ab.py").write_text("def f():\n    from app import AppError\n"
                               "    from app.diff import g\n    return AppError, g\n")
    (pkg / "diff.py").write_text("def g():\n    from app.ab import f\n    return f\n")
    graph = import_graph(tmp_path, "app")
    assert cycles(graph) == [["app", "app.ab", "app.diff"]]
    (pkg / "errors.py").write_text("class AppError(Exception):\n    pass\n")
    (pkg / "__init__.py").write_text(
        "from app.errors import AppError\ndef build():\n    from app import ab, diff\n"
        "    return AppError, ab, diff\n")
    (pkg / "ab.py").write_text("from app.errors import AppError\n")
    assert cycles(import_graph(tmp_path, "app")) == []


# --------------------------------------------------------------------------- private writes
def _self_aliases(method: ast.AST, self_name: str) -> set[str]:
    """`self` and every local name bound to it (`backend = self`, `a, backend = x, self`)."""
    names = {self_name, "cls"}
    for node in ast.walk(method):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = [(target, node.value)]
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs = list(zip(target.elts, node.value.elts))
            for t, v in pairs:
                if isinstance(t, ast.Name) and isinstance(v, ast.Name) and v.id in names:
                    names.add(t.id)
    return names


def _private_written(node: ast.AST) -> list[tuple[ast.expr, str]]:
    """(object, attribute) of every private attribute this statement writes."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    out = []
    flat: list[ast.expr] = []
    while targets:
        t = targets.pop()
        if isinstance(t, ast.Tuple | ast.List):
            targets.extend(t.elts)
        elif isinstance(t, ast.Subscript):  # obj._table[k] = v writes obj's private table
            flat.append(t.value)
        else:
            flat.append(t)
    for t in flat:
        if isinstance(t, ast.Attribute) and _is_private(t.attr):
            out.append((t.value, t.attr))
    call = node.value if isinstance(node, ast.Expr) else None
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "setattr" and len(call.args) >= 2):
        attr = call.args[1]
        if isinstance(attr, ast.Constant) and isinstance(attr.value, str) and _is_private(
                attr.value):
            out.append((call.args[0], attr.value))
    return out


def _is_private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def foreign_private_writes(path: Path, source: str | None = None, reads: bool = False
                           ) -> list[str]:
    """`file:line obj._attr` for each write of a private attribute not on the writer's self
    (with `reads`, also each read of one)."""
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    allowed_at: dict[int, set[str]] = {}  # id(statement) -> names that are `self` there

    def visit(node: ast.AST, names: set[str], is_class_body: bool) -> None:
        for child in ast.iter_child_nodes(node):
            scope = names
            if isinstance(child, ast.ClassDef):
                scope = set()
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and is_class_body:
                args = child.args.posonlyargs + child.args.args
                scope = _self_aliases(child, args[0].arg if args else "self")
            if isinstance(child, ast.stmt):
                allowed_at[id(child)] = scope
            visit(child, scope, isinstance(child, ast.ClassDef))

    visit(tree, set(), False)
    problems: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        names = allowed_at.get(id(node), set())
        used = _private_written(node)
        if reads:
            used += [(n.value, n.attr) for n in _own_expressions(node)
                     if isinstance(n, ast.Attribute) and _is_private(n.attr)]
        for obj, attr in used:
            if isinstance(obj, ast.Name) and obj.id in names:
                continue
            problem = f"{path.name}:{node.lineno} {ast.unparse(obj)}.{attr}"
            if problem not in problems:
                problems.append(problem)
    return problems


def _own_expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The expression nodes of one statement, not those of statements nested in it."""
    todo = [c for c in ast.iter_child_nodes(stmt) if not isinstance(c, ast.stmt)]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))


def test_no_module_writes_another_objects_private_attributes() -> None:
    problems = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        problems += [f"{path.relative_to(ROOT).parent}/{p}" for p in foreign_private_writes(path)]
    assert not problems, "private attributes written from outside their class: " + ", ".join(
        problems)


def test_snapshot_code_uses_only_public_names_of_other_objects() -> None:
    """Snapshot and restore go through the backends' public interface (raw_states,
    load_restored, copy_restored, create_checkpoint, adopt_checkpoint, ...): they neither
    write nor read a private attribute of a backend or a raw state."""
    problems = []
    paths = [*sorted((ROOT / PACKAGE / "snapshot").glob("*.py")), ROOT / PACKAGE / "rocksdb_dbs.py"]
    for path in paths:
        problems += foreign_private_writes(path, reads=True)
    assert not problems, "snapshot code touches private attributes: " + ", ".join(problems)


def test_private_write_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    source = (
        "def restore(backend, spec):\n"
        "    backend._raw[spec.name] = 1\n"
        "    setattr(backend, '_closed', True)\n"
        "class Backend:\n"
        "    def __init__(self, other):\n"
        "        self._raw = {}\n"
        "        other._raw = {}\n"
        "    def make(self):\n"
        "        backend = self\n"
        "        def select(key):\n"
        "            backend._cur_key = key\n"
        "        return select\n"
    )
    assert foreign_private_writes(bad, source) == [
        "bad.py:2 backend._raw", "bad.py:3 backend._closed", "bad.py:7 other._raw"]
    assert foreign_private_writes(bad, "def f(b):\n    return b._raw.get(1)\n", reads=True) == [
        "bad.py:2 b._raw"]


# --------------------------------------------------------------------------- private imports
def private_imports(path: Path, source: str | None = None) -> list[str]:
    """`from <project module> import _name` in one file: a private name used across modules.
    A leading underscore says "only this module relies on it"; importing it elsewhere hides a
    dependency its owner cannot see (the CLI's commands once imported each other's `_positive`)."""
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and (
                node.module.split(".")[0] in ("backends", "workloads", "bench")):
            out += [f"{path.name}:{node.lineno} {node.module}.{a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_no_private_name_is_imported_across_modules() -> None:
    problems = []
    for package in ("backends", "workloads", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            problems += private_imports(path)
    assert not problems, "private names imported from another module: " + ", ".join(problems)


def test_private_import_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    source = ("from workloads.cli.options import _positive, positive\n"
              "from __future__ import annotations\n"
              "from backends.types import __all__\n"
              "def f():\n    from backends.types import _SECRET\n")
    assert private_imports(bad, source) == [
        "bad.py:1 workloads.cli.options._positive", "bad.py:5 backends.types._SECRET"]


# --------------------------------------------------------------------------- lane decisions
#: What decides whether a lane can run a scenario: the lane interface's questions and the lane
#: modules' rules behind them (``workloads/lanes``).
LANE_DECISIONS = frozenset({"spec_reason", "strategy_reason", "flink_cleanup_reason",
                            "sql_cleanup_reason", "statebench_cleanup_reason",
                            "operator_reason", "ttl_reason", "spec_problem",
                            "operator_kind_reason"})
#: The one module outside ``workloads/lanes`` that asks the lanes: the planner.
LANE_ASKERS = frozenset({"workloads/run/plan.py"})
#: The names of the five places that used to decide it, each on its own.
RETIRED_DECISIONS = frozenset({"not_applicable_reason", "lane_reason", "is_lane", "is_sql_lane",
                               "operator_lane_reason", "_check_lane_bounds", "_check_sql_lanes"})


def lane_decisions_outside(path: Path, relative: str, source: str | None = None) -> list[str]:
    """`file:line name` for each use of a lane decision in a module that is neither a lane's
    nor the planner, and for each definition of a retired decision point anywhere."""
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    in_lanes = relative.startswith("workloads/lanes/")
    out = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                node.name in RETIRED_DECISIONS):
            out.append(f"{relative}:{node.lineno} def {node.name}")
            continue
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.alias):
            name = node.name
        if name in LANE_DECISIONS and not in_lanes and relative not in LANE_ASKERS:
            out.append(f"{relative}:{getattr(node, 'lineno', 0)} {name}")
    return sorted(out, key=lambda problem: int(problem.split(":")[1].split()[0]))


def test_only_the_lanes_decide_what_a_lane_runs() -> None:
    """Issue 30: whether a lane runs a scenario was decided in five places; now each lane
    decides in its own module and only the planner asks."""
    problems = []
    seen_lanes = 0
    for package in ("backends", "workloads", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            seen_lanes += relative.startswith("workloads/lanes/")
            problems += lane_decisions_outside(path, relative)
    assert seen_lanes >= 4  # the walk found the lanes' room
    assert not problems, "lane decisions outside workloads/lanes: " + ", ".join(problems)


def test_lane_decision_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    source = ("from workloads.lanes.flink import flink_cleanup_reason\n"
              "def run(lane, cfg):\n    return lane.strategy_reason(cfg, 'none')\n"
              "def is_sql_lane(name):\n    return name == 'flink-sql'\n")
    assert lane_decisions_outside(bad, "workloads/run/x.py", source) == [
        "workloads/run/x.py:1 flink_cleanup_reason", "workloads/run/x.py:3 strategy_reason",
        "workloads/run/x.py:4 def is_sql_lane"]
    assert lane_decisions_outside(bad, "workloads/lanes/x.py", source) == [
        "workloads/lanes/x.py:4 def is_sql_lane"]
    asks = source.split("def is_sql_lane")[0]
    assert lane_decisions_outside(bad, "workloads/run/plan.py", asks) == []


# --------------------------------------------------------------------------- references
#: A path in the repository as the code and docs name one (``docs/ttl.md``, ``workloads/x.py``).
_REPO_PATH = re.compile(r"(?<![\w/.])((?:docs|tests|bench|workloads|backends)/[\w./-]*\w"
                        r"\.(?:py|md|json|toml|java|png|parquet))")


def missing_references(root: Path, texts: dict[str, str]) -> list[str]:
    """`file: path` for each repository path a text names that the repository does not have,
    and each absolute path outside it (a reader cannot follow either)."""
    out = []
    for name, text in texts.items():
        for match in _REPO_PATH.finditer(text):
            path = match.group(1)
            if not (root / path).exists():
                out.append(f"{name}: {path}")
        out += [f"{name}: {m.group(0)}" for m in re.finditer(r"/work/[\w./-]+", text)]
    return out


def test_every_file_the_code_and_docs_name_exists() -> None:
    texts = {}
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT).as_posix()
        if (path.suffix in (".py", ".md", ".toml", ".java") and path.is_file()
                and not relative.startswith((".", "results/", "statebench.egg-info/"))
                and relative != "tests/test_architecture.py"):  # its examples of what it refuses
            texts[relative] = path.read_text(errors="replace")
    assert len(texts) > 100 and "README.md" in texts
    problems = missing_references(ROOT, texts)
    assert not problems, "named but not in the repository: " + ", ".join(problems)


def test_missing_reference_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ttl.md").write_text("")
    texts = {"a.py": "see docs/ttl.md and docs/gone.md, or /work/notes/x.md"}
    assert missing_references(tmp_path, texts) == ["a.py: docs/gone.md", "a.py: /work/notes/x.md"]


# --------------------------------------------------------------------------- names by registry
#: Each axis of a comparison, the names it knows and the modules that may compare against them
#: (its registry and the facts it is built from). Anywhere else a name comparison (``==``,
#: ``!=``, ``in (...)``, ``startswith``) decides by a name string, and a strategy, backend or
#: engine added to the registry is missed there without a word: the place asks the registry.
NAME_AXES: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "strategy": (frozenset({"none", "full_snapshot", "incremental", "compaction_filter",
                            "timer", "spark_watermark", "spark_no_ttl", "spark_ttl",
                            "spark_timer", "spark_"}),
                 ("backends/strategies.py",)),
    "backend": (frozenset({"heap", "rocksdb", "forst", "forst-async", "hashmap"}),
                ("backends/storage/registry.py", "backends/flink/lanes.py")),
    "lane": (frozenset({"flink-heap", "flink-rocksdb", "flink-forst", "flink-forst-async",
                        "flink-sql", "flink-sql-heap", "spark-tws", "spark-tws-nochangelog",
                        "spark-sql", "flink-", "spark-"}),
             ("workloads/lanes/", "backends/flink/lanes.py")),
    "engine": (frozenset({"statebench", "flink", "flink-sql", "spark"}), ("workloads/lanes/",)),
}
#: Comparisons that stay, each with why (file, the comparison as ``ast.unparse`` writes it).
NAME_COMPARISONS_ALLOWED: dict[tuple[str, str], str] = {}


def _string_constants(node: ast.AST) -> list[str]:
    """The string constants of an operand: a constant, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [e.value for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("frozenset", "set", "tuple") and node.args):
        return _string_constants(node.args[0])
    return []


def _compared_names(node: ast.AST) -> list[str]:
    """The string constants one comparison or ``startswith``/``endswith`` call compares with,
    except a checkpoint mode's (``mode == "incremental"``: a mode is named like a strategy)."""
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        if not any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops):
            return []
        if any("mode" in ast.unparse(o) for o in operands if not _string_constants(o)):
            return []
        return [v for o in operands for v in _string_constants(o)]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith") and node.args):
        return _string_constants(node.args[0])
    return []


def name_comparisons(relative: str, source: str,
                     allowed: dict[tuple[str, str], str] = NAME_COMPARISONS_ALLOWED
                     ) -> list[str]:
    """`file:line axis: comparison` for each comparison against a strategy, backend, lane or
    engine name outside that axis' registry modules (and not in ``allowed``)."""
    tree = ast.parse(source, relative)
    out = []
    for node in ast.walk(tree):
        names = _compared_names(node)
        if not names:
            continue
        text = ast.unparse(node)
        for axis, (known, homes) in NAME_AXES.items():
            if relative.startswith(homes) or (relative, text) in allowed:
                continue
            if any(name in known for name in names):
                out.append(f"{relative}:{node.lineno} {axis}: {text}")
    return sorted(set(out), key=lambda problem: (int(problem.split(":")[1].split()[0]), problem))


def test_no_module_decides_by_a_strategy_backend_or_engine_name() -> None:
    """A cleanup strategy, a storage backend and a lane's engine are each asked of their
    registry (``backends.strategies``, ``backends.storage.registry``, ``workloads.lanes``);
    a name string compared anywhere else is a place a new one is silently missed."""
    problems = []
    seen = 0
    for package in ("backends", "workloads", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("bench/pytest/"):  # tests of the benchmarks, as tests/
                continue
            seen += 1
            problems += name_comparisons(relative, path.read_text())
    assert seen > 100  # the walk found the packages
    stale = [f"{file}: {text}" for file, text in NAME_COMPARISONS_ALLOWED
             if not (ROOT / file).exists() or not name_comparisons(file, (ROOT / file).read_text(),
                                                                   allowed={})
             or all(text not in p for p in name_comparisons(file, (ROOT / file).read_text(),
                                                            allowed={}))]
    assert not stale, "allowed name comparisons that are gone (drop them): " + ", ".join(stale)
    assert not problems, "decided by a name, not asked of its registry: " + ", ".join(problems)


def test_name_comparison_check_can_fail() -> None:
    source = ("def f(cfg, backend, b, s, mode):\n"
              "    if cfg.strategy.startswith('compaction_filter'):\n"
              "        return backend == 'rocksdb'\n"
              "    if b.startswith('flink-') or engine_of(b) in ('spark', 'flink-sql'):\n"
              "        return s != 'none'\n"
              "    return mode == 'incremental' or kind == 'heap'\n")
    assert name_comparisons("workloads/report/x.py", source) == [
        "workloads/report/x.py:2 strategy: cfg.strategy.startswith('compaction_filter')",
        "workloads/report/x.py:3 backend: backend == 'rocksdb'",
        "workloads/report/x.py:4 engine: engine_of(b) in ('spark', 'flink-sql')",
        "workloads/report/x.py:4 lane: b.startswith('flink-')",
        "workloads/report/x.py:4 lane: engine_of(b) in ('spark', 'flink-sql')",
        "workloads/report/x.py:5 strategy: s != 'none'",
        "workloads/report/x.py:6 backend: kind == 'heap'"]
    # each axis' registry may name its own, and only its own
    assert name_comparisons("backends/strategies.py", source) == [
        "backends/strategies.py:3 backend: backend == 'rocksdb'",
        "backends/strategies.py:4 engine: engine_of(b) in ('spark', 'flink-sql')",
        "backends/strategies.py:4 lane: b.startswith('flink-')",
        "backends/strategies.py:4 lane: engine_of(b) in ('spark', 'flink-sql')",
        "backends/strategies.py:6 backend: kind == 'heap'"]
    assert name_comparisons("workloads/lanes/x.py", "def f(b):\n    return b == 'spark'\n") == []
    assert name_comparisons("workloads/x.py", "def f(b):\n    return b == 'heap'\n",
                            allowed={("workloads/x.py", "b == 'heap'"): "why"}) == []
