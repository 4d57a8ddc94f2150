"""Every step of an expansion and a deletion is restartable: the active controller is SIGKILLed in
the middle (stopped at a failpoint, docs/internals.md §1) and the next controller finishes, leaving
the topic consistent: ZooKeeper's znodes and every broker's Metadata agree, every older partition
bumped exactly once, the epoch maps those of the moment before the change, a removed partition gone
from ZooKeeper, Metadata and disk.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.extensions import PartitionMode

ARMED = "controller-1"  # the controller that stops at the failpoint; controller-2 takes over


def arm(cluster: LocalCluster, failpoint: str) -> int:
    """Make controller-1 the active controller with `failpoint` armed (and controller-2 standing by);
    where its log is now (the log is appended across restarts)."""
    first, second = cluster.controller(1), cluster.controller(2)
    cluster.spec.overrides[ARMED] = {"controller.failpoints": failpoint}
    first.stop()
    if cluster.view.controller() != 2:
        wait_for(lambda: cluster.view.controller() == 2, 30, "controller-2 took over", second.log_path)
    first.start()
    second.stop()  # hands over at once (it resigns)
    wait_for(lambda: cluster.view.controller() == 1, 30, "controller-1 active", first.log_path)
    second.start()
    return first.log_path.stat().st_size


def kill_at(cluster: LocalCluster, failpoint: str, since: int,
            while_stopped: Callable[[], None] = lambda: None) -> None:
    """Wait until controller-1 stops at the failpoint, run `while_stopped` (the successor may finish the
    step at once, so a half-done state is only observable now), SIGKILL it, wait for controller-2 to lead."""
    first = cluster.controller(1)

    def stopped() -> bool:
        with open(first.log_path, "rb") as log:
            log.seek(since)
            return f"failpoint {failpoint} reached".encode() in log.read()
    wait_for(stopped, 30, f"controller-1 at failpoint {failpoint}", first.log_path)
    try:
        while_stopped()
    finally:
        first.kill()  # never leave a controller stuck at a failpoint for the next test
    wait_for(lambda: cluster.view.controller() == 2, 30, "controller-2 took over", cluster.controller(2).log_path)


@pytest.fixture(autouse=True)
def disarm(cluster: LocalCluster) -> Any:
    yield
    cluster.spec.overrides.pop(ARMED, None)
    if not cluster.controller(1).running:
        cluster.controller(1).start()


def epochs(admin: AdminClient, topic: str) -> dict[int, int]:
    return {p: i.leader_epoch for p, i in admin.topic(topic).partitions.items()}


@pytest.mark.parametrize("failpoint", ["expansion.after-create", "bump.after-first"])
def test_killed_mid_expansion(cluster: LocalCluster, admin: AdminClient, kip: Any, failpoint: str):
    topic = f"grow-{failpoint.replace('.', '-')}"
    admin.create_topic(topic, 4, 3)
    cluster.wait_until_replicated(topic)
    before = epochs(admin, topic)
    since = arm(cluster, failpoint)
    result = admin.create_partitions({topic: 8}, timeout_ms=1000)[topic]  # the controller stops half way
    assert result.code in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT)
    kill_at(cluster, failpoint, since)
    kip.wait_consistent(cluster, topic)
    info = admin.topic(topic)
    assert (info.initial_partition_count, info.undeleted_partition_count, sorted(info.partitions)) == \
        (4, 8, list(range(8)))
    assert {p: info.partitions[p].leader_epoch for p in range(4)} == {p: e + 1 for p, e in before.items()}
    maps = admin.epoch_maps(topic)
    assert all(maps[p].after_creation == before for p in range(4, 8))
    for p in range(8):
        assert kip.produce(cluster, admin, topic, p, [b"after"], undeleted=8).error_code == ErrorCode.NONE


@pytest.mark.parametrize("failpoint", ["deletion.after-mark", "bump.after-first"])
def test_killed_mid_deletion_marking(cluster: LocalCluster, admin: AdminClient, kip: Any, failpoint: str):
    topic = f"mark-{failpoint.replace('.', '-')}"
    admin.create_topic(topic, 4, 3)
    cluster.wait_until_replicated(topic)
    admin.expand(topic, 8)
    kip.wait_consistent(cluster, topic)
    for p in (6, 7):  # records keep them from being removed
        assert kip.produce(cluster, admin, topic, p, [b"keep"]).error_code == ErrorCode.NONE
    before = epochs(admin, topic)
    since = arm(cluster, failpoint)
    result = admin.delete_partitions({topic: 6}, timeout_ms=1000)[topic]
    assert result.code in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT)
    kill_at(cluster, failpoint, since)
    kip.wait_consistent(cluster, topic)
    info = admin.topic(topic)
    assert (info.undeleted_partition_count, info.marked_for_deletion) == (6, [6, 7])
    assert {p: info.partitions[p].leader_epoch for p in range(8)} == \
        {**{p: before[p] + 1 for p in range(6)}, 6: before[6], 7: before[7]}
    maps = admin.epoch_maps(topic, [6, 7])
    assert maps[6].before_deletion == maps[7].before_deletion == {p: before[p] for p in range(6)}
    assert kip.produce(cluster, admin, topic, 7, [b"late"]).error_code == ErrorCode.INVALID_PARTITION_METADATA


@pytest.mark.parametrize("failpoint", ["removal.after-none", "removal.before-remove"])
def test_killed_mid_removal(cluster: LocalCluster, admin: AdminClient, kip: Any, failpoint: str):
    topic = f"remove-{failpoint.replace('.', '-')}"
    admin.create_topic(topic, 2, 3)
    cluster.wait_until_replicated(topic)
    admin.expand(topic, 3)
    kip.wait_consistent(cluster, topic)
    assert kip.produce(cluster, admin, topic, 2, [b"doomed"]).error_code == ErrorCode.NONE
    since = arm(cluster, failpoint)
    admin.shrink(topic, 2, delay_ms=0)

    def half_removed() -> None:  # stopped between mode None and the removal
        state = kip.state_znodes(cluster, topic).get(2)
        assert state is not None and state.mode == PartitionMode.NONE, state
    kill_at(cluster, failpoint, since, half_removed)
    wait_for(lambda: 2 not in kip.znode(cluster, topic).partitions and 2 not in kip.state_znodes(cluster, topic)
             and not kip.directories(cluster, topic, 2), 30, "partition 2 removed by the successor",
             cluster.controller(2).log_path)
    kip.wait_consistent(cluster, topic)
    assert sorted(admin.topic(topic).partitions) == [0, 1]


def test_a_consumer_following_the_seeds_steps_literally_takes_an_open_epochs_end_as_its_threshold(
        cluster: LocalCluster, admin: AdminClient, kip: Any):
    """Why chaoskit's consumer does more than KIP-253's steps (conformance row 24). chaoskit's
    controller writes the new partitions (with `leaderEpochAfterCreation`) before it bumps the older
    partitions' epochs, where the seed bumps first and waits for every LeaderAndIsr answer. Stopped
    between the two, a consumer that follows the seed's consumer steps literally reads P2's map,
    asks P2's blocker P0 for the end of that epoch and gets P0's log end: the epoch is still open,
    producers with the old count keep writing P0 under it, and the end it took is not the end the
    epoch gets. chaoskit's consumer takes the threshold only once its metadata shows P0's epoch moved
    past the map's and asks with that current epoch (client/consumer.py `_expansion_gate`)."""
    from chaoskit.protocol.requests import epoch_end
    from chaoskit.protocol.wire_client import WireClient

    topic = "literal"
    admin.create_topic(topic, 2, 3)
    cluster.wait_until_replicated(topic)
    assert kip.produce(cluster, admin, topic, 0, [b"before-%d" % i for i in range(3)], undeleted=2).error_code == 0
    leader = cluster.broker(admin.topic(topic).partitions[0].leader)
    since = arm(cluster, "expansion.after-create")
    admin.create_partitions({topic: 4}, timeout_ms=1000)  # the controller stops after the creation
    taken: dict[str, Any] = {}

    def literal_consumer_steps() -> None:
        old_epoch = admin.epoch_maps(topic, [2])[2].after_creation[0]  # KIP-253 4.1-4.3, for P1 = 2, P3 = 0
        with WireClient(*leader.address) as c:
            end = epoch_end(c, topic, 0, old_epoch)
        taken.update(epoch=old_epoch, threshold=end.end_offset, answered_epoch=end.leader_epoch)
        # a producer that has not heard of the expansion: the old count, accepted under the old epoch
        assert kip.produce(cluster, admin, topic, 0, [b"late-%d" % i for i in range(4)], undeleted=2).error_code == 0

    kill_at(cluster, "expansion.after-create", since, literal_consumer_steps)
    kip.wait_consistent(cluster, topic)
    with WireClient(*cluster.broker(admin.topic(topic).partitions[0].leader).address) as c:
        closed = epoch_end(c, topic, 0, taken["epoch"])
    assert taken["answered_epoch"] == taken["epoch"], "the epoch was still open when the literal steps asked"
    assert closed.end_offset == taken["threshold"] + 4, (taken, closed)  # the epoch ended past what it took
    assert admin.topic(topic).partitions[0].leader_epoch > taken["epoch"]
