"""Partition: one replica of a topic partition on this broker, leader or follower.

As leader it assigns offsets, tracks each follower's log end offset and when it last caught up,
and advances the high watermark to the smallest log end offset in the ISR. As follower it appends
what the leader sends and takes the leader's high watermark (capped at its own log end). The ISR
itself changes only through ZooKeeper (replica_manager.py), so this class only says which replicas
should join or leave it.
"""
from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass

from chaoskit.broker.log.checkpoint import write_atomically
from chaoskit.broker.log.partition_log import LOG_START_CHECKPOINT, PartitionLog
from chaoskit.broker.producer_state import ProducerStateTable
from chaoskit.broker.waiting import Signal
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.extensions import UNKNOWN_COUNT, PartitionMode
from chaoskit.protocol.records import BatchHeader, header, iter_batches, split_batches

log = logging.getLogger("chaoskit.broker.partition")

NO_EPOCH = -1


def now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class FollowerState:
    """The leader's view of one follower (Kafka's Replica)."""
    log_end_offset: int = -1  # unknown until it fetches
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = -1

    def record_fetch(self, fetch_offset: int, leader_leo: int, at_ms: int) -> None:
        # caught up at the time of this fetch if it has everything; at the time of the previous
        # fetch if it has everything the leader had then (Kafka's updateFetchState)
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, at_ms)
        elif fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_ms = at_ms


