"""Property tests of KIP-253 linear hashing (chaoskit.client.linear_hash).

Derandomized hypothesis: the same examples every run, so a failure replays.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import DefaultPartitioner

from chaoskit.client.linear_hash import (
    deletion_blockers,
    deletion_target,
    expansion_blocker,
    level,
    linear_partition,
    modulo_partition,
    owner_among,
    partition_for_hash,
    positive_hash,
    split_parent,
    split_pointer,
)

PROPERTY = settings(derandomize=True, max_examples=150, deadline=None)

# 400 fixed keys, the same every run
KEYS = [f"key-{i}-{random.Random(i).getrandbits(32)}".encode() for i in range(400)]
hashes = st.integers(min_value=0, max_value=0x7FFFFFFF)


@st.composite
def counts(draw, max_initial: int = 8, max_growth: int = 40) -> tuple[int, int]:
    """(initial, undeleted) with undeleted >= initial."""
    n = draw(st.integers(1, max_initial))
    return n, n + draw(st.integers(0, max_growth))


@st.composite
def count_pairs(draw) -> tuple[int, int, int]:
    """(initial, smaller, larger): an expansion from `smaller` to `larger`, or a shrink back."""
    n, small = draw(counts())
    return n, small, small + draw(st.integers(0, 40))


def test_known_murmur2_values_from_kafka():
    # Kafka's own test vectors for Utils.murmur2 (signed Java ints), masked positive
    cases = {b"21": -973932308, b"foobar": -790332482, b"abc": 479470107,
             b"a-little-bit-long-string": -985981536}
    assert {k: positive_hash(k) for k in cases} == {k: v & 0x7FFFFFFF for k, v in cases.items()}


def test_worked_example_of_the_docstring():
    assert (level(3, 5), split_pointer(3, 5)) == (0, 2)
    assert partition_for_hash(10, 3, 5) == 4 and partition_for_hash(11, 3, 5) == 2
    assert partition_for_hash(11, 3, 6) == 5 and split_parent(5, 3) == 2
    assert [split_parent(p, 3) for p in (6, 7)] == [0, 1]
    assert [expansion_blocker(p, 3, 3) for p in (3, 4, 5, 6)] == [0, 1, 2, 0]
    assert [deletion_blockers(p, 3, 5, 7) for p in range(5)] == [[6], [], [5], [], []]


@PROPERTY
@given(counts(), hashes)
def test_partition_always_in_range(nu, h):
    n, u = nu
    assert 0 <= partition_for_hash(h, n, u) < u


@PROPERTY
@given(counts())
def test_level_and_split_pointer_follow_the_definition(nu):
    n, u = nu
    big_l = level(n, u)
    assert n * 2**big_l <= u < n * 2 ** (big_l + 1)
    assert split_pointer(n, u) == u - n * 2**big_l


@PROPERTY
@given(counts(), st.lists(hashes, min_size=50, max_size=50))
def test_expansion_by_one_moves_only_the_split_partition_to_the_new_one(nu, hs):
    n, u = nu
    split = split_pointer(n, u)
    assert split_parent(u, n) == split  # the new partition's parent is the bucket being split
    for h in hs + list(range(2 * u)):
        before, after = partition_for_hash(h, n, u), partition_for_hash(h, n, u + 1)
        assert after == before or (before == split and after == u), (h, before, after)


@PROPERTY
@given(count_pairs())
def test_keys_never_move_between_existing_partitions_on_expansion(nss):
    n, small, large = nss
    for key in KEYS:
        before, after = linear_partition(key, n, small), linear_partition(key, n, large)
        if after < small:
            assert after == before, f"{key!r} moved between existing partitions {before} -> {after}"
        else:  # it moved to a new partition, from the one partition that new partition blocks on
            assert before == expansion_blocker(after, n, small)


@PROPERTY
@given(count_pairs())
def test_deletion_is_the_exact_inverse_of_expansion(nss):
    n, small, large = nss
    # hashes 0..large-1 land on every partition, so this covers each partition's keys
    for h in list(range(large)) + [positive_hash(k) for k in KEYS]:
        grown = partition_for_hash(h, n, large)
        shrunk = partition_for_hash(h, n, small)
        assert shrunk == owner_among(grown, n, small)
        if grown >= small:
            assert shrunk == deletion_target(grown, n, small)
    # and one step at a time: removing partition u hands its keys back to its parent only
    for u in range(large, small, -1):
        for h in range(2 * large):
            before, after = partition_for_hash(h, n, u), partition_for_hash(h, n, u - 1)
            assert after == before or (before == u - 1 and after == split_parent(u - 1, n))


@PROPERTY
@given(count_pairs())
def test_expansion_blocker_agrees_with_where_keys_move(nss):
    n, small, large = nss
    sources: dict[int, set[int]] = {}
    for h in list(range(2 * large)) + [positive_hash(k) for k in KEYS]:
        after = partition_for_hash(h, n, large)
        if after >= small:
            sources.setdefault(after, set()).add(partition_for_hash(h, n, small))
    assert set(sources) == set(range(small, large))  # every new partition got some keys
    for new, olds in sources.items():
        assert olds == {expansion_blocker(new, n, small)}, f"partition {new} took keys from {olds}"


@PROPERTY
@given(count_pairs())
def test_deletion_blockers_agree_with_where_keys_move(nss):
    n, small, large = nss
    moved_into: dict[int, set[int]] = {p: set() for p in range(small)}
    for h in list(range(2 * large)) + [positive_hash(k) for k in KEYS]:
        grown = partition_for_hash(h, n, large)
        if grown >= small:
            moved_into[partition_for_hash(h, n, small)].add(grown)
    for p in range(small):
        assert deletion_blockers(p, n, small, large) == sorted(moved_into[p])
        # at most one direct child per level: the O(log n) of KIP-253
        direct = [q for q in deletion_blockers(p, n, small, large) if split_parent(q, n) == p]
        assert len(direct) <= level(n, large) + 1


@PROPERTY
@given(counts())
def test_a_shrink_within_one_level_blocks_each_partition_on_at_most_one(nu):
    n, u = nu
    top = n * 2 ** (level(n, u) + 1)
    assert all(len(deletion_blockers(p, n, u, top)) <= 1 for p in range(u))


def test_bad_counts_are_refused_clearly():
    with pytest.raises(ValueError, match="must be >= initial_partition_count"):
        partition_for_hash(1, 4, 3)
    with pytest.raises(ValueError, match="initial_partition_count must be >= 1"):
        level(0, 3)
    with pytest.raises(ValueError, match="keyed records only"):
        linear_partition(None, 1, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="existed before the expansion"):
        expansion_blocker(1, 2, 4)
    with pytest.raises(ValueError, match="not marked for deletion"):
        deletion_target(1, 2, 4)
    with pytest.raises(ValueError, match="not an undeleted partition"):
        deletion_blockers(5, 2, 4, 8)
    with pytest.raises(ValueError, match="non-negative"):
        partition_for_hash(-1, 1, 1)


class _OneTopicCluster:
    """The three ClusterMetadata calls DefaultPartitioner makes, for one topic."""

    def __init__(self, count: int):
        self.count = count

    def topics(self):
        return {"t"}

    def partitions_for_topic(self, topic):
        return set(range(self.count))

    def available_partitions_for_topic(self, topic):
        return set(range(self.count))


@pytest.mark.parametrize("count", [1, 2, 3, 7, 12, 64])
def test_modulo_partition_matches_kafka_python_default_partitioner(count):
    stock = DefaultPartitioner()
    cluster = _OneTopicCluster(count)
    for key in KEYS:
        assert modulo_partition(key, count) == stock.partition("t", key, key, None, None, cluster)


def test_modulo_partitioning_moves_keys_between_existing_partitions_where_linear_does_not():
    # the reason KIP-253 exists: growing 4 -> 5 reshuffles old partitions under modulo
    moved_modulo = sum(modulo_partition(k, 5) not in (modulo_partition(k, 4), 4) for k in KEYS)
    moved_linear = sum(linear_partition(k, 4, 5) not in (linear_partition(k, 4, 4), 4) for k in KEYS)
    assert moved_modulo > len(KEYS) // 2 and moved_linear == 0
