"""ListOffsets, OffsetForLeaderEpoch and DeleteRecords, all answered by the partition leader.

ListOffsets: -2 earliest (log start), -1 latest (the high watermark for consumers, the log end for
replicas and Kafka's debugging replica id -2, which the controller uses to see a partition empty),
-3 the record with the largest timestamp, else the first record at or after the timestamp (best
effort: a scan of batch headers). As in Kafka, the debugging id may ask any replica, a follower
too, when it names no leader epoch (it then sees that replica's own log end: how the staged faults
see what a zombie or a cut follower holds); with an epoch (the controller's queries) only the
leader answers. Each answer carries the leader epoch of the offset it returns (KIP-320; -1 without
it, as before it).

ListOffsets and OffsetForLeaderEpoch check current_leader_epoch as Kafka does, with KIP-320 on
(`leader.epoch.fencing.enable`): older than ours FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH,
-1 unchecked. `epoch_end` is the one answer to "where did this epoch end here", shared with
Fetch's divergence check (KIP-320/595).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.admin import DeleteRecordsResponse
from kafka.protocol.consumer import ListOffsetsResponse, OffsetForLeaderEpochResponse

from chaoskit.broker.handlers.registry import handles
from chaoskit.broker.partition import NO_EPOCH, Partition
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.records import decode_records
from chaoskit.protocol.requests import DEBUGGING_REPLICA_ID

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def epoch_at(p: Partition, offset: int) -> int:
    """The leader epoch under which `offset` was written (-1 when unknown)."""
    epoch = -1
    for entry in p.log.epochs.entries:
        if entry.start_offset <= offset:
            epoch = entry.epoch
    return epoch


def _max_timestamp(p: Partition, up_to: int) -> tuple[int, int] | None:
    best = None
    for h in p.batch_headers():
        if h.base_offset >= up_to:
            break
        if best is None or h.max_timestamp > best.max_timestamp:
            best = h
    if best is None:
        return None
    for r in decode_records(p.log.read(best.base_offset, best.size)):
        if r.timestamp == best.max_timestamp and r.offset >= best.base_offset:
            return r.offset, r.timestamp
    return best.last_offset, best.max_timestamp


def _lookup(p: Partition, timestamp: int, replica: bool) -> tuple[int, int]:
    """(offset, timestamp) for a ListOffsets query; (-1, -1) when no record qualifies."""
    up_to = p.log_end_offset if replica else p.high_watermark
    if timestamp == EARLIEST:
        return p.log_start_offset, -1
    if timestamp == LATEST:
        return up_to, -1
    found = _max_timestamp(p, up_to) if timestamp == MAX_TIMESTAMP else p.log.offset_for_timestamp(timestamp)
    if found is None or found[0] >= up_to:
        return -1, -1
    return found


def epoch_end(broker: Any, p: Partition, leader_epoch: int, replica_id: int) -> tuple[int, int]:
    """(epoch, end offset) for `leader_epoch` in p's log: OffsetsForLeaderEpoch's answer, which
    Fetch's divergence check uses too. With the `epoch-end-offsets` mutation a consumer
    (replica_id < 0) is answered without epochs: the log end, whatever the epoch."""
    if replica_id < 0 and "epoch-end-offsets" in broker.config.mutations:
        return leader_epoch, p.log_end_offset
    return p.log.epochs.end_offset_for(leader_epoch)


def _leader(broker: Any, topic: str, index: int, current_leader_epoch: int, any_replica: bool = False) -> Partition:
    p = broker.replicas.partition(topic, index)
    if p is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} is not here")
    p.check_leader_epoch(current_leader_epoch, broker.config.leader_epoch_fencing_enable)
    if not any_replica:
        p.require_leader()
    return p


def _per_partition(request_topics: Any, name_of: Callable[[Any], str], answer: Callable[[str, Any], Any],
                   failed: Callable[[Any, int], Any]) -> list[tuple[str, list[Any]]]:
    """Run answer(topic, partition) for each requested partition; a KafkaError becomes failed(partition, code)."""
    out = []
    for t in request_topics:
        parts = []
        for rp in t.partitions:
            try:
                parts.append(answer(name_of(t), rp))
            except KafkaError as e:
                parts.append(failed(rp, e.code))
        out.append((name_of(t), parts))
    return out


@handles(2)
async def list_offsets(broker: Any, header: Any, request: Any) -> Any:
    Part = ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    replica = request.replica_id != -1  # a replica or the debugging id -2 sees the log end
    debugging = request.replica_id == DEBUGGING_REPLICA_ID

    def answer(topic: str, rp: Any) -> Any:
        p = _leader(broker, topic, rp.partition_index, rp.current_leader_epoch,
                    any_replica=debugging and rp.current_leader_epoch == NO_EPOCH)
        offset, ts = _lookup(p, rp.timestamp, replica)
        epoch = epoch_at(p, offset) if offset >= 0 and broker.config.leader_epoch_fencing_enable else -1
        return Part(partition_index=rp.partition_index, error_code=ErrorCode.NONE, timestamp=ts, offset=offset,
                    leader_epoch=epoch)

    topics = _per_partition(request.topics, lambda t: t.name, answer,
                            lambda rp, code: Part(partition_index=rp.partition_index, error_code=code,
                                                  timestamp=-1, offset=-1, leader_epoch=-1))
    return ListOffsetsResponse(throttle_time_ms=0, topics=[
        ListOffsetsResponse.ListOffsetsTopicResponse(name=n, partitions=parts) for n, parts in topics])


@handles(23)
async def offset_for_leader_epoch(broker: Any, header: Any, request: Any) -> Any:
    Part = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult.EpochEndOffset
    replica_id = request.replica_id  # v3+; below, the schema's default -2 (librdkafka's v2: a consumer)

    def answer(topic: str, rp: Any) -> Any:
        p = _leader(broker, topic, rp.partition, rp.current_leader_epoch)
        epoch, end = epoch_end(broker, p, rp.leader_epoch, replica_id)
        return Part(error_code=ErrorCode.NONE, partition=rp.partition, leader_epoch=epoch, end_offset=end)

    topics = _per_partition(request.topics, lambda t: t.topic, answer,
                            lambda rp, code: Part(error_code=code, partition=rp.partition, leader_epoch=-1,
                                                  end_offset=-1))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=[
        OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=n, partitions=parts) for n, parts in topics])


@handles(21)
async def delete_records(broker: Any, header: Any, request: Any) -> Any:
    Part = DeleteRecordsResponse.DeleteRecordsTopicResult.DeleteRecordsPartitionResult

    def answer(topic: str, rp: Any) -> Any:
        low = broker.replicas.leader(topic, rp.partition_index).delete_records_before(rp.offset)
        return Part(partition_index=rp.partition_index, low_watermark=low, error_code=ErrorCode.NONE)

    topics = _per_partition(request.topics, lambda t: t.name, answer,
                            lambda rp, code: Part(partition_index=rp.partition_index, low_watermark=-1,
                                                  error_code=code))
    return DeleteRecordsResponse(throttle_time_ms=0, topics=[
        DeleteRecordsResponse.DeleteRecordsTopicResult(name=n, partitions=parts) for n, parts in topics])
