"""The planted-regression kit: a real commit that makes chosen hot paths slower by a known cost.

A regression check is worth what it finds, so it is proven on commits whose slowdown is known.
A plant inserts ``for _ in range(N): pass`` at the top of one function's body (found by its
qualified name in the source's syntax tree, nested closures included) and nothing else, so the
planted commit differs from its parent only there. Nothing of it is on main: a hot path pays
nothing for the kit's existence.

The cost is known by construction: the loop's time (measured by :func:`loop_ns` in the same
session) times the number of calls of the planted function per benchmark call, over that
benchmark's own cost. The key switches (``set_current_key``) are called once per state
operation, so one plant there slows every state benchmark of its backend by a different share:
one planted commit tests several sizes at once, and the raw loops beside them, which it cannot
touch, are nulls in the same run.
"""

from __future__ import annotations

import ast
import re
import timeit
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workloads.cli.ab import git
from workloads.cli.options import CliError


@dataclass(frozen=True)
class Site:
    """A hot path a plant can go into, and which benchmarks call it once per operation."""

    path: str  # the source file, from the repository's root
    function: str  # its qualified name: Class.method.closure
    benchmarks: str  # regular expression over the suite's benchmark names


SITES = {
    "heap.key": Site("backends/heap_backend.py",
                     "HeapKeyedStateBackend._make_key_selector.set_current_key", r"^state/heap/"),
    "rocksdb.key": Site("backends/rocksdb_backend.py",
                        "RocksDBKeyedStateBackend._make_key_selector.set_current_key",
                        r"^state/rocksdb/"),
}


@dataclass(frozen=True)
class Plant:
    """``loops`` empty iterations at the top of ``SITES[site]``'s function."""

    site: str
    loops: int

    @classmethod
    def parse(cls, text: str) -> Plant:
        """``SITE=LOOPS``, e.g. ``heap.key=3``."""
        name, sep, loops = text.partition("=")
        if not sep or name.strip() not in SITES or not loops.strip().isdigit():
            raise CliError(f"plant {text!r}: expected SITE=LOOPS with SITE one of "
                           f"{', '.join(SITES)} and LOOPS a whole number")
        return cls(name.strip(), int(loops))

    def line(self, indent: str) -> str:
        return f"{indent}for _ in range({self.loops}):  # planted regression\n{indent}    pass\n"


