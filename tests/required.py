"""When a test that needs an outside component (Flink's jars, a headless browser) may skip, and
when it must fail instead: one rule for every such component, so that an oracle never goes
silent where it should run.

The rule: the extra that brings the component is installed (CI's ``pip install -e
'.[test,flink]'``), or the component's ``STATEBENCH_REQUIRE_*`` variable is set: the test
FAILS; neither: it skips with the install hint (a checkout without the extra still tests the
rest).
"""

from __future__ import annotations

import os
from importlib import metadata


def required(env: str, distribution: str, extra: str) -> str | None:
    """Why this session must run the tests that need ``distribution`` (the ``extra``'s package)
    or that ``env`` demands, or None when they may skip."""
    if os.environ.get(env):
        return f"${env} is set"
    try:
        version = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
    return f"the {extra} extra is installed ({distribution} {version})"
