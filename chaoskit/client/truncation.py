"""KIP-320 in the consumer: after a leader change (or FENCED_LEADER_EPOCH / OFFSET_OUT_OF_RANGE)
the position is validated with OffsetsForLeaderEpoch for the epoch of the last consumed record.
If the new leader's log ends that epoch before our position, the log was truncated under us: the
records from the divergence offset on are gone and others took their offsets.

The request itself is chaoskit.protocol.requests' `epoch_end`; the client asks it at EPOCH_VERSION.
"""
from __future__ import annotations

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.requests import EpochEnd

__all__ = ["EPOCH_VERSION", "EpochEnd", "LogTruncationError", "divergence"]

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


def divergence(end: EpochEnd, position: int, last_epoch: int) -> int | None:
    """The divergence offset if the log no longer holds what the consumer read, else None.

    The log diverged when the leader's end of our last epoch lies below our position, or when
    it does not know our epoch at all (answers a smaller one) and ends it below our position."""
    if end.error != ErrorCode.NONE or end.end_offset < 0:
        return None
    if end.end_offset < position and end.leader_epoch <= last_epoch:
        return end.end_offset
    return None
