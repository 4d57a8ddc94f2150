"""KIP-320 in the consumer: after a leader change (or FENCED_LEADER_EPOCH / OFFSET_OUT_OF_RANGE)
the position is validated with OffsetsForLeaderEpoch for the epoch of the last consumed record.
If the new leader's log ends that epoch before our position, the log was truncated under us: the
records from the divergence offset on are gone and others took their offsets.

The public types are KIP-320's: `OffsetAndMetadata` (an offset with the leader epoch of the
record before it), `OffsetAndTimestamp` (offsets_for_times' answer, with the record's leader
epoch), `OffsetOutOfRangeError` (a position out of range, no reset policy) and its subclass
`LogTruncationError` (the truncated partitions, each with its divergence offset), and the two
retriable metadata errors a leader answers a request whose leader epoch is not its own:
`FencedLeaderEpochError` (ours is older) and `UnknownLeaderEpochError` (ours is newer). The
consumer retries those itself, refreshing its metadata; one reaches the caller only when it
persists past the retries.
The request itself is chaoskit.protocol.requests' `epoch_end`; the client asks it at EPOCH_VERSION.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kafka import TopicPartition

from chaoskit.protocol.errors import ErrorCode, error_name
from chaoskit.protocol.requests import EpochEnd
from chaoskit.protocol.wire_client import WireError

__all__ = ["EPOCH_VERSION", "EpochEnd", "FencedLeaderEpochError", "InvalidMetadataError", "LogTruncationError",
           "OffsetAndMetadata", "OffsetAndTimestamp", "OffsetOutOfRangeError", "UnknownLeaderEpochError",
           "divergence", "leader_epoch_error"]

EPOCH_VERSION = 4  # with current_leader_epoch (KIP-320)


class OffsetAndMetadata(NamedTuple):
    """An offset with the leader epoch of the record before it (None: unknown, nothing to validate)."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class OffsetAndTimestamp(NamedTuple):
    """offsets_for_times' answer for one partition: the first offset whose timestamp is at or after
    the one asked, that record's timestamp and its leader epoch (KIP-320: seek with it, and the
    position is validated before the next fetch)."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


class InvalidMetadataError(WireError):
    """A broker refused a request because the client's metadata is out of date (Kafka's retriable
    InvalidMetadataException): refresh metadata and ask again."""

    retriable = True

    def __init__(self, code: int, what: str) -> None:
        self.code = code
        super().__init__(f"{what}: {error_name(code)}")


class FencedLeaderEpochError(InvalidMetadataError):
    """The leader's epoch is newer than the one the request carried (KIP-320's FENCED_LEADER_EPOCH)."""


class UnknownLeaderEpochError(InvalidMetadataError):
    """The request carried an epoch newer than the leader's own: the leader has not yet heard of its
    election or of a bump (KIP-320's UNKNOWN_LEADER_EPOCH)."""


def leader_epoch_error(code: int, what: str) -> InvalidMetadataError | None:
    """The typed error for a leader-epoch refusal, None for any other code."""
    kind = {ErrorCode.FENCED_LEADER_EPOCH: FencedLeaderEpochError,
            ErrorCode.UNKNOWN_LEADER_EPOCH: UnknownLeaderEpochError}.get(code)
    return kind(code, what) if kind else None


class OffsetOutOfRangeError(Exception):
    """Positions outside their partitions' logs while auto_offset_reset is "none" (Kafka's
    OffsetOutOfRangeException): `offset_out_of_range_partitions` maps each to its fetch offset."""

    def __init__(self, message: str, fetch_offsets: Mapping[TopicPartition, int]) -> None:
        self.offset_out_of_range_partitions = dict(fetch_offsets)
        super().__init__(message)


class LogTruncationError(OffsetOutOfRangeError):
    """The logs of these partitions were truncated below this consumer's positions (KIP-320's
    LogTruncationException). `truncation_offsets` maps each to the first offset known to diverge
    from what the consumer read, with the leader epoch the leader ended there: seek to it to go on
    (`consumer.seek(tp, offset_and_metadata)` validates it again first)."""

    def __init__(self, fetch_offsets: Mapping[TopicPartition, int],
                 truncation_offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.truncation_offsets = dict(truncation_offsets)
        where = "; ".join(f"{tp.topic}-{tp.partition} at offset {d.offset} below position {fetch_offsets[tp]}"
                          for tp, d in sorted(self.truncation_offsets.items()))
        super().__init__(f"log truncated (unclean leader election?): {where}; seek to the divergence offsets to "
                         f"continue, or set auto_offset_reset to reset there automatically", fetch_offsets)


def divergence(end: EpochEnd, position: int, last_epoch: int) -> int | None:
    """The divergence offset if the log no longer holds what the consumer read, else None.

    The log diverged when the leader's end of our last epoch lies below our position, or when
    it does not know our epoch at all (answers a smaller one) and ends it below our position."""
    if end.error != ErrorCode.NONE or end.end_offset < 0:
        return None
    if end.end_offset < position and end.leader_epoch <= last_epoch:
        return end.end_offset
    return None
