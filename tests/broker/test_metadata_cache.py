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
