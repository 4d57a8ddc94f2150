"""One consumer group's state, as Kafka's classic group protocol keeps it: members, generation,
chosen protocol, committed offsets, and the state machine

    Empty -> PreparingRebalance -> CompletingRebalance -> Stable -> PreparingRebalance ...
    any -> Dead (the coordinator gave the group up)

This module holds data and the pure rules (protocol selection, who has rejoined); timers, waiting
requests and persistence are membership.py's and ownership.py's.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from chaoskit.broker.coordinator.clock import Timer
from chaoskit.broker.coordinator.codec import CommittedOffset, GroupRecord, MemberRecord


class GroupState(str, Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_ALLOWED_FROM: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

Protocols = list[tuple[str, bytes]]  # (name, metadata), the member's order of preference


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    # a JoinGroup / SyncGroup of this member waiting for the rebalance step; not None = awaiting
    join_waiter: asyncio.Future[Any] | None = None
    sync_waiter: asyncio.Future[Any] | None = None
    session_timer: Timer | None = None

    def metadata(self, protocol: str | None) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass
class Group:
    group_id: str
    partition: int
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    state_timestamp_ms: int = -1
    members: dict[str, Member] = field(default_factory=dict)  # join order: the first is the leader
    pending_members: dict[str, Timer] = field(default_factory=dict)  # ids handed out by MEMBER_ID_REQUIRED
    static_members: dict[str, str] = field(default_factory=dict)  # group_instance_id -> member_id
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    join_timer: Timer | None = None
    initial_delay_active: bool = False  # an initial-delay join cannot complete early
    new_member_added: bool = False  # a member joined during the initial delay: extend it
    sync_timer: Timer | None = None
    pending_sync: set[str] = field(default_factory=set)  # members yet to SyncGroup this generation

    def transition(self, to: GroupState, now_ms: int) -> None:
        if self.state not in _ALLOWED_FROM[to]:
            raise AssertionError(f"group {self.group_id!r}: illegal transition {self.state.value} -> {to.value}")
        self.state = to
        self.state_timestamp_ms = now_ms

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static(self, old_id: str, new_id: str) -> Member:
        """A static member came back under a new member id: the same member, renamed."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        assert member.group_instance_id is not None
        self.static_members[member.group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A static instance id now owned by another member id: this caller is a stale incarnation."""
        if group_instance_id is None:
            return False
        owner = self.static_members.get(group_instance_id)
        return owner is not None and owner != member_id

    # -- protocols ---------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for m in members[1:]:
            common &= set(m.protocol_names())
        return common

    def supports(self, protocol_type: str, names: list[str]) -> bool:
        """Whether a member with these protocols may join (the first member sets the type)."""
        if not protocol_type or not names:
            return False
        if not self.members:
            return True
        return protocol_type == self.protocol_type and bool(self.candidate_protocols() & set(names))

    def select_protocol(self) -> str:
        """Each member votes for its most preferred common protocol; the most votes wins, ties going
        to the leader's preference."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise AssertionError(f"group {self.group_id!r} has no protocol every member supports")
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = next(name for name in m.protocol_names() if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        leader = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        order = {name: i for i, name in enumerate(leader.protocol_names())}
        return max(votes, key=lambda name: (votes[name], -order.get(name, len(order))))

    # -- rebalance bookkeeping ---------------------------------------------------------------
    def awaiting_join(self) -> list[Member]:
        return [m for m in self.members.values() if m.join_waiter is not None]

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.join_waiter is None]

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.join_waiter is not None for m in self.members.values())

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition(GroupState.EMPTY, now_ms)

    # -- persistence ---------------------------------------------------------------------------
    def to_record(self, assignments: dict[str, bytes]) -> GroupRecord:
        members = tuple(MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                     m.rebalance_timeout_ms, m.session_timeout_ms, m.metadata(self.protocol_name),
                                     assignments.get(m.member_id, b"")) for m in self.members.values())
        return GroupRecord(self.protocol_type, self.generation, self.protocol_name, self.leader_id,
                           self.state_timestamp_ms, members)

    @classmethod
    def from_record(cls, group_id: str, partition: int, r: GroupRecord) -> Group:
        """The group as last stored: Stable with its members and assignments, or Empty without members."""
        group = cls(group_id, partition, generation=r.generation, protocol_type=r.protocol_type,
                    protocol_name=r.protocol, state_timestamp_ms=r.state_timestamp_ms)
        for m in r.members:
            protocols = [(r.protocol, m.subscription)] if r.protocol is not None else []
            group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                             m.session_timeout_ms, r.protocol_type or "", protocols, m.assignment))
        if group.members:
            group.leader_id = r.leader if r.leader in group.members else group.leader_id
            group.state = GroupState.STABLE
        return group