class Partition:
    def __init__(self, topic: str, index: int, broker_id: int, log_: PartitionLog) -> None:
        self.topic, self.index, self.broker_id = topic, index, broker_id
        self.log = log_
        self.leader_id = -1
        self.leader_epoch = NO_EPOCH
        self.partition_epoch = -1
        self.controller_epoch = -1
        # from the controller's LeaderAndIsr, with the leader epoch: KIP-253's count, KIP-694's mode
        self.undeleted_partition_count = UNKNOWN_COUNT
        self.mode = PartitionMode.READ_WRITE
        self.replicas: list[int] = []
        self.isr: set[int] = set()
        self.followers: dict[int, FollowerState] = {}
        self.high_watermark = log_.log_start_offset
        self.leader_epoch_start_offset = 0
        self.producers = ProducerStateTable()
        self.changed = Signal()  # log end, high watermark or leadership moved
        self.isr_change_pending = False
        # the leader epoch at which ZooKeeper refused our ISR change for a newer epoch of ours: no
        # more changes until the controller's LeaderAndIsr brings that epoch
        self.isr_refused_at = -1
        self._rebuild_producer_state()

    def __repr__(self) -> str:
        return f"{self.topic}-{self.index}"

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    # -- leadership ---------------------------------------------------------------------------
    def apply_state(self, leader: int, leader_epoch: int, isr: list[int], replicas: list[int],
                    partition_epoch: int, controller_epoch: int) -> bool:
        """Take a LeaderAndIsr partition state; True when the leader or its epoch changed."""
        moved = leader != self.leader_id or leader_epoch != self.leader_epoch
        self.leader_id, self.leader_epoch = leader, leader_epoch
        self.isr, self.replicas = set(isr), list(replicas)
        self.partition_epoch, self.controller_epoch = partition_epoch, controller_epoch
        if self.is_leader:
            if moved:
                self.leader_epoch_start_offset = self.log_end_offset
                self.log.epochs.assign(leader_epoch, self.log_end_offset)
                at = now_ms()
                # followers in the ISR count as caught up now, so they get a full lag period
                self.followers = {r: FollowerState(last_caught_up_ms=at if r in self.isr else 0)
                                  for r in self.replicas if r != self.broker_id}
            else:
                for r in self.replicas:
                    if r != self.broker_id:
                        self.followers.setdefault(r, FollowerState())
            self.maybe_advance_high_watermark()
        else:
            self.followers = {}
        self.changed.fire()
        return moved

    def resign(self, new_leader: int, new_epoch: int, why: str) -> None:
        """Stop acting as leader (ZooKeeper shows a newer leader epoch, or StopReplica)."""
        if self.is_leader:
            log.warning("%s: no longer leading at epoch %d: %s", self, self.leader_epoch, why)
        self.leader_id, self.leader_epoch = new_leader, max(new_epoch, self.leader_epoch)
        self.followers = {}
        self.changed.fire()

    def check_leader_epoch(self, current_leader_epoch: int, fencing: bool) -> None:
        """KIP-320: a request's current_leader_epoch against ours; -1 (or fencing off) skips the check.

        As in Kafka only -1 means "no epoch": ListOffsets and OffsetsForLeaderEpoch compare any other
        value (a -2 is older than every epoch: FENCED_LEADER_EPOCH). Fetch reads every negative
        epoch as none, so its handler passes those as -1.
        """
        if not fencing or current_leader_epoch == NO_EPOCH:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH,
                             f"{self}: request epoch {current_leader_epoch} < ours {self.leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                             f"{self}: request epoch {current_leader_epoch} > ours {self.leader_epoch}")

    def require_leader(self) -> None:
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self}: broker {self.broker_id} is not the leader")

    def check_partition_count(self, count: int) -> None:
        """KIP-253: a client's undeleted_partition_count must be the one this leader learned with
        its leader epoch; UNKNOWN_COUNT (a stock client, or not known here) skips the check."""
        if count != UNKNOWN_COUNT and self.undeleted_partition_count not in (UNKNOWN_COUNT, count):
            raise KafkaError(ErrorCode.INVALID_PARTITION_METADATA,
                             f"{self}: undeleted_partition_count {count} is stale, the topic has "
                             f"{self.undeleted_partition_count} at leader epoch {self.leader_epoch}; refresh metadata")

    def check_writable(self, mode_aware: bool = True) -> None:
        """KIP-694: a partition marked for deletion (ReadOnly) or being removed (None) takes no records.
        A client that reads modes is told its metadata is stale (our code); any other client gets
        LEADER_NOT_AVAILABLE (KIP-694's answer to clients that cannot read modes), never a code it
        cannot know."""
        if self.mode != PartitionMode.READ_WRITE:
            code = ErrorCode.INVALID_PARTITION_METADATA if mode_aware else ErrorCode.LEADER_NOT_AVAILABLE
            raise KafkaError(code, f"{self} is {self.mode.label} (marked for deletion): it takes no more records; "
                             "produce to the topic's undeleted partitions")

    # -- appends ------------------------------------------------------------------------------
    def append_as_leader(self, records: bytes) -> tuple[int, int]:
        """Validate, de-duplicate and append a producer's batches; (first offset, last offset)."""
        self.require_leader()
        try:
            batches = split_batches(records)
        except ValueError as e:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{self}: {e}") from e
        if not batches:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{self}: no record batch in the request")
        first = last = -1
        for batch in batches:
            h = header(batch)
            duplicate = self.producers.check(h)
            if duplicate is not None:
                span = duplicate.first_offset, duplicate.last_offset
            else:
                span = self.log.append_as_leader([batch], self.leader_epoch)
                self.producers.update(h._replace(base_offset=span[0]))
            first = span[0] if first < 0 else first
            last = span[1]
        self.maybe_advance_high_watermark()
        self.changed.fire()
        return first, last

    def append_as_follower(self, records: bytes, leader_hw: int, leader_log_start: int) -> None:
        """Append a fetch response's batches and follow the leader's high watermark and log start."""
        batches = split_batches(records) if records else []
        if batches:
            self.log.append_as_follower(batches)
            for batch in batches:
                self.producers.update(header(batch))
        if leader_log_start > self.log_start_offset:
            self.log.delete_records_before(min(leader_log_start, self.log_end_offset))
        self.high_watermark = max(self.log_start_offset, min(leader_hw, self.log_end_offset))
        self.changed.fire()

    def truncate_to(self, offset: int) -> None:
        if offset < self.log_end_offset:
            log.warning("%s: truncating from %d to %d", self, self.log_end_offset, offset)
            self.log.truncate_to(offset)
            self._rebuild_producer_state()
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.changed.fire()

    def restart_at(self, offset: int) -> None:
        """Empty the log and start it at offset: a follower whose whole log is below the leader's start."""
        old = self.log
        old.close()
        shutil.rmtree(old.dir)
        old.dir.mkdir(parents=True)
        write_atomically(old.dir / LOG_START_CHECKPOINT, f"{offset}\n", old.fsync)
        self.log = PartitionLog(old.dir, old.segment_bytes, fsync=old.fsync)
        self.high_watermark = offset
        self._rebuild_producer_state()
        self.changed.fire()

    def apply_retention(self, now_ms: int, retention_ms: int) -> bool:
        """`retention.ms` on the leader (-1: keep everything); followers take the leader's log start
        from their fetches. True when records went."""
        if retention_ms < 0 or not self.is_leader:
            return False
        if not self.log.delete_segments_older_than(now_ms - retention_ms, self.high_watermark):
            return False
        self.changed.fire()
        return True

    def apply_compaction(self, now_ms: int, delete_retention_ms: int, min_lag_ms: int) -> bool:
        """Log compaction below this replica's high watermark (leader or follower). True when records went."""
        if not self.log.compact(now_ms, self.high_watermark, delete_retention_ms, min_lag_ms):
            return False
        self.changed.fire()
        return True

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords on the leader: -1 means the high watermark; the new log start."""
        self.require_leader()
        target = self.high_watermark if offset == -1 else offset
        if target < 0 or target > self.high_watermark:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"{self}: cannot delete before {offset}: the high watermark is {self.high_watermark}")
        self.log.delete_records_before(target)
        self.changed.fire()
        return self.log_start_offset

    # -- reads --------------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, up_to: int) -> bytes:
        """Whole batches from offset, none starting at or after up_to (the HW for consumers)."""
        if offset >= up_to:
            if offset > self.log_end_offset or offset < self.log_start_offset:
                raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                 f"{self}: offset {offset} outside [{self.log_start_offset}, {self.log_end_offset}]")
            return b""
        if offset < self.log_start_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"{self}: offset {offset} is before the log start {self.log_start_offset}")
        data = self.log.read(offset, max_bytes)
        end = 0
        for pos, batch in iter_batches(data, validate_each=False):
            if header(batch).base_offset >= up_to:
                break
            end = pos + len(batch)
        return data[:end]

    def batches(self, start: int = 0, chunk: int = 1 << 20) -> Iterator[tuple[BatchHeader, memoryview]]:
        """(header, batch) for every batch from the one holding `start` (or the log start) to the log end."""
        offset = max(start, self.log_start_offset)
        while offset < self.log_end_offset:
            data = self.log.read(offset, chunk)
            if not data:
                return
            for _pos, batch in iter_batches(data, validate_each=False):
                h = header(batch)
                yield h, batch
                offset = h.next_offset

    def batch_headers(self, start: int = 0) -> Iterator[BatchHeader]:
        return (h for h, _batch in self.batches(start))

    def _rebuild_producer_state(self) -> None:
        self.producers.clear()
        for h in self.batch_headers():
            self.producers.update(h)

    # -- followers and the high watermark (leader side) ----------------------------------------
    def record_follower_fetch(self, replica: int, fetch_offset: int) -> None:
        state = self.followers.setdefault(replica, FollowerState())
        state.record_fetch(fetch_offset, self.log_end_offset, now_ms())
        self.maybe_advance_high_watermark()

    def maybe_advance_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        ends = [self.log_end_offset] + [self.followers[r].log_end_offset if r in self.followers else -1
                                        for r in self.isr if r != self.broker_id]
        candidate = min(ends)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            self.changed.fire()
            return True
        return False

    def followers_to_add(self) -> list[int]:
        """Replicas out of the ISR that have caught up (ends at or past the HW and this epoch's start)."""
        return sorted(r for r, f in self.followers.items()
                      if r not in self.isr and r in self.replicas
                      and f.log_end_offset >= max(self.high_watermark, self.leader_epoch_start_offset))

    def followers_to_remove(self, lag_ms: int) -> list[int]:
        """ISR followers that have not caught up within lag_ms."""
        at = now_ms()
        return sorted(r for r in self.isr if r != self.broker_id
                      and at - self.followers.get(r, FollowerState()).last_caught_up_ms > lag_ms)

    def apply_isr(self, isr: list[int], partition_epoch: int) -> None:
        """An ISR change this leader wrote to ZooKeeper."""
        self.isr, self.partition_epoch = set(isr), partition_epoch
        self.maybe_advance_high_watermark()
        self.changed.fire()
