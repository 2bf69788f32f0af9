"""``statebench diff RUN_A RUN_B``: two runs side by side, with verdicts only on evidence.

Every number of A and B with the ratio B/A. Counted numbers (entries, bytes, checkpoint sizes
under a logical clock) read "equal" or "different"; timings are coloured only when both runs
have enough repetitions and an exact Mann-Whitney U test at ``--alpha`` rejects "no change",
otherwise they are grey with the reason. A banner says when the two runs' machines, CPU counts,
Spark masters or library versions differ, and a line when a side is an incomplete run (one
that stopped early: its unfinished scenarios read "n/a (not run ...)").

With ``--rerun``, both stored configurations are run again with the current code, alternately
(A B A B ...) for ``--rounds`` rounds, and the rounds are diffed: drift on the machine hits
both sides alike. To compare two commits, see ``statebench ab``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from workloads.cli.options import CliError, add_rounds_options


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    d = subparsers.add_parser(
        "diff", help="two runs side by side with ratios (B/A) and evidence-based verdicts",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("run_a", metavar="RUN_A")
    d.add_argument("run_b", metavar="RUN_B")
    d.add_argument("-o", "--output", default=None,
                   help="where to write (default RUN_B/diff.html; with --rerun, the session "
                        "folder's diff.html)")
    d.add_argument("--rerun", action="store_true",
                   help="re-run both configurations alternately and diff the rounds")
    add_rounds_options(d)
    d.set_defaults(handler=diff_command)


def _run_dir(text: str) -> Path:
    """A complete run folder, else one line saying what is missing or wrong (RunFolderError)."""
    from workloads.cli.checks import run_folder_files
    from workloads.report.load import check_run_folder

    run_folder_files(text)
    return check_run_folder(text)


def refuse_clobber(option: str, output: str | Path | None, run_dirs: list[Path]) -> None:
    """An output file must not be one of the input run folders' own data (``-o RUN/run.json``
    replaced the run's record with a page)."""
    from workloads.results.store import META_FILE, ROWS_FILE

    if output is None:
        return
    target = Path(output).resolve()
    for run_dir in run_dirs:
        for name in (ROWS_FILE, META_FILE):
            if target == (run_dir / name).resolve():
                raise CliError(f"{option} {output}: is {run_dir}'s {name}; write the page "
                               "somewhere else")


def diff_command(args: argparse.Namespace) -> int:
    from workloads.cli.run import warn_incomplete
    from workloads.report.diff import summary_lines, write_diff_page
    from workloads.report.load import load_run
    from workloads.report.verdict import Side

    run_a, run_b = _run_dir(args.run_a), _run_dir(args.run_b)
    refuse_clobber("-o", args.output, [run_a, run_b])
    if args.output is not None:  # '' is refused, not the default
        from workloads.cli.checks import writable_file

        writable_file("-o", args.output)
    if args.rerun:
        return _rerun(run_a, run_b, args)
    a, b = Side.of("A", load_run(run_a)), Side.of("B", load_run(run_b))
    out = write_diff_page(a, b, args.output or run_b / "diff.html", args.alpha)
    for side, run_dir in (("A ", run_a), ("B ", run_b)):  # a run that stopped early
        warn_incomplete(run_dir, side)
    for line in summary_lines(a, b, ("records_per_s", "job_records_per_s"), args.alpha):
        print(line)
    print(out)
    return 0


def _rerun(run_a: Path, run_b: Path, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from workloads.cli.ab import invocation_from_run, run_session, session
    from workloads.cli.long_runs import forwarded, session_estimate
    from workloads.cli.run import argv_estimate
    from workloads.results.store import write_text_atomic
    from workloads.run import run_tempdirs

    with run_tempdirs.temp_dir("statebench-rerun-") as tmp:  # owner-tagged: swept if killed
        # both stored configurations are read and checked before the session folder exists
        a = invocation_from_run(run_a, "A", Path(tmp), args.repetitions)
        b = invocation_from_run(run_b, "B", Path(tmp), args.repetitions)
        est = session_estimate([a.args, b.args], args.rounds, args.results_dir,
                               "diff --rerun", args.allow_long, argv_estimate)  # or refused
        a, b = (replace(inv, args=forwarded(inv.args, inv.source, args.allow_long))
                for inv in (a, b))
        with session(args.results_dir) as root:
            out = run_session(a, b, args.rounds, root, args.alpha,
                              extra={"rerun_of": {"A": str(run_a), "B": str(run_b)}},
                              estimate_s=None if est is None else est.wall_s)
    if args.output:
        write_text_atomic(args.output, out.read_text(encoding="utf-8"))
        print(f"copied:  {args.output}")
    return 0
