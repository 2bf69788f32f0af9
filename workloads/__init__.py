"""Workloads: TOML workload specs and the deterministic, vectorised event generator.

Kept free of heavy imports (no pyspark) so that Spark executors and unit tests can import
``workloads.spec`` / ``workloads.generator`` cheaply.
"""
