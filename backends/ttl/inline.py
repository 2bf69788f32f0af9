"""Hot functions built from the TTL rules' one definition: calls of a rule inlined at import.

Why: each TTL rule is written once, as a one-expression function (`expiry.is_expired`,
`expiry.expiry_cutoff`, `units.stamped`), and every access path calls it by name, so a reader
finds every use of the rule and the rule in one place. But the rules sit on the hottest paths
(a heap TTL value read is a dict lookup plus the rule), where a Python call costs about as much
as the work it does. `@inline(rule, ...)` recompiles the decorated function from its own source
with each call of a listed rule replaced by the rule's return expression, its parameters
substituted by the call's arguments and its module constants by their values: the running code
has no call, and the comparison in it still comes from the rule's definition, not from a copy
written at the call site. tests/state/test_inline.py checks the recompiled code and the errors.

Limits, checked when the function is decorated (an error names the problem):
- a rule is a module-level function whose body is one ``return`` (after a docstring), with
  plain positional parameters, whose other names are module constants (int, float, bool, str);
- the decorated function is a module-level function or a method without closure cells (no
  zero-argument ``super()``), and ``@inline`` is its innermost decorator;
- a call passes positional arguments only, and an argument whose parameter the rule uses more
  than once is a name, constant or attribute (it is evaluated once per use);
- where a call's argument may have side effects (anything but a name, a constant or an
  attribute), the inlined code must evaluate as the call did: every such argument exactly once
  and unconditionally (not an argument the rule never uses, whose side effects would vanish,
  nor one it reads only in a branch, after a short-circuit or inside a lambda or
  comprehension), and all the call's arguments in the call's order (the call evaluates its
  arguments left to right before the rule runs; the inlined expression evaluates them where
  the rule reads them);
- a method (or a function nested in one) names no private ``__x``: Python mangles such a name
  to ``_Class__x`` inside a class body, and the recompiled function is compiled outside it.
Line numbers and the file name stay the source's, so tracebacks and coverage point at the
written code. The decorated function as written stays reachable as ``__wrapped__`` (the tests
compare the two on generated inputs).
"""

from __future__ import annotations

import ast
import copy
import inspect
import itertools
import textwrap
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_CONSTANT_TYPES = (int, float, bool, str)


class InlineError(TypeError):
    """A rule or a decorated function that `inline` cannot rewrite."""


class _Rule:
    """A rule's parameters and return expression, with its module constants substituted."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        where = f"{fn.__module__}.{fn.__qualname__}"
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef) or node.decorator_list:
            raise InlineError(f"rule {where}: not a plain function")
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            raise InlineError(f"rule {where}: its body must be one return statement")
        args = node.args
        if (args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults):
            raise InlineError(f"rule {where}: only plain positional parameters are inlined")
        self.fn, self.name = fn, fn.__name__
        self.params = [a.arg for a in args.args]
        self.expr = _Constants(fn.__globals__, set(self.params), where).visit(body[0].value)
        self.uses = {p: sum(isinstance(n, ast.Name) and n.id == p for n in ast.walk(self.expr))
                     for p in self.params}

    def expand(self, call: ast.Call, where: str) -> ast.expr:
        if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
            raise InlineError(f"{where}: call {self.name}() with positional arguments only")
        if len(call.args) != len(self.params):
            raise InlineError(f"{where}: {self.name}() takes {len(self.params)} arguments, "
                              f"got {len(call.args)}")
        bound = dict(zip(self.params, call.args))
        for param, arg in bound.items():
            if self.uses[param] > 1 and not _evaluates_freely(arg):
                raise InlineError(
                    f"{where}: {self.name}() uses {param!r} {self.uses[param]} times; pass a "
                    f"name or an attribute, not {ast.unparse(arg)!r}")
        if not all(_evaluates_freely(arg) for arg in call.args):
            self._check_call_order(bound, where)
        expr = copy.deepcopy(self.expr)
        for node in ast.walk(expr):  # the rule's own nodes sit on the call's line
            ast.copy_location(node, call)
        return _Substitute(bound).visit(expr)

    def _check_call_order(self, bound: dict[str, ast.expr], where: str) -> None:
        """Refuses a call whose arguments the inlined expression would not evaluate as the call
        does: each argument with possible side effects once and unconditionally, and every
        argument in the call's order."""
        reads = _reads(self.expr, set(self.params))
        for param, arg in bound.items():
            if _evaluates_freely(arg):
                continue
            shown = ast.unparse(arg)
            if self.uses[param] == 0:
                raise InlineError(
                    f"{where}: {self.name}() never uses {param!r}, so inlined the side effects "
                    f"of {shown!r} would vanish; pass a name (evaluate it before the call)")
            if any(conditional for name, conditional in reads if name == param):
                raise InlineError(
                    f"{where}: {self.name}() evaluates {param!r} only in some cases (a branch, "
                    f"a short-circuit, a lambda or a comprehension), so inlined {shown!r} "
                    "would not always run; pass a name (evaluate it before the call)")
        order = list(dict.fromkeys(name for name, _ in reads))
        if order != [p for p in self.params if p in order]:
            raise InlineError(
                f"{where}: {self.name}() reads its parameters in the order {', '.join(order)}, "
                f"not in the call's order {', '.join(self.params)}, so inlined the arguments "
                f"({', '.join(ast.unparse(a) for a in bound.values())}) would run out of call "
                "order; pass names (evaluate them before the call)")


