"""``statebench <command> ...``: the command line entry point (console script ``statebench``).

This module only dispatches. Each command lives in its own module that exposes
``add_parser(subparsers)``, which adds one or more subcommands and sets ``handler`` (a function
``args -> exit code``) as a parser default. Modules listed in :data:`COMMAND_MODULES` are picked
up when present (so ``workloads.cli_compare`` adds ``compare``/``report``/``diff`` just by
existing); others can be added at run time with :func:`register_command`.

Errors the user can fix (a bad spec, an unknown backend or strategy, ...) exit with status 2 and
one line on stderr, without a traceback: raise :class:`CliError` or one of :data:`USAGE_ERRORS`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from importlib.util import find_spec

from workloads.generator import TraceError
from workloads.plan import PlanError
from workloads.spec import SpecError

#: Modules that add subcommands, in help order; a missing module is skipped.
COMMAND_MODULES: tuple[str, ...] = ("workloads.cli_run", "workloads.cli_compare")

AddParser = Callable[[argparse._SubParsersAction], None]
_EXTRA: list[AddParser] = []


class CliError(Exception):
    """A usage error: printed as ``statebench: error: <message>``, exit status 2."""


#: Exceptions reported as usage errors (exit 2, no traceback).
USAGE_ERRORS: tuple[type[BaseException], ...] = (CliError, SpecError, TraceError, PlanError)


def register_command(add_parser: AddParser) -> AddParser:
    """Add a subcommand provider (usable as a decorator); it runs when the parser is built."""
    if add_parser not in _EXTRA:
        _EXTRA.append(add_parser)
    return add_parser


def _providers() -> list[AddParser]:
    providers: list[AddParser] = []
    for name in COMMAND_MODULES:
        if find_spec(name) is None:
            continue
        module = importlib.import_module(name)  # an error inside the module must surface
        providers.append(module.add_parser)
    return providers + [p for p in _EXTRA if p not in providers]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="statebench",
        description="Benchmark keyed-state backends and TTL cleanup strategies on generated "
        "keyed workloads, in-process or inside Spark executors.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_parser in _providers():
        add_parser(subparsers)
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
