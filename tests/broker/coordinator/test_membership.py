"""Group membership through the coordinator's handlers: joins, syncs, heartbeats, leaves, session
expiry and rebalances, with the error codes stock consumers act on."""
from __future__ import annotations

import pytest

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.registry import SUPPORTED

G = "orders-group"


def test_three_members_join_sync_and_get_their_assignments(run):
    async def scenario(h):
        tasks = [await h.full_join(G, f"c{i}") for i in range(3)]
        await h.settle()
        assert not any(t.done() for t in tasks), "the initial delay holds the first rebalance"
        waited = await h.until_done(tasks, step_ms=1000)
        assert waited == 6000, "each member arriving in the delay extends it once by 3 s"
        joined = [t.result() for t in tasks]
        assert {j.error_code for j in joined} == {ErrorCode.NONE}
        assert {j.generation_id for j in joined} == {1}
        assert {j.protocol_name for j in joined} == {"range"}
        leader = joined[0].member_id
        assert joined[0].member_id.startswith("c0-") and {j.leader for j in joined} == {leader}
        assert [(m.member_id, m.metadata) for m in joined[0].members] == \
            [(j.member_id, f"sub-c{i}".encode()) for i, j in enumerate(joined)]
        assert joined[1].members == [] and joined[2].members == []

        followers = [h.sync(G, 1, j.member_id) for j in joined[1:]]
        await h.settle()
        assert not any(f.done() for f in followers), "followers wait for the leader's assignment"
        plan = {j.member_id: f"partitions-of-{i}".encode() for i, j in enumerate(joined)}
        got = [await h.sync(G, 1, leader, plan)] + [await f for f in followers]
        assert [g.assignment for g in got] == list(plan.values())
        assert {g.error_code for g in got} == {ErrorCode.NONE}

        d = await h.describe(G)
        assert (d.group_state, d.protocol_type, d.protocol_data) == ("Stable", "consumer", "range")
        assert [(m.member_id, m.client_id, m.member_assignment) for m in d.members] == \
            [(j.member_id, f"c{i}", plan[j.member_id]) for i, j in enumerate(joined)]
        assert [await h.heartbeat(G, 1, j.member_id) for j in joined] == [ErrorCode.NONE] * 3
    run(scenario)


def test_a_member_whose_session_expires_is_removed_and_the_rest_rebalance(run):
    async def scenario(h):
        gen, (a, b, c) = await h.form_group(G, 3)
        for _ in range(3):  # a and b heartbeat every 3 s; c has gone silent
            h.clock.advance(3000)
            assert [await h.heartbeat(G, gen, m) for m in (a, b)] == [ErrorCode.NONE] * 2
        h.clock.advance(h.SESSION_MS - 9000 + 1)
        assert await h.heartbeat(G, gen, a) == ErrorCode.REBALANCE_IN_PROGRESS
        assert await h.heartbeat(G, gen, c) == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await h.describe(G)).group_state == "PreparingRebalance"
        rejoin = [h.join(G, a, client_id="c0"), h.join(G, b, client_id="c1")]
        await h.settle()
        ja, jb = [await t for t in rejoin]
        assert (ja.generation_id, ja.leader, [m.member_id for m in ja.members]) == (gen + 1, a, [a, b])
        assert jb.generation_id == gen + 1 and jb.members == []
        sb = h.sync(G, gen + 1, b)
        assert (await h.sync(G, gen + 1, a, {a: b"p0,p1", b: b"p2"})).assignment == b"p0,p1"
        assert (await sb).assignment == b"p2"
    run(scenario)


@pytest.mark.parametrize("leave_version", [0, 3])
def test_a_member_that_leaves_is_gone_and_the_rest_rebalance(run, leave_version):
    async def scenario(h):
        gen, (a, b, c) = await h.form_group(G, 3)
        out = await h.leave(G, b, version=leave_version)
        assert out.error_code == ErrorCode.NONE
        if leave_version >= 3:
            assert [(m.member_id, m.error_code) for m in out.members] == [(b, ErrorCode.NONE)]
        assert await h.heartbeat(G, gen, b) == ErrorCode.UNKNOWN_MEMBER_ID
        assert await h.heartbeat(G, gen, c) == ErrorCode.REBALANCE_IN_PROGRESS
        rejoin = [h.join(G, a, client_id="c0"), h.join(G, c, client_id="c2")]
        ja, jc = [await t for t in rejoin]
        assert [m.member_id for m in ja.members] == [a, c] and jc.generation_id == gen + 1
        again = await h.leave(G, b, version=leave_version)
        if leave_version >= 3:
            assert [(m.member_id, m.error_code) for m in again.members] == [(b, ErrorCode.UNKNOWN_MEMBER_ID)]
        else:
            assert again.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario)


