"""Spark's event-time timer per key (``spark_event_timer``): the expiry a Spark user writes for
an event-time stream, where Spark's own TTL cannot go.

Spark refuses ``ttlDurationMs`` outside ProcessingTime (``StatefulProcessorHandleImpl
.validateTTLConfig``), so under an EventTime spec a user expires state with timers: the
processor runs with ``TimeMode.EventTime`` and a watermark on the records' time column, every
write of a key deletes the key's event-time timer and registers one at the write's time plus
the TTL, and ``handleExpiredTimer`` clears the key's state once the watermark reaches it
(``TimerStateImpl.getExpiredTimers``: expiry <= the batch's eviction watermark, after the
batch's data). Expiry then follows the records' time, not the batches' wall clock: the run
needs no pacing and gives the same state whatever the machine's load
(``backends.spark.tws`` runs it, ``backends.spark.tws_model`` replays it).
"""

from __future__ import annotations

from backends.cleanup.strategy import Strategy

SPARK_EVENT_TIMER = Strategy(
    "spark_event_timer",
    "spark-tws only, EventTime specs: an event-time timer per key at its last write's time "
    "plus the TTL clears the key's state when the watermark passes it (expiry on the "
    "records' time: deterministic, no pacing)",
    engine="spark")
