"""Measuring two revisions so that the machine cancels: pairs of processes, interleaved trials.

On a machine shared with other tenants, whole runs taken minutes apart drift by 2-4x, which
is larger than any regression worth catching. So A and B are never measured apart:

* a **pair** is one worker process per revision (``worker.py``), both alive at once, each with
  the same seeded fixtures; pairs are replicated, and which side starts (and builds its
  fixtures) first alternates from pair to pair, as it biases a pair by a few percent;
* in each **trial** every benchmark runs once on each side, in a seeded random order of
  benchmarks; in ``duet`` mode A and B run at the same time, one per core (the cores swapped at
  random from trial to trial), so a neighbour's burst or a cache flush hits both (Bulej et al.,
  duet benchmarking); in ``interleaved`` mode one after the other, the first side drawn at
  random (Abedi and Brecht's randomized multiple interleaved trials);
* the hash seed is fixed (``PYTHONHASHSEED=0``), and the interpreter's layout is drawn afresh
  for each pair (``worker.shift_layout``: a seeded number of classes made before the revision
  is imported, the same on both sides of a pair), so that a commit which only moves where the
  measured code's lookups land in CPython's attribute cache is spread between pairs rather
  than a bias; the rest of the processes' difference is measured, and counted by the
  statistics (``stats.py``).
"""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from workloads.cli.options import CliError

WORKER = Path(__file__).with_name("worker.py")
#: Layout offsets a pair draws from: CPython's attribute cache has 2**12 entries, so offsets
#: over that range reach every alignment of a class's version tag in it.
LAYOUTS = 4096
DUET = "duet"
INTERLEAVED = "interleaved"
MODES = (DUET, INTERLEAVED)
#: Seconds a worker gets to answer one request (a scenario run is the longest) before the check
#: is abandoned as hung.
ANSWER_TIMEOUT_S = 600.0
#: Calls per trial at most: the mutating benchmarks (list appends) grow their state per call.
MAX_CALLS = 100


@dataclass(frozen=True)
class Revision:
    """One side: its label (A or B), the exported tree to run and a description for people."""

    label: str
    tree: Path
    describe: str


@dataclass
class Samples:
    """What a check measured: per benchmark and pair, each side's costs in trial order; per
    scenario and side, the exact figures of every run."""

    costs: dict[str, list[tuple[list[float], list[float]]]] = field(default_factory=dict)
    exact: dict[str, dict[str, list[dict[str, float]]]] = field(
        default_factory=lambda: {"A": {}, "B": {}})
    not_applicable: dict[str, str] = field(default_factory=dict)


