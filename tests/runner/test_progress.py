"""Progress lines with an ETA when output is not a terminal (issue 9: a 5-minute run into a log
must not stay silent until the end)."""

from __future__ import annotations

import io
from types import SimpleNamespace

from workloads.cli.progress import LOG_EVERY_S, Progress


class FakeTime:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_log_lines_carry_counts_and_an_eta_and_are_rate_limited() -> None:
    out, clock = io.StringIO(), FakeTime()
    progress = Progress(4, "ycsb-a", stream=out, clock=clock)
    job = SimpleNamespace(backend="heap", strategy="timer")
    clock.t += 30
    progress.step(job, 0)  # 30 s per job so far: 3 jobs left -> 90 s
    clock.t += 1
    progress.step(job, 1)  # within LOG_EVERY_S of the last line: silent
    clock.t += LOG_EVERY_S
    progress.step(job, 2)
    clock.t += 5
    progress.step(job, 3)  # the last job always prints
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0] == ("statebench: ycsb-a 1/4 jobs (heap/timer #0), 30 s elapsed, ETA 2 min")
    assert "3/4 jobs" in lines[1] and "ETA 14 s" in lines[1]  # 41 s / 3 jobs * 1 left
    assert lines[2].endswith("done") and "4/4 jobs" in lines[2]


def test_eta_is_unknown_before_the_first_job() -> None:
    progress = Progress(2, "x", stream=io.StringIO(), clock=FakeTime())
    assert progress.eta_s() is None
