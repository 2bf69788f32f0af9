"""``statebench regress BASE [HEAD]``: did HEAD make anything slower or bigger than BASE?

Both revisions are exported with ``git archive`` (as ``ab`` does) and measured side by side in
pairs of long-lived worker processes, one per revision, with many short trials interleaved in
a seeded random order (``workloads/regress/pairs.py``); the pairs, not the trials, are the
replicates of every interval and test (``workloads/regress/stats.py``). ``--quick`` (the
default) times the state-operation suite and its raw loops; ``--full`` adds the scenario tracks
and compares their exact figures exactly.

Exit status: 1 when a benchmark is slower beyond ``--threshold`` (q <= alpha) or an exact
figure changed, unless accepted; 0 otherwise; 2 on bad input, in one line, before any work.
A known, intended slowdown is accepted with ``--accept REGEX``, or by a ``Regression-accepted:
REGEX`` line in HEAD's commit message, so CI passes a commit that says what it pays for.
Output: a table on the console, and ``regress.json`` and ``regress.html`` in
``<results-dir>/regress-<time>/``.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from workloads.cli.ab import (
    WORKING_TREE,
    export_revision,
    git,
    repository_root,
    resolve_commit,
)
from workloads.cli.options import DEFAULT_RESULTS_DIR, CliError, alpha, positive

DEFAULT_THRESHOLD = 0.03
TRAILER = "Regression-accepted:"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from workloads.regress.pairs import DUET, INTERLEAVED, MODES

    p = subparsers.add_parser(
        "regress", help="did HEAD make a backend or a strategy slower or bigger than BASE?",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", metavar="BASE", help="git revision to compare against")
    p.add_argument("head", metavar="HEAD", nargs="?", default="HEAD",
                   help="git revision checked (default HEAD; . = the working tree as it is)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="protocol", action="store_const", const="quick",
                      help="the state-operation suite (default)")
    size.add_argument("--full", dest="protocol", action="store_const", const="full",
                      help="also the scenario tracks and their exact figures")
    p.set_defaults(protocol="quick")
    p.add_argument("--bench", metavar="REGEX", help="only the benchmarks matching REGEX")
    p.add_argument("--pairs", type=positive, help="pairs of processes (default: the protocol's)")
    p.add_argument("--trials", type=positive, help="trials per pair (default: the protocol's)")
    p.add_argument("--mode", choices=MODES, default=INTERLEAVED,
                   help=f"{INTERLEAVED}: A and B one after the other, in random order; "
                        f"{DUET}: at the same time, one per core (default {INTERLEAVED})")
    p.add_argument("--threshold", type=_share, default=DEFAULT_THRESHOLD,
                   help="the smallest slowdown called a regression, as a share "
                        f"(default {DEFAULT_THRESHOLD})")
    p.add_argument("--alpha", type=alpha, default=0.05,
                   help="false discovery rate over the suite (default 0.05)")
    p.add_argument("--accept", metavar="REGEX",
                   help="benchmarks allowed to be slower (also read from HEAD's commit "
                        f"message: a line '{TRAILER} REGEX')")
    p.add_argument("--if-base-exists", action="store_true",
                   help="when BASE is not in this clone (a shallow clone, a first commit), say "
                        "so in one line and exit 0 instead of 2")
    p.add_argument("--seed", type=int, default=20261129, help="seed of the trials' order")
    p.add_argument("--results-dir", default=DEFAULT_RESULTS_DIR,
                   help=f"where the regress-<time>/ folder goes (default {DEFAULT_RESULTS_DIR}/)")
    p.set_defaults(handler=regress_command)


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share in [0, 1)")
    return value


def _regex(text: str | None, option: str) -> str | None:
    if text is None:
        return None
    try:
        re.compile(text)
    except re.error as exc:
        raise CliError(f"{option} {text!r} is not a regular expression: {exc}") from None
    return text


def accepted_in_message(repo: Path, commit: str) -> str | None:
    """The ``Regression-accepted:`` patterns of a commit's message, joined into one."""
    message = git(repo, "log", "-1", "--format=%B", commit).stdout or ""
    patterns = [line[len(TRAILER):].strip() for line in message.splitlines()
                if line.startswith(TRAILER) and line[len(TRAILER):].strip()]
    for pattern in patterns:
        _regex(pattern, f"{TRAILER} in {commit[:12]}'s message:")
    return "|".join(f"(?:{p})" for p in patterns) or None


def regress_command(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from workloads.regress.check import PROTOCOLS, run_check
    from workloads.regress.pairs import Revision, eta_printer
    from workloads.regress.report import summary_lines, write
    from workloads.run import run_tempdirs

    _regex(args.bench, "--bench")
    accepted = [p for p in (_regex(args.accept, "--accept"),) if p]
    repo = repository_root()
    if args.if_base_exists and args.base != WORKING_TREE:
        try:
            resolve_commit(repo, args.base)
        except CliError:
            print(f"regress: no revision {args.base!r} in {repo} (a shallow clone or a first "
                  "commit): nothing to compare against, no check made")
            return 0
    commits = {}
    for label, rev in (("A", args.base), ("B", args.head)):
        commits[label] = rev if rev == WORKING_TREE else resolve_commit(repo, rev)
    if commits["B"] != WORKING_TREE:
        from_message = accepted_in_message(repo, commits["B"])
        if from_message:
            accepted.append(from_message)
    protocol = PROTOCOLS[args.protocol]
    protocol = replace(protocol, pairs=args.pairs or protocol.pairs,
                       trials=args.trials or protocol.trials)
    if protocol.pairs < 2:
        raise CliError("--pairs must be at least 2: the pairs of processes are the replicates")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out_dir = Path(args.results_dir) / f"regress-{stamp}"
    with run_tempdirs.temp_dir("statebench-regress-") as tmp:
        sides = []
        for label, rev in (("A", args.base), ("B", args.head)):
            tree, describe = export_revision(repo, rev, Path(tmp) / label)
            sides.append(Revision(label, tree, describe))
        work = Path(tmp) / "work"
        work.mkdir()
        result = run_check(sides[0], sides[1], protocol, args.mode, args.seed, args.alpha,
                           args.threshold, work, args.bench,
                           "|".join(accepted) or None, eta_printer())
    result.meta["commits"] = commits
    doc, page = write(result, out_dir)
    for line in summary_lines(result):
        print(line)
    print(f"\njson:    {doc}\npage:    {page}")
    return 1 if result.failing else 0
