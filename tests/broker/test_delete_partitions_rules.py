"""DeletePartitions' per-partition rules (broker/handlers/partitions.py `refusals`): a list must be
the tail of the undeleted partitions, at or above the initial count, of partitions that exist; a
topic with one refused partition is left alone, the others saying why."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from chaoskit.broker.handlers.partitions import _lower_count, refusals
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.zk_layout import TopicAssignment

# 8 partitions, created with 4, 7 already marked for deletion (undeleted count 7)
PLACED = TopicAssignment(partitions={p: [1, 2, 3] for p in range(8)}, initial_partition_count=4,
                         undeleted_partition_count=7)


def codes(wanted: set[int]) -> dict[int, int]:
    return {p: code for p, (code, _m) in refusals("t", PLACED, wanted).items()}


def test_a_tail_is_accepted_and_marked_ones_may_be_named_again():
    assert codes({5, 6}) == {} and codes({6}) == {} and codes({4, 5, 6, 7}) == {} and codes({7}) == {}


def test_a_hole_is_refused_and_the_rest_left_alone():
    got = refusals("t", PLACED, {4, 6})
    assert got[4][0] == ErrorCode.INVALID_PARTITIONS and "[5] above it are kept" in got[4][1]
    assert got[6][0] == ErrorCode.INVALID_PARTITIONS and "left unchanged" in got[6][1] and "4:" in got[6][1]


def test_unknown_and_initial_partitions_are_refused():
    got = refusals("t", PLACED, {3, 4, 5, 6, 9})
    assert got[9][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and "no partition 9" in got[9][1]
    assert got[3][0] == ErrorCode.INVALID_PARTITIONS and "initial partition count 4" in got[3][1]
    assert {p: got[p][0] for p in (4, 5, 6)} == dict.fromkeys((4, 5, 6), ErrorCode.INVALID_PARTITIONS)
    assert codes({-1}) == {-1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_a_topic_without_counts_has_a_floor_of_one():
    plain = TopicAssignment(partitions={p: [1] for p in range(3)})
    assert refusals("t", plain, {1, 2}) == {}
    assert refusals("t", plain, {0, 1, 2})[0][0] == ErrorCode.INVALID_PARTITIONS


class OneTopicZk:
    """The topic znode of a broker's ZooKeeper, versioned as set_assignment's compare-and-set wants."""

    def __init__(self, placed: TopicAssignment):
        self.placed, self.version = placed, 0

    def assignment(self, name):
        return self.placed, self.version

    def set_assignment(self, name, placed, version):
        self.placed, self.version = placed, self.version + 1
        return True


def shrink_twice(ordered_delivery: bool) -> tuple[TopicAssignment, dict]:
    """8 partitions with no KIP-253 counts yet, shrunk to 6 and then asked down to 4: the topic
    after both, and the second shrink's refusals."""
    zk = OneTopicZk(TopicAssignment(partitions={p: [1] for p in range(8)}))
    broker = SimpleNamespace(zk=zk, cache=SimpleNamespace(topics={"t": dict.fromkeys(range(8))}),
                             config=SimpleNamespace(ordered_delivery_enable=ordered_delivery))
    assert asyncio.run(_lower_count(broker, "t", {6, 7}, 0)) == {}
    second = asyncio.run(_lower_count(broker, "t", {4, 5}, 0))
    return zk.placed, second


def test_without_kip253_a_first_shrink_sets_no_floor_for_the_next():
    placed, second = shrink_twice(ordered_delivery=False)  # KIP-694 alone: no initial count
    assert second == {} and (placed.initial_partition_count, placed.undeleted_partition_count) == (None, 4)


def test_with_kip253_a_first_shrink_keeps_what_the_topic_had_as_its_floor():
    placed, second = shrink_twice(ordered_delivery=True)  # the controller had not set the count yet
    assert placed.initial_partition_count == 8 and "initial partition count 8" in second[4][1]
