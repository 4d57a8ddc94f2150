"""The proposals' partition APIs: DeletePartitions (KIP-694, also KIP-253's deletion) and
PartitionLeaderEpochsForPartitions (KIP-253), on private keys (docs/protocol.md).

DeletePartitions lowers a topic's `undeleted_partition_count` in its ZooKeeper znode (with the
requested delay) and answers once this broker's metadata shows the partitions above it ReadOnly;
the controller does the rest (docs/internals.md §5). PartitionLeaderEpochsForPartitions reads the
epoch maps from the partition state znodes, the source KIP-253 names.
"""
from __future__ import annotations

import asyncio
from typing import Any

from chaoskit.broker.handlers import handles
from chaoskit.broker.handlers.admin import _each_topic, _settle
from chaoskit.broker.topic_admin import zk_call
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.internal import (DELETE_PARTITIONS, PARTITION_LEADER_EPOCHS, DeletePartitionsResponse,
                                        PartitionLeaderEpochsForPartitionsResponse)
from chaoskit.protocol.topics import COORDINATOR_TOPICS

_Result = DeletePartitionsResponse.DeletePartitionsTopicResult
_Part = _Result.DeletePartitionsPartitionResult
_Epochs = PartitionLeaderEpochsForPartitionsResponse
_ETopic = _Epochs.PartitionLeaderEpochsForPartitionsResponseTopic
_EPart = _ETopic.PartitionLeaderEpochsForPartitionsResponsePartition
_Entry = _EPart.PartitionLeaderEpoch


async def _shrink(broker: Any, t: Any, delay_ms: int, validate_only: bool) -> tuple[int, int]:
    """Write the smaller count; (old undeleted count, new) for the response."""
    if t.name in COORDINATOR_TOPICS:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{t.name} is an internal coordinator topic: its partition "
                         "count is part of how groups are found and cannot be reduced")
    for _attempt in range(3):  # a concurrent rewrite of the topic znode: re-read and retry
        current = await zk_call(broker.zk.assignment, t.name)
        if current is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {t.name!r} does not exist")
        placed, version = current
        unfinished = sorted(set(placed.partitions) - set(broker.cache.topics.get(t.name, {})))
        if unfinished:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {t.name!r} is still being expanded (partitions {unfinished} are not in the "
                             "metadata yet); retry once they are")
        floor = placed.initial_partition_count or 1
        if not floor <= t.count < placed.undeleted:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {t.name!r} has {placed.undeleted} undeleted partitions (initial "
                             f"{placed.initial_partition_count}); the new count {t.count} must be smaller and at "
                             f"least {floor}")
        shrunk = placed.evolve(undeleted_partition_count=t.count, delete_partitions_delay_ms=delay_ms,
                               initial_partition_count=placed.initial_partition_count or len(placed.partitions))
        if validate_only or await zk_call(broker.zk.set_assignment, t.name, shrunk, version):
            return placed.undeleted, t.count
    raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"the topic znode of {t.name!r} kept changing; retry")


@handles(DELETE_PARTITIONS)
async def delete_partitions(broker: Any, header: Any, request: Any) -> Any:
    if not broker.config.delete_topic_partition_enable:
        return DeletePartitionsResponse(throttle_time_ms=0, error_code=ErrorCode.TOPIC_DELETION_DISABLED,
                                        error_message="partition deletion is disabled on this broker "
                                                      "(delete.topic.partition.enable=false)", results=[])
    delay = request.delete_partitions_delay_ms
    if delay < -1:
        return DeletePartitionsResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                                        error_message=f"delete_partitions_delay_ms {delay}: use -1 (once empty) "
                                                      "or a delay >= 0", results=[])
    ranges: dict[str, range] = {}

    async def shrink(t: Any) -> Any:
        old, new = await _shrink(broker, t, delay, request.validate_only)
        ranges[t.name] = range(new, old)
        return _Result(name=t.name, error_code=ErrorCode.NONE, partitions=[])

    results = await _each_topic(request.topics, _Result, shrink)
    cache = broker.cache

    def marked(name: str) -> bool:
        parts = cache.topics.get(name, {})
        return all(p not in parts or parts[p].mode != PartitionMode.READ_WRITE for p in ranges[name])

    if not request.validate_only:
        await _settle(broker, results, marked, request.timeout_ms)
    for name, r in results.items():
        r.partitions = [_Part(partition_index=p, mode=int(_mode(cache, name, p)), error_code=r.error_code)
                        for p in ranges.get(name, ())]
    return DeletePartitionsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, results=list(results.values()))


def _mode(cache: Any, topic: str, partition: int) -> PartitionMode:
    info = cache.partition(topic, partition)
    return PartitionMode.NONE if info is None else info.mode  # gone already counts as None


def _entries(epochs: dict[int, int]) -> list[Any]:
    return [_Entry(partition=p, leader_epoch=e) for p, e in sorted(epochs.items())]


async def _epochs_of(broker: Any, topic: str, partition: int) -> Any:
    try:
        state = await zk_call(broker.zk.partition_state, topic, partition)
    except KafkaError as e:
        return _EPart(partition_index=partition, error_code=e.code, leader_epoch_after_creation=[],
                      leader_epoch_before_deletion=[])
    if state is None:
        return _EPart(partition_index=partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      leader_epoch_after_creation=[], leader_epoch_before_deletion=[])
    return _EPart(partition_index=partition, error_code=ErrorCode.NONE,
                  leader_epoch_after_creation=_entries(state.after_creation),
                  leader_epoch_before_deletion=_entries(state.before_deletion))


@handles(PARTITION_LEADER_EPOCHS)
async def partition_leader_epochs(broker: Any, header: Any, request: Any) -> Any:
    topics = []
    for t in request.topics:
        parts = await asyncio.gather(*(_epochs_of(broker, t.name, p) for p in t.partitions))
        topics.append(_ETopic(name=t.name, partitions=list(parts)))
    return _Epochs(throttle_time_ms=0, topics=topics)
