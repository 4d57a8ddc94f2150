"""KIP-253 deletion and KIP-694 reduction on a real 3-broker cluster (patched profile).

Shrinking 8 -> 6 marks 6 and 7 (ReadOnly, leaderEpochBeforeDeletion), bumps the undeleted
partitions, refuses new writes to the marked ones and an expansion of the topic; each marked
partition goes (from Metadata, ZooKeeper and every disk) once it is empty, after DeleteRecords or
when time-based retention (`retention.ms`) expired its records, and then the topic can grow again. With a delay (KIP-694) the partitions go after it, data or not;
StopReplica(delete) is retried until every replica has answered, so a dead replica holds the
removal up until it comes back and deletes its copy too.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition

from chaoskit.client.admin import AdminClient, AdminError
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.extensions import PartitionMode


@pytest.fixture(scope="module")
def cluster(kip_cluster: Callable[..., LocalCluster]) -> LocalCluster:
    return kip_cluster()


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> Any:
    with AdminClient(cluster.bootstrap_servers) as a:
        yield a


def grown(cluster: LocalCluster, admin: AdminClient, kip: Any, topic: str, initial: int, count: int) -> None:
    """A topic created with `initial` partitions, grown to `count`, three records in every partition."""
    admin.create_topic(topic, initial, 3)
    cluster.wait_until_replicated(topic)
    if count > initial:
        admin.expand(topic, count)
    kip.wait_consistent(cluster, topic)
    for p in range(count):
        assert kip.produce(cluster, admin, topic, p, [b"%d-%d" % (p, i) for i in range(3)]).error_code == 0


def read_all(cluster: LocalCluster, topic: str, partition: int) -> list[bytes]:
    """A stock consumer reads the partition from the beginning to its end."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out: list[bytes] = []
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=300).values():
                out.extend(r.value for r in records)
        return out
    finally:
        consumer.close()


def gone(cluster: LocalCluster, admin: AdminClient, kip: Any, topic: str, partition: int) -> bool:
    """The partition is in no broker's Metadata, not in ZooKeeper and on no disk."""
    for b in cluster.brokers.values():
        if b.running:
            with AdminClient("%s:%d" % b.address) as one:
                if partition in one.topic(topic).partitions:
                    return False
    znode = kip.znode(cluster, topic)
    return (partition not in znode.partitions and partition not in kip.state_znodes(cluster, topic)
            and not kip.directories(cluster, topic, partition))


def test_kip253_marked_partitions_drained_by_retention_go_and_the_topic_grows_again(
        cluster: LocalCluster, admin: AdminClient, kip: Any):
    """KIP-253 step 8: a marked partition goes once empty, "by retention" too. With retention.ms
    3000 the records of every partition expire; the marked ones, holding data until then, are
    removed (StopReplica deletes their copies) and the topic grows again. Row 4 of the audit."""
    topic = "retained"
    admin.create_topic(topic, 2, 3, config={"retention.ms": "3000"})
    cluster.wait_until_replicated(topic)
    admin.expand(topic, 4)
    kip.wait_consistent(cluster, topic)
    for p in range(4):
        assert kip.produce(cluster, admin, topic, p, [b"%d-%d" % (p, i) for i in range(3)]).error_code == 0
    assert admin.shrink(topic, 2) == {2: PartitionMode.READ_ONLY, 3: PartitionMode.READ_ONLY}
    assert read_all(cluster, topic, 3) == [b"3-0", b"3-1", b"3-2"]  # held until retention takes them
    assert set(kip.directories(cluster, topic, 3)) == {"broker-1", "broker-2", "broker-3"}
    wait_for(lambda: gone(cluster, admin, kip, topic, 2) and gone(cluster, admin, kip, topic, 3), 40,
             "partitions 2 and 3 emptied by retention and removed", cluster.active_controller().log_path)
    assert read_all(cluster, topic, 0) == []  # the undeleted partitions' records expired too, as Kafka's do
    regrown = admin.expand(topic, 4)
    assert (regrown.undeleted_partition_count, sorted(regrown.partitions)) == (4, [0, 1, 2, 3])


