"""KIP-320 in the consumer: after a leader change (or FENCED_LEADER_EPOCH / OFFSET_OUT_OF_RANGE)
the position is validated with OffsetsForLeaderEpoch for the epoch of the last consumed record.
If the new leader's log ends that epoch before our position, the log was truncated under us: the
records from the divergence offset on are gone and others took their offsets.
"""
from __future__ import annotations

from typing import NamedTuple

from kafka.protocol.consumer import OffsetForLeaderEpochRequest

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.wire_client import WireClient

EPOCH_VERSION = 4  # with current_leader_epoch (KIP-320)


class LogTruncationError(Exception):
    """The partition's log was truncated below this consumer's position (KIP-320's LogTruncationException).

    `divergence_offset` is where the consumer's history and the leader's log part; seek there to go on."""

    def __init__(self, topic: str, partition: int, fetch_offset: int, divergence_offset: int) -> None:
        self.topic, self.partition = topic, partition
        self.fetch_offset, self.divergence_offset = fetch_offset, divergence_offset
        super().__init__(f"{topic}-{partition}: the log was truncated at offset {divergence_offset} below the "
                         f"consumer's position {fetch_offset} (unclean leader election?); seek to "
                         f"{divergence_offset} to continue, or set auto_offset_reset to reset there automatically")


class EpochEnd(NamedTuple):
    error: int
    leader_epoch: int
    end_offset: int


def epoch_end(conn: WireClient, topic: str, partition: int, leader_epoch: int, current_leader_epoch: int) -> EpochEnd:
    """OffsetsForLeaderEpoch: the end of `leader_epoch` (or of the largest epoch below it) in the leader's log."""
    T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    request = OffsetForLeaderEpochRequest(replica_id=-1, topics=[T(topic=topic, partitions=[T.OffsetForLeaderPartition(
        partition=partition, current_leader_epoch=current_leader_epoch, leader_epoch=leader_epoch)])])
    p = conn.request(request, EPOCH_VERSION).topics[0].partitions[0]
    return EpochEnd(p.error_code, p.leader_epoch, p.end_offset)


def divergence(end: EpochEnd, position: int, last_epoch: int) -> int | None:
    """The divergence offset if the log no longer holds what the consumer read, else None.

    The log diverged when the leader's end of our last epoch lies below our position, or when
    it does not know our epoch at all (answers a smaller one) and ends it below our position."""
    if end.error != ErrorCode.NONE or end.end_offset < 0:
        return None
    if end.end_offset < position and end.leader_epoch <= last_epoch:
        return end.end_offset
    return None
