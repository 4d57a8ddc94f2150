"""KIP-253 deletion and KIP-694 reduction on a real 3-broker cluster (patched profile).

Shrinking 8 -> 6 marks 6 and 7 (ReadOnly, leaderEpochBeforeDeletion), bumps the undeleted
partitions, refuses new writes to the marked ones and an expansion of the topic; each marked
partition goes (from Metadata, ZooKeeper and every disk) once it is empty, after DeleteRecords or
when time-based retention (`retention.ms`) expired its records, and then the topic can grow again. With a delay (KIP-694) the partitions go after it, data or not;
StopReplica(delete) is retried until every replica has answered, so a dead replica holds the
removal up until it comes back and deletes its copy too. KIP-694's request names the partitions
(a tail of the undeleted ones) and answers each with its mode and error; `immediate_delete` removes
at once, not at the next check; clients that cannot read modes get LEADER_NOT_AVAILABLE.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.protocol.metadata import MetadataRequest

from chaoskit.client.admin import AdminClient, AdminError, DeletePartitions
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.wire_client import WireClient


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
    assert err.value.code == ErrorCode.INVALID_PARTITIONS and "initial partition count 3" in err.value.message
    with pytest.raises(AdminError):
        admin.shrink("floor", 5)  # not smaller
    with pytest.raises(AdminError) as err:  # told a count the topic does not have: the controller refuses
        admin.shrink("floor", 3, undeleted=4)
    assert err.value.code == ErrorCode.INVALID_PARTITIONS and "[4] above it are kept" in err.value.message
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
    refused = kip.produce(cluster, admin, topic, 3, [b"late"])  # mode aware: told its metadata is stale
    assert refused.error_code == ErrorCode.INVALID_PARTITION_METADATA and "ReadOnly" in refused.error_message
    assert read_all(cluster, topic, 3) == [b"3-0", b"3-1", b"3-2"]  # ReadOnly serves reads

    for p in (2, 3):  # records and all: KIP-694 does not wait for them to be consumed
        wait_for(lambda p=p: gone(cluster, admin, kip, topic, p), 30, f"partition {p} removed after the delay")
    assert time.monotonic() - marked_at >= delay_s
    kip.wait_consistent(cluster, topic)
    assert sorted(admin.topic(topic).partitions) == [0, 1]


def test_kip694_partition_lists_and_their_per_partition_errors(cluster: LocalCluster, admin: AdminClient, kip: Any):
    grown(cluster, admin, kip, "listed", 2, 6)
    answer = admin.delete_partition_list({"listed": [3, 5], "absent": [0]}, delay_ms=60_000)
    hole = answer["listed"].partitions
    assert hole[3].code == ErrorCode.INVALID_PARTITIONS and "[4] above it are kept" in hole[3].message
    assert hole[5].code == ErrorCode.INVALID_PARTITIONS and "left unchanged" in hole[5].message
    assert hole[3].status == hole[5].status == PartitionMode.READ_WRITE
    assert answer["absent"].partitions[0].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    unknown = admin.delete_partition_list({"listed": [5, 9]})["listed"].partitions
    assert (unknown[9].code, unknown[5].code) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_PARTITIONS)
    floor = admin.delete_partition_list({"listed": [1, 2, 3, 4, 5]})["listed"].partitions
    assert floor[1].code == ErrorCode.INVALID_PARTITIONS and "initial partition count 2" in floor[1].message
    for bad in ({"delay_ms": -2}, {"delay_ms": 5, "immediate": True}):
        with pytest.raises(AdminError) as err:
            admin.delete_partition_list({"listed": [5]}, **bad)
        assert err.value.code == ErrorCode.INVALID_REQUEST
    assert admin.topic("listed").marked_for_deletion == []  # every refusal left the topic alone

    for _ in range(2):  # the second time is a retry: the partitions are marked already, nothing changes
        done = admin.delete_partition_list({"listed": [4, 5]}, delay_ms=60_000)["listed"]
        assert done.ok and done.modes == {4: PartitionMode.READ_ONLY, 5: PartitionMode.READ_ONLY}
        info = admin.topic("listed")
        assert (info.undeleted_partition_count, info.marked_for_deletion) == (4, [4, 5])


def test_kip694_clients_that_cannot_read_modes_get_leader_not_available(
        cluster: LocalCluster, admin: AdminClient, kip: Any):
    topic = "hidden"
    grown(cluster, admin, kip, topic, 1, 3)
    admin.shrink(topic, 2, delay_ms=60_000)  # partition 2 ReadOnly for a minute
    kip.wait_consistent(cluster, topic)
    refused = kip.produce(cluster, admin, topic, 2, [b"late"], mode_aware=False)  # as a stock producer sends it
    assert refused.error_code == ErrorCode.LEADER_NOT_AVAILABLE and "ReadOnly" in refused.error_message
    assert kip.produce(cluster, admin, topic, 1, [b"fine"], mode_aware=False).error_code == ErrorCode.NONE
    for version, marked in ((4, (ErrorCode.LEADER_NOT_AVAILABLE, -1)), (8, (ErrorCode.LEADER_NOT_AVAILABLE, -1)),
                            (9, None), (12, None)):  # v9 is the first to carry `mode`
        with WireClient(*cluster.broker(1).address, timeout=15) as c:
            answer = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic, topic_id=None)],
                                               allow_auto_topic_creation=False), version)
        parts = {p.partition_index: (p.error_code, p.leader_id) for p in answer.topics[0].partitions}
        assert all(code == ErrorCode.NONE and leader > 0 for code, leader in (parts[0], parts[1])), version
        if marked:
            assert parts[2] == marked, version
        else:
            assert parts[2][0] == ErrorCode.NONE and parts[2][1] > 0, version
    assert read_all(cluster, topic, 2) == [b"2-0", b"2-1", b"2-2"]  # stock kafka-python (v12) still reads it


def test_stock_kafka_python_at_old_and_at_its_own_versions_around_a_readonly_partition(
        cluster: LocalCluster, admin: AdminClient, kip: Any):
    """What a stock client sees of a ReadOnly partition (KIP-694). Made to speak Kafka 0.11
    (`api_version=(0, 11)`: Metadata v4 and Produce v3, the oldest our broker serves it), kafka-python
    is told LEADER_NOT_AVAILABLE with no leader for the partition, so it never sends there and its
    sends elsewhere go on. At its own versions (Metadata v12) it sees the leader, like a client that
    reads modes, but it cannot read the mode: its Produce, without chaoskit's `mode_aware` tag, is
    refused LEADER_NOT_AVAILABLE, which it retries until it gives up."""
    from kafka import KafkaProducer
    from kafka.errors import LeaderNotAvailableError

    topic = "stock-versions"
    grown(cluster, admin, kip, topic, 1, 3)
    admin.shrink(topic, 2, delay_ms=60_000)  # partition 2 ReadOnly for a minute
    kip.wait_consistent(cluster, topic)
    marked = TopicPartition(topic, 2)
    for versions in ((0, 11), None):
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, api_version=versions, retries=0,
                                 request_timeout_ms=10_000, max_block_ms=10_000)
        try:
            assert producer.partitions_for(topic) == {0, 1, 2}
            leader = producer._metadata.leader_for_partition(marked)
            assert producer.send(topic, b"fine", partition=1).get(timeout=15).offset >= 3
            if versions:
                assert leader == -1 and producer._metadata.available_partitions_for_topic(topic) == {0, 1}
            else:
                assert leader is not None and leader > 0
                with pytest.raises(LeaderNotAvailableError):
                    producer.send(topic, b"late", partition=2).get(timeout=15)
        finally:
            producer.close(timeout=5)
    assert read_all(cluster, topic, 2) == [b"2-0", b"2-1", b"2-2"]  # nothing reached it


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


def test_kip694_immediate_delete_goes_at_once_while_delays_wait_for_the_check(
        kip_cluster: Callable[..., LocalCluster], kip: Any):
    # the KIP's check interval (its default, 5 minutes), set explicitly as every test cluster sets its own
    slow = kip_cluster(controllers=1, controller_config={"delete.topic.partition.interval.delay.ms": 300_000})
    with AdminClient(slow.bootstrap_servers) as admin:
        for topic in ("later", "now"):
            grown(slow, admin, kip, topic, 1, 2)
        admin.shrink("later", 1, delay_ms=1)  # due a millisecond from now, but looked at only on the check
        result = admin.delete_partitions({"now": DeletePartitions(1, immediate_delete=True)})["now"]
        assert result.ok and result.modes[1] in (PartitionMode.READ_ONLY, PartitionMode.NONE)
        wait_for(lambda: gone(slow, admin, kip, "now", 1), 30, "partition 1 of 'now' removed without a check")
        late = kip.state_znodes(slow, "later")[1]
        assert late.mode == PartitionMode.READ_ONLY and late.delete_at_ms < time.time() * 1000  # overdue, waiting


def test_the_delete_records_fault_drains_what_the_group_committed(cluster: LocalCluster, admin: AdminClient, kip: Any):
    """The `delete-records` fault, an operator's drain: DeleteRecords of each marked partition up to
    what the run's group committed, once that is the partition's end; a partition the group has not
    committed to its end is left with its records. Drained ones are then removed, and with them the
    group's committed offsets of them."""
    from kafka import KafkaConsumer, OffsetAndMetadata

    from chaoskit.nemesis.ops import fault_op
    from chaoskit.nemesis.schedule import Window
    from chaoskit.run.live import Run
    from chaoskit_plugins.faults import FAULTS

    topic = "operator-drained"
    grown(cluster, admin, kip, topic, 4, 8)
    admin.shrink(topic, 6)
    run = Run.around(cluster, record=(ops := []).append)
    group = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=run.group_id, enable_auto_commit=False)
    try:  # the group read 6 to its end and 7 only in part
        group.commit({TopicPartition(topic, 6): OffsetAndMetadata(3, "", -1), TopicPartition(topic, 7): OffsetAndMetadata(1, "", -1)})
    finally:
        group.close()
    nemesis = FAULTS["delete-records"]()
    nemesis.setup(run)
    window = Window(1, 0.0, 1.0, "delete-records", "client", {"topic": topic, "committed_within_s": 2}, 0)
    resolved = nemesis.invoke(run, fault_op("start", window))["value"]["resolved"]
    assert (resolved["marked"], resolved["deleted"], resolved["waiting"]) == ([6, 7], {6: 3}, [7])
    assert [(op["type"], op["partition"], op.get("offset")) for op in ops if op["f"] == "delete-records"] == \
        [("invoke", 6, None), ("ok", 6, 3)]
    wait_for(lambda: gone(cluster, admin, kip, topic, 6), 30, "partition 6 removed once drained",
             cluster.active_controller().log_path)
    # its removal recorded by the fault's ZooKeeper watch, which ZooKeeper told before any broker knew
    removals = lambda: [op["partition"] for op in ops if op["f"] == "partition-removed"]  # noqa: E731
    assert wait_for(removals, 5, "a partition-removed op for partition 6") == [6]
    nemesis.teardown(run)
    assert admin.topic(topic).marked_for_deletion == [7] and read_all(cluster, topic, 7) == [b"7-0", b"7-1", b"7-2"]
    # as Kafka: the group's offset of the removed partition goes with it (a partition 6 made again
    # by a later expansion is read from its reset point), the other stays
    from kafka.admin import KafkaAdminClient

    def committed() -> dict[int, int]:
        stock = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            found = stock.list_group_offsets({run.group_id: None})[run.group_id]
        finally:
            stock.close()
        return {tp.partition: meta.offset for tp, meta in found.items() if tp.topic == topic}

    assert wait_for(lambda: committed() == {7: 1}, 10, "the group's offset of removed partition 6 gone")
