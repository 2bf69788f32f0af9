"""Errors from the environment a run needs, as opposed to errors in its input.

A Spark master that cannot be reached, a checkpoint URI whose filesystem does not exist or does
not answer, a folder that cannot be written: the user can fix these, but not by editing the
spec. They are raised as :class:`InfrastructureError` with one message that names the cause and
what to check; the CLI prints that line (the full trace only with ``--verbose``).
"""

from __future__ import annotations


class InfrastructureError(RuntimeError):
    """Something outside the input is unusable; the message says what and what to check."""
