"""What the CLI says when jobs failed in their engine (:class:`~workloads.errors.JobsFailed`):
where the rest of the run went, and one line per failed job.

Why here and not in each command: ``run`` and ``compare`` end the same way. The run (or
comparison) went through its plan; the jobs that failed were skipped from then on and the
others ran (``workloads.run.runner``). So the folder holds everything else, marked
incomplete, and its report is rendered like a whole run's (the failed scenarios read "failed
in round r: ..." where they have no numbers, the banner says what failed). Then one line per
failed job, ``statebench: error: <lane> <scenario> (round r): <the engine's message>``, and
exit status 1; ``--verbose`` prints each one's stack (the engine's error, its ``__cause__``).
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from workloads.errors import JobsFailed, LaneJobError, failures_noted
from workloads.results.store import RunFolder

#: Failed jobs printed one line each; past this, one line says how many more run.json lists.
MAX_LINES = 20


def say_stopped(folder: RunFolder, exc: BaseException, render: bool = True) -> None:
    """Before the error line(s) of a run that did not complete: what its folder kept, and
    where. After :class:`JobsFailed` (everything else ran) the summary table of what finished
    is printed (stdout) and the report rendered too, unless ``render`` is off
    (``run --no-report``)."""
    line = folder.kept()
    if line is None:
        return
    if isinstance(exc, JobsFailed):  # every other job ran: its summary, as a whole run's
        from workloads.cli.display import summary_table

        for outcome in exc.outcomes:
            print(f"\n{summary_table(outcome)}")
    if render and isinstance(exc, JobsFailed):
        line = folder.kept(_render(folder.path)) or line
    print(f"statebench: {line}", file=sys.stderr)


def _render(run_dir: Path | None) -> Path | None:
    if run_dir is None:
        return None
    try:
        from workloads.report import render_report

        return render_report(run_dir)
    except Exception as exc:  # the results are written; a report problem must not hide them
        print(f"statebench: warning: report not rendered: {exc}", file=sys.stderr)
        return None


def say_failures(exc: JobsFailed, verbose: bool) -> int:
    """One line per failed job (the workload named when a comparison ran several), each one's
    stack first with ``verbose``; exit status 1."""
    _say(exc.failures, verbose)
    if not verbose:
        print("statebench: --verbose shows each failed job's stack", file=sys.stderr)
    return 1


def say_earlier_failures(exc: BaseException, verbose: bool) -> None:
    """The jobs that failed before ``exc`` stopped the run (``errors.note_failures``), one line
    each, before the line of what stopped it."""
    _say(failures_noted(exc), verbose)


def _say(failures: list[LaneJobError], verbose: bool) -> None:
    workloads = {f.workload for f in failures}
    shown = failures[:MAX_LINES]
    for failure in shown:
        if verbose:
            traceback.print_exception(failure)
        print(f"statebench: error: {failure.line(workload=len(workloads) > 1)}",
              file=sys.stderr)
    left = len(failures) - len(shown)
    if left:
        print(f"statebench: error: and {left} more failed jobs (run.json's progress.failed "
              "lists them)", file=sys.stderr)
