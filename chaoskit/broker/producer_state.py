"""Idempotent producers, per partition: the last batches' sequence numbers of each producer id.

A retried batch (same producer, epoch and sequence range as one of the last five) is a duplicate and
gets the original offsets back instead of a second copy; a gap in the sequence is
OUT_OF_ORDER_SEQUENCE_NUMBER; an older producer epoch is INVALID_PRODUCER_EPOCH. Leaders and
followers both update the table from every batch they append, so a new leader de-duplicates too;
after a truncation the table is rebuilt from the log.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.records import BatchHeader

RECENT_BATCHES = 5  # what Kafka keeps: max.in.flight.requests.per.connection for idempotence
_SEQ_MOD = 2**31


@dataclass(frozen=True)
class BatchSpan:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque[BatchSpan] = field(default_factory=lambda: deque(maxlen=RECENT_BATCHES))

    @property
    def last_seq(self) -> int | None:
        return self.batches[-1].last_seq if self.batches else None


def last_sequence(h: BatchHeader) -> int:
    return (h.base_sequence + h.last_offset_delta) % _SEQ_MOD


class ProducerStateTable:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, h: BatchHeader) -> BatchSpan | None:
        """For a batch about to be appended by a leader: the original span when it is a duplicate,
        None when it may be appended; KafkaError when it must be refused."""
        if h.producer_id < 0 or h.base_sequence < 0:
            return None  # not idempotent
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None  # unknown producer: any first sequence is accepted (KIP-360)
        if h.producer_epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"producer {h.producer_id} epoch {h.producer_epoch} is older than {entry.epoch}")
        if h.producer_epoch > entry.epoch:
            if h.base_sequence != 0:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"producer {h.producer_id} new epoch {h.producer_epoch} must start at "
                                 f"sequence 0, got {h.base_sequence}")
            return None
        last = last_sequence(h)
        for span in entry.batches:
            if span.first_seq == h.base_sequence and span.last_seq == last:
                return span
        expected = None if entry.last_seq is None else (entry.last_seq + 1) % _SEQ_MOD
        if expected is not None and h.base_sequence != expected:
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {h.producer_id} sent sequence {h.base_sequence}, expected {expected}")
        return None

    def update(self, h: BatchHeader) -> None:
        """Record an appended batch (its header carries the offsets it was written at)."""
        if h.producer_id < 0 or h.base_sequence < 0 or h.is_control:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None or h.producer_epoch > entry.epoch:
            entry = self.producers[h.producer_id] = ProducerEntry(h.producer_epoch)
        elif h.producer_epoch < entry.epoch:
            return
        entry.batches.append(BatchSpan(h.base_sequence, last_sequence(h), h.base_offset, h.last_offset))

    def clear(self) -> None:
        self.producers.clear()
