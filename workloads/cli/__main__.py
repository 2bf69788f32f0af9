"""``python -m workloads.cli ...``: the ``statebench`` command without its console script (what
spark-submit and the standalone-cluster test launch)."""

import sys

from workloads.cli import main

sys.exit(main())
