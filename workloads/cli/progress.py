"""Progress of a run's jobs with an ETA: a bar on a terminal, one line now and then in a log.

A default comparison runs for minutes; a user who sends its output to a file (or CI) must still
see that it advances and when it will end. On a terminal this is tqdm's bar (with its ETA); when
stderr is not a terminal it prints one line per finished job, at most every ``LOG_EVERY_S``
seconds (and always the last one), e.g. ``statebench: ycsb-a 3/12 jobs, 41 s elapsed, ETA 2 min``.
The ETA is the mean time per finished job times the jobs left: jobs of one run cost about the
same, so this is as good as a model would be.

Within a job (one long job showed nothing for half an hour): an engine that can tell how far a
job has read its input (the in-process engine) calls :meth:`Progress.within`, which counts the
running job's share in the bar and the ETA and prints, at most every ``LOG_EVERY_S``, e.g.
``statebench: ycsb-a 0/3 jobs, job 1 at 45%, 2 min elapsed, ETA 10 min``. Up front, before the
first job, one line on stdout says what a long run holds (jobs, events each) and, for a paced
run, the wall time it takes at least (its clock's span over the speed-up, per job): an
estimate before any job has been timed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

LOG_EVERY_S = 10.0
#: Events (over all jobs) from which a run gets its line up front: some seconds at the
#: fastest lanes' millions of records per second.
LONG_RUN_EVENTS = 10_000_000


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


class Progress:
    """Counts finished jobs of ``total``; ``step(scenario, rep)`` is the runner's job callback."""

    def __init__(self, total: int, desc: str, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, events: int | None = None,
                 min_job_s: float | None = None, plan_stream: TextIO | None = None) -> None:
        self.total, self.desc, self.done = total, desc, 0
        self._stream = sys.stderr if stream is None else stream
        self._clock = clock
        self._start = self._last_line = clock()
        self._fraction = 0.0  # of the running job, from within()
        self._bar: Any = None
        if self.long_run(events, min_job_s):  # on stdout, with the results: stderr keeps
            # progress and a failed run's one line
            print(self.plan_line(events, min_job_s), file=sys.stdout if plan_stream is None
                  else plan_stream, flush=True)
        if self._stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="job", file=self._stream, leave=False)

    def long_run(self, events: int | None, min_job_s: float | None) -> bool:
        """Whether the run is worth a line up front: it takes at least ``LOG_EVERY_S`` on the
        paced clock, or holds ``LONG_RUN_EVENTS`` events (a short run's only line stays its
        result, or its one-line error)."""
        return ((min_job_s or 0.0) * self.total >= LOG_EVERY_S
                or (events or 0) * self.total >= LONG_RUN_EVENTS)

    def plan_line(self, events: int | None, min_job_s: float | None) -> str:
        """The up-front line: the jobs, their events, a paced run's least wall time."""
        text = f"statebench: {self.desc}: {self.total} job{'s' if self.total != 1 else ''}"
        if events is not None:
            text += f" of {events:,} events"
        if min_job_s:
            text += (f", at least {_duration(min_job_s * self.total)} on the paced clock "
                     f"({_duration(min_job_s)} a job)")
        return text

    def _print(self, line: str) -> None:
        print(line, file=self._stream, flush=True)

    def eta_s(self) -> float | None:
        """Seconds left, from the mean time per job so far, the running job's share counted
        (None before any progress)."""
        progressed = self.done + self._fraction
        if not progressed:
            return None
        return (self._clock() - self._start) / progressed * (self.total - progressed)

    def within(self, records: int, of: int) -> None:
        """The running job has read ``records`` of its ``of`` input records."""
        self._fraction = min(1.0, records / of) if of > 0 else 0.0
        if self._bar is not None:
            self._bar.set_postfix_str(f"job {self.done + 1} at {self._fraction:.0%}",
                                      refresh=False)
            return
        now = self._clock()
        if now - self._last_line < LOG_EVERY_S:
            return
        self._last_line = now
        eta = self.eta_s()
        self._print(f"statebench: {self.desc} {self.done}/{self.total} jobs, job "
                    f"{self.done + 1} at {self._fraction:.0%}, {_duration(now - self._start)} "
                    f"elapsed, ETA {_duration(eta or 0.0)}")

    def step(self, scenario: Any, rep: int) -> None:
        self.done += 1
        self._fraction = 0.0
        label = f"{scenario.backend}/{scenario.strategy} #{rep}"
        if self._bar is not None:
            self._bar.set_postfix_str(label)
            self._bar.update(1)
            return
        now = self._clock()
        if now - self._last_line < LOG_EVERY_S and self.done < self.total:
            return
        self._last_line = now
        eta = self.eta_s()
        tail = "done" if self.done >= self.total else f"ETA {_duration(eta or 0.0)}"
        print(f"statebench: {self.desc} {self.done}/{self.total} jobs ({label}), "
              f"{_duration(now - self._start)} elapsed, {tail}", file=self._stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
