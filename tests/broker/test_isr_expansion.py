"""The leader's ISR expansion (chaoskit.broker.replica_manager): a follower joins on its own fetch,
as Kafka's maybeExpandIsr does; another follower's fetch never brings back one whose fetches
stopped (its last known log end can equal a high watermark that nothing moved). KIP-320: a
follower the controller marks offline joins only with the offline-replica-isr mutation, and ZooKeeper
refuses an ISR that a replica joins after its registration went, whatever the leader's metadata says."""
from __future__ import annotations

import pytest

from chaoskit.broker.config import BrokerConfig
from chaoskit.broker.log.partition_log import PartitionLog
from chaoskit.broker.metadata_cache import BrokerEndpoint, MetadataCache
from chaoskit.broker.partition import Partition
from chaoskit.broker.replica_manager import ReplicaManager
from chaoskit.broker.zk import BrokerZk, ReplicaNotLive
from chaoskit.protocol.records import build_batch
from chaoskit.protocol.zk_layout import PartitionState, broker_path, state_path


@pytest.fixture
def leader(tmp_path):
    p = Partition("t", 0, 1, PartitionLog(tmp_path / "t-0", fsync=False))
    p.apply_state(leader=1, leader_epoch=3, isr=[1, 2, 3], replicas=[1, 2, 3], partition_epoch=0, controller_epoch=1)
    yield p
    p.log.close()


def manager(tmp_path, live=(1, 2, 3), **config) -> tuple[ReplicaManager, list[list[int]]]:
    raw = {"broker.id": 1, "listeners": "127.0.0.1:9092", "log.dirs": str(tmp_path / "logs"),
           "zookeeper.connect": "127.0.0.1:1", **config}
    cache = MetadataCache(brokers={b: BrokerEndpoint(b, "127.0.0.1", 9000 + b) for b in live})
    rm = ReplicaManager(BrokerConfig.from_dict(raw), cache, None)
    asked: list[list[int]] = []

    async def change(p, isr, why, registered=()):  # what the leader would write to ZooKeeper
        asked.append(isr)
    rm._change_isr = change
    rm._spawn = _run_now
    return rm, asked


def _run_now(coroutine) -> None:
    """The change's coroutine run to its end at once (it awaits nothing here)."""
    try:
        coroutine.send(None)
    except StopIteration:
        pass


def test_only_the_follower_that_fetched_joins_the_isr(tmp_path, leader):
    leader.append_as_leader(build_batch([(None, b"a")]))
    leader.record_follower_fetch(2, 1)
    leader.record_follower_fetch(3, 1)
    leader.apply_isr([1, 2], 1)  # 3 stopped fetching and was dropped; nothing was written since
    rm, asked = manager(tmp_path)
    rm.record_follower_fetch(leader, 2, 1)  # 2's fetch: 3's last end still equals the high watermark
    assert asked == []
    rm.record_follower_fetch(leader, 3, 1)  # 3's own fetch: it has caught up
    assert asked == [[1, 2, 3]]


def test_a_follower_marked_offline_stays_out_unless_the_rule_is_mutated(tmp_path, leader):
    leader.apply_isr([1, 2], 1)
    rm, asked = manager(tmp_path, live=(1, 2))  # 3 is not registered: offline
    rm.record_follower_fetch(leader, 3, 0)
    assert asked == []
    rm, asked = manager(tmp_path, live=(1, 2), mutations=["offline-replica-isr"])
    rm.record_follower_fetch(leader, 3, 0)
    assert asked == [[1, 2, 3]]


def test_a_replica_whose_registration_is_gone_is_refused_by_zookeeper_itself(tmp_path, zk_root):
    # the leader's metadata may still show a zombie live after the controller took it as offline: the
    # ISR write checks its registration in the same ZooKeeper transaction
    connect, client = zk_root
    config = BrokerConfig.from_dict({"broker.id": 1, "listeners": "127.0.0.1:9092", "log.dirs": str(tmp_path / "l"),
                                     "zookeeper.connect": connect})
    zk = BrokerZk(config)
    zk.start(15)
    try:
        client.create(state_path("t", 0), PartitionState(1, 3, [1], 1).encode(), makepath=True)
        client.create(broker_path(2), b"{}", makepath=True)
        with pytest.raises(ReplicaNotLive, match=r"\[3\] not registered"):
            zk.update_isr("t", 0, 1, 3, [1, 3], registered=(3,))
        assert PartitionState.decode("t", 0, client.get(state_path("t", 0))[0]).isr == [1]
        written = zk.update_isr("t", 0, 1, 3, [1, 2], registered=(2,))
        assert written is not None and written.isr == [1, 2]
        assert PartitionState.decode("t", 0, client.get(state_path("t", 0))[0]).isr == [1, 2]
    finally:
        zk.stop()
