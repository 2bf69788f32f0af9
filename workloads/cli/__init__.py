"""``statebench <command> ...``: the command line entry point (console script ``statebench``).

This module only dispatches. Each command lives in its own module of this package that exposes
``add_parser(subparsers)``, which adds one or more subcommands and sets ``handler`` (a function
``args -> exit code``) as a parser default: ``run`` adds ``run``; ``compare`` adds ``compare``
and ``report``; ``diff`` adds ``diff``; ``ab`` adds ``ab``; ``regress`` adds ``regress``;
``publish`` adds ``publish``.

Errors the user can fix (a bad spec, an unknown backend or strategy, ...) exit with status 2 and
one line on stderr, without a traceback: raise :class:`~workloads.cli.options.CliError` (also
importable from here) or one of :data:`USAGE_ERRORS`. So do errors of the environment
(:class:`~workloads.errors.InfrastructureError`: a Spark master that is invalid or does not
answer, a filesystem URI that is unknown or unreachable; and an ``OSError`` such as a full disk).
A Flink lane's failed command is its root cause in one line (``cli/display.py``), an error
raised inside a Spark task is unwrapped from Spark's (``engines/spark.py``: statebench's own as
themselves, others as one line naming their type, exit 1), and py4j's own log of a broken JVM
link is dropped. ``--verbose`` (before or after the command) prints the full traceback, Java
stack and task trace as well. A job that fails in its engine (Spark, Flink, a Flink worker,
RocksDB) does not stop the run: the others run, and the run ends with one line per failed job
naming its lane, scenario and round and the engine's own message, exit 1
(``cli/failures.py``, ``workloads.run.job_errors``). SIGTERM/SIGINT remove the run's temporary
folders before the process ends (``workloads.run.run_tempdirs``); an interrupted command exits
with 130.

What the commands share (the usage error, option parsers, ``diff``'s and ``ab``'s round
options) lives in ``cli/options.py``, which imports no command module; no command imports this
package, so the package and its commands form no import circle.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence

from backends.flink.errors import FlinkWorkerError
from workloads.cli.options import CliError
from workloads.errors import InfrastructureError, JobsFailed
from workloads.generator import TraceError
from workloads.report.load import RunFolderError
from workloads.run.plan import PlanError
from workloads.spec import SpecError

#: Exceptions reported as usage errors (exit 2, no traceback).
USAGE_ERRORS: tuple[type[BaseException], ...] = (
    CliError, SpecError, TraceError, PlanError, RunFolderError, InfrastructureError)


class _Parser(argparse.ArgumentParser):
    """argparse with the error in one line (the usage block is behind ``--help``)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="statebench",
        description="Benchmark keyed-state backends and TTL cleanup strategies on generated "
        "keyed workloads, in-process or inside Spark executors.",
    )
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="on an error, print the full traceback too")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from workloads.cli import ab, compare, diff, publish, regress, run

    for module in (run, compare, diff, ab, regress, publish):
        module.add_parser(subparsers)
    for sub in set(subparsers.choices.values()):  # also accepted after the command
        sub.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                         help="on an error, print the full traceback too")
    return parser


def _fail(message: str, verbose: bool, status: int = 2) -> int:
    if verbose:
        traceback.print_exc()
    print(f"statebench: error: {message}", file=sys.stderr)
    return status


class _Py4JNoise(logging.Filter):
    """Drops what py4j logs to the root logger while the JVM link breaks: a SIGINT during a
    Spark job printed a 50-line py4j traceback ("KeyboardInterrupt while sending command")
    before the CLI's own line. The error it logs is raised anyway; --verbose keeps it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}py4j{os.sep}" not in (record.pathname or "")


def _quiet_py4j() -> None:
    root = logging.getLogger()
    if not any(isinstance(f, _Py4JNoise) for f in root.filters):
        root.addFilter(_Py4JNoise())
    # a filter on the root logger sees only what is logged to it, not what py4j's own loggers
    # (py4j.clientserver) hand up to its handlers: a SIGINT while Spark's context was starting
    # printed py4j's "Exception occurred while shutting down connection" and its traceback
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]) and run the chosen command; returns its status."""
    from workloads.run import run_tempdirs

    parser = build_parser()
    args = parser.parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    if not verbose:
        _quiet_py4j()
    else:  # py4j's own words too (an earlier command of this process may have quietened it)
        logging.getLogger("py4j").setLevel(logging.NOTSET)
    run_tempdirs.install_signal_handlers()
    try:
        try:
            return int(args.handler(args) or 0)
        except BaseException as exc:  # jobs that failed before what stopped the run
            from workloads.cli.failures import say_earlier_failures

            say_earlier_failures(exc, verbose)
            raise
    except USAGE_ERRORS as exc:
        return _fail(str(exc), verbose)
    except JobsFailed as exc:  # one line per job that failed in its engine; the rest is kept
        from workloads.cli.failures import say_failures

        return say_failures(exc, verbose)
    except FlinkWorkerError as exc:  # a Java stack: its root cause in one line
        from workloads.cli.display import flink_summary

        hint = "" if verbose else " (--verbose shows the Java stack)"
        return _fail(f"{flink_summary(str(exc))}{hint}", verbose)
    except OSError as exc:  # a full disk, a folder gone: the cause in one line
        from workloads.run.job_errors import engine_message, jvm_link_lost

        if jvm_link_lost(exc):  # not the environment: Spark's JVM died outside a job
            return _fail(engine_message(exc), verbose, status=1)
        hint = "" if verbose else " (--verbose shows where)"
        return _fail(f"{exc}{hint}", verbose)
    except Exception as exc:
        spark = sys.modules.get("workloads.run.engines.spark")  # never imported just for this
        if spark is None or not isinstance(exc, spark.TaskError):
            raise
        if exc.own:  # one of statebench's errors, raised inside a Spark task
            return _fail(str(exc), verbose)
        hint = "" if verbose else " (--verbose shows the task's full trace)"
        return _fail(f"{exc}{hint}", verbose, status=1)
    except KeyboardInterrupt:
        run_tempdirs.remove_all()
        return _fail("interrupted; temporary folders removed", verbose, status=130)
    except run_tempdirs.Terminated as exc:  # SIGTERM: as clean as SIGINT (143, one line)
        run_tempdirs.remove_all()
        return _fail("terminated; temporary folders removed", verbose, status=int(exc.code))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
