"""ConsumerGroupPosition (KIP-253 step 7): the coordinator's board of who waits on which
partition's position, and the positions members reported.

Each request comes from one member of the current generation. It replaces the set of partitions
that member waits on (entries with need_position), and records every position it reports
(position >= 0) as the group's latest for that partition. The answer gives the member the group's
position of each partition it waits on, and asks it (need_position) to report the partitions
assigned to it that some other member waits on; the assignment is read from the consumer protocol
when the group uses it, else every partition another member waits on is asked for.
Positions live in memory only: after the coordinator moves, members report them again.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from chaoskit.broker.coordinator.group import Group
from chaoskit.broker.coordinator.membership import Membership
from chaoskit.broker.coordinator.ownership import GroupTable
from chaoskit.protocol.errors import ErrorCode

log = logging.getLogger("chaoskit.broker.coordinator.positions")

TopicPartition = tuple[str, int]
UNKNOWN_POSITION = -1


@dataclass(frozen=True)
class PositionEntry:
    """One partition of a request (need, the member's position) or of an answer (report it?, the group's position)."""
    topic: str
    partition: int
    need_position: bool
    position: int = UNKNOWN_POSITION


@dataclass
class _Board:
    group: Group
    waiting: dict[str, set[TopicPartition]] = field(default_factory=dict)  # member -> partitions it waits on
    positions: dict[TopicPartition, int] = field(default_factory=dict)


def assigned_partitions(group: Group, member_id: str) -> set[TopicPartition] | None:
    """The member's partitions from its consumer-protocol assignment; None when that cannot be read."""
    member = group.members.get(member_id)
    if member is None or group.protocol_type != "consumer" or not member.assignment:
        return None
    try:
        decoded = ConsumerProtocolAssignment.decode(bytes(member.assignment))
    except Exception as e:  # a custom assignor's bytes: fall back to asking for everything waited on
        log.debug("group %s member %s: assignment not in the consumer protocol: %r", group.group_id, member_id, e)
        return None
    return {(tp.topic, tp.partition) for tp in decoded.partitions()}


class GroupPositions:
    def __init__(self, table: GroupTable, membership: Membership) -> None:
        self.table, self.membership = table, membership
        self._boards: dict[str, _Board] = {}

    def exchange(self, group_id: str, generation: int, member_id: str,
                 entries: list[PositionEntry]) -> tuple[ErrorCode, list[PositionEntry]]:
        err, group = self.table.lookup(group_id)
        if err:
            return err, []
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, []
        err = self.membership.validate(group, member_id, None, generation)
        if err:
            return err, []
        self.membership.touch(group, member_id)  # like a heartbeat
        board = self._board(group)
        for e in entries:
            if e.position >= 0:
                board.positions[(e.topic, e.partition)] = e.position
        board.waiting[member_id] = {(e.topic, e.partition) for e in entries if e.need_position}
        for gone in set(board.waiting) - set(group.members):
            del board.waiting[gone]
        wanted_by_others = set().union(*(tps for m, tps in board.waiting.items() if m != member_id))
        mine = assigned_partitions(group, member_id)
        report = wanted_by_others if mine is None else wanted_by_others & mine
        answer = [PositionEntry(t, p, (t, p) in report, board.positions.get((t, p), UNKNOWN_POSITION))
                  for t, p in sorted(board.waiting[member_id] | report)]
        return ErrorCode.NONE, answer

    def _board(self, group: Group) -> _Board:
        board = self._boards.get(group.group_id)
        if board is None or board.group is not group:  # unloaded and loaded again: a fresh board
            board = self._boards[group.group_id] = _Board(group)
        return board
