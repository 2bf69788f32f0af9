"""Whether a run folder holds a whole run: run.json's ``complete`` flag and ``progress``.

A run folder is written as the run goes (``workloads.results.store.RunFolder``): after each
measured job that finishes, and once more when the run stops early (SIGINT, SIGTERM, an error in
a later scenario). Until every planned job finished, run.json says ``"complete": false`` and
``progress`` says what finished and what did not::

    "complete": false,
    "progress": {
      "stopped": "interrupted",  # running | interrupted | terminated | failed | ended
      "error": "",                         # a failed run's error, one line
      "scenarios": 4, "scenarios_finished": 1,
      "jobs": 8, "jobs_finished": 3,       # a job is one scenario in one round
      "finished": [{"workload": ..., "backend": ..., "strategy": ..., "rounds": 2}],
      "unfinished": [{"workload": ..., "backend": ..., "strategy": ...,
                      "rounds_finished": 1, "rounds": 2}],
      "failed": [{"workload": ..., "backend": ..., "strategy": ..., "round": 1,
                  "error": "the engine's message, one line"}]
    }

"ended" is a run that went through its plan while jobs failed in their engine
(``workloads.run.job_errors``): each failed job's scenario was skipped from then on and is
listed in ``failed``; the other scenarios ran. A run stopped otherwise may list failed jobs too
(those that failed before it stopped).

"running" read from a folder means the run was killed without a word (``kill -9``, a power
loss) or is still running. A finished run says ``"complete": true`` and has no ``progress``; a
run.json without the flag was written before it existed, when a folder was published only once
the run was complete, so it reads as complete.

run.json is an untrusted input of ``report`` and ``diff``: :func:`incomplete` reads it
defensively (wrong types read as unknown, never as an error).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: How each way of stopping reads in :meth:`Incomplete.line`.
STOPPED = {
    "running": "it stopped without saying why: killed, or still running",
    "interrupted": "interrupted",
    "terminated": "terminated",
    "failed": "stopped by an error",
    "ended": "every other job ran",
}
#: The reason a scenario that never ran reads with in a report and a diff (``n/a (...)``).
NOT_RUN = "not run: the run stopped before it"
#: Characters of run.json's strings that a line shows (an untrusted file's text, bounded).
SHOWN_CHARS = 300


def progress_record(parts: Iterable[tuple[str, Any]], stopped: str,
                    error: str = "") -> dict[str, Any]:
    """run.json's ``progress`` from (workload, :class:`workloads.run.plan.Completion`) pairs,
    one per workload of the run (a comparison has several), and how the run stopped."""
    finished: list[dict[str, Any]] = []
    unfinished: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    jobs = jobs_finished = 0
    for workload, completion in parts:
        failed.extend({"workload": workload, "backend": backend, "strategy": strategy,
                       "round": round_index, "error": message}
                      for backend, strategy, round_index, message in completion.failed)
        rounds = int(completion.rounds)
        for backend, strategy, done in completion.done:
            jobs += rounds
            jobs_finished += min(done, rounds)
            item = {"workload": workload, "backend": backend, "strategy": strategy}
            if done >= rounds:
                finished.append({**item, "rounds": rounds})
            else:
                unfinished.append({**item, "rounds_finished": done, "rounds": rounds})
    return {
        "stopped": stopped,
        "error": error,
        "scenarios": len(finished) + len(unfinished),
        "scenarios_finished": len(finished),
        "jobs": jobs,
        "jobs_finished": jobs_finished,
        "finished": finished,
        "unfinished": unfinished,
        "failed": failed,
    }


@dataclass(frozen=True)
class Unfinished:
    """A scenario of an incomplete run that did not run all its rounds (maybe none)."""

    workload: str
    backend: str
    strategy: str
    rounds_finished: int
    rounds: int


@dataclass(frozen=True)
class Failed:
    """A job of an incomplete run that failed in its engine (``round`` -1: the warm-up)."""

    workload: str
    backend: str
    strategy: str
    round: int
    error: str

    def when(self) -> str:
        """"in round 2", or "in the warm-up round"."""
        return "in the warm-up round" if self.round < 0 else f"in round {self.round}"

    def reason(self) -> str:
        """How its scenario reads where it has no numbers: "failed in round 2: <error>"."""
        return f"failed {self.when()}: {self.error}"


@dataclass(frozen=True)
class Incomplete:
    """What run.json says of a run that did not finish (None where it does not say)."""

    scenarios: int | None
    scenarios_finished: int | None
    jobs: int | None
    jobs_finished: int | None
    stopped: str
    error: str
    unfinished: tuple[Unfinished, ...]
    failed: tuple[Failed, ...] = ()

    def line(self) -> str:
        """"incomplete run: N of M scenarios finished (J of K jobs; how it stopped)"."""
        if self.scenarios is None or self.scenarios_finished is None:
            head = "incomplete run: run.json does not say how far it got"
        else:
            head = (f"incomplete run: {self.scenarios_finished} of {self.scenarios} scenarios "
                    "finished")
        details = []
        if self.jobs is not None and self.jobs_finished is not None:
            details.append(f"{self.jobs_finished} of {self.jobs} jobs")
        how = STOPPED.get(self.stopped)
        if how is not None:
            details.append(f"{how}: {self.error}" if self.error else how)
        if self.failed:
            first = self.failed[0]
            count = "a job failed" if len(self.failed) == 1 else \
                f"{len(self.failed)} jobs failed, the first"
            details.append(f"{count}: {first.backend} {first.strategy} {first.when()}: "
                           f"{first.error}")
        return f"{head} ({'; '.join(details)})" if details else head


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(value: Any) -> str:
    """A string of run.json as one printable, bounded line ("" for anything else)."""
    if not isinstance(value, str):
        return ""
    flat = "".join(c if c.isprintable() else " " for c in value)
    return flat if len(flat) <= SHOWN_CHARS else flat[:SHOWN_CHARS - 3] + "..."


def _scenario_items(items: Any) -> list[tuple[dict[str, Any], list[str]]]:
    """The entries of a run.json list that name a scenario (workload, backend, strategy, all
    strings), with those names; anything else is skipped, never an error."""
    if not isinstance(items, Sequence) or isinstance(items, str):
        return []
    out = []
    for item in items:
        if isinstance(item, dict):
            names = [item.get(k) for k in ("workload", "backend", "strategy")]
            if all(isinstance(n, str) for n in names):
                out.append((item, names))
    return out


def _unfinished(items: Any) -> tuple[Unfinished, ...]:
    return tuple(Unfinished(*names, _count(item.get("rounds_finished")) or 0,
                            _count(item.get("rounds")) or 0)
                 for item, names in _scenario_items(items))


def _failed(items: Any) -> tuple[Failed, ...]:
    return tuple(Failed(*(_text(n) for n in names), item["round"], _text(item.get("error")))
                 for item, names in _scenario_items(items)
                 if isinstance(item.get("round"), int) and not isinstance(item["round"], bool))


def incomplete(meta: dict[str, Any]) -> Incomplete | None:
    """What run.json (``meta``) says of a run that did not finish; None for a complete run
    (``"complete": true``, or no flag: a folder from before it, published only complete)."""
    if meta.get("complete", True) is True:
        return None
    progress = meta.get("progress")
    progress = progress if isinstance(progress, dict) else {}
    return Incomplete(
        scenarios=_count(progress.get("scenarios")),
        scenarios_finished=_count(progress.get("scenarios_finished")),
        jobs=_count(progress.get("jobs")),
        jobs_finished=_count(progress.get("jobs_finished")),
        stopped=_text(progress.get("stopped")),
        error=_text(progress.get("error")),
        unfinished=_unfinished(progress.get("unfinished")),
        failed=_failed(progress.get("failed")),
    )


def incomplete_line(meta: dict[str, Any]) -> str | None:
    """:meth:`Incomplete.line` of ``meta``, or None for a complete run."""
    found = incomplete(meta)
    return None if found is None else found.line()
