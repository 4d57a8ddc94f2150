"""OrderedConsumer: KIP-253's consumer with KIP-320 truncation detection.

    consumer = OrderedConsumer("127.0.0.1:9092", group_id="g")
    consumer.subscribe(["orders"], listener=MyRebalanceListener(), key_listener=MyKeyListener())
    while True:
        for record in consumer.poll(timeout_ms=500):
            ...

What it adds to a plain group consumer:

* the KIP-253 assignor (undeleted and marked partitions balanced separately), `undeleted_partition_count`
  in every Fetch, rejoining on INVALID_PARTITION_METADATA or when the topic's partitions change;
* gates (chaoskit/client/gates.py): a partition made by an expansion starts only after the
  group consumed its parent up to the split, and a partition that takes over keys from partitions
  marked for deletion holds back newer records until those are drained; ConsumerGroupPosition
  carries the positions between members on the heartbeat cadence, with KIP-253's condition for
  when a member reports (and then calls `on_partition_key_maybe_revoked`);
* KIP-320: the leader epoch of the last consumed record per partition, validation with
  OffsetsForLeaderEpoch after a leader change, FENCED_LEADER_EPOCH or OFFSET_OUT_OF_RANGE,
  `LogTruncationError` (auto_offset_reset="none": every truncated partition with its divergence
  offset) or a reset to the divergence offset, commits with the leader epoch and validation of a
  committed position after a restart, `seek` with an epoch, and ListOffsets fenced with the
  current leader epoch (its answer's epoch goes with the reset position).

A topic whose config `enable.ordered.delivery` is false (client/metadata.py reads it) gets none of
the KIP-253 steps: no gates, no count in Fetch, no position exchange for it, as a stock consumer.

The group heartbeats while `poll` runs (call `poll` at least every few seconds); only the Fetch
requests to different leaders go out in parallel, from a small thread pool.
Every action is an event (chaoskit/client/events.py) on `consumer.events`.
"""
from __future__ import annotations

import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, NamedTuple

from kafka import ConsumerRebalanceListener, TopicPartition

from chaoskit.client import assignor
from chaoskit.client.events import EventHooks, history_key, history_value
from chaoskit.client.gates import DeletionGate, ExpansionGate, keys_leaving
from chaoskit.client.group import GroupError, GroupMember
from chaoskit.client.linear_hash import deletion_blockers, expansion_blocker
from chaoskit.client.metadata import ClusterView, MetadataError
from chaoskit.client.routing import ordered
from chaoskit.client.tombstones import moved_tombstone
from chaoskit.client.truncation import (EPOCH_VERSION, LogTruncationError, OffsetAndMetadata, OffsetAndTimestamp,
                                        OffsetOutOfRangeError, divergence, leader_epoch_error)
from chaoskit.protocol.errors import ErrorCode, error_name
from chaoskit.protocol.extensions import UNKNOWN_COUNT, FetchRequest, PartitionMode
from chaoskit.protocol.mutations import CLIENT, checked
from chaoskit.protocol.records import decode_records, header, iter_batches
from chaoskit.protocol.requests import EARLIEST, LATEST, epoch_end, list_offset
from chaoskit.protocol.wire_client import WireError

log = logging.getLogger(__name__)

FETCH_VERSION = 12  # flexible: carries undeleted_partition_count
RESET_POLICIES = ("earliest", "latest", "none")
_EPOCH_REFUSED = (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH)
LIST_OFFSETS_RETRY_S = 3.0  # a reset asked of a leader at another epoch: refreshed and asked again this long
_LEADER_MOVED = {ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                 ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.KAFKA_STORAGE_ERROR}


class PartitionKeyRebalanceListener:
    """KIP-253's key callbacks: flush state of keys that may move away / load state of keys that arrive."""

    def on_partition_key_maybe_revoked(self, partitions: list[TopicPartition]) -> None:
        pass

    def on_partition_key_assigned(self, partitions: list[TopicPartition]) -> None:
        pass


class NoOffsetError(Exception):
    """A partition has no committed offset and auto_offset_reset is "none"."""


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    leader_epoch: int
    timestamp: int


@dataclass
class _Partition:
    position: int
    last_epoch: int | None = None      # KIP-320: epoch of the last consumed record
    fetch_epoch: int = -1              # the leader epoch our metadata had when we last looked
    validate: bool = False
    fresh: bool = False                # started without a commit, or at the log start (KIP-253 8.4)
    started: bool = True               # the expansion gate is open
    expansion: ExpansionGate | None = None
    deletion: DeletionGate | None = None
    hw: int = -1
    max_epoch: int = -1                # largest epoch delivered
    reported_position: int | None = None
    reported_epoch: int = -1
    committed: int | None = None
    buffer: list[ConsumerRecord] = field(default_factory=list)  # fetched, not delivered yet, from the position on
    skipped: set[int] = field(default_factory=set)  # buffered offsets read past, not delivered (§9 tombstones)


