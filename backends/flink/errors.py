"""Errors of the Flink lanes, each naming what went wrong and what to do."""

from __future__ import annotations


class FlinkUnavailableError(RuntimeError):
    """The Flink lanes cannot start: the extra or a JDK 17 is missing, or compiling failed."""


class FlinkWorkerError(RuntimeError):
    """The worker JVM died, timed out or broke the protocol; the message ends with its stderr."""


class FlinkCommandError(FlinkWorkerError):
    """A command of a batch failed inside Flink; commands before it were applied."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


class NotApplicableError(ValueError):
    """A statebench setting that Flink does not have (timer cleanup, event-time TTL)."""
