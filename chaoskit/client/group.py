"""Group membership over the wire: coordinator discovery, JoinGroup/SyncGroup (the leader runs
the KIP-253 assignor), Heartbeat, LeaveGroup, offsets with their leader epoch (KIP-320), and the
ConsumerGroupPosition exchange (KIP-253 step 7).

Blocking and single-threaded: the consumer calls these from `poll`, so a member only heartbeats
while its owner polls (as Kafka's members must poll within the rebalance timeout).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka.protocol.consumer import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest,
                                     OffsetFetchRequest, SyncGroupRequest)
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.protocol.metadata import FindCoordinatorRequest

from chaoskit.client.assignor import PROTOCOL_NAME
from chaoskit.client.events import EventHooks
from chaoskit.client.metadata import ClusterView
from chaoskit.protocol.errors import ErrorCode, error_name
from chaoskit.protocol.internal import ConsumerGroupPositionRequest
from chaoskit.protocol.topics import OFFSETS_TOPIC, partition_for
from chaoskit.protocol.wire_client import WireError

log = logging.getLogger(__name__)

_REDISCOVER = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
_REJOIN = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID}


class GroupError(Exception):
    """The coordinator answered an error; `code` is Kafka's."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what}: {error_name(code)} ({int(code)})")
        self.code = int(code)

    @property
    def rejoin(self) -> bool:
        return self.code in _REJOIN

    @property
    def rediscover(self) -> bool:
        return self.code in _REDISCOVER


Assign = Callable[[dict[str, list[str]]], dict[str, list[tuple[str, int]]]]


