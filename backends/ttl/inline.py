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
  than once is a name, constant or attribute (it is evaluated once per use).
Line numbers and the file name stay the source's, so tracebacks and coverage point at the
written code.
"""

from __future__ import annotations

import ast
import copy
import inspect
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
        expr = copy.deepcopy(self.expr)
        for node in ast.walk(expr):  # the rule's own nodes sit on the call's line
            ast.copy_location(node, call)
        return _Substitute(bound).visit(expr)


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
        return new

    return decorate
