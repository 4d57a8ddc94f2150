"""MetadataCache from UpdateMetadata requests: stale leader epochs ignored, deletions applied,
controller_id the lowest live broker, and KIP-320's question: may this replica join the ISR?"""
from __future__ import annotations

from chaoskit.broker.metadata_cache import MetadataCache
from chaoskit.protocol.internal import UpdateMetadataRequest

T = UpdateMetadataRequest.UpdateMetadataTopicState
S = T.UpdateMetadataPartitionState
B = UpdateMetadataRequest.UpdateMetadataBroker


def request(states, live=(1, 2, 3), deleted=()):
    return UpdateMetadataRequest(controller_id=9, controller_epoch=1, deleted_topics=list(deleted),
                                 live_brokers=[B(broker_id=b, host="127.0.0.1", port=9000 + b) for b in live],
                                 topics=[T(topic_name=t, partition_states=[
                                     S(partition_index=p, controller_epoch=1, leader=l, leader_epoch=e, isr=[l],
                                       partition_epoch=0, replicas=[1, 2, 3], offline_replicas=off)])
                                     for t, p, l, e, off in states])


def test_cache_follows_update_metadata():
    cache = MetadataCache()
    cache.apply(request([("a", 0, 2, 5, []), ("b", 0, 1, 0, [])], live=(3, 2)))
    assert cache.controller_id() == 2 and cache.live_broker_ids() == [2, 3]
    assert cache.leader_endpoint("a", 0).port == 9002
    cache.apply(request([("a", 0, 3, 4, [])], live=(2, 3)))  # an older epoch loses
    assert cache.partition("a", 0).leader == 2
    assert not cache.has_leaders("b")  # leader 1 is not live
    cache.apply(request([], deleted=["b"]))
    assert cache.partition_count("b") is None and cache.partition_count("a") == 1


def test_offline_or_dead_replicas_may_not_join_the_isr():
    cache = MetadataCache()
    cache.apply(request([("a", 0, 1, 1, [3])], live=(1, 2, 3)))
    assert cache.may_join_isr(2, "a", 0)
    assert not cache.may_join_isr(3, "a", 0)  # offline
    cache.apply(request([("a", 0, 1, 1, [])], live=(1, 3)))
    assert not cache.may_join_isr(2, "a", 0)  # not live
    assert cache.may_join_isr(3, "a", 0)


def test_the_proposals_fields_follow_update_metadata():
    from chaoskit.protocol.extensions import PartitionMode
    cache = MetadataCache()
    assert not cache.allow_internal_partition_increase  # guarded until the controller says otherwise
    req = request([("a", p, 1, 0, []) for p in range(4)])
    req.allow_internal_partition_increase = True
    req.topics = [T(topic_name="a", initial_partition_count=2, undeleted_partition_count=3,
                    partition_states=[t.partition_states[0] for t in req.topics])]
    req.topics[0].partition_states[3].mode = int(PartitionMode.READ_ONLY)
    cache.apply(req)
    assert cache.allow_internal_partition_increase
    counts = cache.topic_counts("a")
    assert (counts.initial, counts.undeleted) == (2, 3) and cache.topic_counts("nope").undeleted == -1
    assert cache.marked_for_deletion("a") == [3] and cache.partition("a", 3).mode == PartitionMode.READ_ONLY
    gone = request([])
    gone.topics = [T(topic_name="a", partition_states=[], removed_partitions=[3], initial_partition_count=2,
                     undeleted_partition_count=3)]
    cache.apply(gone)
    assert sorted(cache.topics["a"]) == [0, 1, 2] and cache.marked_for_deletion("a") == []
    assert not cache.allow_internal_partition_increase
