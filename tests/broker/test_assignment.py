"""Replica placement: leaders round-robin, followers spread, reproducible from the topic name."""
from __future__ import annotations

from collections import Counter

import pytest

from chaoskit.broker.assignment import PlacementError, leader_start, place_replicas


def test_leaders_and_replicas_spread_evenly():
    placed = place_replicas("orders", [1, 2, 3], partitions=6, replication_factor=2)
    assert sorted(placed) == list(range(6))
    assert all(len(set(r)) == 2 for r in placed.values())
    assert Counter(r[0] for r in placed.values()) == {1: 2, 2: 2, 3: 2}
    assert Counter(b for r in placed.values() for b in r) == {1: 4, 2: 4, 3: 4}
    assert placed == place_replicas("orders", [3, 1, 2], 6, 2)  # same name, same placement


def test_appended_partitions_continue_the_round_robin():
    placed = place_replicas("t", [1, 2, 3], 3, 3)
    start = leader_start([1, 2, 3], placed[0])
    more = place_replicas("t", [1, 2, 3], 3, 3, first_partition=3, start=start)
    assert sorted(more) == [3, 4, 5]
    assert [more[p][0] for p in (3, 4, 5)] == [placed[p][0] for p in (0, 1, 2)]


def test_too_few_brokers_is_an_error():
    with pytest.raises(PlacementError, match="larger than the 2 live broker"):
        place_replicas("t", [1, 2], 1, 3)