def _find(tree: ast.AST, qualname: str) -> ast.FunctionDef:
    node: ast.AST = tree
    for part in qualname.split("."):
        found = next((n for n in ast.iter_child_nodes(node) if isinstance(
            n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and n.name == part), None)
        if found is None:
            raise CliError(f"no {qualname} to plant into (missing {part!r})")
        node = found
    if not isinstance(node, ast.FunctionDef):
        raise CliError(f"{qualname} is not a function")
    return node


def plant_source(source: str, function: str, plant: Plant) -> str:
    """``source`` with the plant's loop as the first statement of ``function`` (after its
    docstring)."""
    fn = _find(ast.parse(source), function)
    body = fn.body
    first = body[1] if (len(body) > 1 and isinstance(body[0], ast.Expr)
                        and isinstance(body[0].value, ast.Constant)
                        and isinstance(body[0].value.value, str)) else body[0]
    lines = source.splitlines(keepends=True)
    at = first.lineno - 1
    indent = re.match(r"[ \t]*", lines[at]).group(0)  # type: ignore[union-attr]
    return "".join(lines[:at]) + plant.line(indent) + "".join(lines[at:])


def apply(tree: Path, plants: Iterable[Plant]) -> None:
    """Plant each of ``plants`` into the source files of ``tree``, in place."""
    for plant in plants:
        site = SITES[plant.site]
        path = tree / site.path
        path.write_text(plant_source(path.read_text(encoding="utf-8"), site.function, plant),
                        encoding="utf-8")


def git_out(repo: Path, *args: str) -> str:
    """``git ARGS``'s output; a failure is a one-line error."""
    done = git(repo, *args)
    if done.returncode != 0:
        raise CliError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def commit(repo: Path, plants: Sequence[Plant], message: str) -> str:
    """A commit on top of ``repo``'s HEAD (a scratch clone's: this moves its branch) carrying
    ``plants`` and whatever else the tree holds uncommitted (neither: an empty commit); its id."""
    apply(repo, plants)
    git_out(repo, "add", "-A")  # the plants, and whatever else the caller wrote into the tree
    git_out(repo, "-c", "user.name=statebench", "-c", "user.email=statebench@localhost",
         "commit", "-q", "--allow-empty", "--no-verify", "-m", message)
    return git_out(repo, "rev-parse", "HEAD")


#: The layout-only null: a module of unused classes, imported (never called) when ``backends``
#: is. It changes no code on any measured path, only which classes the interpreter made
#: before the measured ones (CPython's attribute cache is indexed by their version tags): a
#: check that flags it reads the interpreter's layout, not code (docs/performance.md).
LAYOUT_PACKAGE, LAYOUT_NAME = "backends", "_layout_null"
#: The layout null's file and the file that imports it (a commit's, never this tree's).
LAYOUT_MODULE = f"{LAYOUT_PACKAGE}/{LAYOUT_NAME}.py"
LAYOUT_IMPORTER = f"{LAYOUT_PACKAGE}/__init__.py"


def layout_source(classes: int) -> str:
    """A module of ``classes`` unused generic classes and as many protocols (the kind of
    class whose registry read as a 7% "regression" before the layout was drawn per pair)."""
    lines = ['"""Unused classes: a layout-only commit of the regress experiment."""', "",
             "from typing import Generic, Protocol, TypeVar", "", 'T = TypeVar("T")', ""]
    for i in range(classes):
        lines += ["", f"class Unused{i}(Generic[T]):", "    def value(self) -> T | None:",
                  "        return None", "", "",
                  f"class UnusedProtocol{i}(Protocol):", "    def value(self) -> int: ...", ""]
    return "\n".join(lines)


def add_layout_null(tree: Path, classes: int) -> None:
    """Write the layout-only module into ``tree`` and import it first thing in ``backends``."""
    (tree / LAYOUT_MODULE).write_text(layout_source(classes), encoding="utf-8")
    importer = tree / LAYOUT_IMPORTER
    source = importer.read_text(encoding="utf-8")
    anchor = "from __future__ import annotations\n"
    if anchor not in source:
        raise CliError(f"{LAYOUT_IMPORTER}: no '{anchor.strip()}' to import the layout null after")
    importer.write_text(source.replace(
        anchor, anchor + f"\nimport {LAYOUT_PACKAGE}.{LAYOUT_NAME}  # noqa: F401  (layout-only)\n",
        1), encoding="utf-8")


def layout_commit(repo: Path, classes: int, message: str) -> str:
    """A commit on top of ``repo``'s HEAD that only adds the layout-only module; its id."""
    add_layout_null(repo, classes)
    return commit(repo, [], message)


def loop_ns(loops: int, number: int = 200_000, repeat: int = 7) -> float:
    """Nanoseconds one planted loop of ``loops`` iterations costs, inside a function as it is
    planted (the best of ``repeat`` timings: the loop's cost, not the machine's noise)."""
    namespace: dict[str, object] = {}
    exec(f"def f():\n    for _ in range({loops}):\n        pass\n", namespace)
    fn = namespace["f"]
    empty: dict[str, object] = {}
    exec("def g():\n    pass\n", empty)
    best = min(timeit.repeat(fn, number=number, repeat=repeat))  # type: ignore[arg-type]
    call = min(timeit.repeat(empty["g"], number=number, repeat=repeat))  # type: ignore[arg-type]
    return max(0.0, best - call) / number * 1e9


def planted_share(name: str, plants: Sequence[Plant], loop_cost: dict[str, float],
                  ops_per_call: int, a_ns_per_call: float) -> float:
    """The true slowdown of benchmark ``name`` (0.05 = 5% slower) from the plants: every
    operation of a benchmark its site matches pays the loop once."""
    extra = sum(loop_cost[p.site] for p in plants if re.search(SITES[p.site].benchmarks, name))
    return extra * ops_per_call / a_ns_per_call if a_ns_per_call > 0 else 0.0