def test_everyone_leaving_empties_the_group_at_a_new_generation(run):
    async def scenario(h):
        gen, members = await h.form_group(G, 2)
        out = await h.leave(G, *members, version=4)
        assert [m.error_code for m in out.members] == [ErrorCode.NONE, ErrorCode.NONE]
        await h.coordinator.wait_idle()
        d = await h.describe(G)
        assert (d.group_state, d.members) == ("Empty", [])
        assert h.coordinator.table.groups[G].generation == gen + 1
    run(scenario)


def test_a_late_joiner_triggers_a_rebalance_and_a_silent_member_is_dropped(run):
    async def scenario(h):
        gen, (a, b) = await h.form_group(G, 2)
        late = await h.full_join(G, "late")
        await h.settle()
        assert not late.done(), "the late joiner waits for the others to rejoin"
        assert await h.heartbeat(G, gen, a) == ErrorCode.REBALANCE_IN_PROGRESS
        assert (await h.sync(G, gen, a)).error_code == ErrorCode.REBALANCE_IN_PROGRESS
        ra = h.join(G, a, client_id="c0")
        await h.settle()
        assert not ra.done(), "b has not rejoined yet"
        for _ in range(5):  # b keeps its session alive but never rejoins
            h.clock.advance(5000)
            assert await h.heartbeat(G, gen, b) == ErrorCode.REBALANCE_IN_PROGRESS
        h.clock.advance(h.REBALANCE_MS - 25_000 - 1)
        await h.settle()
        assert not ra.done()
        h.clock.advance(1)
        ja, jl = await ra, await late
        assert ja.generation_id == jl.generation_id == gen + 1
        assert [m.member_id for m in ja.members] == [a, jl.member_id], "b missed the rebalance and is out"
        assert await h.heartbeat(G, gen, b) == ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario)


def test_with_no_initial_delay_the_first_member_runs_alone_then_rebalances_for_the_second(run):
    async def scenario(h):
        first = await (await h.full_join(G, "c0"))
        assert (first.error_code, first.generation_id, first.leader) == (0, 1, first.member_id)
        assert (await h.sync(G, 1, first.member_id, {first.member_id: b"all"})).assignment == b"all"
        second = await h.full_join(G, "c1")
        await h.settle()
        assert await h.heartbeat(G, 1, first.member_id) == ErrorCode.REBALANCE_IN_PROGRESS
        j1, j2 = await h.join(G, first.member_id, client_id="c0"), await second
        assert j1.generation_id == j2.generation_id == 2 and len(j1.members) == 2
    run(scenario, initial_delay_ms=0)


def test_wrong_generation_and_unknown_member_are_refused(run):
    async def scenario(h):
        gen, (a, b) = await h.form_group(G, 2)
        assert await h.heartbeat(G, gen + 1, a) == ErrorCode.ILLEGAL_GENERATION
        assert await h.heartbeat(G, gen, "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
        assert await h.heartbeat("no-such-group", 1, a) == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await h.sync(G, gen - 1, b)).error_code == ErrorCode.ILLEGAL_GENERATION
        assert (await h.sync(G, gen, "nobody")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await h.join(G, member_id="nobody")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await h.join("fresh-group", member_id="made-up")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await h.join("", client_id="x")).error_code == ErrorCode.INVALID_GROUP_ID
        assert (await h.join(G, session_ms=10)).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
        bad = await h.join(G, protocols=[("sticky", b"")])
        assert bad.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        other_type = await h.join(G, protocol_type="connect")
        assert other_type.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert [await h.heartbeat(G, gen, m) for m in (a, b)] == [ErrorCode.NONE] * 2, "refusals changed nothing"
    run(scenario)


def test_the_protocol_most_members_prefer_among_common_ones_is_chosen(run):
    async def scenario(h):
        prefs = [[("range", b"r0"), ("roundrobin", b"rr0")], [("roundrobin", b"rr1"), ("range", b"r1")],
                 [("roundrobin", b"rr2"), ("sticky", b"s2")]]
        tasks = [await h.full_join(G, f"c{i}", protocols=p) for i, p in enumerate(prefs)]
        await h.until_done(tasks, step_ms=3000)
        leader = tasks[0].result()
        assert leader.protocol_name == "roundrobin"
        assert [m.metadata for m in leader.members] == [b"rr0", b"rr1", b"rr2"]
    run(scenario)


