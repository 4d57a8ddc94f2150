"""The controller's requests (docs/internals.md §3): LeaderAndIsr, UpdateMetadata, StopReplica.

Each carries the controller's epoch; one lower than the highest this broker has seen comes from a
deposed controller and is answered STALE_CONTROLLER_EPOCH with nothing applied. Each also names the
broker epoch it is for (the czxid of the broker's registration, as Kafka's KIP-380): one for an
earlier registration is answered STALE_BROKER_EPOCH (one that comes before this process has
registered waits for the registration first).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from chaoskit.broker.handlers.registry import handles
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.internal import (LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, LeaderAndIsrResponse,
                                        StopReplicaResponse, UpdateMetadataResponse)

log = logging.getLogger("chaoskit.broker.control")


REGISTRATION_WAIT_S = 10.0


async def _fenced(broker: Any, request: Any, what: str) -> int:
    """The error (logged) when the request comes from a controller older than one we have heard from,
    or was meant for an earlier registration of this broker; 0 when it is to be applied. One naming a
    broker epoch that comes before this process knows its own waits for the registration first: the
    controller may act on the new znode before the broker has read it back."""
    if request.broker_epoch != -1 and broker.zk.broker_epoch is None:
        await asyncio.to_thread(broker.zk.registered.wait, REGISTRATION_WAIT_S)
    if request.controller_epoch < broker.controller_epoch:
        log.warning("%s from controller %d at epoch %d refused: epoch %d has been seen", what,
                    request.controller_id, request.controller_epoch, broker.controller_epoch)
        return ErrorCode.STALE_CONTROLLER_EPOCH
    # as Kafka's (KIP-380): a request queued for this broker id before this process registered (its
    # predecessor, killed while the controller still counted it live) may describe a fraction of the
    # cluster (an UpdateMetadata of the partitions that changed): applied to a fresh cache, clients
    # would be told those are all the topic has
    mine = broker.zk.broker_epoch
    if request.broker_epoch != -1 and (mine is None or request.broker_epoch < mine):
        log.warning("%s from controller %d refused: it is for broker epoch %d, this broker's is %s", what,
                    request.controller_id, request.broker_epoch, mine)
        return ErrorCode.STALE_BROKER_EPOCH
    broker.controller_epoch = request.controller_epoch
    return ErrorCode.NONE


def _per_topic(errors: dict[tuple[str, int], int], topic_cls: Any, part_cls: Any) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), code in errors.items():
        by_topic.setdefault(topic, []).append(part_cls(partition_index=index, error_code=code))
    return [topic_cls(topic_name=t, partition_errors=parts) for t, parts in by_topic.items()]


@handles(LEADER_AND_ISR)
async def leader_and_isr(broker: Any, header: Any, request: Any) -> Any:
    if code := await _fenced(broker, request, "LeaderAndIsr"):
        return LeaderAndIsrResponse(error_code=code, topics=[])
    errors = await broker.replicas.leader_and_isr(request)
    return LeaderAndIsrResponse(error_code=ErrorCode.NONE, topics=_per_topic(
        errors, LeaderAndIsrResponse.LeaderAndIsrTopicError,
        LeaderAndIsrResponse.LeaderAndIsrTopicError.LeaderAndIsrPartitionError))


@handles(UPDATE_METADATA)
async def update_metadata(broker: Any, header: Any, request: Any) -> Any:
    if code := await _fenced(broker, request, "UpdateMetadata"):
        return UpdateMetadataResponse(error_code=code)
    deleted = {(t, p) for t in request.deleted_topics for p in broker.cache.topics.get(t, {})}
    deleted |= {(t.topic_name, p) for t in request.topics for p in t.removed_partitions}
    broker.cache.apply(request)
    if deleted:  # as Kafka: the groups this broker coordinates forget the offsets of deleted partitions
        broker.coordinator.on_partitions_deleted(deleted)
    return UpdateMetadataResponse(error_code=ErrorCode.NONE)


@handles(STOP_REPLICA)
async def stop_replica(broker: Any, header: Any, request: Any) -> Any:
    if code := await _fenced(broker, request, "StopReplica"):
        return StopReplicaResponse(error_code=code, topics=[])
    errors = broker.replicas.stop_replica(request)
    return StopReplicaResponse(error_code=ErrorCode.NONE, topics=_per_topic(
        errors, StopReplicaResponse.StopReplicaTopicError,
        StopReplicaResponse.StopReplicaTopicError.StopReplicaPartitionError))