class Worker:
    """A worker process of one revision, asked one JSON line at a time."""

    def __init__(self, rev: Revision, scenario: dict[str, Any], log_dir: Path,
                 layout: int = 0) -> None:
        self.rev = rev
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)  # the tree is put first by the worker itself
        self.log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in close()
            "w+", prefix=f"worker-{rev.label}-", suffix=".log", dir=log_dir, delete=False)
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(rev.tree), json.dumps(scenario), str(layout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
            env=env, cwd=log_dir)
        self.ready = self.receive()  # {"ready": true, "pid": ..., "layout": ...}

    def send(self, req: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        out: IO[str] | None = self.proc.stdout
        assert out is not None
        ready, _, _ = select.select([out], [], [], ANSWER_TIMEOUT_S)
        if not ready:
            self.proc.kill()
            raise CliError(f"the worker of {self.rev.label} ({self.rev.describe}) did not "
                           f"answer within {ANSWER_TIMEOUT_S:.0f} s")
        line = out.readline()
        if not line:
            self.proc.wait(timeout=30)
            self.log.seek(0)
            tail = " | ".join(self.log.read().strip().splitlines()[-3:])
            raise CliError(f"the worker of {self.rev.label} ({self.rev.describe}) ended with "
                           f"status {self.proc.returncode}: {tail or 'no message'}")
        reply = json.loads(line)
        if "error" in reply:
            raise CliError(f"{self.rev.label} ({self.rev.describe}): {reply['error']}")
        return reply

    def ask(self, req: dict[str, Any]) -> dict[str, Any]:
        self.send(req)
        return self.receive()

    def close(self) -> None:
        """Ask the worker to quit (it removes its fixtures' folder), kill it if it does not."""
        if self.proc.poll() is None:
            try:
                self.send({"cmd": "quit"})
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.log.close()
        os.unlink(self.log.name)


def benchmark_names(rev: Revision, log_dir: Path) -> list[str]:
    """The state-operation benchmarks a revision's suite has."""
    worker = Worker(rev, {}, log_dir)
    try:
        return list(worker.ask({"cmd": "names"})["names"])
    finally:
        worker.close()


def _trial(a: Worker, b: Worker, name: str, calls: int, mode: str, rng: random.Random,
           ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``calls`` calls of ``name`` on each side; their answers (A's, B's)."""
    req = {"cmd": "run", "name": name, "calls": calls}
    if mode == DUET:
        cpus = [0, 1] if rng.random() < 0.5 else [1, 0]
        first = (a, b) if rng.random() < 0.5 else (b, a)  # the first asked starts first
        for worker in first:
            worker.send({**req, "cpu": cpus[worker is b]})
        return a.receive(), b.receive()
    if rng.random() < 0.5:
        ra = a.ask(req)
        return ra, b.ask(req)
    rb = b.ask(req)
    return a.ask(req), rb


def calls_for(warm: dict[str, Any], target_ns: float) -> int:
    """Calls per trial so that a trial lasts about ``target_ns``: a trial of a fraction of a
    millisecond is mostly timer and interrupt noise."""
    ns = warm.get("ns")
    if not ns:
        return 1
    return max(1, min(MAX_CALLS, round(target_ns / ns)))


Progress = Callable[[int, int], None]


def measure(a: Revision, b: Revision, names: Sequence[str], pairs: int,
            trials: Callable[[str], int], mode: str, seed: int, scenario: dict[str, Any],
            log_dir: Path, progress: Progress | None = None,
            target_ns: float = 5e6) -> Samples:
    """``pairs`` pairs of processes; in each, ``trials(name)`` interleaved trials of every
    benchmark (after one unmeasured call each). The order of everything is drawn from
    ``seed``."""
    if mode not in MODES:
        raise CliError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if mode == DUET and len(os.sched_getaffinity(0)) < 2:
        mode = INTERLEAVED  # one core: A and B cannot run at once
    rng = random.Random(seed)
    samples = Samples(costs={n: [] for n in names})
    rounds = max(trials(n) for n in names)
    total, done = pairs * sum(trials(n) + 1 for n in names), 0
    for pair in range(pairs):
        order = (a, b) if pair % 2 == 0 else (b, a)
        layout = rng.randrange(LAYOUTS)
        workers: dict[str, Worker] = {}
        try:
            for rev in order:  # both build their fixtures at once, the first started first
                workers[rev.label] = Worker(rev, scenario, log_dir, layout)
                workers[rev.label].send({"cmd": "prepare", "names": list(names)})
            for rev in order:
                workers[rev.label].receive()
            wa, wb = workers["A"], workers["B"]
            costs = {n: ([], []) for n in names}
            calls = {}
            for name in names:  # warm-up: the first call of each pays its imports and caches
                ra, rb = _trial(wa, wb, name, 1, mode, rng)
                calls[name] = calls_for(ra, target_ns)
                if "not_applicable" in ra:  # it says so at once: not asked again
                    samples.not_applicable[name] = ra["not_applicable"]
                done += 1
            for round_no in range(rounds):
                todo = [n for n in names
                        if round_no < trials(n) and n not in samples.not_applicable]
                rng.shuffle(todo)
                for name in todo:
                    ra, rb = _trial(wa, wb, name, calls[name], mode, rng)
                    costs[name][0].append(ra["ns"] / calls[name])  # per call
                    costs[name][1].append(rb["ns"] / calls[name])
                    for label, r in (("A", ra), ("B", rb)):
                        if "exact" in r:
                            samples.exact[label].setdefault(name, []).append(r["exact"])
                    done += 1
                    if progress is not None:
                        progress(done, total)
            for name in names:
                if costs[name][0]:
                    samples.costs[name].append(costs[name])
        finally:
            for worker in workers.values():
                worker.close()
    samples.costs = {n: c for n, c in samples.costs.items() if c}
    return samples


def eta_printer(stream: IO[str] = sys.stderr) -> Progress:
    """A one-line progress with the share done and an estimate of the time left."""
    started = time.monotonic()
    shown = [0.0]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if now - shown[0] < 1.0 and done < total:
            return
        shown[0] = now
        elapsed = now - started
        left = elapsed * (total - done) / done if done else 0.0
        stream.write(f"\r  measured {done}/{total} trials, {elapsed:4.0f} s, "
                     f"about {left:4.0f} s left ")
        if done == total:
            stream.write("\n")
        stream.flush()

    return show
