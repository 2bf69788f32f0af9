"""The TTL rules are written once and run inline (backends/ttl/inline.py).

- Every hot path that uses `is_expired`, `expiry_cutoff` or `stamped` is compiled with the call
  replaced by the rule's expression: the running code calls none of them.
- No module of the TTL layer, the cleanups or the heap storage writes the expiry comparison or a
  stamped tuple itself (read from their syntax trees), and that scan fails on a bad example.
- The inliner refuses what it cannot rewrite faithfully, and keeps the source's line numbers.
"""

from __future__ import annotations

import ast
import traceback
import types
from pathlib import Path

import pytest

from backends.cleanup import incremental, timers
from backends.storage import heap
from backends.ttl import expiry, migration, states
from backends.ttl.expiry import expiry_cutoff, is_expired
from backends.ttl.inline import InlineError, inline
from backends.ttl.units import stamped

ROOT = Path(__file__).resolve().parents[2]
RULES = {"is_expired", "expiry_cutoff", "stamped"}
#: Modules whose code must reach the rules only through their names.
RULE_USERS = [states, incremental, timers, expiry, migration, heap]


def _functions(module: types.ModuleType) -> list[types.FunctionType]:
    out = []
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            out.append(value)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            out += [f for f in vars(value).values() if isinstance(f, types.FunctionType)]
    return out


def _names_called(code: types.CodeType) -> set[str]:
    """Global names a code object (and every function nested in it) loads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_called(const)
    return names


def test_every_function_using_a_rule_runs_it_inline() -> None:
    inlined = 0
    for module in RULE_USERS:
        for fn in _functions(module):
            if fn.__name__ in RULES and module is expiry:
                continue  # the rules themselves
            source_calls = {n.func.id for n in ast.walk(ast.parse(_source(fn)))
                            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            wanted = (source_calls & RULES) - {"expiry_cutoff"}  # a per-access call may stay
            if not wanted:
                continue
            assert set(getattr(fn, "__inlined__", ())) >= wanted, (
                f"{fn.__qualname__} calls {sorted(wanted)} without @inline")
            assert not (_names_called(fn.__code__) & set(fn.__inlined__)), fn.__qualname__
            inlined += 1
    assert inlined >= 20  # the walk found the hot paths


def _source(fn: types.FunctionType) -> str:
    import inspect
    import textwrap

    return textwrap.dedent(inspect.getsource(fn))


# --------------------------------------------------------------------------- no copies
def rule_copies(source: str, name: str = "module.py") -> list[str]:
    """`name:line what` for each expiry comparison (a comparison with a `cutoff`/`due_by`
    operand) and each stamped tuple (`(x, now)`, `(x, stamp())`) written outside the rules."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Name) and o.id in ("cutoff", "due_by") for o in operands):
                problems.append(f"{name}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, ast.Tuple) and len(node.elts) == 2:
            stamp = node.elts[1]
            if (isinstance(stamp, ast.Name) and stamp.id == "now") or (
                    isinstance(stamp, ast.Call) and isinstance(stamp.func, ast.Name)
                    and stamp.func.id == "stamp"):
                problems.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    return problems


def test_no_module_recodes_the_comparison_or_the_stamped_unit() -> None:
    paths = [*(ROOT / "backends" / "ttl").glob("*.py"), *(ROOT / "backends" / "cleanup").glob(
        "*.py"), ROOT / "backends" / "storage" / "heap.py"]
    assert len(paths) > 8
    problems = []
    for path in sorted(paths):
        if path.name not in ("expiry.py", "units.py"):  # where the rules are written
            problems += rule_copies(path.read_text(), path.name)
    assert not problems, "the expiry rule or the stamped unit written out: " + ", ".join(problems)


def test_the_copy_scan_can_fail() -> None:
    bad = ("def read(stored, cutoff, now):\n"
           "    if stored[1] <= cutoff:\n"
           "        return None\n"
           "    return (stored[0], now)\n"
           "def fire(times, due_by, stamp):\n"
           "    return times[0] <= due_by, (1, stamp())\n")
    assert rule_copies(bad, "bad.py") == [
        "bad.py:2 stored[1] <= cutoff", "bad.py:4 (stored[0], now)", "bad.py:6 times[0] <= due_by",
        "bad.py:6 (1, stamp())"]


# --------------------------------------------------------------------------- the inliner
def test_inlined_code_equals_the_called_rules() -> None:
    @inline(is_expired, stamped)
    def refresh(units: list, cutoff: int, now: int) -> list:
        return [stamped(v, now) for v, ts in units if not is_expired(ts, cutoff)]

    units = [(1, 5), (2, 10), (3, 11)]
    assert refresh(units, 10, 99) == [(3, 99)]
    assert not (_names_called(refresh.__code__) & {"is_expired", "stamped"})
    assert refresh.__inlined__ == ("is_expired", "stamped")


def test_inlined_code_keeps_the_source_line_numbers() -> None:
    @inline(is_expired)
    def check(ts: int, cutoff: int) -> bool:
        if is_expired(ts, cutoff):
            raise ValueError("expired")
        return True

    with pytest.raises(ValueError) as info:
        check(1, 1)
    frame = traceback.extract_tb(info.tb)[-1]
    assert frame.filename == __file__ and frame.line == 'raise ValueError("expired")'


def only_twice(x: int) -> int:
    return x + x


def two_lines(x: int) -> int:
    y = x
    return y


def test_the_inliner_refuses_what_it_cannot_rewrite() -> None:
    with pytest.raises(InlineError, match="body must be one return statement"):
        inline(two_lines)
    with pytest.raises(InlineError, match="uses 'x' 2 times; pass a name"):
        @inline(only_twice)
        def twice_a_call(f):
            return only_twice(f())
    with pytest.raises(InlineError, match="positional arguments only"):
        @inline(is_expired)
        def by_keyword(ts, cutoff):
            return is_expired(ts, cutoff=cutoff)
    with pytest.raises(InlineError, match="calls none of is_expired"):
        @inline(is_expired)
        def no_call(ts, cutoff):
            return ts

    offset = 5

    with pytest.raises(InlineError, match="closure cells"):
        @inline(is_expired)
        def closure(ts, cutoff):
            return is_expired(ts + offset, cutoff)


def test_a_name_bound_to_something_else_is_refused() -> None:
    namespace: dict = {}
    exec("def is_expired(ts, cutoff):\n    return False\n", namespace)
    fn = types.FunctionType(compile("def f(): pass", "x", "exec").co_consts[0], namespace, "f")
    with pytest.raises(InlineError, match="is not the rule"):
        inline(is_expired)(fn)


def test_a_rule_constant_is_substituted_by_its_value() -> None:
    @inline(expiry_cutoff)
    def cutoff_at(now: int, ttl: int) -> int:
        return expiry_cutoff(now, ttl)

    assert "_AFTER_EVERYTHING" not in _names_called(cutoff_at.__code__)
    assert "INT64_MAX" not in _names_called(cutoff_at.__code__)
    assert cutoff_at((1 << 63) - 1, 5) == expiry_cutoff((1 << 63) - 1, 5) == (1 << 80) - 5
