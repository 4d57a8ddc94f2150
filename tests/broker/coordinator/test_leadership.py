"""Leadership of `__consumer_offsets` partitions: loading (COORDINATOR_LOAD_IN_PROGRESS), serving,
resigning (NOT_COORDINATOR), and a new coordinator recovering offsets and generations from the log."""
from __future__ import annotations

import asyncio
import logging

import pytest
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from chaoskit.broker.coordinator import ManualClock, codec, partition_for
from chaoskit.protocol.errors import ErrorCode

G = "inventory"


async def commit(h, group: str, generation: int, member_id: str, offset: int, epoch: int) -> int:
    errors = await h.commit(group, 8, {("t", 0): (offset, epoch, "meta")}, generation, member_id)
    return errors[("t", 0)]


async def fetch(h, group: str) -> tuple[int, tuple[int, int, str] | None]:
    err, rows = await h.fetch(group, 7, [("t", 0)])
    return err, (rows[("t", 0)][:3] if not err else None)


def test_a_new_coordinator_recovers_offsets_generation_and_assignments_after_a_resign(run):
    async def scenario(h):
        gen, (a, b) = await h.form_group(G, 2)
        assert await commit(h, G, gen, a, 120, 5) == ErrorCode.NONE
        waiting = await h.full_join(G, "late")  # a rebalance in flight when leadership moves
        await h.settle()
        await h.coordinator.on_resign(0)
        assert (await waiting).error_code == ErrorCode.NOT_COORDINATOR
        assert await h.heartbeat(G, gen, a) == ErrorCode.NOT_COORDINATOR
        assert (await fetch(h, G))[0] == ErrorCode.NOT_COORDINATOR
        assert await commit(h, G, gen, a, 130, 5) == ErrorCode.NOT_COORDINATOR
        assert (await h.describe(G)).error_code == ErrorCode.NOT_COORDINATOR

        successor = type(h)(store=h.store, broker_id=2, clock=h.clock)  # another broker, same log
        await successor.coordinator.on_become_leader(0)
        assert await fetch(successor, G) == (ErrorCode.NONE, (120, 5, "meta"))
        d = await successor.describe(G)
        assert d.group_state == "Stable"
        assert [(m.member_id, m.member_assignment) for m in d.members] == [(a, b"assign-0"), (b, b"assign-1")]
        assert await successor.heartbeat(G, gen, a) == ErrorCode.NONE, "members carry on at their generation"
        assert await successor.heartbeat(G, gen + 1, a) == ErrorCode.ILLEGAL_GENERATION
        assert (await successor.sync(G, gen, b)).assignment == b"assign-1"
        assert await commit(successor, G, gen, b, 121, 6) == ErrorCode.NONE
        h.clock.advance(h.SESSION_MS - 1)
        assert await successor.heartbeat(G, gen, a) == ErrorCode.NONE
        h.clock.advance(2)  # b has not heartbeated since its commit: expired, a must rejoin
        assert await successor.heartbeat(G, gen, a) == ErrorCode.REBALANCE_IN_PROGRESS
        rejoined = await successor.join(G, a, client_id="c0")
        assert (rejoined.generation_id, [m.member_id for m in rejoined.members]) == (gen + 1, [a])
        await successor.coordinator.close()
    run(scenario)


