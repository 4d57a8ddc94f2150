"""Building LeaderAndIsr, UpdateMetadata and StopReplica requests (docs/internals.md §3) from state,
and the ListOffsets a partition deletion uses to see that a partition is empty.

One fresh request object per broker: the channel's sender threads stamp headers on them. The
KIP fields ride as tagged fields (docs/protocol.md): a topic's undeleted count in LeaderAndIsr, so a
leader learns it with the leader epoch; both counts, partition modes, removed partitions and the
guardrail flag in UpdateMetadata.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping

from kafka.protocol.consumer import ListOffsetsRequest

from chaoskit.protocol.extensions import UNKNOWN_COUNT
from chaoskit.protocol.internal import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from chaoskit.protocol.requests import DEBUGGING_REPLICA_ID
from chaoskit.protocol.zk_layout import BrokerRegistration, PartitionState, TopicAssignment

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
_LO_TOPIC = ListOffsetsRequest.ListOffsetsTopic

LIST_OFFSETS_VERSION = 5


def _by_topic(items: Iterable[tuple[str, object]]) -> dict[str, list[object]]:
    grouped: dict[str, list[object]] = defaultdict(list)
    for topic, item in items:
        grouped[topic].append(item)
    return dict(sorted(grouped.items()))


def _count(value: int | None) -> int:
    return UNKNOWN_COUNT if value is None else value


def leader_and_isr(controller_id: int, epoch: int, states: Mapping[TopicPartition, PartitionState],
                   replicas: Mapping[TopicPartition, list[int]], brokers: Mapping[int, BrokerRegistration],
                   new: Collection[TopicPartition] = (),
                   undeleted: Mapping[str, int] | None = None) -> LeaderAndIsrRequest:
    topics = _by_topic(
        (t, _LI_PART(partition_index=p, controller_epoch=s.controller_epoch, leader=s.leader,
                     leader_epoch=s.leader_epoch, isr=list(s.isr), partition_epoch=s.partition_epoch,
                     replicas=list(replicas[(t, p)]), is_new=(t, p) in new, mode=int(s.mode)))
        for (t, p), s in sorted(states.items()))
    leaders = sorted({s.leader for s in states.values() if s.leader in brokers})
    counts = undeleted or {}
    return _LI(controller_id=controller_id, controller_epoch=epoch,
               topics=[_LI_TOPIC(topic_name=t, partition_states=ps, undeleted_partition_count=_count(counts.get(t)))
                       for t, ps in topics.items()],
               live_leaders=[_LI.LeaderAndIsrLiveLeader(broker_id=b, host=brokers[b].internal[0],
                                                        port=brokers[b].internal[1]) for b in leaders])


def update_metadata(controller_id: int, epoch: int, states: Mapping[TopicPartition, PartitionState],
                    replicas: Mapping[TopicPartition, list[int]], brokers: Mapping[int, BrokerRegistration],
                    deleted_topics: Collection[str] = (), assignments: Mapping[str, TopicAssignment] | None = None,
                    removed: Mapping[str, Collection[int]] | None = None,
                    allow_internal_partition_increase: bool = False) -> UpdateMetadataRequest:
    """`assignments` give the topics' KIP-253 counts; `removed` the partitions a deletion took away."""
    topics = _by_topic(
        (t, _UM_PART(partition_index=p, controller_epoch=s.controller_epoch, leader=s.leader,
                     leader_epoch=s.leader_epoch, isr=list(s.isr), partition_epoch=s.partition_epoch,
                     replicas=list(replicas[(t, p)]),
                     offline_replicas=[r for r in replicas[(t, p)] if r not in brokers], mode=int(s.mode)))
        for (t, p), s in sorted(states.items()))
    removed = removed or {}
    for t in removed:
        topics.setdefault(t, [])
    known = assignments or {}

    def topic(t: str, parts: list[object]) -> object:
        a = known.get(t)
        return _UM_TOPIC(topic_name=t, partition_states=parts, removed_partitions=sorted(removed.get(t, ())),
                         initial_partition_count=_count(a.initial_partition_count if a else None),
                         undeleted_partition_count=_count(a.undeleted_partition_count if a else None))
    return _UM(controller_id=controller_id, controller_epoch=epoch,
               allow_internal_partition_increase=allow_internal_partition_increase,
               topics=[topic(t, ps) for t, ps in sorted(topics.items())],
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


def list_offsets(tp: TopicPartition, leader_epoch: int, timestamp: int) -> ListOffsetsRequest:
    """One partition's earliest (-2) or log-end (-1, as a debugging replica) offset, at its leader epoch."""
    return ListOffsetsRequest(replica_id=DEBUGGING_REPLICA_ID, isolation_level=0, topics=[_LO_TOPIC(
        name=tp[0], partitions=[_LO_TOPIC.ListOffsetsPartition(partition_index=tp[1], current_leader_epoch=leader_epoch,
                                                               timestamp=timestamp)])])
