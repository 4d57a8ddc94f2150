"""The classic group protocol's membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and the
timers that drive a rebalance, following Kafka's GroupCoordinator.

A rebalance: a join (new member, changed protocols, a leader's rejoin) or a member's departure
moves the group to PreparingRebalance; it completes when every known member has rejoined and no
member id handed out with MEMBER_ID_REQUIRED is still pending, or when the largest rebalance
timeout passes (members that did not rejoin are removed). A brand-new group first waits
`group.initial.rebalance.delay.ms`, extended while members keep arriving. Completion starts the
next generation: every waiting JoinGroup is answered (the leader, the first member, gets the
members' metadata), and the group waits in CompletingRebalance for the leader's SyncGroup, whose
assignment is stored before anyone gets theirs. A member that sends no SyncGroup within the
rebalance timeout is removed. Session timers run from every join, sync, heartbeat and commit;
one that fires removes the member and starts a rebalance (members waiting in a JoinGroup or
SyncGroup are kept: the rebalance and sync timers bound those waits).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from chaoskit.broker.coordinator import codec
from chaoskit.broker.coordinator.clock import Clock
from chaoskit.broker.coordinator.group import Group, GroupState, Member, Protocols
from chaoskit.broker.coordinator.ownership import GroupTable
from chaoskit.protocol.errors import ErrorCode

log = logging.getLogger("chaoskit.broker.coordinator")


@dataclass(frozen=True)
class GroupConfig:
    initial_rebalance_delay_ms: int = 0
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000


@dataclass
class JoinResult:
    error: ErrorCode
    member_id: str
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # (id, instance id, metadata)


@dataclass
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    require_known_member_id: bool


def _resolve(waiter: asyncio.Future[Any] | None, value: Any) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(value)


class Membership:
    def __init__(self, table: GroupTable, clock: Clock, config: GroupConfig,
                 spawn: Callable[[Coroutine[Any, Any, Any]], None], new_member_id: Callable[[str], str]) -> None:
        self.table, self.clock, self.config = table, clock, config
        self._spawn, self._new_member_id = spawn, new_member_id

    # -- JoinGroup ---------------------------------------------------------------------------
    async def join(self, r: JoinRequest) -> JoinResult:
        if not r.group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID, r.member_id)
        err, group = self.table.lookup(r.group_id)
        if err:
            return JoinResult(err, r.member_id)
        if not self.config.min_session_timeout_ms <= r.session_timeout_ms <= self.config.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, r.member_id)
        if group is None:
            if r.member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, r.member_id)
            group = self.table.create(r.group_id)
        if group.state is GroupState.DEAD:
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, r.member_id)
        if not group.supports(r.protocol_type, [name for name, _ in r.protocols]):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, r.member_id)
        if not r.member_id:
            return await self._join_new_member(group, r)
        return await self._join_known_member(group, r)

    async def _join_new_member(self, group: Group, r: JoinRequest) -> JoinResult:
        member_id = self._new_member_id(r.group_instance_id or r.client_id)
        if r.group_instance_id is not None:
            old_id = group.static_members.get(r.group_instance_id)
            if old_id is not None:  # the same static instance, restarted: it takes its old place
                old = group.members[old_id]
                self._answer(old, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id),
                             SyncResult(ErrorCode.FENCED_INSTANCE_ID))
                member = group.replace_static(old_id, member_id)
                return await self._update_and_rebalance(group, member, r)
        elif r.require_known_member_id:
            group.pending_members[member_id] = self.clock.call_later(
                r.session_timeout_ms, lambda: self._pending_expired(group, member_id))
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        return await self._add_and_rebalance(group, member_id, r)

    async def _join_known_member(self, group: Group, r: JoinRequest) -> JoinResult:
        if group.fenced(r.member_id, r.group_instance_id):
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, r.member_id)
        pending = group.pending_members.pop(r.member_id, None)
        if pending is not None:
            pending.cancel()
            return await self._add_and_rebalance(group, r.member_id, r)
        member = group.members.get(r.member_id)
        if member is None:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, r.member_id)
        unchanged = member.protocols == r.protocols
        if group.state is GroupState.COMPLETING_REBALANCE and unchanged:
            return self._current_generation(group, member)  # a retried JoinGroup: same answer
        if group.state is GroupState.STABLE and unchanged and not group.is_leader(member.member_id):
            return self._current_generation(group, member)
        return await self._update_and_rebalance(group, member, r)

    def _current_generation(self, group: Group, member: Member) -> JoinResult:
        return JoinResult(ErrorCode.NONE, member.member_id, group.generation, group.protocol_type,
                          group.protocol_name, group.leader_id or "",
                          self._member_list(group) if group.is_leader(member.member_id) else [])

    @staticmethod
    def _member_list(group: Group) -> list[tuple[str, str | None, bytes]]:
        return [(m.member_id, m.group_instance_id, m.metadata(group.protocol_name)) for m in group.members.values()]

    async def _add_and_rebalance(self, group: Group, member_id: str, r: JoinRequest) -> JoinResult:
        member = Member(member_id, r.group_instance_id, r.client_id, r.client_host, r.rebalance_timeout_ms,
                        r.session_timeout_ms, r.protocol_type, list(r.protocols))
        if group.state is GroupState.PREPARING_REBALANCE and group.generation == 0:
            group.new_member_added = True
        group.add(member)
        return await self._await_join(group, member)

    async def _update_and_rebalance(self, group: Group, member: Member, r: JoinRequest) -> JoinResult:
        member.protocols = list(r.protocols)
        member.session_timeout_ms, member.rebalance_timeout_ms = r.session_timeout_ms, r.rebalance_timeout_ms
        member.client_id, member.client_host = r.client_id, r.client_host
        # a second JoinGroup while the first still waits: the first gets a retriable answer
        _resolve(member.join_waiter, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        return await self._await_join(group, member)

    async def _await_join(self, group: Group, member: Member) -> JoinResult:
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_waiter = waiter
        self._schedule_session(group, member)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"member {member.member_id} joined")
        return await waiter

    # -- rebalance ---------------------------------------------------------------------------
    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for m in group.members.values():
                m.assignment = b""
                _resolve(m.sync_waiter, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                m.sync_waiter = None
        self._cancel(group, "sync_timer")
        group.pending_sync.clear()
        rebalance_timeout = group.max_rebalance_timeout_ms()
        initial = self.config.initial_rebalance_delay_ms
        if group.state is GroupState.EMPTY and initial > 0:
            group.initial_delay_active = True
            remaining = max(rebalance_timeout - initial, 0)
            group.join_timer = self.clock.call_later(initial, lambda: self._initial_delay_over(group, remaining))
        else:
            group.join_timer = self.clock.call_later(rebalance_timeout, lambda: self._complete_join(group))
        log.info("group %r: preparing rebalance from %s at generation %d: %s",
                 group.group_id, group.state.value, group.generation, reason)
        group.transition(GroupState.PREPARING_REBALANCE, self.clock.now_ms())
        self._maybe_complete_join(group)  # e.g. the last member left: nobody to wait for

    def _initial_delay_over(self, group: Group, remaining_ms: int) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        if group.new_member_added and remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            left = max(remaining_ms - delay, 0)
            group.join_timer = self.clock.call_later(delay, lambda: self._initial_delay_over(group, left))
            return
        self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.state is GroupState.PREPARING_REBALANCE and not group.initial_delay_active and group.all_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        self._cancel(group, "join_timer")
        group.initial_delay_active = group.new_member_added = False
        for m in group.not_yet_rejoined():
            if m.group_instance_id is None:  # static members keep their place across a missed rebalance
                log.info("group %r: member %s did not rejoin in time; removed", group.group_id, m.member_id)
                self._drop(group, m, ErrorCode.UNKNOWN_MEMBER_ID)
        group.init_next_generation(self.clock.now_ms())
        log.info("group %r: generation %d, %s, %d members, protocol %s", group.group_id, group.generation,
                 group.state.value, len(group.members), group.protocol_name)
        if group.state is GroupState.EMPTY:
            self._spawn(self._store_empty(group))
            return
        members = self._member_list(group)
        group.pending_sync = set(group.members)
        for m in group.members.values():
            waiter, m.join_waiter = m.join_waiter, None
            _resolve(waiter, JoinResult(ErrorCode.NONE, m.member_id, group.generation, group.protocol_type,
                                        group.protocol_name, group.leader_id or "",
                                        members if group.is_leader(m.member_id) else []))
            self._schedule_session(group, m)
        generation = group.generation
        group.sync_timer = self.clock.call_later(group.max_rebalance_timeout_ms(),
                                                 lambda: self._sync_overdue(group, generation))

    def _sync_overdue(self, group: Group, generation: int) -> None:
        group.sync_timer = None
        if group.generation != generation or not self.table.is_current(group) or not group.pending_sync:
            return
        for member_id in list(group.pending_sync):
            log.info("group %r: member %s sent no SyncGroup in time; removed", group.group_id, member_id)
            self._drop(group, group.members[member_id], ErrorCode.UNKNOWN_MEMBER_ID)
        self._after_removal(group, "members missed SyncGroup")

    async def _store_empty(self, group: Group) -> None:
        err = await self.table.write(group, [(codec.group_key(group.group_id),
                                              codec.group_value(group.to_record({})))], for_offsets=False)
        if err:
            log.warning("group %r: storing the empty group failed: %s", group.group_id, err.name)

    # -- SyncGroup -----------------------------------------------------------------------------
    async def sync(self, group_id: str, generation: int, member_id: str, group_instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> SyncResult:
        err, group = self.table.lookup(group_id)
        if err:
            return SyncResult(err)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        err = self.validate(group, member_id, group_instance_id, generation)
        if err:
            return SyncResult(err)
        if (protocol_type is not None and protocol_type != group.protocol_type) or \
                (protocol_name is not None and protocol_name != group.protocol_name):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.state is GroupState.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        self._schedule_session(group, member)
        group.pending_sync.discard(member_id)
        if group.state is GroupState.STABLE:
            return SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment)
        _resolve(member.sync_waiter, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.sync_waiter = waiter
        if group.is_leader(member_id):  # stored in the background: the leader's connection may drop
            self._spawn(self._store_assignment(group, {mid: assignments.get(mid, b"") for mid in group.members}))
        return await waiter

    async def _store_assignment(self, group: Group, assignment: dict[str, bytes]) -> None:
        generation = group.generation
        record = codec.group_value(group.to_record(assignment))
        err = await self.table.write(group, [(codec.group_key(group.group_id), record)], for_offsets=False)
        if group.state is not GroupState.COMPLETING_REBALANCE or group.generation != generation \
                or not self.table.is_current(group):
            return  # a rebalance or an unload answered the waiters meanwhile
        if err:
            for m in group.members.values():
                _resolve(m.sync_waiter, SyncResult(err))
                m.sync_waiter = None
            self._prepare_rebalance(group, f"storing the assignment failed: {err.name}")
            return
        for m in group.members.values():
            m.assignment = assignment.get(m.member_id, b"")
            _resolve(m.sync_waiter, SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name,
                                               m.assignment))
            m.sync_waiter = None
        group.transition(GroupState.STABLE, self.clock.now_ms())
        log.info("group %r: stable at generation %d", group.group_id, group.generation)

    # -- Heartbeat, LeaveGroup, commits ----------------------------------------------------------
    def validate(self, group: Group, member_id: str, group_instance_id: str | None, generation: int) -> ErrorCode:
        """Kafka's checks of a member's request against the group, in Kafka's order."""
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def heartbeat(self, group_id: str, generation: int, member_id: str, group_instance_id: str | None) -> ErrorCode:
        err, group = self.table.lookup(group_id)
        if err:
            return err
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        err = self.validate(group, member_id, group_instance_id, generation)
        if err:
            return err
        self._schedule_session(group, group.members[member_id])
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def touch(self, group: Group, member_id: str) -> None:
        """A member's offset commit counts as a heartbeat."""
        member = group.members.get(member_id)
        if member is not None:
            self._schedule_session(group, member)

    def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """(top-level error, one error per leaving (member_id, group_instance_id))."""
        err, group = self.table.lookup(group_id)
        if err:
            return err, [err] * len(leaving)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(leaving)
        return ErrorCode.NONE, [self._leave_one(group, member_id, instance_id) for member_id, instance_id in leaving]

    def _leave_one(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if instance_id is not None:
            owner = group.static_members.get(instance_id)
            if owner is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id and member_id != owner:
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = owner
        pending = group.pending_members.pop(member_id, None)
        if pending is not None:
            pending.cancel()
            self._maybe_complete_join(group)
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        log.info("group %r: member %s left", group.group_id, member_id)
        self._drop(group, member, ErrorCode.UNKNOWN_MEMBER_ID)
        self._after_removal(group, f"member {member_id} left")
        return ErrorCode.NONE

    # -- timers and removal ----------------------------------------------------------------------
    def _schedule_session(self, group: Group, member: Member) -> None:
        if member.session_timer is not None:
            member.session_timer.cancel()
        member.session_timer = self.clock.call_later(member.session_timeout_ms,
                                                     lambda: self._session_expired(group, member))

    def _session_expired(self, group: Group, member: Member) -> None:
        if group.members.get(member.member_id) is not member or not self.table.is_current(group):
            return
        if member.join_waiter is not None or member.sync_waiter is not None:
            self._schedule_session(group, member)
            return
        log.info("group %r: member %s session expired", group.group_id, member.member_id)
        self._drop(group, member, ErrorCode.UNKNOWN_MEMBER_ID)
        self._after_removal(group, f"member {member.member_id} session expired")

    def _pending_expired(self, group: Group, member_id: str) -> None:
        if group.pending_members.pop(member_id, None) is not None:
            self._maybe_complete_join(group)

    def _after_removal(self, group: Group, reason: str) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join(group)

    def _answer(self, member: Member, join: JoinResult, sync: SyncResult) -> None:
        _resolve(member.join_waiter, join)
        _resolve(member.sync_waiter, sync)
        member.join_waiter = member.sync_waiter = None

    def _drop(self, group: Group, member: Member, error: ErrorCode) -> None:
        if member.session_timer is not None:
            member.session_timer.cancel()
        self._answer(member, JoinResult(error, member.member_id), SyncResult(error))
        group.remove(member.member_id)

    @staticmethod
    def _cancel(group: Group, attr: str) -> None:
        timer = getattr(group, attr)
        if timer is not None:
            timer.cancel()
            setattr(group, attr, None)

    # -- leadership ------------------------------------------------------------------------------
    def loaded(self, groups: list[Group]) -> None:
        """Loaded members must heartbeat within their session timeout from now."""
        for group in groups:
            for member in group.members.values():
                self._schedule_session(group, member)

    def unloaded(self, groups: list[Group]) -> None:
        """Groups given up: every waiting request learns NOT_COORDINATOR; timers stop."""
        for group in groups:
            self._cancel(group, "join_timer")
            self._cancel(group, "sync_timer")
            for timer in group.pending_members.values():
                timer.cancel()
            group.pending_members.clear()
            for member in group.members.values():
                if member.session_timer is not None:
                    member.session_timer.cancel()
                self._answer(member, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id),
                             SyncResult(ErrorCode.NOT_COORDINATOR))
            group.transition(GroupState.DEAD, self.clock.now_ms())
