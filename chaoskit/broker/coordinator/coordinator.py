"""GroupCoordinator: the broker's request handlers for consumer groups, at each request's version.

Each handler takes a kafka-python 3.0 request object (as `chaoskit.protocol.registry.decode_request`
gives it) and its version, and returns the matching response object at that version, ready for
`encode_response`. Errors are answered in the response, never raised. The package docstring
(chaoskit/broker/coordinator/__init__.py) lists the calls the broker makes.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import random
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from kafka.protocol.admin import DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer import (HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, OffsetCommitResponse,
                                     OffsetFetchResponse, SyncGroupResponse)
from kafka.protocol.metadata import FindCoordinatorResponse

from chaoskit.broker.coordinator import codec
from chaoskit.broker.coordinator.clock import Clock, LoopClock
from chaoskit.broker.coordinator.group import GroupState
from chaoskit.broker.coordinator.membership import GroupConfig, JoinRequest, JoinResult, Membership
from chaoskit.broker.coordinator.offsets import OffsetManager
from chaoskit.broker.coordinator.ownership import GroupTable, OffsetsStore
from chaoskit.broker.coordinator.positions import GroupPositions, PositionEntry
from chaoskit.protocol.errors import ErrorCode, error_name
from chaoskit.protocol.internal import ConsumerGroupPositionResponse
from chaoskit.protocol.topics import partition_for

log = logging.getLogger("chaoskit.broker.coordinator")

Node = tuple[int, str, int]  # (broker id, host, port)
Locate = Callable[[int], Any]  # __consumer_offsets partition -> Node | None, or an awaitable of it

_Member = JoinGroupResponse.JoinGroupResponseMember
_LeaveMember = LeaveGroupResponse.MemberResponse
_Described = DescribeGroupsResponse.DescribedGroup
_DescribedMember = _Described.DescribedGroupMember
_Listed = ListGroupsResponse.ListedGroup
_Coordinator = FindCoordinatorResponse.Coordinator


def _string(value: str | None, version: int, nullable_since: int) -> str | None:
    """A string field that is non-nullable before nullable_since: null becomes ""."""
    return value if value is not None or version >= nullable_since else ""


class GroupCoordinator:
    def __init__(self, broker_id: int, store: OffsetsStore, *, partition_count: int = 5, clock: Clock | None = None,
                 initial_rebalance_delay_ms: int = 0, min_session_timeout_ms: int = 6000,
                 max_session_timeout_ms: int = 1_800_000, max_metadata_bytes: int = 4096,
                 partition_exists: Callable[[str, int], bool] | None = None,
                 rng: random.Random | None = None, leader_epochs: bool = True) -> None:
        self.broker_id = broker_id
        self.clock = clock or LoopClock()
        self._rng = rng or random.Random()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.table = GroupTable(store, partition_count)
        config = GroupConfig(initial_rebalance_delay_ms, min_session_timeout_ms, max_session_timeout_ms)
        self.membership = Membership(self.table, self.clock, config, self._spawn, self._new_member_id)
        self.offsets = OffsetManager(self.table, self.membership, self.clock, max_metadata_bytes, partition_exists,
                                     leader_epochs)
        self.positions = GroupPositions(self.table, self.membership)

    def _new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{uuid.UUID(int=self._rng.getrandbits(128), version=4)}"

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("coordinator background task failed", exc_info=task.exception())

    async def wait_idle(self) -> None:
        """Wait for background writes (assignments, emptied groups) started so far."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- placement and leadership -----------------------------------------------------------------
    @property
    def partition_count(self) -> int:
        """`__consumer_offsets`' partition count used to place groups. Kafka fixes it when the broker
        starts (the topic's count if it exists, else offsets.topic.num.partitions); FindCoordinator
        must use the same number, or groups land on partitions this broker does not lead."""
        return self.table.partition_count

    @partition_count.setter
    def partition_count(self, count: int) -> None:
        partition_for("", count)  # validates
        self.table.partition_count = count

    def partition_for(self, group_id: str) -> int:
        return self.table.partition_of(group_id)

    def is_coordinator_for(self, group_id: str) -> bool:
        return self.table.status(group_id) == ErrorCode.NONE

    async def on_become_leader(self, partition: int) -> None:
        """This broker now leads __consumer_offsets-<partition>: load its groups. A second call while
        it leads changes nothing; a failed read is logged and raised, and the partition stays unserved
        (NOT_COORDINATOR) until the next call."""
        try:
            groups = await self.table.load(partition)
        except Exception:
            log.exception("__consumer_offsets-%d: loading the groups failed", partition)
            raise
        if groups is not None:
            self.membership.loaded(groups)

    def on_partitions_deleted(self, deleted: set[tuple[str, int]]) -> None:
        """Partitions gone from the cluster (a deleted topic, a partition KIP-253/694 removed): every
        group served here forgets its offsets of them at once, and writes tombstones to its log in
        the background (the controller's request does not wait on them), as Kafka's coordinator does
        on UpdateMetadata. A partition re-created under the same number then starts without a
        commit, so a group reads it from its reset point, not from the old partition's offset. A
        group not served here is cleaned by the broker that serves it."""
        _, groups = self.table.serving()
        for group in groups:
            gone = sorted(tp for tp in group.offsets if tp in deleted)
            if gone:
                for tp in gone:
                    del group.offsets[tp]
                self._spawn(self._forget(group, gone))

    async def _forget(self, group: Any, gone: list[tuple[str, int]]) -> None:
        err = await self.table.write(group, [(codec.offset_key(group.group_id, t, p), None) for t, p in gone],
                                     for_offsets=True)
        if err == ErrorCode.NONE:
            log.info("group %s: offsets of deleted partitions %s removed", group.group_id, gone)
        else:  # the log still has them: a coordinator that loads it anew would bring them back
            log.warning("group %s: tombstones for deleted partitions %s not written: %s", group.group_id, gone,
                        error_name(err))

    async def on_resign(self, partition: int) -> None:
        """Another broker leads the partition now: drop its groups; their waiters get NOT_COORDINATOR."""
        groups = self.table.resign(partition)
        self.membership.unloaded(groups)
        if groups:
            log.info("__consumer_offsets-%d: resigned; unloaded %d groups", partition, len(groups))

    async def close(self) -> None:
        for partition in self.table.partitions():
            await self.on_resign(partition)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- FindCoordinator -------------------------------------------------------------------------
    async def find_coordinator(self, request: Any, version: int, locate: Locate) -> FindCoordinatorResponse:
        """`locate(partition)` is the broker's: the live leader of __consumer_offsets-<partition>, or None."""
        keys = list(request.coordinator_keys) if version >= 4 else [request.key]
        key_type = request.key_type if version >= 1 else 0
        answers = []
        for key in keys:
            node: Node | None = None
            if key_type != 0:
                err, message = ErrorCode.INVALID_REQUEST, f"coordinator type {key_type} is not served (groups only)"
            elif not key:
                err, message = ErrorCode.INVALID_REQUEST, "the group id is empty"
            else:
                found = locate(self.partition_for(key))
                node = await found if inspect.isawaitable(found) else found
                err, message = ((ErrorCode.NONE, None) if node is not None else
                                (ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group's offsets partition has no leader"))
            node_id, host, port = node if node is not None else (-1, "", -1)
            answers.append(_Coordinator(key=key, node_id=node_id, host=host, port=port, error_code=err,
                                        error_message=message))
        if version >= 4:
            return FindCoordinatorResponse(version=version, throttle_time_ms=0, coordinators=answers)
        a = answers[0]
        return FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=a.error_code,
                                       error_message=a.error_message, node_id=a.node_id, host=a.host, port=a.port)

    # -- JoinGroup, SyncGroup, Heartbeat, LeaveGroup ------------------------------------------------
    async def join_group(self, request: Any, version: int, client_host: str = "") -> JoinGroupResponse:
        """client_host: the peer address of the connection (shown by DescribeGroups)."""
        header = request.header
        rebalance_timeout = request.rebalance_timeout_ms if version >= 1 else -1
        result = await self.membership.join(JoinRequest(
            group_id=request.group_id, member_id=request.member_id,
            group_instance_id=request.group_instance_id if version >= 5 else None,
            client_id=(header.client_id if header is not None else None) or "", client_host=client_host,
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout if rebalance_timeout >= 0 else request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
            require_known_member_id=version >= 4))
        return self._join_response(result, version)

    @staticmethod
    def _join_response(r: JoinResult, version: int) -> JoinGroupResponse:
        ok = r.error == ErrorCode.NONE
        return JoinGroupResponse(
            version=version, throttle_time_ms=0, error_code=r.error, generation_id=r.generation if ok else -1,
            protocol_type=r.protocol_type if ok else None,
            protocol_name=_string(r.protocol_name if ok else None, version, 7),
            leader=r.leader, skip_assignment=False, member_id=r.member_id,
            members=[_Member(member_id=m, group_instance_id=i, metadata=meta) for m, i, meta in r.members])

    async def sync_group(self, request: Any, version: int) -> SyncGroupResponse:
        r = await self.membership.sync(
            request.group_id, request.generation_id, request.member_id,
            request.group_instance_id if version >= 3 else None,
            request.protocol_type if version >= 5 else None, request.protocol_name if version >= 5 else None,
            {a.member_id: bytes(a.assignment) for a in request.assignments})
        return SyncGroupResponse(version=version, throttle_time_ms=0, error_code=r.error,
                                 protocol_type=r.protocol_type, protocol_name=r.protocol_name, assignment=r.assignment)

    async def heartbeat(self, request: Any, version: int) -> HeartbeatResponse:
        err = self.membership.heartbeat(request.group_id, request.generation_id, request.member_id,
                                        request.group_instance_id if version >= 3 else None)
        return HeartbeatResponse(version=version, throttle_time_ms=0, error_code=err)

    async def leave_group(self, request: Any, version: int) -> LeaveGroupResponse:
        if version < 3:
            top, (err,) = self.membership.leave(request.group_id, [(request.member_id, None)])
            return LeaveGroupResponse(version=version, throttle_time_ms=0, error_code=top or err)
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
        top, errors = self.membership.leave(request.group_id, leaving)
        members = [] if top else [_LeaveMember(member_id=m, group_instance_id=i, error_code=e)
                                  for (m, i), e in zip(leaving, errors)]
        return LeaveGroupResponse(version=version, throttle_time_ms=0, error_code=top, members=members)

    # -- DescribeGroups, ListGroups ------------------------------------------------------------------
    async def describe_groups(self, request: Any, version: int) -> DescribeGroupsResponse:
        return DescribeGroupsResponse(version=version, throttle_time_ms=0,
                                      groups=[self._describe(g) for g in request.groups])

    def _describe(self, group_id: str) -> _Described:
        err, group = self.table.lookup(group_id) if group_id else (ErrorCode.INVALID_GROUP_ID, None)
        if err or group is None:  # an unknown group is described as Dead, without error (as Kafka)
            state = "" if err else GroupState.DEAD.value
            return _Described(error_code=err, group_id=group_id, group_state=state, protocol_type="",
                              protocol_data="", members=[])
        stable = group.state is GroupState.STABLE  # metadata and assignments only mean something when Stable
        members = [_DescribedMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                    client_id=m.client_id, client_host=m.client_host,
                                    member_metadata=m.metadata(group.protocol_name) if stable else b"",
                                    member_assignment=m.assignment if stable else b"")
                   for m in group.members.values()]
        return _Described(error_code=ErrorCode.NONE, group_id=group_id, group_state=group.state.value,
                          protocol_type=group.protocol_type or "",
                          protocol_data=(group.protocol_name or "") if stable else "", members=members)

    async def list_groups(self, request: Any, version: int) -> ListGroupsResponse:
        loading, groups = self.table.serving()
        states = {s.lower() for s in (request.states_filter or [])} if version >= 4 else set()
        types = {t.lower() for t in (request.types_filter or [])} if version >= 5 else set()
        if types and "classic" not in types:
            groups = []
        listed = [_Listed(group_id=g.group_id, protocol_type=g.protocol_type or "", group_state=g.state.value,
                          group_type="classic")
                  for g in sorted(groups, key=lambda g: g.group_id)
                  if not states or g.state.value.lower() in states]
        err = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE
        return ListGroupsResponse(version=version, throttle_time_ms=0, error_code=err, groups=listed)

    # -- OffsetCommit, OffsetFetch --------------------------------------------------------------------
    async def offset_commit(self, request: Any, version: int) -> OffsetCommitResponse:
        return await self.offsets.offset_commit(request, version)

    async def offset_fetch(self, request: Any, version: int) -> OffsetFetchResponse:
        return self.offsets.offset_fetch(request, version)

    # -- ConsumerGroupPosition (KIP-253, private key 32003) ------------------------------------------
    async def consumer_group_position(self, request: Any, version: int) -> ConsumerGroupPositionResponse:
        entries = [PositionEntry(t.name, p.partition_index, p.need_position, p.position)
                   for t in request.topics for p in t.partitions]
        err, answer = self.positions.exchange(request.group_id, request.generation_id, request.member_id, entries)
        R = ConsumerGroupPositionResponse.ConsumerGroupPositionResponseTopic
        by_topic: dict[str, list[Any]] = {}
        for e in answer:
            by_topic.setdefault(e.topic, []).append(R.ConsumerGroupPositionResponsePartition(
                partition_index=e.partition, need_position=e.need_position, position=e.position))
        return ConsumerGroupPositionResponse(throttle_time_ms=0, error_code=err, topics=[
            R(name=t, partitions=ps) for t, ps in by_topic.items()])
