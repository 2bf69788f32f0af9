"""What the CLI's commands share: the usage error, argument parsers and option groups.

Why a module of its own: every command module raises :class:`CliError` and parses the same kinds
of option values. When they lived in ``cli/__init__.py`` (which imports every command module to
build the parser) and in ``cli/run.py``, the command modules imported each other and the package
in a circle (``ab`` -> ``diff`` -> ``ab``, each -> ``cli`` -> each). This module imports no other
module of ``workloads.cli``, so every command can depend on it and none on another just for a
helper.
"""

from __future__ import annotations

import argparse

from workloads.results.store import DEFAULT_RESULTS_DIR

#: Rounds are compared pairwise; n pairs cannot reach p below 2 / 2**n, so 8 rounds allow
#: p = 0.008, enough to stay under alpha = 0.05 after adjusting for a page of tests.
DEFAULT_ROUNDS = 8


class CliError(Exception):
    """A usage error: printed as ``statebench: error: <message>``, exit status 2."""


# ------------------------------------------------------------------------------------------------
# Option values
# ------------------------------------------------------------------------------------------------


def positive(text: str) -> int:
    """An argparse ``type=``: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def alpha(text: str) -> float:
    """An argparse ``type=``: a significance level strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def split_list(text: str) -> list[str]:
    """Split a comma-separated list, keeping commas inside parentheses:
    ``"none,incremental(5, false)"`` -> ``["none", "incremental(5, false)"]``."""
    items, depth, current = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    items.append("".join(current).strip())
    return [i for i in items if i]


def joined(values: list[str] | None, option: str | None = None) -> list[str] | None:
    """The items of a repeatable comma-separated option; with ``option``, an item given twice
    is refused (see :func:`refuse_duplicates`)."""
    if not values:
        return None
    items = [item for value in values for item in split_list(value)]
    if option is not None:
        refuse_duplicates(option, items)
    return items


def _canonical(option: str, item: str) -> str:
    """What makes two items of ``option`` the same: a strategy's canonical label
    (``incremental(5,false)`` = ``incremental(5, false)``), else the text."""
    if option == "--strategy":
        import backends

        try:
            return backends.parse_strategy(item).label
        except ValueError:
            return item  # the run's own check names what is wrong with it
    return item


def refuse_duplicates(option: str, items: list[str]) -> None:
    """One line when a list names the same thing twice: ``--backend heap,heap`` ran (and
    counted) every heap scenario twice, a compare's spec twice its workload."""
    seen: dict[str, str] = {}
    for item in items:
        key = _canonical(option, item)
        if key in seen:
            same = (f"'{item}'" if seen[key] == item
                    else f"'{seen[key]}' and '{item}' (the same {option.lstrip('-')})")
            raise CliError(f"{option}: {same} given twice; name each once")
        seen[key] = item


# ------------------------------------------------------------------------------------------------
# Option groups
# ------------------------------------------------------------------------------------------------


def add_rounds_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``diff --rerun`` and ``ab``: both run two sides alternately."""
    from workloads.report.verdict import ALPHA  # numpy: not on importing this module

    p.add_argument("--rounds", type=positive, default=DEFAULT_ROUNDS,
                   help=f"rounds per side, run alternately A B A B ... (default {DEFAULT_ROUNDS})")
    p.add_argument("--repetitions", type=positive, default=None,
                   help="repetitions inside each round (default: as stored / 1); each round "
                        "counts as one sample")
    p.add_argument("--alpha", type=alpha, default=ALPHA,
                   help=f"significance level of the rank test (default {ALPHA})")
    p.add_argument("--results-dir", default=DEFAULT_RESULTS_DIR,
                   help=f"where the ab-<time>/ session folder goes "
                        f"(default {DEFAULT_RESULTS_DIR}/)")
    p.add_argument("--allow-long", action="store_true",  # workloads/cli/long_runs.py
                   help="start the rounds even when their estimate (printed first, always) is "
                        "more than 6 h of wall time or more disk than is free; passed on to "
                        "each round's run where its revision knows it")
