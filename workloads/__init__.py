"""The workload itself: TOML specs, key and size distributions, the seeded event generator, the
operation codes and the values written to state.

The rest of the harness lives in subpackages, in the order a run goes through them:
``workloads.run`` (plan, source, keying, operator, hot loop, checkpoints, metrics, engines),
``workloads.results`` (run folders and their summaries), ``workloads.report`` (the HTML report)
and ``workloads.cli`` (the ``statebench`` command). Kept free of heavy imports (no pyspark) so
that Spark executors and unit tests can import ``workloads.spec`` / ``workloads.generator``
cheaply.
"""
