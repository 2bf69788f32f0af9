"""Progress of a run's jobs with an ETA: a bar on a terminal, one line now and then in a log.

A default comparison runs for minutes; a user who sends its output to a file (or CI) must still
see that it advances and when it will end. On a terminal this is tqdm's bar (with its ETA); when
stderr is not a terminal it prints one line per finished job, at most every ``LOG_EVERY_S``
seconds (and always the last one), e.g. ``statebench: ycsb-a 3/12 jobs, 41 s elapsed, ETA 2 min``.
The ETA is the mean time per finished job times the jobs left: jobs of one run cost about the
same, so this is as good as a model would be.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

LOG_EVERY_S = 10.0


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


class Progress:
    """Counts finished jobs of ``total``; ``step(scenario, rep)`` is the runner's job callback."""

    def __init__(self, total: int, desc: str, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.desc, self.done = total, desc, 0
        self._stream = sys.stderr if stream is None else stream
        self._clock = clock
        self._start = self._last_line = clock()
        self._bar: Any = None
        if self._stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="job", file=self._stream, leave=False)

    def eta_s(self) -> float | None:
        """Seconds left, from the mean time per finished job (None before the first one)."""
        if not self.done:
            return None
        return (self._clock() - self._start) / self.done * (self.total - self.done)

    def step(self, scenario: Any, rep: int) -> None:
        self.done += 1
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
