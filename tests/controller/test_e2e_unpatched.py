"""The unpatched profile on a real 3-broker cluster: Kafka before the proposals.

An expansion changes no leader epoch and writes no KIP-253 count or epoch map, a stale count tag is
not checked, partition deletion is refused; and expanding `__consumer_offsets` (no guardrail)
reproduces KAFKA-20029's split brain: brokers that read the old partition count at start-up and a
broker restarted after the expansion place one group on different `__consumer_offsets` partitions,
so FindCoordinator answers disagree and two coordinators each run their own copy of the group.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import JoinGroupRequest, OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from chaoskit.client.admin import AdminClient, AdminError
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.topics import partition_for
from chaoskit.protocol.wire_client import WireClient

OFFSETS = "__consumer_offsets"


@pytest.fixture(scope="module")
def cluster(kip_cluster: Callable[..., LocalCluster]) -> LocalCluster:
    return kip_cluster(profile="unpatched")


def ask(cluster: LocalCluster, broker: int, request: Any, version: int) -> Any:
    with WireClient(*cluster.broker(broker).address, timeout=30) as c:
        return c.request(request, version)


def coordinator(cluster: LocalCluster, broker: int, group: str) -> tuple[int, int]:
    """FindCoordinator(group) answered by `broker`: (error, coordinator id)."""
    r = ask(cluster, broker, FindCoordinatorRequest(key=group, key_type=0), 1)
    return r.error_code, r.node_id


def test_expansion_without_the_proposals(cluster: LocalCluster, admin: AdminClient, kip: Any):
    admin.create_topic("plain", 4, 3)
    cluster.wait_until_replicated("plain")
    grown = admin.expand("plain", 8)
    assert (grown.initial_partition_count, grown.undeleted_partition_count) == (None, None)
    # without KIP-320 clients are told no epoch; ZooKeeper shows the expansion bumped none
    assert {p: i.leader_epoch for p, i in grown.partitions.items()} == {p: -1 for p in range(8)}
    znode, states = kip.znode(cluster, "plain"), kip.state_znodes(cluster, "plain")
    assert {p: s.leader_epoch for p, s in states.items()} == {p: 0 for p in range(8)}
    assert (znode.initial_partition_count, znode.undeleted_partition_count) == (None, None)
    assert all(not s.after_creation and not s.before_deletion for s in states.values())
    assert kip.produce(cluster, admin, "plain", 1, [b"x"], undeleted=6).error_code == ErrorCode.NONE  # unchecked
    with pytest.raises(AdminError) as err:
        admin.shrink("plain", 4)
    assert err.value.code == ErrorCode.TOPIC_DELETION_DISABLED and "delete.topic.partition.enable" in err.value.message


def test_expanding_consumer_offsets_splits_the_coordinator(cluster: LocalCluster, admin: AdminClient):
    for b in cluster.brokers:  # each broker reads __consumer_offsets' count (5) on first use
        wait_for(lambda b=b: coordinator(cluster, b, "probe")[0] == ErrorCode.NONE, 30, f"broker {b} finds coordinators")
    cluster.wait_until_replicated(OFFSETS)
    assert admin.create_partitions({OFFSETS: 10})[OFFSETS].ok  # no guardrail
    cluster.wait_until_replicated(OFFSETS)
    for b in (1, 2):  # restarted brokers read the new count (10); broker 3 keeps 5
        cluster.broker(b).kill()
        cluster.broker(b).start(clean=False)
        for node in cluster.brokers.values():
            cluster.wait_for_metadata(node, 30)
        cluster.wait_until_replicated(OFFSETS)
    leaders = {p: cluster.partition_state(OFFSETS, p).leader for p in range(10)}
    # groups broker 3 places on a partition it leads, which the restarted brokers place elsewhere
    split = [g for g in (f"group-{i}" for i in range(10_000))
             if leaders[partition_for(g, 5)] == 3 and leaders[partition_for(g, 10)] in (1, 2)][:2]
    assert len(split) == 2, f"no group splits with leaders {leaders}"
    group, offsets_group = split
    new_home = leaders[partition_for(group, 10)]

    assert coordinator(cluster, 3, group) == (ErrorCode.NONE, 3)
    assert coordinator(cluster, new_home, group) == (ErrorCode.NONE, new_home)  # the answers disagree

    # both coordinators accept the group: two generations with different members
    members = {}
    for node in (3, new_home):
        joined = ask(cluster, node, JoinGroupRequest(
            group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
            protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]), 3)
        assert joined.error_code == ErrorCode.NONE and joined.leader == joined.member_id, (node, joined)
        members[node] = joined.member_id
        described = ask(cluster, node, DescribeGroupsRequest(groups=[group]), 1).groups[0]
        assert described.error_code == ErrorCode.NONE
        assert [m.member_id for m in described.members] == [joined.member_id]  # each sees only its own member
    assert members[3] != members[new_home]

    # and each keeps its own committed offsets for one group id
    home = leaders[partition_for(offsets_group, 10)]
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    for node, offset in ((3, 111), (home, 222)):
        commit = OffsetCommitRequest(group_id=offsets_group, generation_id_or_member_epoch=-1, member_id="",
                                     topics=[T(name="plain", partitions=[T.OffsetCommitRequestPartition(
                                         partition_index=0, committed_offset=offset, committed_metadata="")])])
        # a leader takes its __consumer_offsets partitions as the LeaderAndIsr it was sent arrives, after
        # ZooKeeper shows it leading: until then it answers NOT_COORDINATOR (a commit may be repeated)
        wait_for(lambda: ask(cluster, node, commit, 2).topics[0].partitions[0].error_code == ErrorCode.NONE, 30,
                 f"broker {node} accepting {offsets_group}'s commit", cluster.broker(node).log_path)
    F = OffsetFetchRequest.OffsetFetchRequestTopic
    fetched = {node: ask(cluster, node, OffsetFetchRequest(group_id=offsets_group, topics=[
        F(name="plain", partition_indexes=[0])]), 1).topics[0].partitions[0].committed_offset for node in (3, home)}
    assert fetched == {3: 111, home: 222}
