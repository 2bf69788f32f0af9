"""Which protocol the asv suite's cached runs follow: quick (the default) or full.

asv gives a benchmark no sign of ``--quick``: it only runs each benchmark once, and every
``setup_cache`` (where the scenario runs and the per-op suite happen) runs whole either way. So
the size of those runs is chosen here, by ``$STATEBENCH_ASV_PROTOCOL``: ``quick`` (unset) keeps
a fresh clone's first ``asv run --quick`` within minutes; ``full`` measures what the docs
report. Each benchmark class puts the protocol's name in its ``version``, so asv never draws
one protocol's numbers into the other's history. The tracked names stay the same under both.
"""

from __future__ import annotations

import os

#: The one switch of the asv suite: ``STATEBENCH_ASV_PROTOCOL=full asv run ...``.
ASV_PROTOCOL_ENV = "STATEBENCH_ASV_PROTOCOL"
QUICK = "quick"
FULL = "full"
NAMES = (QUICK, FULL)


def asv_protocol() -> str:
    """The protocol named by $STATEBENCH_ASV_PROTOCOL: quick unless it names full. A name it
    does not know is refused (ValueError, one line with the names it takes) rather than read
    as quick: a typo must not record quick numbers as a full run."""
    name = os.environ.get(ASV_PROTOCOL_ENV, QUICK).strip().lower() or QUICK
    if name not in NAMES:
        raise ValueError(f"${ASV_PROTOCOL_ENV}='{name}' is not an asv protocol; expected one "
                         f"of {list(NAMES)}")
    return name
