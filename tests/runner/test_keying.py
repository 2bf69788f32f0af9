"""The vectorised keyBy equals the scalar key-group functions the backends use."""

from __future__ import annotations

import numpy as np
import pytest

from backends.keygroups import KeyGroupRange, key_group_for, operator_index_for_key_group
from workloads.run.keying import key_groups, operator_indices, tasks_for_keys


def _keys() -> np.ndarray:
    rng = np.random.default_rng(20261122)
    edges = np.array([0, 1, -1, 2**31 - 1, -(2**31), 2**32, 2**63 - 1, -(2**63)], dtype=np.int64)
    return np.concatenate([
        edges,
        np.arange(-5_000, 20_000, dtype=np.int64),
        rng.integers(-(2**63), 2**63 - 1, size=30_000, dtype=np.int64, endpoint=True),
    ])


@pytest.mark.parametrize("max_parallelism", [1, 7, 128, 4096, 32768])
def test_key_groups_equal_scalar_reference(max_parallelism: int) -> None:
    keys = _keys()
    expected = np.array([key_group_for(int(k), max_parallelism) for k in keys])
    got = key_groups(keys, max_parallelism)
    assert got.dtype == np.int32
    mismatch = np.flatnonzero(got != expected)
    assert mismatch.size == 0, f"first mismatch at key {keys[mismatch[0]]}"


@pytest.mark.parametrize("parallelism", [1, 2, 3, 5, 128])
def test_operator_indices_equal_scalar_reference(parallelism: int) -> None:
    groups = np.arange(128, dtype=np.int32)
    expected = [operator_index_for_key_group(int(g), parallelism, 128) for g in groups]
    assert operator_indices(groups, parallelism, 128).tolist() == expected


def test_each_key_lands_in_its_tasks_key_group_range() -> None:
    keys = _keys()[:10_000]
    tasks = tasks_for_keys(keys, 3, 128)
    groups = key_groups(keys, 128)
    for task in range(3):
        kg_range = KeyGroupRange.of_operator(task, 3, 128)
        assert all(int(g) in kg_range for g in groups[tasks == task])
    assert set(tasks.tolist()) == {0, 1, 2}


def test_bad_parallelism_is_rejected() -> None:
    with pytest.raises(ValueError, match="parallelism"):
        operator_indices(np.zeros(1, dtype=np.int32), 0, 128)
    with pytest.raises(ValueError, match="parallelism"):
        operator_indices(np.zeros(1, dtype=np.int32), 129, 128)
