"""What every task operator checks of its input and output: events in time order per task,
and, under NeverReturnExpired, no expired value returned (a wrong answer fails the run)."""


import numpy as np
import pyarrow as pa

from workloads.run.config import OperatorConfig


class ExpiredValueReturned(AssertionError):
    """A state returned a value that had expired, under NeverReturnExpired: a backend bug."""


def fail_if_expired_returned(cfg: OperatorConfig, task: int, count: int, by: str = "") -> None:
    """Under NeverReturnExpired a returned expired value is a wrong answer: the run fails."""
    if cfg.never_return_expired and count:
        raise ExpiredValueReturned(
            f"{cfg.scenario.label} task {task}: {count} expired value(s) returned under "
            f"NeverReturnExpired{by}"
        )


def sorted_times(batch: pa.RecordBatch, last_ts: int, task: int) -> np.ndarray:
    """A batch's ``ts`` column, checked to go on from ``last_ts`` without going back."""
    ts = batch.column("ts").to_numpy(zero_copy_only=False)
    if ts[0] < last_ts or (len(ts) > 1 and bool((ts[1:] < ts[:-1]).any())):
        raise OutOfOrderInput(
            f"task {task}: events are not sorted by ts (got {int(ts[0])} after {last_ts}); "
            "sort each task's events by time before the operator"
        )
    return ts


class OutOfOrderInput(ValueError):
    """A task's events did not arrive in timestamp order (the runner must sort them)."""
