"""Every function compiled by `@inline` (backends/ttl/inline.py) behaves as the function as
written, and the inliner refuses the call shapes whose inlined form would not.

- The census: every `@inline` in the backends is found (by reading the sources), and each keeps
  the function as written as ``__wrapped__``.
- The pure ones (the expiry filters, the TTL migration's transforms, the incremental cleanup's
  passes) are called in both forms on generated inputs (hypothesis) and must give the same
  result and leave the same state and counters behind.
- The methods and closures are compared in place: a generated program of state operations (the
  differential tests' operation language, with boundary-exact clock steps) runs once on the
  backends as they are and once with every inlined function swapped back for its original
  (counted, so the test knows each one ran); every read, physical count, cleanup count and
  cleanup-lag histogram must be the same.
- The refusals: an argument the rule never uses, or reads only conditionally, where the
  argument has side effects; arguments the inlined expression would evaluate out of the call's
  order; private (mangled) names in a method. Each refusal is shown to be needed: the
  function as written and a hand-made inlined form of it really differ.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import re
import textwrap
import types
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import backends as B
from backends.cleanup import incremental
from backends.cleanup.counters import CleanupCounters
from backends.ttl import expiry, migration
from backends.ttl.expiry import is_expired
from backends.ttl.inline import InlineError, inline
from tests.flink.oplang import descriptors, generate, run_statebench
from tests.state.helpers import NEVER, OCW, ORW, RETURN, ttl

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=60, deadline=None, database=None)  # no .hypothesis/ in the repo


# --------------------------------------------------------------------------- the census
def _decorated_in_sources() -> Counter[str]:
    """`@inline(` decorations per module, read from the backends' sources."""
    found: Counter[str] = Counter()
    for path in sorted((ROOT / "backends").rglob("*.py")):
        n = len(re.findall(r"^\s*@inline\(", path.read_text(), flags=re.M))
        if n:
            found[".".join(path.relative_to(ROOT).with_suffix("").parts)] += n
    return found


def _holders(module: types.ModuleType) -> Iterator[tuple[Any, str, types.FunctionType]]:
    """(holder, attribute, inlined function) for every inlined function reachable by name from
    a module or a class defined in it (an imported name is a holder too)."""
    for name, value in vars(module).items():
        if isinstance(value, types.FunctionType) and hasattr(value, "__inlined__"):
            yield module, name, value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                if isinstance(member, types.FunctionType) and hasattr(member, "__inlined__"):
                    yield value, attr, member


def inlined_functions() -> dict[str, types.FunctionType]:
    """Every inlined function of the backends, by module and qualified name."""
    out = {}
    for module_name in _decorated_in_sources():
        module = importlib.import_module(module_name)
        for _, _, fn in _holders(module):
            if fn.__module__ == module_name:
                out[f"{module_name}.{fn.__qualname__}"] = fn
    return out


def test_every_inline_is_found_and_keeps_its_original() -> None:
    found = inlined_functions()
    by_module = Counter(fn.__module__ for fn in found.values())
    assert by_module == _decorated_in_sources()
    assert len(found) >= 20  # the source scan found the hot paths
    for name, fn in found.items():
        original = fn.__wrapped__
        assert original is not fn and original.__code__ is not fn.__code__, name
        assert original.__qualname__ == fn.__qualname__, name
        assert set(fn.__inlined__) <= set(original.__code__.co_names) | _nested_names(
            original.__code__), name


def _nested_names(code: types.CodeType) -> set[str]:
    names: set[str] = set()
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= set(const.co_names) | _nested_names(const)
    return names


# --------------------------------------------------------------------------- pure functions
timestamps = st.integers(min_value=-5, max_value=60)
values = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=2))
elements = st.lists(st.tuples(values, timestamps), max_size=8)
entries = st.dictionaries(st.integers(0, 6), st.tuples(values, timestamps), max_size=6)


