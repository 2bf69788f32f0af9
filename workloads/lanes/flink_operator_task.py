"""The task operator of an ``[operator]`` spec on ``flink-heap`` and ``flink-rocksdb``: the
emulated operator (``workloads.operators``) run by the JVM worker against Flink's own keyed
state backend (``backends.flink.operators``, ``statebench.flink.Operators``).

It is :class:`~workloads.lanes.flink_task.FlinkLaneOperator` with the operator family in place of
key-value events: the same barriers, checkpoints (Flink's own snapshots, asynchronous phase on
the worker's checkpoint thread), samples, clock, pacing, busy time and summary rows, with

* records: the task's operator input (Nexmark columns, keyed as the kind's keyBy) crossing as
  OP_APPLY frames, applied by one Java loop that advances the watermark (firing due timers),
  sets the TTL clock and hands the record to the operator, exactly as
  :class:`~workloads.operators.task.OperatorTask`'s loop;
* samples: OP_SAMPLE, which counts the timers of the backend's priority queue as live entries,
  as the emulation counts its ``event-timers`` entries; on flink-rocksdb also
  ``estimated_entries``, RocksDB's estimate-num-keys over the operator's column families
  (timers included), the measure the flink-sql lane reports;
* at the end of input: OP_FINISH (the final watermark fires every timer, not busy time), then
  the operator rows of OperatorTask (``operator_outputs``, ``timers_registered``,
  ``timers_fired`` and, with a TTL, ``ttl_changed_results`` and its counts from the reference
  run without TTL in the same JVM) and the lane's rows; ``state_ops_per_s`` counts the
  operator's state accesses as the emulation does.

``restore_ms`` times a fresh Flink backend restored from the last checkpoint with the kind's
states (in their namespaces) and timer queue registered again. Not run here: the JVM's JIT
warm-up stream (the key-value one would exercise other code; the spec's warm-up fraction still
applies).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa

from backends.flink import operators as wire_ops
from backends.flink.register import ttl_fields
from workloads.lanes.flink_task import FlinkLaneOperator, compaction_options
from workloads.lanes.flink_workers import WorkerPool
from workloads.operators.task import CHANGED_METRICS, CHANGED_SHARE, OPERATOR_METRICS
from workloads.run import run_tempdirs
from workloads.run.barriers import CHECKPOINT, INFINITY, Barrier
from workloads.run.config import OperatorConfig
from workloads.run.metrics import NO_TIME
from workloads.run.state_setup import ttl_config_of

# One idle JVM per process, reused by the next operator task (a JVM start costs ~1 s); kept
# apart from the key-value lane's, whose JVMs carry its warm-up bookkeeping.
OPERATOR_WORKERS = WorkerPool()


def close_idle_operator_workers() -> None:
    """Stops the kept JVM (at exit; tests call it to leave no process behind)."""
    OPERATOR_WORKERS.close_idle()


class FlinkOperatorLane(FlinkLaneOperator):
    """One task of an operator workload on a Flink lane (module docstring)."""

    workers = OPERATOR_WORKERS

    def __init__(self, cfg: OperatorConfig, task: int, attempt: int = 0,
                 attempt_id: int | None = None) -> None:
        op = cfg.operator
        if op is None:
            raise ValueError(f"{cfg.scenario.label}: not an [operator] spec")
        reason = wire_ops.unsupported_reason(op.kind)  # type: ignore[attr-defined]
        if reason is not None:
            raise ValueError(f"backend '{cfg.backend}': {reason}")
        if cfg.backend == "flink-forst":
            raise ValueError("backend 'flink-forst': operator kinds run on flink-heap and "
                             "flink-rocksdb only")
        self.result: wire_ops.OperatorResult | None = None
        super().__init__(cfg, task, attempt, attempt_id)

    def _open(self) -> None:
        cfg = self.cfg
        op: Any = cfg.operator
        query, periodic = compaction_options(cfg.configured_cleanup,
                                             dict(cfg.rocksdb_options))
        options = self._worker_options(f"{self._local}/task", query, periodic, ("rocksdb",))
        self.worker = self.workers.acquire(self.kind, **options)
        # Flink's TTL is processing time: the lane's provider is driven by the scenario's clock
        ttl = ttl_config_of(replace(cfg, time_characteristic="ProcessingTime"))
        spec = wire_ops.OperatorOpen(
            kind=op.kind,
            ttl_fields=ttl_fields(ttl, query, periodic),
            clock=self._clock(),
            speedup=cfg.time_speedup,
            start_ms=cfg.start_ms,
            warmup_records=self._warm_left,
            latency=cfg.measure_latency,
            out_of_orderness_ms=cfg.out_of_orderness_ms,
            window_ms=op.window_ms,
            slide_ms=op.slide_ms,
            agg=op.agg,
            retention=cfg.ttl_ms is not None,
            lower_ms=op.lower_ms,
            upper_ms=op.upper_ms,
            top_n=op.top_n,
            gap_ms=op.gap_ms,
        )
        self._allow_paced_span()
        self.worker.send(wire_ops.encode_open(spec))

    # ------------------------------------------------------------------ the stream
    def _count_state_ops(self, batch: pa.RecordBatch) -> None:
        """Counted by the Java operator (OP_FINISH's accesses), not per batch here."""

    def _encode_records(self, batch: pa.RecordBatch) -> bytes:
        """A range of the task's operator input as an OP_APPLY frame."""
        return wire_ops.encode_apply(batch)

    def _add_barrier(self, b: Any) -> Barrier:
        barrier = self._barriers[self._bi]
        if barrier.kind == CHECKPOINT:
            return super()._add_barrier(b)
        self._bi += 1
        self._next_barrier = (
            self._barriers[self._bi].time_ms if self._bi < len(self._barriers) else INFINITY
        )
        b.raw(wire_ops.encode_sample(None if self._wall else barrier.time_ms), reads=1)
        return barrier

    def _record(self, fired: list[tuple[Barrier, bool]], results: list[Any]) -> None:
        """The lane's rows of each barrier; a sample's are OP_SAMPLE's (timers counted) plus,
        on RocksDB, ``estimated_entries`` (the flink-sql lane's measure, for agreement)."""
        add, task = self.rows.add, self.task
        for (barrier, warm_done), result in zip(fired, results):
            if barrier.kind == CHECKPOINT:
                super()._record([(barrier, warm_done)], [result])
                continue
            s, estimate = wire_ops.decode_sample(result)
            self._sample_rows(barrier, s)
            if estimate is not None:
                add(task, barrier.index, barrier.time_ms, "estimated_entries", estimate,
                    "entries")

    # ------------------------------------------------------------------ the end
    def finish(self) -> list:
        """The run's remaining barriers, the final watermark and the operator rows (as
        OperatorTask's: barriers before the final watermark), then the lane's."""
        if self._bi < len(self._barriers):
            b, fired = self.worker.batch(), []
            while self._bi < len(self._barriers):
                fired.append((self._add_barrier(b), self._warm_left <= 0))
            self._record(fired, b.flush())
        result = wire_ops.decode_finish(
            self.worker.batch().raw(wire_ops.encode_finish(), reads=1).flush()[0])
        self.result = result
        cfg, task, rep, add = self.cfg, self.task, self.cfg.repetition, self.rows.add
        for metric, value in zip(OPERATOR_METRICS, (result.outputs, result.timers_registered,
                                                    result.timers_fired)):
            add(task, rep, NO_TIME, metric, value, "count")
        if cfg.ttl_ms is not None and result.changed is not None:
            compared = result.compared or 0
            add(task, rep, NO_TIME, CHANGED_METRICS[0], result.changed, "count")
            add(task, rep, NO_TIME, CHANGED_METRICS[1], compared, "count")
            add(task, rep, NO_TIME, CHANGED_SHARE,
                result.changed / compared if compared else 0.0, "share")
        self._state_ops = result.accesses
        return super().finish()

    def close(self) -> None:
        """Give the JVM back for the next operator task (its backend disposed first), then
        delete the task's folders. A worker that failed is closed, not kept."""
        worker, self.worker = self.worker, None
        if worker is not None:
            self.workers.give_back(worker)
        run_tempdirs.remove(self._local)