class OrderedConsumer:
    def __init__(self, bootstrap_servers: str | Iterable[str], group_id: str | None = None,
                 client_id: str = "chaoskit-ordered", auto_offset_reset: str = "earliest",
                 enable_auto_commit: bool = True, auto_commit_interval_ms: int = 1_000,
                 session_timeout_ms: int = 10_000, heartbeat_interval_ms: int = 1_000,
                 rebalance_timeout_ms: int = 30_000, metadata_max_age_s: float = 2.0, fetch_max_wait_ms: int = 100,
                 max_partition_fetch_bytes: int = 1 << 20, request_timeout_ms: int = 10_000,
                 max_poll_records: int = 500, truncation_policy: str | None = None,
                 partition_assignor: assignor.Assignor | None = None, mutations: Iterable[str] = ()) -> None:
        if auto_offset_reset not in RESET_POLICIES:
            raise ValueError(f"auto_offset_reset must be one of {', '.join(RESET_POLICIES)}, got {auto_offset_reset!r}")
        if heartbeat_interval_ms * 3 > session_timeout_ms:
            raise ValueError(f"heartbeat_interval_ms ({heartbeat_interval_ms}) must be at most a third of "
                             f"session_timeout_ms ({session_timeout_ms})")
        if truncation_policy not in (None, "reset", "raise"):
            raise ValueError(f"truncation_policy must be 'reset', 'raise' or None (follow auto_offset_reset), "
                             f"got {truncation_policy!r}")
        # KIP-320: a reset policy resets to the divergence point; without one the application is told
        self.truncation_reset = truncation_policy == "reset" if truncation_policy else auto_offset_reset != "none"
        if max_poll_records < 1:
            raise ValueError(f"max_poll_records must be >= 1, got {max_poll_records}")
        self.group_id, self.reset, self.max_poll_records = group_id, auto_offset_reset, max_poll_records
        self.auto_commit = enable_auto_commit and group_id is not None
        self.auto_commit_s, self._next_commit = auto_commit_interval_ms / 1000, 0.0
        self.heartbeat_s, self.metadata_max_age_s = heartbeat_interval_ms / 1000, metadata_max_age_s
        self.fetch_max_wait_ms, self.max_partition_fetch_bytes = fetch_max_wait_ms, max_partition_fetch_bytes
        self.view = ClusterView(bootstrap_servers, client_id, timeout_s=request_timeout_ms / 1000 + 5)
        self.events = EventHooks()
        # elements of the proposals turned off, for `chaoskit mutate` only (chaoskit.protocol.mutations)
        self.mutations = checked(mutations, CLIENT)
        self.partition_assignor = partition_assignor  # KIP-253 6: the user's, applied to each list apart
        self.member = GroupMember(self.view, self.events, group_id, session_timeout_ms, rebalance_timeout_ms,
                                  assignor.protocol_name(partition_assignor)) if group_id is not None else None
        self.topics: list[str] = []
        self.listener: ConsumerRebalanceListener | None = None
        self.key_listener: PartitionKeyRebalanceListener | None = None
        self.parts: dict[tuple[str, int], _Partition] = {}
        self.group_positions: dict[tuple[str, int], int] = {}
        self._asked: set[tuple[str, int]] = set()   # own partitions another member waits on
        self._reported_to = 0  # the member's `finds` when positions were last reported (a coordinator found anew has none)
        self._need_rejoin = False
        self._joined_shape: dict[str, tuple[Any, ...]] = {}
        self._group_topics: set[str] = set()  # as leader: every member's topics (Kafka's group subscription)
        # partitions seen marked for deletion, per topic: one removed before our gate asked for its
        # thresholds was still a blocker whose keys came here, and is announced once
        self._seen_marked: dict[str, set[int]] = {}
        self._next_heartbeat = 0.0
        self._closed = False
        self.refusals: dict[int, int] = {}  # error code -> how often a Fetch partition was refused
        self._last_refusal: dict[tuple[str, int], tuple[str, int, int]] = {}  # the last epoch-refused event
        self._pool: ThreadPoolExecutor | None = None  # fetches to several leaders at once

    # --- public API ------------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str], listener: ConsumerRebalanceListener | None = None,
                  key_listener: PartitionKeyRebalanceListener | None = None) -> None:
        if self.member is None:
            raise ValueError("subscribe needs a group: pass group_id=... (or use assign() without one)")
        self.topics = sorted(set(topics))
        if not self.topics:
            raise ValueError("subscribe needs at least one topic")
        self.listener, self.key_listener = listener, key_listener
        self._need_rejoin = True

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Manual assignment (no group, no KIP-253 gates; KIP-320 validation still applies)."""
        if self.topics:
            raise ValueError("assign() cannot be mixed with subscribe()")
        tps = sorted((tp[0], tp[1]) for tp in partitions)
        self.view.refresh({t for t, _ in tps})
        self.parts = {}
        self._init_positions(tps)

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(t, p) for t, p in self.parts}

    def position(self, tp: TopicPartition | tuple[str, int]) -> int:
        return self.parts[(tp[0], tp[1])].position

    def next_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """KIP-320's ConsumerRecords.nextOffsets(), asked of the consumer (poll returns a list): each
        assigned partition's position with the epoch of the record before it, what an application
        that keeps its offsets elsewhere stores and later passes to `seek`."""
        return {TopicPartition(t, p): OffsetAndMetadata(s.position, "", s.last_epoch)
                for (t, p), s in self.parts.items()}

    def seek(self, tp: TopicPartition | tuple[str, int], offset: int | OffsetAndMetadata,
             leader_epoch: int | None = None) -> None:
        """Go to `offset` (no remote call). With a leader epoch (KIP-320: `leader_epoch`, or an
        OffsetAndMetadata that carries one, e.g. from LogTruncationError.truncation_offsets) the
        next poll first validates the position against the leader's log for that epoch."""
        if isinstance(offset, OffsetAndMetadata):
            if leader_epoch is not None:
                raise ValueError("seek: give the leader epoch in the OffsetAndMetadata or as leader_epoch, not both")
            offset, leader_epoch = offset.offset, offset.leader_epoch
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"seek: offset must be an int >= 0, got {offset!r}")
        state = self.parts.get((tp[0], tp[1]))
        if state is None:
            raise ValueError(f"{tp[0]}-{tp[1]} is not assigned to this consumer (assigned: {sorted(self.parts)})")
        state.position, state.last_epoch, state.validate = offset, leader_epoch, leader_epoch is not None
        state.buffer = []

    def freeze_metadata(self) -> None:
        self.view.freeze()

    def thaw_metadata(self) -> None:
        self.view.thaw()

    def poll(self, timeout_ms: int = 500) -> list[ConsumerRecord]:
        """Records in offset order per partition; raises LogTruncationError (policy "none")."""
        if self._closed:
            raise RuntimeError("poll on a closed consumer")
        deadline = time.monotonic() + timeout_ms / 1000
        if self.auto_commit and time.monotonic() >= self._next_commit:  # what the previous polls delivered
            self._next_commit = time.monotonic() + self.auto_commit_s
            self._commit_quietly()
        while True:
            self._maintain()
            records = self._fetch(max(0.0, deadline - time.monotonic()))
            if records or time.monotonic() >= deadline:
                break
        if records and self.events.active:
            self.events.emit({"f": "poll", "type": "ok", "value": [
                [r.partition, r.offset, history_key(r.key), history_value(r.value), r.leader_epoch]
                for r in records]})
        return records

    def commit(self) -> None:
        """Commit every position with the epoch of its last consumed record (KIP-320)."""
        if self.member is None or self.member.generation < 0:
            return
        offsets = {tp: (s.position, -1 if s.last_epoch is None else s.last_epoch)
                   for tp, s in self.parts.items() if s.committed != s.position}
        self.member.commit(offsets)
        for tp, (offset, _e) in offsets.items():
            self.parts[tp].committed = offset

    def close(self) -> None:
        if self._closed:
            return
        try:
            if self.member is not None and self.member.generation >= 0:
                self._commit_quietly()
                self._revoke_all()
                self.member.leave()
        finally:
            self._closed = True
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            self.view.close()

    def __enter__(self) -> OrderedConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- group -----------------------------------------------------------------------------
    def _commit_quietly(self) -> None:
        try:
            self.commit()
        except GroupError as e:
            log.info("commit failed: %s", e)
            self._need_rejoin = self._need_rejoin or e.rejoin
        except WireError as e:
            log.info("commit failed: %s", e)

    def _callback(self, f: str, tps: Iterable[tuple[str, int]]) -> None:
        tps = [TopicPartition(t, p) for t, p in sorted(tps)]
        target = self.listener if f.startswith("on_partitions") else self.key_listener
        if target is not None:
            getattr(target, f)(tps if f.startswith("on_partition_key") else set(tps))
        self.events.callback_op(f, tps)

    def _revoke_all(self) -> None:
        if self.parts:
            # a marked (or removed) partition's keys are moving to undeleted ones: losing it revokes
            # them too, so its owner flushes their state before their next owner loads it (KIP-253)
            moving = keys_leaving(self.parts, self.view.topics)
            if moving:
                self._callback("on_partition_key_maybe_revoked", moving)
            self._callback("on_partitions_revoked", self.parts)
        self.parts = {}

    def _shape(self) -> dict[str, tuple[Any, ...]]:
        # what the group's assignment depends on: each topic's partitions and their modes (the
        # leader watches every member's topics, so a change in one it does not read still rebalances)
        return {t: tuple(sorted((p, int(i.mode)) for p, i in self.view.topics[t].partitions.items()))
                for t in sorted({*self.topics, *self._group_topics}) if t in self.view.topics}

    def _assign(self, members: dict[str, list[str]]) -> dict[str, list[tuple[str, int]]]:
        self._group_topics = {t for ts in members.values() for t in ts}
        self.view.refresh({*self.topics, *self._group_topics})
        self._joined_shape = self._shape()  # what this assignment was made from
        split: dict[str, tuple[list[int], list[int]]] = {}
        for t in {t for ts in members.values() for t in ts}:
            info = self.view.topics.get(t)
            if info is None:
                continue
            live = {p: i for p, i in info.partitions.items() if i.mode != PartitionMode.NONE}
            split[t] = ([p for p, i in live.items() if i.mode == PartitionMode.READ_WRITE],
                        [p for p, i in live.items() if i.mode == PartitionMode.READ_ONLY])
        return assignor.assign(members, split, self.partition_assignor)

    def _rejoin(self) -> None:
        assert self.member is not None
        if self.member.generation >= 0:
            self._commit_quietly()
        self._revoke_all()
        self.view.refresh(self.topics)
        self._group_topics = set()  # the leader's _assign sets them again
        self._joined_shape = self._shape()
        assigned = self.member.join(self.topics, self._assign)
        self._asked, self.group_positions = set(), {}
        self._init_positions(assigned)  # on failure _need_rejoin stays set: the next round joins again
        self._need_rejoin = False
        self._callback("on_partitions_assigned", assigned)
        self._next_heartbeat = time.monotonic() + self.heartbeat_s

    def _init_positions(self, tps: list[tuple[str, int]]) -> None:
        committed = self.member.committed(tps) if self.member is not None and tps else {}
        made: dict[tuple[str, int], _Partition] = {}  # all or nothing: a failure leaves no half assignment
        for t, p in tps:
            info = self.view.topic(t)
            part = info.partitions.get(p)
            state = _Partition(position=0, fetch_epoch=part.leader_epoch if part else -1)
            earliest = self._offset_lookup(t, p, EARLIEST)
            if (t, p) in committed:
                offset, epoch = committed[(t, p)]
                state.position, state.committed = offset, offset
                state.last_epoch = epoch if epoch >= 0 else None
                state.validate = epoch >= 0  # KIP-320: a committed position is validated after a restart
                state.fresh = offset <= earliest.offset
            elif self.reset == "none":
                state.position = -1  # poll raises NoOffsetError until the application seeks
            else:
                reset = earliest if self.reset == "earliest" else self._offset_lookup(t, p, LATEST)
                state.position, state.last_epoch = reset.offset, reset.leader_epoch
                state.fresh = state.position <= earliest.offset
            state.started = not (self.member is not None and state.fresh and ordered(info)
                                 and p >= info.initial_partition_count)
            made[(t, p)] = state
        self.parts.update(made)

    def _list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        return self._offset_lookup(topic, partition, timestamp).offset

    def _offset_lookup(self, topic: str, partition: int, timestamp: int) -> OffsetAndMetadata:
        """The offset a ListOffsets answers, with its record's leader epoch (None if unknown)."""
        got = self._list_offsets(topic, partition, timestamp)
        return OffsetAndMetadata(got.offset, "", got.leader_epoch)

    def offsets_for_times(self, timestamps: Mapping[TopicPartition | tuple[str, int], int]
                          ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """KIP-320's offsetsForTimes: for each partition the first offset whose timestamp is at or
        after the one given (ms), with that record's timestamp and leader epoch; None where no
        record is that late. Asked of each leader at our metadata's epoch; a leader-epoch refusal
        is retried after a metadata refresh, and raised (FencedLeaderEpochError,
        UnknownLeaderEpochError) only when it persists. `seek(tp, answer.offset, answer.leader_epoch)`
        has the next poll validate the position first. The partitions need not be assigned."""
        self._refresh_metadata(force=False, also={tp[0] for tp in timestamps})
        out: dict[TopicPartition, OffsetAndTimestamp | None] = {}
        for tp, ts in timestamps.items():
            if not isinstance(ts, int) or ts < 0:
                raise ValueError(f"offsets_for_times: {tp[0]}-{tp[1]}: a timestamp is ms >= 0, got {ts!r}")
            got = self._list_offsets(tp[0], tp[1], ts)
            out[TopicPartition(tp[0], tp[1])] = None if got.offset < 0 else \
                OffsetAndTimestamp(got.offset, got.timestamp, got.leader_epoch)
        return out

    def _list_offsets(self, topic: str, partition: int, timestamp: int) -> OffsetAndTimestamp:
        """ListOffsets at our metadata's leader epoch (KIP-320: a stale leader cannot answer a
        reset); on the epoch errors or a moved leader, metadata is refreshed and the leader asked
        again for LIST_OFFSETS_RETRY_S. The answer's epoch is the offset's (None if unknown)."""
        deadline = time.monotonic() + LIST_OFFSETS_RETRY_S
        while True:
            part = self.view.topic(topic).partitions.get(partition)
            if part is None:
                # assigned from a leader's metadata that still (or already) lists it: ours does not;
                # a WireError ends this round and the group joins again once metadata agrees
                self._refresh_metadata(force=True, also=[topic])
                raise WireError(f"ListOffsets {topic}-{partition}: not in this consumer's metadata")
            code = ErrorCode.LEADER_NOT_AVAILABLE  # mid-election: asked again like a moved leader
            if part.leader >= 0:
                got = list_offset(self.view.connection(part.leader), topic, partition, timestamp,
                                  current_leader_epoch=part.leader_epoch)
                if got.error_code == ErrorCode.NONE:
                    epoch = got.leader_epoch if got.leader_epoch >= 0 else None
                    return OffsetAndTimestamp(got.offset, got.timestamp, epoch)
                code = got.error_code
                self._refused(topic, partition, "ListOffsets", code, part.leader_epoch)
            if code not in _LEADER_MOVED or time.monotonic() >= deadline:
                raise leader_epoch_error(code, f"ListOffsets {topic}-{partition}") or \
                    WireError(f"ListOffsets {topic}-{partition}: {error_name(code)}")
            time.sleep(0.1)  # the leader (or our metadata) is catching up with the other
            self._refresh_metadata(force=True, also=[topic])  # (being assigned, it is not in self.parts yet)

    def _refused(self, topic: str, partition: int, request: str, code: int, epoch: int) -> None:
        """A leader refused our leader epoch (KIP-320): an event, for the histories; once per
        request, error and epoch in a row (the consumer asks again every round until it may)."""
        refusal = (request, code, epoch)
        if code in _EPOCH_REFUSED and self._last_refusal.get((topic, partition)) != refusal:
            self._last_refusal[(topic, partition)] = refusal
            self.events.emit({"f": "epoch-refused", "type": "ok", "topic": topic, "partition": partition,
                              "value": {"request": request, "error": error_name(code), "current_leader_epoch": epoch}})

    # --- each round of poll ----------------------------------------------------------------
    def _maintain(self) -> None:
        try:
            if self.member is not None and self.topics:
                if self._need_rejoin or self.member.generation < 0:
                    self._rejoin()
                if time.monotonic() >= self._next_heartbeat:
                    self._next_heartbeat = time.monotonic() + self.heartbeat_s
                    self.member.heartbeat()
                    if "position-exchange" not in self.mutations and self._any_ordered():
                        self._exchange_positions()
            if time.monotonic() - self.view.refreshed_at > self.metadata_max_age_s:
                self._refresh_metadata(force=False)
            truncated: dict[TopicPartition, tuple[int, OffsetAndMetadata]] = {}
            for tp, state in list(self.parts.items()):
                if state.position < 0:
                    raise NoOffsetError(f"{tp[0]}-{tp[1]} has no committed offset and auto_offset_reset is "
                                        "'none': seek() to a position or choose earliest/latest")
                if state.validate and "truncation-detection" in self.mutations:
                    state.validate = False  # goes on from its position, whatever the leader's log holds
                elif state.validate:
                    position = state.position
                    found = self._validate(tp, state)
                    if found is not None:
                        truncated[TopicPartition(*tp)] = (position, found)
            if self.member is not None:
                self._open_gates()
            if truncated:  # KIP-320 without a reset policy: every truncated partition at once
                raise LogTruncationError({tp: pos for tp, (pos, _d) in truncated.items()},
                                         {tp: d for tp, (_p, d) in truncated.items()})
        except GroupError as e:
            log.info("group %s: %s", self.group_id, e)
            if e.rejoin and self.member is not None:
                self._need_rejoin = True
                if e.code == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member.member_id, self.member.generation = "", -1
            time.sleep(0.05)
        except WireError as e:
            log.info("consumer round failed, retrying: %s", e)
            self._refresh_quietly()
            time.sleep(0.1)

    def _refresh_quietly(self) -> None:
        try:
            self._refresh_metadata(force=True)
        except WireError as e:
            log.info("metadata refresh failed: %s", e)

    def _refresh_metadata(self, force: bool, also: Iterable[str] = ()) -> None:
        topics = sorted({t for t, _ in self.parts} | set(self.topics) | self._group_topics | set(also))
        if not topics:
            return
        frozen = self.view.frozen
        if force:
            self.view.frozen = False
        try:
            self.view.refresh(topics)
        finally:
            self.view.frozen = frozen
        for (t, p), state in self.parts.items():
            part = self.view.topics.get(t) and self.view.topics[t].partitions.get(p)
            if part and part.leader_epoch != state.fetch_epoch:
                state.fetch_epoch = part.leader_epoch
                state.validate = state.validate or state.last_epoch is not None  # KIP-320: leader changed
        if self.topics and self._joined_shape and self._shape() != self._joined_shape:
            self._need_rejoin = True

    def _validate(self, tp: tuple[str, int], state: _Partition) -> OffsetAndMetadata | None:
        """Check the position against the leader's log (KIP-320). A truncation is reset (returns
        None) or, without a reset policy, returned: the divergence offset with the leader's epoch
        there; validation is then asked again each poll until the application seeks."""
        t, p = tp
        state.buffer = []  # fetched from the old leader: may lie beyond a divergence point
        if state.last_epoch is None:
            state.validate = False
            return None
        part = self.view.topic(t).partitions.get(p)
        if part is None or part.leader < 0:
            return None
        if 0 <= part.leader_epoch < state.last_epoch:
            # KIP-320: metadata behind the position's epoch (a seek or commit from a newer leader)
            # would ask a leader that cannot know that epoch; wait for metadata to reach it
            if time.monotonic() - self.view.refreshed_at > 0.1:
                self._refresh_metadata(force=True)
            return None
        end = epoch_end(self.view.connection(part.leader), t, p, state.last_epoch, part.leader_epoch,
                        version=EPOCH_VERSION)
        if end.error in _LEADER_MOVED:
            self._refused(t, p, "OffsetsForLeaderEpoch", end.error, part.leader_epoch)
            self._refresh_metadata(force=True)
            return None
        found = divergence(end, state.position, state.last_epoch)
        state.validate = False
        if found is None:
            return None
        reset = self.truncation_reset
        self.events.emit({"f": "truncation-detected", "type": "ok" if reset else "info", "topic": t, "partition": p,
                          "offset": found, "value": {"fetch_offset": state.position, "divergence_offset": found}})
        if not reset:
            state.validate = True  # raised again until the application seeks
            return OffsetAndMetadata(found, "", end.leader_epoch)
        log.warning("%s-%d: log truncated at %d below position %d; resetting there", t, p, found, state.position)
        state.position, state.last_epoch, state.buffer = found, end.leader_epoch, []
        return None

    # --- KIP-253 gates ---------------------------------------------------------------------
    def _known_position(self, tp: tuple[str, int]) -> int:
        own = self.parts.get(tp)
        if own is None and "position-exchange" in self.mutations:
            return sys.maxsize  # not knowing another member's position, a gate takes it as caught up
        return own.position if own is not None else self.group_positions.get(tp, -1)

    def _open_gates(self) -> None:
        for (t, p), state in list(self.parts.items()):
            info = self.view.topics.get(t)
            if info is None or not ordered(info):
                continue
            if not state.started:
                if "expansion-gate" in self.mutations:
                    state.started = True
                else:
                    self._expansion_gate(t, p, state, info)
            if "deletion-gate" not in self.mutations:
                self._deletion_gate(t, p, state, info)

    def _whose_position(self, tp: tuple[str, int]) -> str:
        """Which position a gate judged: this member's own, one a peer reported, or none known
        (taken as caught up: only with the position-exchange mutation)."""
        if tp in self.parts:
            return "own"
        return "peer" if tp in self.group_positions else "assumed"

    def _gate_event(self, f: str, topic: str, partition: int, gate: str, blocker: int, rule: str | None = None) -> None:
        """A gate of `partition` waiting on, or opened by, `blocker`: for the histories (what a search
        counts as reached), not for the checks."""
        value = {"gate": gate, "blocker": blocker, **({"rule": rule} if rule else {})}
        self.events.emit({"f": f, "type": "ok", "topic": topic, "partition": partition, "value": value})

    def _current_epoch(self, topic: str, partition: int) -> int:
        part = self.view.topics[topic].partitions.get(partition)
        return -1 if part is None else part.leader_epoch

    def _expansion_gate(self, t: str, p: int, state: _Partition, info: Any) -> None:
        if state.expansion is None:
            maps = self.view.admin.epoch_maps(t, [p], missing_ok=True).get(p)
            if maps is None or not maps.after_creation:
                state.started = True
                return
            blocker = expansion_blocker(p, info.initial_partition_count, max(maps.after_creation) + 1)
            old = maps.after_creation[blocker]
            if self._current_epoch(t, blocker) <= old:  # the bump has not reached our metadata yet
                self._refresh_metadata(force=True)
                return
            leader = self.view.topics[t].partitions[blocker].leader
            end = epoch_end(self.view.connection(leader), t, blocker, old, self._current_epoch(t, blocker),
                            version=EPOCH_VERSION)
            if end.error != ErrorCode.NONE:
                return
            state.expansion = ExpansionGate(blocker, end.end_offset)
            if not state.expansion.open(self._known_position((t, blocker))):
                self._gate_event("gate-waiting", t, p, "expansion", blocker)
        gate = state.expansion
        if gate.open(self._known_position((t, gate.blocker))):
            if (t, gate.blocker) in self.parts:
                self._callback("on_partition_key_maybe_revoked", [(t, gate.blocker)])
            self._callback("on_partition_key_assigned", [(t, p)])
            state.started = True
            self._gate_event("gate-opened", t, p, "expansion", gate.blocker, self._whose_position((t, gate.blocker)))

    def _deletion_gate(self, t: str, p: int, state: _Partition, info: Any) -> None:
        undeleted = info.undeleted_partition_count
        marked = {q for q, i in info.partitions.items() if i.mode == PartitionMode.READ_ONLY}
        seen = self._seen_marked.setdefault(t, set())
        seen |= marked
        # removed, or on its way (mode None: empty, or past KIP-694's delay): nothing of it is left to read
        gone = {q for q in seen - marked if q not in info.partitions or info.partitions[q].mode == PartitionMode.NONE}
        if p >= undeleted or not marked and not gone and state.deletion is None:
            return
        gate = state.deletion = state.deletion or DeletionGate()
        for q in list(gate.upper):
            if q not in marked:
                gate.drained.add(q)  # removed (or going): nothing of it is left to read
        known = deletion_blockers(p, info.initial_partition_count, undeleted, max(max(info.partitions), *seen) + 1)
        removed = [q for q in known if q in gone and q not in gate.upper and q not in gate.announced]
        if removed:
            self._keys_of_removed(t, p, gate, removed)
        # a marked partition whose threshold is not known yet blocks all of P1 (gate.unknown)
        gate.unknown = {q for q in known if q in marked and q not in gate.upper and q not in gate.announced}
        for q in sorted(gate.unknown):
            maps = self.view.admin.epoch_maps(t, [q], missing_ok=True).get(q)
            if maps is None:  # removed since our metadata showed it marked
                self._keys_of_removed(t, p, gate, [q])
                gate.unknown.discard(q)
                continue
            old = maps.before_deletion.get(p)
            if old is None:  # marked while ordered delivery was off: its keys were never promised an order
                gate.unknown.discard(q)
                continue
            if self._current_epoch(t, p) <= old:
                self._refresh_metadata(force=True)
                return
            end = epoch_end(self.view.connection(self.view.topics[t].partitions[p].leader), t, p, old,
                            self._current_epoch(t, p), version=EPOCH_VERSION)
            if end.error != ErrorCode.NONE:
                return
            gate.upper[q] = end.end_offset
            gate.unknown.discard(q)
        limit = gate.limit()
        if limit is None or state.position < limit:
            return
        for q in gate.waiting_on:  # blocked: are the marked partitions drained?
            if self._known_position((t, q)) >= self._list_offset(t, q, LATEST):
                gate.drained.add(q)
                self._gate_event("gate-opened", t, p, "deletion", q, f"drained-{self._whose_position((t, q))}")
                if (t, q) in self.parts:
                    self._callback("on_partition_key_maybe_revoked", [(t, q)])
            elif q not in gate.waited:
                gate.waited.add(q)
                self._gate_event("gate-waiting", t, p, "deletion", q)
        due = gate.due(state.position)
        if due:
            gate.announced |= due
            self._callback("on_partition_key_assigned", [(t, p)])

    def _keys_of_removed(self, t: str, p: int, gate: DeletionGate, removed: list[int]) -> None:
        """Marked partitions gone before P1 learnt their thresholds: the thresholds went with them,
        and so did their records, so their keys are P1's from here."""
        gate.announced |= set(removed)
        for q in removed:
            self._gate_event("gate-opened", t, p, "deletion", q, "removed")
        self._callback("on_partition_key_assigned", [(t, p)])

    def _waits(self) -> list[tuple[str, int]]:
        waits = set()
        for (t, p), state in self.parts.items():
            if not state.started and state.expansion is not None:
                waits.add((t, state.expansion.blocker))
            if state.deletion is not None:
                waits.update((t, q) for q in state.deletion.waiting_on)
        return sorted(tp for tp in waits if tp not in self.parts)

    def _any_ordered(self) -> bool:
        """Does KIP-253 apply to a topic this member reads? (else there is no position to exchange)"""
        topics = {*self.topics, *(t for t, _ in self.parts)}
        return any(t in self.view.topics and ordered(self.view.topics[t]) for t in topics)

    def _exchange_positions(self) -> None:
        """KIP-253 step 7: report what others wait on when the condition holds, ask for ours."""
        assert self.member is not None
        if self.member.finds != self._reported_to:
            # the coordinator keeps reported positions in memory: one found anew (moved, or restarted)
            # has none, and a waiter would wait for a report the condition below no longer calls for
            for state in self.parts.values():
                state.reported_position = None
            self._reported_to = self.member.finds
        reports = {}
        for tp in sorted(self._asked):
            state = self.parts.get(tp)
            if state is None:
                continue
            if state.reported_position is None or state.max_epoch > state.reported_epoch or \
                    (state.position > state.reported_position and state.position == state.hw):
                reports[tp] = state.position
                state.reported_position, state.reported_epoch = state.position, state.max_epoch
        if reports:
            self._callback("on_partition_key_maybe_revoked", reports)
        # always asked, also without waits: only the answer tells us which of ours others wait on
        positions, self._asked = self.member.exchange_positions(reports, self._waits())
        self.group_positions.update({tp: pos for tp, pos in positions.items() if pos >= 0})

    # --- fetching --------------------------------------------------------------------------
    def _fetchable(self) -> dict[int, list[tuple[str, int]]]:
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for (t, p), state in sorted(self.parts.items()):
            part = self.view.topics.get(t) and self.view.topics[t].partitions.get(p)
            limit = state.deletion.limit() if state.deletion else None
            if not part or part.leader < 0 or not state.started or state.validate or \
                    part.mode == PartitionMode.NONE or (limit is not None and state.position >= limit):
                continue
            by_leader.setdefault(part.leader, []).append((t, p))
        return by_leader

    def _fetch(self, budget_s: float) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        by_leader = self._fetchable()
        for tps in by_leader.values():  # records fetched earlier come first; those partitions are not fetched
            for tp in [tp for tp in tps if self.parts[tp].buffer]:
                out.extend(self._drain(self.parts[tp], self.max_poll_records - len(out)))
                tps.remove(tp)
        by_leader = {leader: tps for leader, tps in by_leader.items() if tps}
        if out or not by_leader:
            if not out:
                time.sleep(min(budget_s, 0.05))
            return out
        # one Fetch per leader, all in flight at once (socket waits release the GIL); answers handled here
        wait_ms = int(min(budget_s * 1000, self.fetch_max_wait_ms))
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ordered-fetch")
        pending = {}
        for leader, tps in sorted(by_leader.items()):
            try:
                conn = self.view.connection(leader)
            except (WireError, MetadataError) as e:
                log.info("no connection to broker %d: %s", leader, e)
                continue
            # a short timeout: a hung broker must not hold up this thread's heartbeats past the session
            pending[leader] = self._pool.submit(conn.request, self._fetch_request(tps, wait_ms), FETCH_VERSION,
                                                wait_ms / 1000 + 3)
        responses, failed = {}, False
        for leader, future in pending.items():
            try:
                responses[leader] = future.result()
            except WireError as e:
                log.info("fetch from broker %d failed: %s", leader, e)
                failed = True
        for leader, response in responses.items():
            for topic in response.responses:
                for r in topic.partitions:
                    state = self.parts.get((topic.topic, r.partition_index))
                    if state is not None:
                        out.extend(self._handle(topic.topic, r, state, self.max_poll_records - len(out)))
        if failed:
            self._refresh_quietly()
        return out

    def _fetch_request(self, tps: list[tuple[str, int]], wait_ms: int) -> Any:
        T = FetchRequest.FetchTopic
        topics: dict[str, list[Any]] = {}
        for t, p in tps:
            state = self.parts[(t, p)]
            topics.setdefault(t, []).append(T.FetchPartition(
                partition=p, current_leader_epoch=state.fetch_epoch, fetch_offset=state.position,
                log_start_offset=-1, partition_max_bytes=self.max_partition_fetch_bytes))
        return FetchRequest(replica_id=-1, max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 24, isolation_level=0,
                            session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[], topics=[
                                T(topic=t, partitions=ps, undeleted_partition_count=self._count(t))
                                for t, ps in topics.items()])

    def _count(self, topic: str) -> int:
        info = self.view.topics.get(topic)
        return info.undeleted_partition_count if info is not None and ordered(info) else UNKNOWN_COUNT

    def _handle(self, t: str, r: Any, state: _Partition, room: int) -> list[ConsumerRecord]:
        p, code = r.partition_index, r.error_code
        if code == ErrorCode.NONE:
            state.hw = r.high_watermark
            return self._deliver(t, p, state, bytes(r.records or b""), room)
        log.info("fetch %s-%d at %d: %s", t, p, state.position, error_name(code))
        self.refusals[code] = self.refusals.get(code, 0) + 1
        if code in _LEADER_MOVED:
            self._refused(t, p, "Fetch", code, state.fetch_epoch)
            self._refresh_quietly()
            state.validate = state.last_epoch is not None
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if state.last_epoch is not None:
                state.validate = True  # KIP-320: a known epoch is validated, not reset
            elif self.reset == "none":
                raise OffsetOutOfRangeError(f"{t}-{p}: offset {state.position} is out of range and auto_offset_reset "
                                            "is 'none'", {TopicPartition(t, p): state.position})
            else:
                reset = self._offset_lookup(t, p, EARLIEST if self.reset == "earliest" else LATEST)
                state.position, state.last_epoch, state.buffer = reset.offset, reset.leader_epoch, []
        elif code in (ErrorCode.INVALID_PARTITION_METADATA, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            self._refresh_quietly()  # our count is stale, or the partition is going: rejoin with fresh metadata
            self._need_rejoin = bool(self.topics)
        return []

    def _deliver(self, t: str, p: int, state: _Partition, data: bytes, room: int) -> list[ConsumerRecord]:
        """Buffer the fetched records from the position on; deliver up to `room` of them."""
        buffered: list[ConsumerRecord] = []
        skipped: set[int] = set()  # replaces the last fetch's: a truncation may have put other records there
        for _pos, batch in iter_batches(data, validate_each=False):
            h = header(batch)
            if h.next_offset <= state.position:
                continue
            if h.is_control:
                if not buffered:
                    state.position = h.next_offset
                continue
            for rec in decode_records(batch):
                if moved_tombstone(rec.value, rec.headers):  # KIP-253 §9: the key moved, it was not deleted
                    skipped.add(rec.offset)
                buffered.append(ConsumerRecord(t, p, rec.offset, rec.key, rec.value, h.partition_leader_epoch,
                                               rec.timestamp))
        state.buffer = [r for r in buffered if r.offset >= state.position]
        state.skipped = skipped
        return self._drain(state, room)

    @staticmethod
    def _drain(state: _Partition, room: int) -> list[ConsumerRecord]:
        """Up to `room` buffered records from the position on, stopping at the deletion gate's limit."""
        limit = state.deletion.limit() if state.deletion else None
        taken = 0
        for rec in state.buffer:
            if (limit is not None and rec.offset >= limit) or taken >= room:
                break
            taken += 1
        out, state.buffer = state.buffer[:taken], state.buffer[taken:]
        if out:
            last = out[-1]
            state.position, state.last_epoch = last.offset + 1, last.leader_epoch
            state.max_epoch = max(state.max_epoch, max(r.leader_epoch for r in out))
        if state.skipped:  # read past, so the position moves beyond them, but never delivered
            out = [r for r in out if r.offset not in state.skipped]
            state.skipped = {o for o in state.skipped if o >= state.position}
        return out
