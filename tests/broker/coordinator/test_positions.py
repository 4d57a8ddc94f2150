"""ConsumerGroupPosition (KIP-253) through the coordinator: members name the partitions they wait
on and get the group's latest reported position; the owner of a partition someone waits on is asked
to report it (by its consumer-protocol assignment); stale generations and strangers are refused."""
from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.internal import CONSUMER_GROUP_POSITION, ConsumerGroupPositionRequest

G = "ordered"
T = ConsumerGroupPositionRequest.ConsumerGroupPositionRequestTopic


def assignment(*partitions: int) -> bytes:
    A = ConsumerProtocolAssignment
    return bytes(A(version=0, assigned_partitions=[A.TopicPartition(topic="t", partitions=list(partitions))],
                   user_data=None).encode(version=0))


async def exchange(h: Any, member: str, generation: int, entries: list[tuple[int, bool, int]]) -> tuple[int, dict]:
    """(error, {partition: (need_position, position)}) for entries of (partition, need, my position)."""
    out = await h.call(CONSUMER_GROUP_POSITION, 0, group_id=G, generation_id=generation, member_id=member, topics=[
        T(name="t", partitions=[T.ConsumerGroupPositionRequestPartition(partition_index=p, need_position=n, position=pos)
                                for p, n, pos in entries])])
    return out.error_code, {p.partition_index: (p.need_position, p.position) for t in out.topics for p in t.partitions}


async def consumer_group(h: Any) -> tuple[int, str, str]:
    """Two members; a owns partitions 0-2, b owns 3-5 (consumer-protocol assignments)."""
    joined = await h.joined(G, 2)
    generation, leader = joined[0].generation_id, joined[0].leader
    a, b = leader, next(j.member_id for j in joined if j.member_id != leader)
    plan = {a: assignment(0, 1, 2), b: assignment(3, 4, 5)}
    follower = h.sync(G, generation, b)
    await h.settle()
    await h.sync(G, generation, a, plan)
    await follower
    return generation, a, b


def test_waiting_member_learns_the_owners_reported_position(run):
    async def scenario(h):
        gen, a, b = await consumer_group(h)
        # b waits on partition 1 (a's): unknown so far
        assert await exchange(h, b, gen, [(1, True, -1)]) == (ErrorCode.NONE, {1: (False, -1)})
        # a is asked to report 1 (it owns it), not 4 (b's)
        err, answer = await exchange(h, a, gen, [])
        assert err == ErrorCode.NONE and answer == {1: (True, -1)}
        assert (await exchange(h, a, gen, [(1, False, 17), (2, False, 5)]))[0] == ErrorCode.NONE
        assert await exchange(h, b, gen, [(1, True, -1)]) == (ErrorCode.NONE, {1: (False, 17)})
        # once b stops waiting, a is no longer asked
        await exchange(h, b, gen, [])
        assert await exchange(h, a, gen, []) == (ErrorCode.NONE, {})
    run(scenario, initial_delay_ms=1000)


def test_positions_are_refused_outside_the_generation(run):
    async def scenario(h):
        gen, a, _ = await consumer_group(h)
        assert (await exchange(h, a, gen + 1, []))[0] == ErrorCode.ILLEGAL_GENERATION
        assert (await exchange(h, "stranger", gen, []))[0] == ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario, initial_delay_ms=1000)


def test_an_opaque_assignment_asks_every_other_member(run):
    async def scenario(h):
        gen, ids = await h.form_group(G, 2)  # assignments b"assign-<i>", not the consumer protocol
        a, b = ids
        await exchange(h, b, gen, [(9, True, -1)])
        assert await exchange(h, a, gen, []) == (ErrorCode.NONE, {9: (True, -1)})
    run(scenario, initial_delay_ms=1000)
