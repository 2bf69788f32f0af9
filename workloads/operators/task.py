"""The task operator of an ``[operator]`` spec on statebench's backends: KeyedOperator's
barriers, checkpoints, samples, throughput and restore around an emulated Flink operator.

It overrides KeyedOperator's hooks only: the states are the operator kind's (with the spec's
TTL and the scenario's one cleanup strategy, timers without TTL), a record is ``(key, ts,
row)`` and the loop advances the watermark (firing due timers), sets the event-time TTL clock
and hands the record to the operator. A record's latency and the busy time include the timers
it fired. At the end of input the run's remaining barriers (checkpoints and samples between
the last record and the run's end) fire first, on the state the records left - their time is
before the final watermark's, which is +inf - and then the final watermark fires every
remaining timer (not busy time): taken after it, a window that stays open past the last record
would be sampled and checkpointed empty. Then the operator's outputs are counted
(``operator_outputs``), and with a TTL compared with a reference run without TTL over the
same input (``ttl_changed_results`` and its two counts, ``workloads.operators.results``; the
reference replays the task's input after the measured run and is not measured).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyarrow as pa

from backends.keygroups import KeyGroupRange
from workloads.operators import make_operator
from workloads.operators.results import changed_share, compare_outputs, reference_outputs
from workloads.run.config import OperatorConfig
from workloads.run.keyed_operator import KeyedOperator
from workloads.run.metrics import NO_TIME
from workloads.run.state_setup import ttl_config_of

#: Rows an operator task adds to KeyedOperator's (per task; summed into the task=-1 total,
#: except the share, whose total is the summed counts' ratio).
OPERATOR_METRICS = ("operator_outputs", "timers_registered", "timers_fired")
CHANGED_METRICS = ("ttl_changed_outputs", "ttl_compared_outputs")
CHANGED_SHARE = "ttl_changed_results"
_ROW_COLUMNS = ("event_type", "ts", "person_id", "auction_id", "price", "category",
                "expires_ms")


class OperatorTask(KeyedOperator):
    """One task of an operator workload (module docstring)."""

    def __init__(self, cfg: OperatorConfig, task: int, attempt: int = 0,
                 attempt_id: int | None = None) -> None:
        self.op = make_operator(cfg.operator, cfg.out_of_orderness_ms,
                                retention=cfg.ttl_ms is not None, ttl_ms=cfg.ttl_ms)
        self._inputs: list[pa.RecordBatch] = []  # with a TTL: the input, for the reference
        super().__init__(cfg, task, attempt, attempt_id)

    # ------------------------------------------------------------------ KeyedOperator's hooks
    def _state_descriptors(self) -> dict[str, Any]:
        return self.op.descriptors(ttl_config_of(self.cfg))

    def _register_states(self, backend: Any) -> Any:
        if backend is self.backend:
            self.op.bind(backend, self._descs)
        else:  # a restored backend: register every state so it finds its data
            other = make_operator(self.cfg.operator, self.cfg.out_of_orderness_ms,
                                  retention=self.op.retention, ttl_ms=self.cfg.ttl_ms)
            other.bind(backend, other.descriptors(ttl_config_of(self.cfg)))
        return None

    def _make_loop(self, calls: Any, set_time: Any) -> Any:
        op = self.op
        advance, element, clock = op.advance_watermark, op.element, time.perf_counter_ns

        def loop(keys: list, tss: list, rows: list, stamp: Any, last_t: Any) -> tuple[int, Any]:
            for key, ts, row in zip(keys, tss, rows):
                if stamp is not None:
                    stamp(clock())
                if set_time is not None and ts != last_t:
                    set_time(ts)
                    last_t = ts
                advance(ts)
                element(key, row)
            return 0, last_t

        return loop

    def _columns(self, batch: pa.RecordBatch, ts_np: np.ndarray) -> tuple[Any, ...]:
        if self.cfg.ttl_ms is not None:  # kept as Arrow (~60 bytes a row), not Python tuples
            self._inputs.append(batch)
        return _records(batch)

    def _state_ops(self, cols: tuple[Any, ...], count: int) -> int:
        access = self.op.access
        done, access.count = access.count, 0
        return done

    # ------------------------------------------------------------------ the end
    def finish(self) -> list:
        while self._bi < len(self._barriers):  # before the final watermark (module docstring)
            self._fire_barrier()
        self.op.end_of_input()
        cfg, task, rep, add = self.cfg, self.task, self.cfg.repetition, self.rows.add
        timers = self.op.timers
        values = (len(self.op.outputs), 0 if timers is None else timers.registered,
                  0 if timers is None else timers.fired)
        for metric, value in zip(OPERATOR_METRICS, values):
            add(task, rep, NO_TIME, metric, value, "count")
        if cfg.ttl_ms is not None:
            reference = reference_outputs(
                cfg.operator, cfg.out_of_orderness_ms, map(_records, self._inputs),
                cfg.max_parallelism,
                KeyGroupRange.of_operator(task, cfg.parallelism, cfg.max_parallelism),
                cfg.start_ms)
            changed, compared = compare_outputs(self.op.outputs, reference)
            add(task, rep, NO_TIME, CHANGED_METRICS[0], changed, "count")
            add(task, rep, NO_TIME, CHANGED_METRICS[1], compared, "count")
            add(task, rep, NO_TIME, CHANGED_SHARE, changed_share(changed, compared), "share")
        self._inputs = []
        return super().finish()


def _records(batch: pa.RecordBatch) -> tuple[list, list, list]:
    """A batch as the loop's ``(keys, tss, rows)`` (rows: ``workloads.operators.base.Row``)."""
    keys = batch.column("key").to_numpy(zero_copy_only=False).tolist()
    cols = [batch.column(name).to_numpy(zero_copy_only=False).tolist() for name in _ROW_COLUMNS]
    return keys, cols[1], list(zip(*cols))
