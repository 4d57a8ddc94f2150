"""Building LeaderAndIsr, UpdateMetadata and StopReplica requests (docs/internals.md §3) from state.

One fresh request object per broker: the channel's sender threads stamp headers on them.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping

from chaoskit.controller.zk_layout import BrokerRegistration, PartitionState
from chaoskit.protocol.internal import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest

TopicPartition = tuple[str, int]

_LI = LeaderAndIsrRequest
_LI_TOPIC = _LI.LeaderAndIsrTopicState
_LI_PART = _LI_TOPIC.LeaderAndIsrPartitionState
_UM = UpdateMetadataRequest
_UM_TOPIC = _UM.UpdateMetadataTopicState
_UM_PART = _UM_TOPIC.UpdateMetadataPartitionState
_SR = StopReplicaRequest
_SR_TOPIC = _SR.StopReplicaTopicState
_SR_PART = _SR_TOPIC.StopReplicaPartitionState


def _by_topic(items: Iterable[tuple[str, object]]) -> dict[str, list[object]]:
    grouped: dict[str, list[object]] = defaultdict(list)
    for topic, item in items:
        grouped[topic].append(item)
    return dict(sorted(grouped.items()))


def leader_and_isr(controller_id: int, epoch: int, states: Mapping[TopicPartition, PartitionState],
                   replicas: Mapping[TopicPartition, list[int]], brokers: Mapping[int, BrokerRegistration],
                   new: Collection[TopicPartition] = ()) -> LeaderAndIsrRequest:
    topics = _by_topic(
        (t, _LI_PART(partition_index=p, controller_epoch=s.controller_epoch, leader=s.leader,
                     leader_epoch=s.leader_epoch, isr=list(s.isr), partition_epoch=s.partition_epoch,
                     replicas=list(replicas[(t, p)]), is_new=(t, p) in new))
        for (t, p), s in sorted(states.items()))
    leaders = sorted({s.leader for s in states.values() if s.leader in brokers})
    return _LI(controller_id=controller_id, controller_epoch=epoch,
               topics=[_LI_TOPIC(topic_name=t, partition_states=ps) for t, ps in topics.items()],
               live_leaders=[_LI.LeaderAndIsrLiveLeader(broker_id=b, host=brokers[b].internal[0],
                                                        port=brokers[b].internal[1]) for b in leaders])


def update_metadata(controller_id: int, epoch: int, states: Mapping[TopicPartition, PartitionState],
                    replicas: Mapping[TopicPartition, list[int]], brokers: Mapping[int, BrokerRegistration],
                    deleted_topics: Collection[str] = ()) -> UpdateMetadataRequest:
    topics = _by_topic(
        (t, _UM_PART(partition_index=p, controller_epoch=s.controller_epoch, leader=s.leader,
                     leader_epoch=s.leader_epoch, isr=list(s.isr), partition_epoch=s.partition_epoch,
                     replicas=list(replicas[(t, p)]),
                     offline_replicas=[r for r in replicas[(t, p)] if r not in brokers]))
        for (t, p), s in sorted(states.items()))
    return _UM(controller_id=controller_id, controller_epoch=epoch,
               topics=[_UM_TOPIC(topic_name=t, partition_states=ps) for t, ps in topics.items()],
               live_brokers=[_UM.UpdateMetadataBroker(broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
                             for _, b in sorted(brokers.items())],
               deleted_topics=sorted(deleted_topics))


def stop_replica(controller_id: int, epoch: int, partitions: Mapping[TopicPartition, int],
                 delete: bool) -> StopReplicaRequest:
    """`partitions` maps each partition to the leader epoch the stop applies at."""
    topics = _by_topic((t, _SR_PART(partition_index=p, leader_epoch=e, delete=delete))
                       for (t, p), e in sorted(partitions.items()))
    return _SR(controller_id=controller_id, controller_epoch=epoch,
               topics=[_SR_TOPIC(topic_name=t, partitions=ps) for t, ps in topics.items()])
