"""Progress of a run's jobs with an ETA: a bar on a terminal, one line now and then in a log.

A default comparison runs for minutes; a user who sends its output to a file (or CI) must still
see that it advances and when it will end. On a terminal this is tqdm's bar (with its ETA); when
stderr is not a terminal it prints one line per finished job, at most every ``LOG_EVERY_S``
seconds (and always the last one), e.g. ``statebench: ycsb-a 3/12 jobs, 41 s elapsed, ETA 2 min``.
Once a job has finished, the ETA is the mean time per finished job times the jobs left: jobs of
one run cost about the same, so this is as good as a model would be.

Before that, the ETA is the run's estimate (``workloads.run.estimate``, printed up front by
``run`` and ``compare``) less the time elapsed: a single long job (a paced Spark query of 36
hours) showed nothing at all until it ended. A background ticker says where the run is whenever
nothing else has for a while (``statebench: flink-27504 0/1 jobs, 5 min elapsed, ETA 35.9 h
(estimated)``), at most every ``LOG_EVERY_S`` at first and less often as the run goes on (a
tenth of the time elapsed, at most every ``MAX_QUIET_S``), so a day-long run's log stays short.

Within a job, an engine that can tell how far a job has read its input (the in-process and the
Spark engine) calls :meth:`Progress.within`, which counts the running job's share in the bar and
the ETA and prints, at most every ``LOG_EVERY_S``, e.g. ``statebench: ycsb-a 0/3 jobs, job 1 at
45%, 2 min elapsed, ETA 10 min``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from workloads.run.estimate import duration

LOG_EVERY_S = 10.0
#: The longest a log stays quiet while a run goes on (the ticker's lines).
MAX_QUIET_S = 600.0
#: How often the background ticker looks (it prints far less often).
TICK_S = 1.0


class Progress:
    """Counts finished jobs of ``total``; ``step(scenario, rep)`` is the runner's job callback.

    ``estimate_s``: the run's estimated wall time, the ETA until a job has finished.
    ``unit``: what the lines count (``ab`` counts the runs of its rounds).
    ``background``: run the ticker thread (default: on the real clock; tests with a clock of
    their own call :meth:`tick` themselves)."""

    def __init__(self, total: int, desc: str, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, estimate_s: float | None = None,
                 background: bool | None = None, unit: str = "jobs") -> None:
        self.total, self.desc, self.done, self.unit = total, desc, 0, unit
        self.estimate_s = estimate_s
        self._stream = sys.stderr if stream is None else stream
        self._clock = clock
        self._start = self._last_line = clock()
        self._fraction = 0.0  # of the running job, from within()
        self._lock = threading.RLock()
        self._bar: Any = None
        if self._stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit.rstrip("s"), file=self._stream,
                             leave=False)
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if background if background is not None else clock is time.monotonic:
            self._ticker = threading.Thread(target=self._tick_loop, daemon=True,
                                            name="statebench-progress")
            self._ticker.start()

    def _print(self, line: str) -> None:
        print(line, file=self._stream, flush=True)

    def eta_s(self) -> float | None:
        """Seconds left: from the mean time per job so far, the running job's share counted;
        before any progress, the estimate less the time elapsed (None without one)."""
        progressed = self.done + self._fraction
        elapsed = self._clock() - self._start
        if not progressed:
            return None if self.estimate_s is None else self.estimate_s - elapsed
        return elapsed / progressed * (self.total - progressed)

    def _eta_text(self) -> str:
        eta = self.eta_s()
        if eta is None:
            return "ETA unknown"
        if self.done + self._fraction:
            return f"ETA {duration(eta)}"
        if eta <= 0:  # the estimate is no longer an ETA: say what it was
            return f"ETA unknown (past the estimate of {duration(self.estimate_s or 0.0)})"
        return f"ETA {duration(eta)} (estimated)"

    def within(self, records: int, of: int) -> None:
        """The running job has read ``records`` of its ``of`` input records."""
        with self._lock:
            self._fraction = min(1.0, records / of) if of > 0 else 0.0
            if self._bar is not None:
                self._bar.set_postfix_str(f"job {self.done + 1} at {self._fraction:.0%}",
                                          refresh=False)
                return
            now = self._clock()
            if now - self._last_line < LOG_EVERY_S:
                return
            self._last_line = now
            self._print(f"statebench: {self.desc} {self.done}/{self.total} {self.unit}, job "
                        f"{self.done + 1} at {self._fraction:.0%}, "
                        f"{duration(now - self._start)} elapsed, {self._eta_text()}")

    def step(self, scenario: Any, rep: int) -> None:
        """The runner's job callback: job (``scenario``, round ``rep``) finished."""
        which = "warm-up" if rep < 0 else f"#{rep}"  # the warm-up round is no repetition
        self.advance(f"{scenario.backend}/{scenario.strategy} {which}")

    def advance(self, label: str) -> None:
        """One more job finished, named ``label`` in the line."""
        with self._lock:
            self.done += 1
            self._fraction = 0.0
            if self._bar is not None:
                self._bar.set_postfix_str(label)
                self._bar.update(1)
                return
            now = self._clock()
            if now - self._last_line < LOG_EVERY_S and self.done < self.total:
                return
            self._last_line = now
            tail = "done" if self.done >= self.total else self._eta_text()
            self._print(f"statebench: {self.desc} {self.done}/{self.total} {self.unit} ({label}), "
                        f"{duration(now - self._start)} elapsed, {tail}")

    def tick(self) -> None:
        """Say where the run is if nothing was said for a while (the ticker's call): a job
        that runs for hours gets its ETA, from the estimate until a job has finished."""
        with self._lock:
            now = self._clock()
            elapsed = now - self._start
            if self._bar is not None:
                if not self.done and self.estimate_s is not None:
                    self._bar.set_postfix_str(self._eta_text(), refresh=True)
                return
            quiet = max(LOG_EVERY_S, min(MAX_QUIET_S, elapsed / 10))
            if now - self._last_line < quiet or self.done >= self.total:
                return
            self._last_line = now
            self._print(f"statebench: {self.desc} {self.done}/{self.total} {self.unit}, "
                        f"{duration(elapsed)} elapsed, {self._eta_text()}")

    def _tick_loop(self) -> None:
        while not self._stop.wait(TICK_S):
            try:
                self.tick()
            except Exception:  # a closed stream at exit: progress is not worth a traceback
                return

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(TICK_S + 1)
        with self._lock:
            if self._bar is not None:
                self._bar.close()
