"""Which ``[operator]`` kinds Flink's state TTL reaches: one answer for the report and the tests.

A TTL reaches an operator's state only where Flink calls ``enableTimeToLive`` on its descriptor
(docs/operators.md, "Which operators Flink's state TTL reaches"): dedup, the regular join, the
group aggregate and Top-N do; the windows (``AbstractSyncStateWindowAggProcessor.open``,
DataStream's ``WindowOperator``) and the interval join (``TimeIntervalJoin.open``) never do.
Each kind's emulation already says so state by state (``StateDecl.ttl``, which the lanes run
and ``Operators.java`` mirrors with its ``null`` TTLs), so those declarations are the answer,
read here rather than listed a second time: a kind is reached when any of its states takes the
TTL (timers never do, ``Timers.DECL``). Why it matters: where the TTL does not reach, a TTL
sweep's curve is flat in Flink, and a lane whose curve moves differs from Flink.
"""

from __future__ import annotations

from workloads.operators import OPERATOR_CLASSES, check_supported


def ttl_reaches(kind: str) -> bool:
    """Whether Flink's state TTL (``table.exec.state.ttl``) reaches an operator of ``kind``;
    a kind without an emulation is refused (``UnsupportedOperator``) rather than guessed."""
    check_supported(kind)
    return any(decl.ttl for decl in OPERATOR_CLASSES[kind].STATES)


#: The kinds whose state Flink's TTL reaches (the others' TTL sweeps are flat in Flink).
TTL_KINDS = frozenset(kind for kind in OPERATOR_CLASSES if ttl_reaches(kind))