def test_a_pending_member_id_that_never_comes_back_expires(run):
    async def scenario(h):
        gen, (a,) = await h.form_group(G, 1)
        ghost = await h.join(G, client_id="ghost")  # takes a member id, then vanishes
        assert ghost.error_code == ErrorCode.MEMBER_ID_REQUIRED
        newcomer = await h.full_join(G, "c1")
        ra = h.join(G, a, client_id="c0")
        await h.settle()
        assert not ra.done(), "the ghost's pending member id holds the rebalance"
        h.clock.advance(h.SESSION_MS)
        joined = await ra
        assert joined.generation_id == gen + 1 and len(joined.members) == 2
        assert (await newcomer).error_code == ErrorCode.NONE
    run(scenario)


def test_a_leader_that_never_syncs_is_removed_and_followers_rebalance(run):
    async def scenario(h):
        leader, follower = (j.member_id for j in await h.joined(G, 2))
        waiting = h.sync(G, 1, follower)
        for _ in range(6):  # the follower heartbeats while it waits; the leader is silent
            await h.settle()
            h.clock.advance(5000)
            assert await h.heartbeat(G, 1, follower) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
        assert (await waiting).error_code == ErrorCode.REBALANCE_IN_PROGRESS
        assert await h.heartbeat(G, 1, leader) == ErrorCode.UNKNOWN_MEMBER_ID
        alone = await h.join(G, follower, client_id="c1")
        assert (alone.generation_id, alone.leader) == (2, follower)
    run(scenario)


def test_a_restarted_static_member_fences_its_old_incarnation(run):
    async def scenario(h):
        first = h.join(G, client_id="c0", instance_id="host-a")
        await h.until_done([first], step_ms=3000)
        old = first.result().member_id
        await h.sync(G, 1, old, {old: b"x"})
        again = h.join(G, client_id="c0", instance_id="host-a")
        joined = await again
        assert joined.error_code == ErrorCode.NONE and joined.member_id != old
        assert joined.generation_id == 2 and [m.group_instance_id for m in joined.members] == ["host-a"]
        assert (await h.call(12, 3, group_id=G, generation_id=2, member_id=old,
                             group_instance_id="host-a")).error_code == ErrorCode.FENCED_INSTANCE_ID
    run(scenario)


def _versions(api_key: int) -> list[int]:
    lo, hi = SUPPORTED[api_key]
    return list(range(lo, hi + 1))


@pytest.mark.parametrize("join_version", _versions(11))
def test_every_join_group_version_completes_a_generation(run, join_version):
    async def scenario(h):
        first = await h.join(G, version=join_version)
        if join_version >= 4:
            assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
            first = await h.join(G, first.member_id, version=join_version)
        assert (first.error_code, first.generation_id, first.protocol_name) == (0, 1, "range")
        if join_version >= 7:
            assert first.protocol_type == "consumer"
        err = await h.join(G, "nobody", version=join_version)
        assert err.error_code == ErrorCode.UNKNOWN_MEMBER_ID and err.generation_id == -1
    run(scenario, initial_delay_ms=0)


@pytest.mark.parametrize("api_key", [12, 13, 14])
def test_every_version_of_sync_heartbeat_and_leave_is_answered(run, api_key):
    async def scenario(h):
        for version in _versions(api_key):
            group = f"g-{api_key}-{version}"
            me = (await h.join(group, version=0)).member_id
            if api_key == 14:
                out = await h.sync(group, 1, me, {me: b"mine"}, version=version)
                assert (out.error_code, out.assignment) == (0, b"mine")
                if version >= 5:
                    assert (out.protocol_type, out.protocol_name) == ("consumer", "range")
            elif api_key == 12:
                await h.sync(group, 1, me, {me: b"mine"})
                assert await h.heartbeat(group, 1, me, version=version) == ErrorCode.NONE
            else:
                out = await h.leave(group, me, version=version)
                assert out.error_code == ErrorCode.NONE
                assert (await h.describe(group)).group_state in ("Empty", "PreparingRebalance")
    run(scenario, initial_delay_ms=0)
