"""What ``run``, ``compare``, ``ab`` and ``diff --rerun`` say up front about how long they will
take and how much disk they need, and their refusal beyond the bound (``--allow-long``).

Why a module of its own: four commands start runs, two of them as child processes, and each
must print the same estimate line and refuse with the same words (``workloads.run.estimate``
makes the numbers). ``ab`` and ``diff --rerun`` estimate the ``statebench run`` their children
will run, parsed by ``run``'s own parser, times their rounds: a session of 20 rounds of a run of
20 minutes is a day, however short each run is.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from workloads.cli.options import CliError
from workloads.errors import first_line
from workloads.run.estimate import MAX_WALL_S, Estimate, duration

ALLOW_LONG = "--allow-long"


def add_allow_long(p: argparse.ArgumentParser, what: str = "the run") -> None:
    p.add_argument(ALLOW_LONG, action="store_true",
                   help=f"start {what} even when its estimate (printed first, always) is more "
                        f"than {duration(MAX_WALL_S)} of wall time or more disk than is free")


def announce(est: Estimate, desc: str, allow_long: bool) -> None:
    """Print the estimate line on stdout; refuse in one line (CliError, exit 2) beyond the
    bound unless ``allow_long``. Before any work: nothing has been made yet."""
    print(est.line(desc), flush=True)
    problem = est.problem()
    if problem is not None and not allow_long:
        raise CliError(f"{desc}: the run {problem}")


#: ``estimator(run_argv, results_dir)``: the estimate of ``statebench run_argv`` as this code
#: plans it (``workloads.cli.run.argv_estimate``).
Estimator = Callable[[Sequence[str], str], Estimate]


def session_estimate(sides: Sequence[Sequence[str]], rounds: int, results_dir: str | Path,
                     desc: str, allow_long: bool, estimator: Estimator) -> Estimate | None:
    """``ab``'s and ``diff --rerun``'s: each side's run once per round, announced as one
    estimate (returned; None when no side could be planned). A side this code cannot plan
    (an older or newer revision's spec) is said in one line on stderr and not counted: its own
    ``run`` checks it."""
    total: Estimate | None = None
    planned: dict[tuple[str, ...], Estimate | None] = {}  # ab's two sides run the same argv
    for argv in sides:
        key = tuple(argv)
        if key not in planned:
            try:
                planned[key] = estimator(argv, str(results_dir))
            except Exception as exc:  # the child's own run is the judge
                text = first_line(exc)
                print(f"statebench: {desc}: no estimate for a run this code cannot plan "
                      f"({text})", file=sys.stderr)
                planned[key] = None
        one = planned[key]
        if one is not None:
            total = one if total is None else total.plus(one)
    if total is None:
        return None
    total = total.times(rounds)
    announce(total, f"{desc} ({rounds} round{'s' if rounds != 1 else ''})", allow_long)
    return total


def supports_allow_long(tree: Path) -> bool:
    """Whether the ``statebench run`` of source tree ``tree`` knows ``--allow-long`` (an older
    revision run by ``ab`` does not, and would fail on it)."""
    try:
        text = (tree / "workloads" / "cli" / "long_runs.py").read_text(encoding="utf-8")
    except OSError:
        return False
    return f'ALLOW_LONG = "{ALLOW_LONG}"' in text


def forwarded(argv: Sequence[str], tree: Path, allow_long: bool) -> tuple[str, ...]:
    """A side's ``run`` arguments, with ``--allow-long`` when the session was allowed to run
    long and the side's revision knows the option."""
    extra = (ALLOW_LONG,) if allow_long and supports_allow_long(tree) else ()
    return (*argv, *extra)
