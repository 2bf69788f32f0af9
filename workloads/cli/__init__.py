"""``statebench <command> ...``: the command line entry point (console script ``statebench``).

This module only dispatches. Each command lives in its own module of this package that exposes
``add_parser(subparsers)``, which adds one or more subcommands and sets ``handler`` (a function
``args -> exit code``) as a parser default: ``run`` adds ``run``; ``compare`` adds ``compare``
and ``report``; ``diff`` adds ``diff``; ``ab`` adds ``ab``.

Errors the user can fix (a bad spec, an unknown backend or strategy, ...) exit with status 2 and
one line on stderr, without a traceback: raise :class:`CliError` or one of :data:`USAGE_ERRORS`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from workloads.generator import TraceError
from workloads.run.plan import PlanError
from workloads.spec import SpecError


class CliError(Exception):
    """A usage error: printed as ``statebench: error: <message>``, exit status 2."""


#: Exceptions reported as usage errors (exit 2, no traceback).
USAGE_ERRORS: tuple[type[BaseException], ...] = (CliError, SpecError, TraceError, PlanError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="statebench",
        description="Benchmark keyed-state backends and TTL cleanup strategies on generated "
        "keyed workloads, in-process or inside Spark executors.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from workloads.cli import ab, compare, diff, run

    for module in (run, compare, diff, ab):
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]) and run the chosen command; returns its status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except USAGE_ERRORS as exc:
        print(f"statebench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
