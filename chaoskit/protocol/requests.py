"""One-partition requests over a WireClient: produce, fetch, list offsets, epoch ends.

For the places that speak to one broker about one partition directly, without a client library:
fault probes (a leader's high watermark, a zombie's fenced fetch), the ordered client's KIP-320
checks and the broker's own tests. Each returns the partition's part of the response (error_code
and the rest); `epoch_end` returns it typed, as an `EpochEnd`.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from chaoskit.protocol.wire_client import WireClient

LATEST, EARLIEST = -1, -2  # ListOffsets timestamps
# Kafka's debugging replica id: a ListOffsets from it sees the log end, not the high watermark, and
# (with no leader epoch named) any replica answers it, a follower too
DEBUGGING_REPLICA_ID = -2


def produce(client: WireClient, topic: str, partition: int, batch: bytes, acks: int = -1,
            timeout_ms: int = 5000, version: int = 8) -> Any:
    """One batch to one partition; the partition's response (error_code, base_offset, ...)."""
    from kafka.protocol.producer import ProduceRequest
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=timeout_ms, topic_data=[
        data(name=topic, partition_data=[data.PartitionProduceData(index=partition, records=batch)])])
    response = client.request(request, version)
    return None if response is None else response.responses[0].partition_responses[0]


def fetch(client: WireClient, topic: str, partition: int, offset: int, replica_id: int = -1,
          current_leader_epoch: int = -1, max_wait_ms: int = 0, min_bytes: int = 1, version: int = 11,
          timeout: float | None = None, last_fetched_epoch: int = -1) -> Any:
    """A one-partition Fetch; the partition's response (error_code, high_watermark, records, and from
    v12 diverging_epoch, answered to a last_fetched_epoch that does not match the leader's log)."""
    from kafka.protocol.consumer import FetchRequest
    part = FetchRequest.FetchTopic.FetchPartition(partition=partition, current_leader_epoch=current_leader_epoch,
                                                  fetch_offset=offset, last_fetched_epoch=last_fetched_epoch,
                                                  log_start_offset=-1, partition_max_bytes=1 << 20)
    request = FetchRequest(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 22,
                           isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                           topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])])
    return client.request(request, version, timeout=timeout).responses[0].partitions[0]


def list_offset(client: WireClient, topic: str, partition: int, timestamp: int, current_leader_epoch: int = -1,
                replica_id: int = -1, version: int = 5) -> Any:
    from kafka.protocol.consumer import ListOffsetsRequest
    t = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest(replica_id=replica_id, isolation_level=0, topics=[t(name=topic, partitions=[
        t.ListOffsetsPartition(partition_index=partition, current_leader_epoch=current_leader_epoch,
                               timestamp=timestamp)])])
    return client.request(request, version).topics[0].partitions[0]


def nemesis_client(address: tuple[str, int]) -> WireClient:
    """A short-lived connection for a fault's one request (bounded, named as the nemesis)."""
    return WireClient(*address, timeout=5.0, client_id="chaoskit-nemesis")


def latest_offset(address: tuple[str, int], topic: str, partition: int, replica_id: int = -1) -> Any:
    """One ListOffsets(latest) on a fresh connection to `address`: the high watermark (replica_id -1)
    or the replica's log end (DEBUGGING_REPLICA_ID); the partition's answer (error_code, offset)."""
    with nemesis_client(address) as client:
        return list_offset(client, topic, partition, LATEST, replica_id=replica_id)


class EpochEnd(NamedTuple):
    """A partition's OffsetsForLeaderEpoch answer."""

    error: int
    leader_epoch: int
    end_offset: int


def epoch_end(client: WireClient, topic: str, partition: int, leader_epoch: int, current_leader_epoch: int = -1,
              version: int = 3) -> EpochEnd:
    """OffsetsForLeaderEpoch: the end of `leader_epoch` (or of the largest epoch below it) in the leader's log."""
    from kafka.protocol.consumer import OffsetForLeaderEpochRequest
    t = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    request = OffsetForLeaderEpochRequest(replica_id=-1, topics=[t(topic=topic, partitions=[t.OffsetForLeaderPartition(
        partition=partition, current_leader_epoch=current_leader_epoch, leader_epoch=leader_epoch)])])
    p = client.request(request, version).topics[0].partitions[0]
    return EpochEnd(p.error_code, p.leader_epoch, p.end_offset)
