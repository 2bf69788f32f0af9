"""A throwaway cleanup strategy: read-time cleanup with nothing in the background, under a name
of its own. Its StateTtlConfig sets exactly the flags ``none`` sets, so a Flink lane that read
only the flags would run it as ``none``; it has no Flink configuration, so every Flink lane must
refuse it instead. Registering it (``backends.strategies.register``) is all it takes."""

from __future__ import annotations

from backends.cleanup.strategy import Strategy

LAZY = Strategy(
    "throwaway_lazy",
    "read-time cleanup only, under a name of its own (a test's throwaway strategy)",
    title="throwaway lazy")
