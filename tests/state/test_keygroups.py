"""Key groups as Flink assigns them; stable byte forms of keys."""

from __future__ import annotations

import pytest

from backends.keygroups import (
    KeyGroupRange,
    deserialize_key,
    key_group_for,
    murmur_hash,
    operator_index_for_key_group,
    serialize_key,
)

# (key, MathUtils.murmurHash(Long.hashCode(key)), key group at max parallelism 128), computed by
# running Flink's MathUtils.murmurHash in Java 17 (int overflow semantics) for Long keys.
JAVA_REFERENCE = [
    (0, 593689054, 94), (1, 68075478, 86), (2, 1085422463, 127), (42, 1134849565, 29),
    (-1, 593689054, 94), (123456789012, 723049339, 123), (2**63 - 1, 1718298732, 108),
    (-(2**63), 1718298732, 108),
]


@pytest.mark.parametrize(("key", "murmur", "group"), JAVA_REFERENCE)
def test_int_keys_land_in_flinks_key_group(key: int, murmur: int, group: int) -> None:
    from backends.keygroups import hash_code

    assert murmur_hash(hash_code(key)) == murmur
    assert key_group_for(key, 128) == group


def test_key_groups_are_stable_and_spread() -> None:
    groups = [key_group_for(k, 128) for k in range(10_000)]
    assert groups == [key_group_for(k, 128) for k in range(10_000)]
    counts = [groups.count(g) for g in range(128)]
    assert min(counts) > 40 and max(counts) < 120  # roughly uniform (mean 78)
    assert key_group_for("user-1", 128) == key_group_for("user-1", 128)


def test_operator_ranges_partition_the_key_groups() -> None:
    for parallelism in (1, 2, 3, 7, 128):
        ranges = [KeyGroupRange.of_operator(i, parallelism, 128) for i in range(parallelism)]
        covered = [kg for r in ranges for kg in r]
        assert covered == list(range(128))
        for i, r in enumerate(ranges):
            assert all(operator_index_for_key_group(kg, parallelism, 128) == i for kg in r)


@pytest.mark.parametrize("key", [0, -5, 2**63 - 1, "", "héllo", b"", b"\x00\xff"])
def test_key_bytes_round_trip(key: object) -> None:
    data = serialize_key(key) + b"tail"
    decoded, end = deserialize_key(data)
    assert decoded == key and type(decoded) is type(key) and data[end:] == b"tail"