def test_kip253_shrink_8_to_6_then_drain_then_grow(cluster: LocalCluster, admin: AdminClient, kip: Any):
    topic = "shrinking"
    grown(cluster, admin, kip, topic, 4, 8)
    before = {p: i.leader_epoch for p, i in admin.topic(topic).partitions.items()}
    assert set(kip.directories(cluster, topic, 6)) == {"broker-1", "broker-2", "broker-3"}

    modes = admin.shrink(topic, 6)
    assert modes == {6: PartitionMode.READ_ONLY, 7: PartitionMode.READ_ONLY}
    kip.wait_consistent(cluster, topic)
    info = admin.topic(topic)
    assert (info.initial_partition_count, info.undeleted_partition_count) == (4, 6)
    assert info.marked_for_deletion == [6, 7]
    maps = admin.epoch_maps(topic)
    assert maps[6].before_deletion == maps[7].before_deletion == {p: before[p] for p in range(6)}
    assert {p: info.partitions[p].leader_epoch for p in range(8)} == \
        {**{p: before[p] + 1 for p in range(6)}, 6: before[6], 7: before[7]}  # only undeleted ones bumped

    refused = kip.produce(cluster, admin, topic, 6, [b"late"])
    assert refused.error_code == ErrorCode.INVALID_PARTITION_METADATA
    assert "ReadOnly" in refused.error_message and "marked for deletion" in refused.error_message
    assert kip.produce(cluster, admin, topic, 2, [b"new"], undeleted=6).error_code == ErrorCode.NONE
    assert read_all(cluster, topic, 6) == [b"6-0", b"6-1", b"6-2"]  # reads go on
    with pytest.raises(AdminError) as err:
        admin.expand(topic, 10)
    assert err.value.code == ErrorCode.INVALID_PARTITIONS and "[6, 7] marked for deletion" in err.value.message

    # 7 is emptied first: it goes, while 6 (still holding records) stays and still blocks growth
    admin.delete_records(topic, {7: -1})
    wait_for(lambda: gone(cluster, admin, kip, topic, 7), 30, "partition 7 removed everywhere")
    assert admin.topic(topic).marked_for_deletion == [6] and kip.directories(cluster, topic, 6)
    with pytest.raises(AdminError):
        admin.expand(topic, 10)

    admin.delete_records(topic, {6: -1})
    wait_for(lambda: gone(cluster, admin, kip, topic, 6), 30, "partition 6 removed everywhere")
    kip.wait_consistent(cluster, topic)
    assert sorted(kip.znode(cluster, topic).partitions) == list(range(6))

    regrown = admin.expand(topic, 8)
    assert (regrown.undeleted_partition_count, sorted(regrown.partitions)) == (8, list(range(8)))
    kip.wait_consistent(cluster, topic)
    fresh = admin.epoch_maps(topic, [6, 7])
    assert not fresh[6].before_deletion and set(fresh[6].after_creation) == set(range(6))
    assert kip.fetch(cluster, admin, topic, 6).records in (None, b"")  # a new, empty partition 6


def test_kip253_refuses_a_shrink_below_the_initial_count(cluster: LocalCluster, admin: AdminClient, kip: Any):
    grown(cluster, admin, kip, "floor", 3, 5)
    with pytest.raises(AdminError) as err:
        admin.shrink("floor", 2)
    assert err.value.code == ErrorCode.INVALID_PARTITIONS and "at least 3" in err.value.message
    with pytest.raises(AdminError):
        admin.shrink("floor", 5)  # not smaller
    assert admin.topic("floor").marked_for_deletion == []


def test_kip694_readonly_then_gone_after_the_delay(cluster: LocalCluster, admin: AdminClient, kip: Any):
    topic = "reducible"
    grown(cluster, admin, kip, topic, 2, 4)
    delay_s = 3.0
    marked_at = time.monotonic()
    assert admin.shrink(topic, 2, delay_ms=int(delay_s * 1000)) == {2: PartitionMode.READ_ONLY,
                                                                     3: PartitionMode.READ_ONLY}
    states = kip.state_znodes(cluster, topic)
    assert states[3].mode == PartitionMode.READ_ONLY and states[3].delete_at_ms is not None
    refused = kip.produce(cluster, admin, topic, 3, [b"late"])
    assert refused.error_code == ErrorCode.INVALID_PARTITION_METADATA and "ReadOnly" in refused.error_message
    assert read_all(cluster, topic, 3) == [b"3-0", b"3-1", b"3-2"]  # ReadOnly serves reads

    for p in (2, 3):  # records and all: KIP-694 does not wait for them to be consumed
        wait_for(lambda p=p: gone(cluster, admin, kip, topic, p), 30, f"partition {p} removed after the delay")
    assert time.monotonic() - marked_at >= delay_s
    kip.wait_consistent(cluster, topic)
    assert sorted(admin.topic(topic).partitions) == [0, 1]


def test_stop_replica_is_retried_until_the_dead_replica_deletes(cluster: LocalCluster, admin: AdminClient, kip: Any):
    topic = "stubborn"
    grown(cluster, admin, kip, topic, 1, 2)
    down = cluster.broker(3)
    down.kill()
    try:
        admin.shrink(topic, 1, delay_ms=0)
        # the live replicas delete their copies; the dead one cannot, so the partition stays in mode None
        wait_for(lambda: kip.directories(cluster, topic, 1) == ["broker-3"], 30,
                 "live replicas deleted partition 1")
        # once the controller has taken both live confirmations it could remove the partition: it must not
        waiting = f"{topic}-1: broker {{}} deleted its replica; still waiting on [3]"
        wait_for(lambda: any(waiting.format(b) in c.log_path.read_text() for b in (1, 2)
                             for c in cluster.controllers.values()),
                 30, "the controller taking the live replicas' deletions", cluster.active_controller().log_path)
        # the state znode and the assignment entry go in one transaction: the state stands for both
        state = kip.state_znodes(cluster, topic).get(1)
        assert state is not None, "partition 1 was removed before its dead replica deleted it"
        assert state.mode == PartitionMode.NONE
    finally:
        down.start(clean=False)
    wait_for(lambda: gone(cluster, admin, kip, topic, 1), 30, "partition 1 removed once broker 3 came back",
             down.log_path)
    kip.wait_consistent(cluster, topic)
