"""OffsetCommit and OffsetFetch: committed offsets (with leader epoch and metadata) per group.

A commit is checked against the group as Kafka does: a member's commit needs its member id and
the current generation (REBALANCE_IN_PROGRESS while the group waits for its assignment); a commit
with generation -1 and no member id is a "simple" commit from a consumer that does not use group
management, allowed only while the group is Empty (a group unknown so far is created Empty for
it). Offsets are applied in memory only once the store has appended them with acks=all; the write
runs shielded, so a client that hangs up mid-commit cannot leave the log and the cache apart.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from kafka.protocol.consumer import OffsetCommitResponse, OffsetFetchResponse

from chaoskit.broker.coordinator import codec
from chaoskit.broker.coordinator.clock import Clock
from chaoskit.broker.coordinator.codec import CommittedOffset
from chaoskit.broker.coordinator.group import Group, GroupState
from chaoskit.broker.coordinator.membership import Membership
from chaoskit.broker.coordinator.ownership import GroupTable
from chaoskit.protocol.errors import ErrorCode

TopicPartition = tuple[str, int]
_CommitTopic = OffsetCommitResponse.OffsetCommitResponseTopic
_CommitPartition = _CommitTopic.OffsetCommitResponsePartition
_FetchTopic = OffsetFetchResponse.OffsetFetchResponseTopic
_FetchPartition = _FetchTopic.OffsetFetchResponsePartition
_FetchGroup = OffsetFetchResponse.OffsetFetchResponseGroup
_FetchGroupTopic = _FetchGroup.OffsetFetchResponseTopics
_FetchGroupPartition = _FetchGroupTopic.OffsetFetchResponsePartitions
NO_OFFSET = CommittedOffset(-1, -1, "", -1)


def _by_topic(items: Iterable[tuple[str, int, object]]) -> dict[str, list[tuple[int, object]]]:
    out: dict[str, list[tuple[int, object]]] = {}
    for topic, partition, value in items:
        out.setdefault(topic, []).append((partition, value))
    return out


class OffsetManager:
    def __init__(self, table: GroupTable, membership: Membership, clock: Clock, max_metadata_bytes: int,
                 partition_exists: Callable[[str, int], bool] | None, leader_epochs: bool = True) -> None:
        self.table, self.membership, self.clock = table, membership, clock
        self.max_metadata_bytes = max_metadata_bytes
        self.partition_exists = partition_exists
        self.leader_epochs = leader_epochs  # KIP-320's epoch in commits; without it none is kept

    # -- OffsetCommit ------------------------------------------------------------------------
    async def offset_commit(self, request: Any, version: int) -> OffsetCommitResponse:
        commits = [(t.name, p.partition_index, p.committed_offset,
                    p.committed_leader_epoch if version >= 6 and self.leader_epochs else -1, p.committed_metadata)
                   for t in request.topics for p in t.partitions]
        instance_id = request.group_instance_id if version >= 7 else None
        errors = await self.commit(request.group_id, request.generation_id_or_member_epoch,
                                   request.member_id, instance_id, commits)
        topics = [_CommitTopic(name=topic, partitions=[_CommitPartition(partition_index=p, error_code=err)
                                                       for p, err in parts])
                  for topic, parts in _by_topic((t, p, errors[(t, p)]) for t, p, *_ in commits).items()]
        return OffsetCommitResponse(version=version, throttle_time_ms=0, topics=topics)

    async def commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                     commits: list[tuple[str, int, int, int, str | None]]) -> dict[TopicPartition, ErrorCode]:
        """(topic, partition, offset, leader_epoch, metadata) each -> its error code."""
        keys = [(t, p) for t, p, *_ in commits]

        def all_(err: ErrorCode) -> dict[TopicPartition, ErrorCode]:
            return dict.fromkeys(keys, err)

        if not group_id:
            return all_(ErrorCode.INVALID_GROUP_ID)
        err, group = self.table.lookup(group_id)
        if err:
            return all_(err)
        if group is None:
            if generation >= 0:  # a member of a generation this coordinator never saw
                return all_(ErrorCode.ILLEGAL_GENERATION)
            group = self.table.create(group_id)
        err = self._check_committer(group, generation, member_id, instance_id)
        if err:
            return all_(err)
        self.membership.touch(group, member_id)
        errors: dict[TopicPartition, ErrorCode] = {}
        accepted: dict[TopicPartition, CommittedOffset] = {}
        now = self.clock.now_ms()
        for topic, partition, offset, epoch, metadata in commits:
            if self.partition_exists is not None and not self.partition_exists(topic, partition):
                errors[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif metadata is not None and len(metadata.encode()) > self.max_metadata_bytes:
                errors[(topic, partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[(topic, partition)] = CommittedOffset(offset, epoch, metadata, now)
        if accepted:
            err = await asyncio.shield(asyncio.ensure_future(self._write(group, accepted)))
            errors.update(dict.fromkeys(accepted, err))
        return errors

    def _check_committer(self, group: Group, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation >= 0 or member_id or instance_id is not None:
            err = self.membership.validate(group, member_id, instance_id, generation)
            if err:
                return err
            if group.state is GroupState.COMPLETING_REBALANCE:
                return ErrorCode.REBALANCE_IN_PROGRESS
            return ErrorCode.NONE
        # a simple commit: only while no member manages the group
        return ErrorCode.NONE if group.state is GroupState.EMPTY else ErrorCode.UNKNOWN_MEMBER_ID

    async def _write(self, group: Group, accepted: dict[TopicPartition, CommittedOffset]) -> ErrorCode:
        records = [(codec.offset_key(group.group_id, t, p), codec.offset_value(c)) for (t, p), c in accepted.items()]
        err = await self.table.write(group, records, for_offsets=True)
        if err == ErrorCode.NONE and self.table.is_current(group):
            group.offsets.update(accepted)
        return err

    # -- OffsetFetch ---------------------------------------------------------------------------
    def fetch(self, group_id: str, partitions: list[TopicPartition] | None
              ) -> tuple[ErrorCode, list[tuple[str, int, CommittedOffset]]]:
        """(error, [(topic, partition, committed)]); partitions None means every committed one.
        A partition without a commit gets offset -1, leader epoch -1, metadata ""."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        err, group = self.table.lookup(group_id)
        if err:
            return err, []
        offsets = group.offsets if group is not None else {}
        if partitions is None:
            return ErrorCode.NONE, [(t, p, c) for (t, p), c in sorted(offsets.items())]
        return ErrorCode.NONE, [(t, p, offsets.get((t, p), NO_OFFSET)) for t, p in partitions]

    def offset_fetch(self, request: Any, version: int) -> OffsetFetchResponse:
        if version >= 8:
            groups = [self._fetch_group(g) for g in request.groups]
            return OffsetFetchResponse(version=version, throttle_time_ms=0, groups=groups)
        wanted = None if request.topics is None else [
            (t.name, p) for t in request.topics for p in t.partition_indexes]
        err, rows = self.fetch(request.group_id, wanted)
        if err and version < 2:  # v0-1 have no top-level error: every partition carries it
            rows = [(t, p, NO_OFFSET) for t, p in wanted or []]
        elif err:
            rows = []

        def part(p: int, c: CommittedOffset) -> _FetchPartition:
            return _FetchPartition(partition_index=p, committed_offset=c.offset, committed_leader_epoch=c.leader_epoch,
                                   metadata=c.metadata, error_code=err if version < 2 else ErrorCode.NONE)

        topics = [_FetchTopic(name=t, partitions=[part(p, c) for p, c in parts])
                  for t, parts in _by_topic(rows).items()]
        return OffsetFetchResponse(version=version, throttle_time_ms=0, topics=topics, error_code=err)

    def _fetch_group(self, g: Any) -> _FetchGroup:
        wanted = None if g.topics is None else [
            (t.name, p) for t in g.topics for p in t.partition_indexes]
        err, rows = self.fetch(g.group_id, wanted)
        topics = [_FetchGroupTopic(name=t, partitions=[
            _FetchGroupPartition(partition_index=p, committed_offset=c.offset, committed_leader_epoch=c.leader_epoch,
                                 metadata=c.metadata, error_code=ErrorCode.NONE) for p, c in parts])
            for t, parts in _by_topic(rows).items()]
        return _FetchGroup(group_id=g.group_id, topics=topics, error_code=err)