def _reads(node: ast.AST, params: set[str], conditional: bool = False) -> list[tuple[str, bool]]:
    """Each read of a parameter in an expression, in Python's evaluation order, and whether it
    happens only in some cases (an IfExp's branches, a BoolOp's or a comparison chain's later
    operands, a lambda's body, a comprehension past its first iterable)."""
    def walk(children: list[ast.AST | None], cond: bool) -> list[tuple[str, bool]]:
        return [r for child in children if child is not None
                for r in _reads(child, params, cond)]

    if isinstance(node, ast.Name):
        return [(node.id, conditional)] if node.id in params else []
    if isinstance(node, ast.IfExp):
        return walk([node.test], conditional) + walk([node.body, node.orelse], True)
    if isinstance(node, ast.BoolOp):
        return walk(node.values[:1], conditional) + walk(node.values[1:], True)
    if isinstance(node, ast.Compare):
        return walk([node.left, node.comparators[0]], conditional) + walk(
            node.comparators[1:], True)
    if isinstance(node, ast.Lambda):
        return walk([*node.args.defaults, *node.args.kw_defaults], conditional) + walk(
            [node.body], True)
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        first, *rest = node.generators
        inner: list[ast.AST | None] = [first.target, *first.ifs]
        for gen in rest:
            inner += [gen.iter, gen.target, *gen.ifs]
        tail = ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
        return walk([first.iter], conditional) + walk(inner + tail, True)
    if isinstance(node, ast.Dict):  # key, value, key, value, ...
        return walk([x for kv in zip(node.keys, node.values) for x in kv], conditional)
    return walk(list(ast.iter_child_nodes(node)), conditional)


def _class_of(qualname: str) -> str | None:
    """The innermost class a function with this qualified name is written in (None: none), for
    name mangling: a part followed by anything but ``<locals>`` is a class."""
    parts = qualname.split(".")
    owner = None
    for part, after in itertools.pairwise(parts):
        if part != "<locals>" and after != "<locals>":
            owner = part
    return owner


def _private_names(tree: ast.AST) -> list[str]:
    """Identifiers Python would mangle inside a class body: ``__x``, not ``__x__``."""
    found = []
    for node in ast.walk(tree):
        for field in ("id", "attr", "arg", "name"):
            name = getattr(node, field, None)
            if isinstance(name, str) and name.startswith("__") and not name.endswith("__"):
                found.append(name)
        if isinstance(node, ast.Global | ast.Nonlocal):
            found += [n for n in node.names if n.startswith("__") and not n.endswith("__")]
    return sorted(set(found))


def _evaluates_freely(node: ast.expr) -> bool:
    """A name, a constant or an attribute chain on a name: evaluating it twice is harmless."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name | ast.Constant)


class _Constants(ast.NodeTransformer):
    """Replaces a rule's module names by their constant values (the target module may not have
    them); any other free name is refused."""

    def __init__(self, namespace: dict[str, Any], params: set[str], where: str) -> None:
        self.namespace, self.params, self.where = namespace, params, where

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.params:
            return node
        value = self.namespace.get(node.id, _MISSING)
        if value is _MISSING or type(value) not in _CONSTANT_TYPES:
            raise InlineError(f"rule {self.where}: {node.id!r} is neither a parameter nor a "
                              "module constant")
        return ast.copy_location(ast.Constant(value), node)


class _Substitute(ast.NodeTransformer):
    def __init__(self, bound: dict[str, ast.expr]) -> None:
        self.bound = bound

    def visit_Name(self, node: ast.Name) -> ast.expr:
        arg = self.bound.get(node.id)
        return node if arg is None else copy.deepcopy(arg)


class _Inliner(ast.NodeTransformer):
    def __init__(self, rules: dict[str, _Rule], where: str) -> None:
        self.rules, self.where, self.expanded = rules, where, 0

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)  # arguments first: a rule's argument may call a rule
        if isinstance(node.func, ast.Name) and node.func.id in self.rules:
            self.expanded += 1
            expr = self.rules[node.func.id].expand(node, self.where)
            return ast.fix_missing_locations(ast.copy_location(expr, node))
        return node


_MISSING = object()


def inline(*rules: Callable[..., Any]) -> Callable[[F], F]:
    """Decorator: the function recompiled with every call of `rules` inlined (see module doc)."""
    parsed = {rule.__name__: _Rule(rule) for rule in rules}

    def decorate(fn: F) -> F:
        where = f"{fn.__module__}.{fn.__qualname__}"
        if fn.__code__.co_freevars:
            raise InlineError(f"{where}: has closure cells {fn.__code__.co_freevars}; inline "
                              "works on module-level functions and methods")
        for name, rule in parsed.items():
            if fn.__globals__.get(name) is not rule.fn:  # the name it calls is this rule
                raise InlineError(f"{where}: {name!r} in its module is not the rule "
                                  f"{rule.fn.__module__}.{name}")
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise InlineError(f"{where}: not a function definition")
        owner = _class_of(fn.__qualname__)
        private = _private_names(node) if owner and owner.strip("_") else []
        if private:
            raise InlineError(
                f"{where}: names {', '.join(private)}, which Python mangles inside class "
                f"{owner} (to _{owner.lstrip('_')}{private[0]}); inline compiles the function "
                "outside its class, where they would name something else")
        node.decorator_list = []
        inliner = _Inliner(parsed, where)
        tree = ast.fix_missing_locations(inliner.visit(tree))
        if not inliner.expanded:
            raise InlineError(f"{where}: calls none of {', '.join(parsed)}")
        ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
        namespace: dict[str, Any] = {}
        exec(compile(tree, inspect.getsourcefile(fn) or "<inline>", "exec"),
             fn.__globals__, namespace)
        new = namespace[fn.__name__]
        new.__qualname__, new.__doc__ = fn.__qualname__, fn.__doc__
        new.__defaults__, new.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
        new.__inlined__ = tuple(parsed)
        new.__wrapped__ = fn
        return new

    return decorate
