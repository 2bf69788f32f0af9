"""One side of a regression check: a long-lived process timing one revision's benchmarks.

Started as a script (``python worker.py TREE``) so that it imports nothing of the tree it was
shipped in: TREE, the exported revision, goes first on ``sys.path`` and its own ``bench``,
``backends`` and ``workloads`` are the code measured. It speaks JSON lines on stdin/stdout: the
coordinator asks for a benchmark, the worker runs it and answers with its cost. Fixtures are
built once, on first use, from the revision's seeded pools, so both sides hold the same state.

Costs are the process's CPU time (``time.process_time_ns``): time the process spends
descheduled while a neighbour runs is not the code's cost, and RocksDB's background threads
are counted as the process's own. Only the standard library and the revision's own modules are
imported here, so the worker runs any revision that has the asv suite's ``bench.state_ops``.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import time
from typing import Any

#: Fixture size and operations per call unless the coordinator says otherwise.
SETUP_KEYS = 2_000
OPS = 1_000
CLOCK = time.process_time_ns
#: The list benchmarks: they share a state that appends grow (``Suite._reset_lists``).
LIST_OPS = ("list_append", "list_get", "list_add_all")
#: Kept alive for the process's life: the classes :func:`shift_layout` made.
_SHIFT: list[type] = []


def shift_layout(classes: int) -> None:
    """Make ``classes`` throwaway classes and look an attribute up on each, before the
    revision's modules are imported.

    Why: CPython caches attribute lookups in one table indexed by each class's version tag
    (handed out in order, on a class's first lookup) mixed with the name's address, so which
    hot lookups of the measured code collide there depends on how many classes and objects came
    before it. A commit that only adds unused classes moved ``state/heap/ttl*/reducing_add`` by
    6-9% with every pair alike, which a check over pairs calls a regression. Drawn afresh for
    each pair (the same for both of its sides), that offset becomes spread between pairs, which
    the interval counts, instead of a bias no number of pairs removes.
    """
    for i in range(classes):
        cls = type(f"_Shift{i}", (), {})
        getattr(cls, "absent", None)  # its version tag is handed out now
        _SHIFT.append(cls)


class Suite:
    """The revision's benchmarks by name: ``state/<backend>/<variant>/<op>`` (the statebench
    API), ``raw/<backend>/<op>`` (the raw loop doing the same work), and
    ``scenario/<workload>/<backend>/<strategy>`` (one in-process run of a small spec)."""

    def __init__(self, root: str, scenario: dict[str, Any]) -> None:
        self.root = root
        self.scenario = scenario
        self.cache: dict[tuple[str, ...], Any] = {}
        self._pools: Any = None

    # ------------------------------------------------------------------ state operations
    @property
    def pools(self) -> Any:
        if self._pools is None:
            from bench import fixtures

            self._pools = fixtures.Pools.make(setup=self.scenario.get("setup_keys", SETUP_KEYS),
                                              ops=self.scenario.get("ops", OPS))
        return self._pools

    def _fixture(self, key: tuple[str, ...]) -> Any:
        if key not in self.cache:
            from bench import fixtures, state_ops

            if key[0] == "state":
                self.cache[key] = fixtures.make_state_fixture(key[1], key[2], self.pools,
                                                              root=self.root)
            else:
                self.cache[key] = state_ops.RAW_FIXTURES[key[1]](self.pools, root=self.root)
        return self.cache[key]

    def _op(self, parts: list[str]) -> Any:
        from bench import state_ops

        return (state_ops.OPS[parts[-1]] if parts[0] == "state"
                else state_ops.RAW[parts[1]][parts[-1]])

    def names(self) -> list[str]:
        from bench import fixtures, state_ops

        ops = list(state_ops.OPS)
        return ([f"state/{b}/{v}/{op}" for b in ("heap", "rocksdb")
                 for v in fixtures.VARIANTS for op in ops]
                + [f"raw/{b}/{op}" for b in state_ops.RAW for op in ops])

    def _reset_lists(self, key: tuple[str, ...]) -> None:
        """Every list back to its one pre-filled element, untimed: appends grow the lists a
        little more with every call, and a list read would otherwise time the run's age.
        A state fixture is reset through the state API; a raw one as its loops store a list
        (``bench.state_ops``: one ``(value, ts)`` tuple, or its packed bytes)."""
        fx = self._fixture(key)
        if key[0] == "raw":
            from bench import state_ops

            in_memory = hasattr(fx, "lists")  # the fixture's own shape: the worker imports no
            # registry of the revision it measures, which older revisions do not have
            for k in self.pools.setup_keys:
                if in_memory:
                    fx.lists[k] = [(k, state_ops.TS)]
                else:
                    fx.cfs["list"].put(fx.key_bytes[k], state_ops._VALUE.pack(state_ops.TS, k))
            return
        select, lists = fx.backend.set_current_key, fx.states["list"]
        for k in self.pools.setup_keys:
            select(k)
            lists.update([k])

    # ------------------------------------------------------------------ scenarios
    def _scenario(self, workload: str, backend: str, strategy: str) -> dict[str, Any]:
        """One in-process run; its exact figures (``metrics.class_of``) by name."""
        from workloads.report.metrics import class_of
        from workloads.results.summaries import summaries
        from workloads.run.engines.inprocess import run_in_process
        from workloads.run.plan import RunConfig
        from workloads.spec import load_spec

        spec = load_spec(workload).with_overrides(
            events=self.scenario["events"],
            checkpoint_interval_ms=self.scenario["checkpoint_interval_ms"])
        with tempfile.TemporaryDirectory(prefix="ckpt-", dir=self.root) as ckpt:
            cfg = RunConfig(spec=spec, backends=(backend,), strategies=(strategy,),
                            checkpoint_root=ckpt, repetitions=1, parallelism=1,
                            measure_latency=False)
            c0 = CLOCK()
            outcome = run_in_process(cfg)
            ns = CLOCK() - c0
        if outcome.not_applicable:
            return {"not_applicable": str(outcome.not_applicable[0].reason)}
        exact: dict[str, float] = {}
        for stats in summaries(outcome.rows).values():
            for metric, s in stats.items():
                klass = class_of(metric, backend, strategy,
                                 clock=spec.state.time_characteristic,
                                 checkpoint_mode=spec.checkpoints.mode)
                if klass.exact and s.center == s.center:  # NaN: nothing to compare
                    exact[metric] = float(s.center)
        return {"ns": ns, "exact": exact}

    # ------------------------------------------------------------------ the protocol
    def prepare(self, name: str) -> None:
        parts = name.split("/")
        if parts[0] != "scenario":
            self._fixture(tuple(parts[:-1]))

    def run(self, name: str, calls: int = 1) -> dict[str, Any]:
        """The cost of ``calls`` calls of benchmark ``name`` (a scenario runs once and gives
        its exact figures too)."""
        parts = name.split("/")
        if parts[0] == "scenario":
            return self._scenario(parts[1], parts[2], "/".join(parts[3:]))
        if parts[-1] in LIST_OPS:
            self._reset_lists(tuple(parts[:-1]))
        fx, fn, pools = self._fixture(tuple(parts[:-1])), self._op(parts), self.pools
        c0 = CLOCK()
        for _ in range(calls):
            fn(fx, pools)
        return {"ns": CLOCK() - c0}

    def close(self) -> None:
        for fx in self.cache.values():
            fx.close()
        self.cache.clear()


def answer(suite: Suite, req: dict[str, Any]) -> dict[str, Any]:
    cmd = req.get("cmd")
    if cmd == "names":
        return {"names": suite.names()}
    if cmd == "prepare":
        for name in req["names"]:
            suite.prepare(name)
        gc.collect()
        return {"ok": True}
    if cmd == "run":
        if "cpu" in req:
            os.sched_setaffinity(0, {req["cpu"]})
        gc.disable()  # a collection is the fixture's age, not the code's cost
        try:
            return suite.run(req["name"], req.get("calls", 1))
        finally:
            gc.enable()
    return {"error": f"unknown command {cmd!r}"}


def serve(tree: str, scenario: dict[str, Any], layout: int = 0) -> None:
    sys.path[0] = tree  # was this script's folder: only the revision's modules are imported
    shift_layout(layout)
    out = sys.stdout
    # in the coordinator's working folder (this process's), which it removes even if this
    # process is killed before its own cleanup runs
    with tempfile.TemporaryDirectory(prefix="fixtures-", dir=os.getcwd()) as root:
        suite = Suite(root, scenario)
        try:
            out.write(json.dumps({"ready": True, "pid": os.getpid(), "layout": len(_SHIFT)}) + "\n")
            out.flush()
            for line in sys.stdin:
                req = json.loads(line)
                if req.get("cmd") == "quit":
                    break
                try:
                    reply = answer(suite, req)
                except Exception as exc:  # the revision's own failure, reported as one line
                    reply = {"error": f"{type(exc).__name__}: {exc}"}
                out.write(json.dumps(reply) + "\n")
                out.flush()
        finally:
            suite.close()


if __name__ == "__main__":
    serve(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