def test_requests_wait_out_the_load_and_a_resign_during_it_discards_it(run):
    async def scenario(h):
        gen, (a,) = await h.form_group(G, 1)
        assert await commit(h, G, gen, a, 7, 1) == ErrorCode.NONE
        h.store.hold_reads = asyncio.Event()
        other = type(h)(store=h.store, broker_id=2, clock=h.clock)
        load = asyncio.ensure_future(other.coordinator.on_become_leader(0))
        await h.settle()
        assert await other.heartbeat(G, gen, a) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert (await fetch(other, G))[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert (await other.join(G, a)).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert (await other.call(16, 4, states_filter=[])).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await other.coordinator.on_resign(0)
        h.store.hold_reads.set()
        await load
        assert await other.heartbeat(G, gen, a) == ErrorCode.NOT_COORDINATOR, "the discarded load serves nothing"
        h.store.hold_reads = None
        await other.coordinator.on_become_leader(0)
        assert await fetch(other, G) == (ErrorCode.NONE, (7, 1, "meta"))
        listed = await other.call(16, 4, states_filter=[])
        assert (listed.error_code, [(g.group_id, g.group_state) for g in listed.groups]) == (0, [(G, "Stable")])
        await other.coordinator.close()
    run(scenario)


def test_groups_live_on_their_hashed_partition_only(run):
    async def scenario(h):
        groups = [f"group-{i}" for i in range(12)]
        assert {h.coordinator.partition_for(g) for g in groups} == {0, 1, 2}
        mine = [g for g in groups if partition_for(g, 3) == 1]
        others = [g for g in groups if partition_for(g, 3) != 1]
        for g in groups:
            first = await h.join(g)
            expected = ErrorCode.MEMBER_ID_REQUIRED if g in mine else ErrorCode.NOT_COORDINATOR
            assert first.error_code == expected, g
        listed = await h.call(16, 3)
        assert sorted(x.group_id for x in listed.groups) == sorted(mine)
        described = await h.call(15, 5, groups=[mine[0], others[0]], include_authorized_operations=False)
        assert [(d.error_code, d.group_state) for d in described.groups] == \
            [(0, "Empty"), (ErrorCode.NOT_COORDINATOR, "")]
        for g in mine:
            await h.coordinator.on_resign(1)
            assert (await h.join(g)).error_code == ErrorCode.NOT_COORDINATOR
        with pytest.raises(ValueError, match="positive"):
            h.coordinator.partition_count = 0
    async def lead_one(h):
        await h.coordinator.on_resign(0)
        await h.coordinator.on_resign(2)
        await scenario(h)
    run(lead_one, partitions=3)


def test_find_coordinator_names_the_leader_of_the_groups_partition(run):
    async def scenario(h):
        asked = []

        def locate(partition):
            asked.append(partition)
            return (7, "127.0.0.1", 19092) if partition == 2 else None
        group_on_2 = next(f"g{i}" for i in range(100) if partition_for(f"g{i}", 5) == 2)
        group_on_0 = next(f"g{i}" for i in range(100) if partition_for(f"g{i}", 5) == 0)
        for version in range(0, 4):
            out = await h.call(10, version, key=group_on_2, key_type=0, _locate=locate)
            assert (out.error_code, out.node_id, out.host, out.port) == (0, 7, "127.0.0.1", 19092)
            out = await h.call(10, version, key=group_on_0, key_type=0, _locate=locate)
            assert (out.error_code, out.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
        assert asked == [2, 0] * 4
        out = await h.call(10, 3, key="txn", key_type=1, _locate=locate)
        assert out.error_code == ErrorCode.INVALID_REQUEST and "type 1" in out.error_message

        async def locate_later(partition):
            return (3, "127.0.0.2", 9000)
        # v4 batches keys; the registry does not advertise it yet, so this one skips the wire
        request = FindCoordinatorRequest(version=4, coordinator_keys=[group_on_0, group_on_2], key_type=0)
        response = await h.coordinator.find_coordinator(request, 4, locate_later)
        out = FindCoordinatorResponse.decode(bytes(response.encode(version=4)), version=4)
        assert [(c.key, c.node_id, c.error_code) for c in out.coordinators] == [(group_on_0, 3, 0), (group_on_2, 3, 0)]
    run(scenario, partitions=5)


def test_a_failed_assignment_write_fails_the_sync_and_restarts_the_rebalance(run):
    async def scenario(h):
        leader, follower = (j.member_id for j in await h.joined(G, 2))
        waiting = h.sync(G, 1, follower)
        h.store.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
        assert (await h.sync(G, 1, leader, {leader: b"l", follower: b"f"})).error_code == \
            ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert (await waiting).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert (await h.describe(G)).group_state == "PreparingRebalance"
        h.store.fail_with = None
        again = [h.join(G, leader, client_id="c0"), h.join(G, follower, client_id="c1")]
        assert [(await t).generation_id for t in again] == [2, 2]
    run(scenario)


def test_loading_skips_records_it_cannot_read_and_honours_tombstones(run, caplog):
    async def scenario(h):
        log = h.store.logs[0]
        committed = codec.CommittedOffset(11, 2, None, 0)
        log.extend([
            (codec.offset_key("g1", "t", 0), codec.offset_value(committed)),
            (b"\x00\x09{}", b"whatever"),  # a key version nobody wrote
            (codec.offset_key("g1", "t", 1), b"\x00\x00not json"),
            (codec.offset_key("g2", "t", 0), codec.offset_value(committed)),
            (codec.offset_key("g2", "t", 0), None),  # offset deleted: g2 is gone
        ])
        other = type(h)(store=h.store, broker_id=2, clock=h.clock)
        with caplog.at_level(logging.WARNING, logger="chaoskit.broker.coordinator"):
            await other.coordinator.on_become_leader(0)
        assert "key version 9" in caplog.text and "not JSON" in caplog.text
        assert (await fetch(other, "g1")) == (0, (11, 2, None))
        assert (await other.describe("g2")).group_state == "Dead"
        await other.coordinator.close()
    run(scenario, clock=ManualClock())