def _both(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """`fn` inlined and as written, each on its own deep copy of the arguments: (result,
    arguments after) of each."""
    a, b = copy.deepcopy(args), copy.deepcopy(args)
    return (fn(*a), a), (fn.__wrapped__(*b), b)


@SETTINGS
@given(elements, entries, timestamps, st.integers(0, 30), st.booleans())
def test_the_expiry_filters_equal_their_originals(listed: list, mapped: dict, now: int,
                                                  ttl_ms: int, prefix_only: bool) -> None:
    cutoff = expiry.expiry_cutoff(now, ttl_ms)
    inlined, written = _both(expiry.live_elements, listed, cutoff)
    assert inlined == written
    inlined, written = _both(expiry.live_suffix, listed, cutoff)
    assert inlined == written
    inlined, written = _both(expiry.live_entries, mapped, cutoff)
    assert inlined == written
    for shape, container in (("value", listed[0] if listed else (1, now)), ("list", listed),
                             ("map", mapped)):
        inlined, written = _both(expiry.filter_container, shape, container, ttl_ms, now,
                                 prefix_only)
        assert inlined == written


@SETTINGS
@given(elements, entries, timestamps, st.booleans())
def test_the_ttl_migration_transforms_equal_their_originals(listed: list, mapped: dict,
                                                           now: int, to_ttl: bool) -> None:
    plain = {"value": 5, "list": [v for v, _ in listed], "map": {k: v for k, (v, _) in
                                                                 mapped.items()}}
    stamped = {"value": (5, now), "list": listed, "map": mapped}
    for shape in ("value", "list", "map"):
        container = plain[shape] if to_ttl else stamped[shape]
        fn = migration.ttl_layout_transform
        assert fn(shape, to_ttl, now)(container) == fn.__wrapped__(shape, to_ttl, now)(container)


def _counters_state(c: CleanupCounters) -> dict[str, Any]:
    return {"counts": c.as_dict(),
            "lags": {m: (h.snapshot(), h.max) for m, h in c.lags.items()}}


@SETTINGS
@given(st.lists(st.tuples(values, timestamps), min_size=1, max_size=8), st.lists(elements,
       min_size=1, max_size=6), st.lists(entries, min_size=1, max_size=6), timestamps)
def test_the_incremental_passes_equal_their_originals(units: list, lists: list, maps: list,
                                                       cutoff: int) -> None:
    for fn, containers in ((incremental._clean_values, units),
                           (incremental._clean_lists, lists),
                           (incremental._clean_maps, maps)):
        keys = list(range(len(containers)))
        table = dict(zip(keys, containers))
        (_, a), (_, b) = _both(fn, table, keys, [table[k] for k in keys], cutoff,
                               CleanupCounters())
        assert a[0] == b[0], fn.__name__  # the table each left behind
        assert _counters_state(a[4]) == _counters_state(b[4]), fn.__name__


# --------------------------------------------------------------------------- in place
#: TTL configurations a generated program runs under (TTL 50 ms, the operation language's):
#: both update types and visibilities, no background cleanup, incremental cleanup (heap) with
#: and without cleanup on read, timers, and no TTL.
CONFIGS = {
    "ocw-never": dict(update=OCW, visibility=NEVER),
    "orw-return": dict(update=ORW, visibility=RETURN),
    "orw-never-incremental-3-read": dict(update=ORW, visibility=NEVER, incremental=(3, True)),
    "ocw-return-incremental-1": dict(update=OCW, visibility=RETURN, incremental=(1, False)),
    "ocw-never-incremental-5-read": dict(update=OCW, visibility=NEVER, incremental=(5, True)),
    "orw-never-timers": dict(update=ORW, visibility=NEVER, timers=0),
    "ocw-return-timers-7": dict(update=OCW, visibility=RETURN, timers=7),
    "ocw-never-background": dict(update=OCW, visibility=NEVER, background=True),
    "plain": None,
}
KEYS = ["a", "b", 3, 4, -6]


def _program_results(kind: str, cfg_kwargs: dict | None, seed: int, tmp: Path) -> list[Any]:
    clock = B.ManualClock(0)
    options = {"path": tmp} if kind == "rocksdb" else {}
    backend = B.create_backend(kind, clock=clock, **options)
    try:
        cfg = None if cfg_kwargs is None else ttl(50, **cfg_kwargs)
        out = run_statebench(backend, clock, descriptors(cfg),
                             generate(seed, 300, KEYS, with_counts=True))
        out.append(("cleanup", backend.cleanup_counts()))
        out.append(("lags", {m: (h.snapshot(), h.max)
                             for m, h in backend.cleanup_lags().items()}))
    finally:
        backend.close()
    return out


def _counting(fn: types.FunctionType, calls: Counter[str]) -> Callable[..., Any]:
    """The original of inlined `fn`, counting its calls."""
    original, name = fn.__wrapped__, f"{fn.__module__}.{fn.__qualname__}"

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return original(*args, **kwargs)

    return counted


def _swap_in_originals(monkeypatch: pytest.MonkeyPatch, calls: Counter[str]) -> None:
    """Every holder of an inlined function gets the original back, wrapped to count its
    calls."""
    for module_name in _decorated_in_sources():
        module = importlib.import_module(module_name)
        for holder, attr, fn in list(_holders(module)):
            monkeypatch.setattr(holder, attr, _counting(fn, calls))
        for table in vars(module).values():  # dispatch tables hold them too
            if isinstance(table, dict):
                for key, fn in list(table.items()):
                    if isinstance(fn, types.FunctionType) and hasattr(fn, "__inlined__"):
                        monkeypatch.setitem(table, key, _counting(fn, calls))


def test_every_inlined_method_and_closure_equals_its_original(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Generated programs on heap and RocksDB under every configuration above: the same
    results with the inlined functions as with the originals, and every inlined function ran
    (the pure ones are compared on their own above; they run here too where a program reaches
    them)."""
    calls: Counter[str] = Counter()
    examples = Counter()

    @settings(max_examples=40, deadline=None, database=None)
    @given(st.integers(0, 2**31), st.sampled_from(sorted(CONFIGS)),
           st.sampled_from(["heap", "rocksdb"]))
    def same_results(seed: int, config: str, kind: str) -> None:
        if kind == "rocksdb" and "incremental" in config:
            kind = "heap"  # incremental cleanup is the heap backend's
        examples[kind] += 1
        as_inlined = _program_results(kind, CONFIGS[config], seed, tmp_path_factory.mktemp(
            "inlined"))
        with pytest.MonkeyPatch.context() as mp:
            _swap_in_originals(mp, calls)
            as_written = _program_results(kind, CONFIGS[config], seed,
                                          tmp_path_factory.mktemp("written"))
        assert as_inlined == as_written, (seed, config, kind)

    same_results()
    assert examples["heap"] and examples["rocksdb"]
    pure = {f"{m.__name__}.{n}" for m, names in (
        (expiry, ("live_suffix", "live_entries", "filter_container")),
        (migration, ("ttl_layout_transform",))) for n in names}
    assert set(inlined_functions()) - pure <= set(calls), (
        f"never ran: {sorted(set(inlined_functions()) - pure - set(calls))}")


# --------------------------------------------------------------------------- the refusals
def never_uses(ts: int, cutoff: int) -> bool:
    return cutoff > 0


def reversed_reads(first: int, second: int) -> int:
    return second - first


def in_a_branch(ts: int, cutoff: int) -> bool:
    return cutoff > 0 and ts <= cutoff


SEEN: list[str] = []


def noted(name: str, value: int) -> int:
    SEEN.append(name)
    return value


def test_an_unused_argument_with_side_effects_is_refused() -> None:
    """Inlined, `never_uses(noted('ts', 1), 5)` would never call noted('ts', ...)."""
    SEEN.clear()
    assert never_uses(noted("ts", 1), 5) and SEEN == ["ts"]  # as written: it runs
    with pytest.raises(InlineError, match=r"never uses 'ts'.*\"noted\('ts', 1\)\" would vanish"):
        @inline(never_uses)
        def caller() -> bool:
            return never_uses(noted("ts", 1), 5)

    @inline(never_uses)  # a name has no side effect to lose: accepted
    def by_name(ts: int) -> bool:
        return never_uses(ts, 5)

    assert by_name(1) is True


def test_an_argument_read_only_in_a_branch_is_refused() -> None:
    SEEN.clear()
    in_a_branch(noted("ts", 1), 0)
    assert SEEN == ["ts"]  # as written it runs; inlined after `cutoff > 0 and` it would not
    with pytest.raises(InlineError, match=r"evaluates 'ts' only in some cases"):
        @inline(in_a_branch)
        def caller() -> bool:
            return in_a_branch(noted("ts", 1), 0)


def test_arguments_out_of_call_order_are_refused() -> None:
    SEEN.clear()
    assert reversed_reads(noted("first", 1), noted("second", 3)) == 2
    assert SEEN == ["first", "second"]  # as written; inlined, `second - first` runs second first
    with pytest.raises(InlineError, match=r"in the order second, first, not in the call's "
                                          r"order first, second"):
        @inline(reversed_reads)
        def caller() -> int:
            return reversed_reads(noted("first", 1), noted("second", 3))

    with pytest.raises(InlineError, match="out of call order"):  # one side effect is enough
        @inline(reversed_reads)
        def one_call(second: int) -> int:
            return reversed_reads(noted("first", 1), second)

    @inline(reversed_reads)  # names only: nothing runs in between, any order is the same
    def by_name(first: int, second: int) -> int:
        return reversed_reads(first, second)

    assert by_name(1, 3) == 2


class Holder:
    """A method naming a private attribute: inside this class body `self.__ts` means
    `self._Holder__ts`; the same text compiled outside the class reads `self.__ts`."""

    def __init__(self) -> None:
        self.__ts = 4

    def written(self, cutoff: int) -> bool:
        return is_expired(self.__ts, cutoff)


def test_private_names_in_a_method_are_refused() -> None:
    assert Holder().written(5) is True
    # why: recompiled outside the class, the method's own text reads another attribute
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(inspect.getsource(Holder.written)), globals(), namespace)
    with pytest.raises(AttributeError, match="__ts"):
        namespace["written"](Holder(), 5)
    with pytest.raises(InlineError, match=r"names __ts, which Python mangles inside class "
                                          r"Holder \(to _Holder__ts\)"):
        inline(is_expired)(Holder.written)


def test_private_names_outside_a_class_are_left_alone() -> None:
    """No class, no mangling: a function's own `__x` means the same compiled anywhere."""
    @inline(is_expired)
    def local(ts: int, cutoff: int) -> bool:
        __slack = 1
        return is_expired(ts + __slack, cutoff)

    assert local(2, 3) is True and local(3, 3) is False
