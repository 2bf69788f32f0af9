"""statebench's benchmark suite.

asv discovers the `bench_*.py` modules of this package (asv.conf.json: benchmark_dir "bench");
pytest-benchmark runs `bench/pytest/` (no __init__.py there, so asv does not import pytest code).
Both use the same seeded fixtures (fixtures.py) and the same operation loops (state_ops.py).
"""