class GroupMember:
    def __init__(self, view: ClusterView, events: EventHooks, group_id: str, session_timeout_ms: int,
                 rebalance_timeout_ms: int, protocol: str = PROTOCOL_NAME) -> None:
        self.view, self.events, self.group_id, self.protocol = view, events, group_id, protocol
        self.session_timeout_ms, self.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
        self.coordinator: int | None = None
        self.finds = 0  # FindCoordinator answers so far: a new one may be another broker, or one restarted
        self.member_id, self.generation = "", -1

    # --- coordinator -----------------------------------------------------------------------
    def _call(self, request: Any, version: int, what: str, timeout: float | None = None,
              allow: frozenset[int] = frozenset()) -> Any:
        if self.coordinator is None:
            self.find_coordinator()
        assert self.coordinator is not None
        try:
            response = self.view.connection(self.coordinator).request(request, version, timeout=timeout)
        except WireError:
            self.coordinator = None
            raise
        code = getattr(response, "error_code", ErrorCode.NONE)
        if code in _REDISCOVER:
            self.coordinator = None
        if code != ErrorCode.NONE and code not in allow:
            raise GroupError(what, code)
        return response

    def find_coordinator(self) -> int:
        request = FindCoordinatorRequest(key=self.group_id, key_type=0, coordinator_keys=[self.group_id])
        response = self.view.admin.request(request, 3)
        if response.error_code != ErrorCode.NONE:
            raise GroupError(f"FindCoordinator for group {self.group_id!r}", response.error_code)
        self.coordinator, self.finds = response.node_id, self.finds + 1
        self.view.admin._brokers[response.node_id] = (response.host, response.port)
        offsets = self.view.topics.get(OFFSETS_TOPIC) or self.view.refresh([OFFSETS_TOPIC]).get(OFFSETS_TOPIC)
        partition = partition_for(self.group_id, len(offsets.partitions)) if offsets and offsets.partitions else None
        self.events.emit({"f": "coordinator", "type": "ok",
                          "value": {"group": self.group_id, "partition": partition, "node": response.node_id}})
        return response.node_id

    # --- membership ------------------------------------------------------------------------
    def join(self, topics: Iterable[str], assign: Assign) -> list[tuple[str, int]]:
        """JoinGroup then SyncGroup; this member's assignment. The leader computes everyone's."""
        P = JoinGroupRequest.JoinGroupRequestProtocol
        subscription = ConsumerProtocolSubscription(0, sorted(topics), b"").encode()
        while True:
            request = JoinGroupRequest(group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
                                       rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.member_id,
                                       group_instance_id=None, protocol_type="consumer",
                                       protocols=[P(name=self.protocol, metadata=bytes(subscription))], reason=None)
            try:
                response = self._call(request, 5, "JoinGroup", timeout=self.rebalance_timeout_ms / 1000 + 10,
                                      allow=frozenset({ErrorCode.MEMBER_ID_REQUIRED}))
            except GroupError as e:
                if e.code == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                raise
            if response.error_code != ErrorCode.MEMBER_ID_REQUIRED:
                break
            self.member_id = response.member_id  # KIP-394: join again with the id the coordinator gave
        self.member_id, self.generation = response.member_id, response.generation_id
        assignments = []
        if response.leader == self.member_id:
            members = {m.member_id: list(ConsumerProtocolSubscription.decode(bytes(m.metadata)).topics)
                       for m in response.members}
            S = SyncGroupRequest.SyncGroupRequestAssignment
            for member, tps in assign(members).items():
                by_topic: dict[str, list[int]] = {}
                for t, p in tps:
                    by_topic.setdefault(t, []).append(p)
                data = ConsumerProtocolAssignment(0, sorted(by_topic.items()), b"").encode()
                assignments.append(S(member_id=member, assignment=bytes(data)))
        sync = SyncGroupRequest(group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
                                group_instance_id=None, assignments=assignments)
        got = self._call(sync, 3, "SyncGroup", timeout=self.rebalance_timeout_ms / 1000 + 10)
        if not got.assignment:
            return []
        return sorted((tp.topic, tp.partition) for tp in ConsumerProtocolAssignment.decode(bytes(got.assignment))
                      .partitions())

    def heartbeat(self) -> None:
        self._call(HeartbeatRequest(group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
                                    group_instance_id=None), 3, "Heartbeat")

    def leave(self) -> None:
        if not self.member_id or self.coordinator is None:
            return
        M = LeaveGroupRequest.MemberIdentity
        try:
            self._call(LeaveGroupRequest(group_id=self.group_id, members=[M(member_id=self.member_id,
                                                                               group_instance_id=None)]), 3,
                       "LeaveGroup")
        except (GroupError, WireError) as e:
            log.info("leaving group %s: %s", self.group_id, e)
        self.member_id, self.generation = "", -1

    # --- offsets ---------------------------------------------------------------------------
    def commit(self, offsets: Mapping[tuple[str, int], tuple[int, int]]) -> None:
        """OffsetCommit v8 of {(topic, partition): (offset, leader_epoch)} (KIP-320: with the epoch)."""
        if not offsets:
            return
        T = OffsetCommitRequest.OffsetCommitRequestTopic
        by_topic: dict[str, list[Any]] = {}
        for (t, p), (offset, epoch) in sorted(offsets.items()):
            by_topic.setdefault(t, []).append(T.OffsetCommitRequestPartition(
                partition_index=p, committed_offset=offset, committed_leader_epoch=epoch, committed_metadata=""))
        request = OffsetCommitRequest(group_id=self.group_id, generation_id_or_member_epoch=self.generation,
                                      member_id=self.member_id, group_instance_id=None, retention_time_ms=-1,
                                      topics=[T(name=t, partitions=ps) for t, ps in by_topic.items()])
        response = self._call(request, 8, "OffsetCommit")
        for t in response.topics:
            for p in t.partitions:
                if p.error_code != ErrorCode.NONE:
                    raise GroupError(f"OffsetCommit of {t.name}-{p.partition_index}", p.error_code)

    def committed(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """{(topic, partition): (offset, leader_epoch)} for the partitions with a committed offset."""
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        T = OffsetFetchRequest.OffsetFetchRequestTopic
        request = OffsetFetchRequest(group_id=self.group_id, require_stable=False,
                                     topics=[T(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
        response = self._call(request, 7, "OffsetFetch")
        return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch)
                for t in response.topics for p in t.partitions
                if p.error_code == ErrorCode.NONE and p.committed_offset >= 0}

    # --- KIP-253 positions -----------------------------------------------------------------
    def exchange_positions(self, reports: Mapping[tuple[str, int], int], waits: Iterable[tuple[str, int]]
                           ) -> tuple[dict[tuple[str, int], int], set[tuple[str, int]]]:
        """Report own positions, ask for the group's positions of `waits`: (their positions (-1
        unknown), the own partitions another member waits on)."""
        R = ConsumerGroupPositionRequest.ConsumerGroupPositionRequestTopic
        P = R.ConsumerGroupPositionRequestPartition
        parts: dict[str, dict[int, Any]] = {}
        for (t, p), pos in reports.items():
            parts.setdefault(t, {})[p] = P(partition_index=p, need_position=False, position=pos)
        for t, p in waits:
            old = parts.setdefault(t, {}).get(p)
            parts[t][p] = P(partition_index=p, need_position=True, position=old.position if old else -1)
        request = ConsumerGroupPositionRequest(group_id=self.group_id, generation_id=self.generation,
                                               member_id=self.member_id, topics=[
                                                   R(name=t, partitions=[ps[p] for p in sorted(ps)])
                                                   for t, ps in sorted(parts.items())])
        response = self._call(request, 0, "ConsumerGroupPosition")
        wanted = set(waits)
        positions, asked = {}, set()
        for t in response.topics:
            for p in t.partitions:
                if (t.name, p.partition_index) in wanted:
                    positions[(t.name, p.partition_index)] = p.position
                if p.need_position:
                    asked.add((t.name, p.partition_index))
        return positions, asked

