"""OffsetCommit and OffsetFetch through the coordinator: leader epochs and metadata survive, the
group's generation and membership guard member commits, simple commits work on an Empty group."""
from __future__ import annotations

import pytest

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.registry import SUPPORTED

G = "billing"


async def commit(h, version, offsets, generation=-1, member_id="", group=G):
    return await h.commit(group, version, offsets, generation, member_id)


async def fetch(h, version, partitions, group=G):
    return await h.fetch(group, version, partitions)


def test_member_commits_keep_leader_epoch_and_metadata_and_fetch_returns_them(run):
    async def scenario(h):
        gen, (a, b) = await h.form_group(G, 2)
        errors = await commit(h, 8, {("t", 0): (42, 7, "from-a"), ("t", 1): (10, 3, None), ("u", 0): (5, -1, "")},
                              generation=gen, member_id=a)
        assert set(errors.values()) == {ErrorCode.NONE}
        err, rows = await fetch(h, 7, [("t", 0), ("t", 1), ("t", 2), ("nope", 0)])
        assert err == ErrorCode.NONE
        assert rows == {("t", 0): (42, 7, "from-a", 0), ("t", 1): (10, 3, None, 0),
                        ("t", 2): (-1, -1, "", 0), ("nope", 0): (-1, -1, "", 0)}
        _, everything = await fetch(h, 5, None)
        assert everything == {("t", 0): (42, 7, "from-a", 0), ("t", 1): (10, 3, None, 0), ("u", 0): (5, -1, "", 0)}
        _, old = await fetch(h, 1, [("t", 0)])
        assert old == {("t", 0): (42, None, "from-a", 0)}, "v1-4 have no leader epoch field but the offset"
        assert set((await commit(h, 5, {("t", 0): (50, 9, None)}, generation=gen, member_id=b)).values()) == {0}
        _, rows = await fetch(h, 7, [("t", 0)])
        assert rows[("t", 0)][:2] == (50, -1), "a commit below v6 carries no leader epoch"
    run(scenario)


@pytest.mark.parametrize("commit_version", list(range(SUPPORTED[8][0], SUPPORTED[8][1] + 1)))
def test_every_commit_version_round_trips_through_every_fetch_version(run, commit_version):
    async def scenario(h):
        assert set((await commit(h, commit_version, {("t", 3): (77, 4, "m")})).values()) == {ErrorCode.NONE}
        epoch = 4 if commit_version >= 6 else -1
        for fetch_version in range(SUPPORTED[9][0], SUPPORTED[9][1] + 1):
            err, rows = await fetch(h, fetch_version, [("t", 3)])
            assert err == ErrorCode.NONE
            assert rows == {("t", 3): (77, epoch if fetch_version >= 5 else None, "m", 0)}, fetch_version
    run(scenario)


def test_simple_commits_are_allowed_only_while_the_group_is_empty(run):
    async def scenario(h):
        assert await commit(h, 2, {("t", 0): (1, -1, None)}, group="standalone") == {("t", 0): ErrorCode.NONE}
        assert (await h.describe("standalone")).group_state == "Empty"
        gen, (a,) = await h.form_group(G, 1)
        assert await commit(h, 6, {("t", 0): (1, -1, None)}) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
        await h.leave(G, a)
        await h.coordinator.wait_idle()
        assert await commit(h, 6, {("t", 0): (9, 2, None)}) == {("t", 0): ErrorCode.NONE}
        _, rows = await fetch(h, 6, [("t", 0)])
        assert rows[("t", 0)][:2] == (9, 2)
    run(scenario)


def test_member_commits_are_checked_against_generation_and_membership(run):
    async def scenario(h):
        gen, (a, b) = await h.form_group(G, 2)
        tp = {("t", 0): (5, 1, None)}
        assert await commit(h, 8, tp, generation=gen + 1, member_id=a) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
        assert await commit(h, 8, tp, generation=gen, member_id="x") == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
        assert await commit(h, 8, tp, generation=3, member_id="x", group="never-seen") == \
            {("t", 0): ErrorCode.ILLEGAL_GENERATION}
        assert await commit(h, 8, {("t", 0): (5, 1, "x" * 5000)}, generation=gen, member_id=a) == \
            {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
        _, rows = await fetch(h, 7, [("t", 0)])
        assert rows[("t", 0)][0] == -1, "no refused commit was stored"
        late = await h.full_join(G, "late")
        await h.settle()  # PreparingRebalance: members of the current generation may still commit
        assert await commit(h, 8, tp, generation=gen, member_id=a) == {("t", 0): ErrorCode.NONE}
        rejoin = [h.join(G, a, client_id="c0"), h.join(G, b, client_id="c1")]
        joined = [await t for t in rejoin]
        await late
        # CompletingRebalance: the assignment is not out yet
        assert await commit(h, 8, tp, generation=joined[0].generation_id, member_id=a) == \
            {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}
    run(scenario)


def test_a_commit_the_store_refuses_is_not_visible(run):
    async def scenario(h):
        h.store.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await commit(h, 8, {("t", 0): (5, 1, None)}) == {("t", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
        h.store.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert await commit(h, 8, {("t", 0): (5, 1, None)}) == {("t", 0): ErrorCode.NOT_COORDINATOR}
        h.store.fail_with = None
        _, rows = await fetch(h, 7, [("t", 0)])
        assert rows[("t", 0)][0] == -1
    run(scenario)
