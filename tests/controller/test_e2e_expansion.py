"""KIP-253 expansion on a real 3-broker cluster (patched profile): a 4-partition topic grown to 6
and then 8 reports initial 4 / undeleted 8 in Metadata, every older partition's leader epoch goes
up by one per expansion, each new partition's leaderEpochAfterCreation names the epochs before it,
a produce or fetch with a stale count gets INVALID_PARTITION_METADATA, and stock clients
(kafka-python, confluent-kafka/librdkafka, kcat) keep working after the expansion.
"""
from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from kafka import KafkaConsumer, KafkaProducer

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.internal import ConsumerGroupPositionRequest

TOPIC = "orders"


@pytest.fixture(scope="module")
def expanded(cluster: LocalCluster, admin: AdminClient, kip: Any) -> dict[str, Any]:
    """orders: 4 partitions with records, grown to 6 then 8; the epochs seen at each step."""
    admin.create_topic(TOPIC, 4, 3)
    cluster.wait_until_replicated(TOPIC)
    for p in range(4):
        assert kip.produce(cluster, admin, TOPIC, p, [b"before-%d" % p], undeleted=4).error_code == ErrorCode.NONE
    before = {p: i.leader_epoch for p, i in admin.topic(TOPIC).partitions.items()}
    at6 = admin.expand(TOPIC, 6)
    maps6 = admin.epoch_maps(TOPIC)
    middle = {p: i.leader_epoch for p, i in at6.partitions.items()}
    at8 = admin.expand(TOPIC, 8)
    kip.wait_consistent(cluster, TOPIC)
    return {"before": before, "at6": at6, "maps6": maps6, "middle": middle, "at8": admin.topic(TOPIC),
            "maps8": admin.epoch_maps(TOPIC), "expand8_answer": at8}


def test_counts_epochs_and_maps_after_4_to_6_to_8(cluster: LocalCluster, expanded: dict[str, Any], kip: Any):
    before, middle, at8 = expanded["before"], expanded["middle"], expanded["at8"]
    assert (expanded["at6"].initial_partition_count, expanded["at6"].undeleted_partition_count) == (4, 6)
    assert (at8.initial_partition_count, at8.undeleted_partition_count) == (4, 8)
    assert sorted(at8.partitions) == list(range(8))
    # one bump per expansion for every partition that existed before it
    assert {p: middle[p] for p in range(4)} == {p: before[p] + 1 for p in range(4)}
    final = {p: i.leader_epoch for p, i in at8.partitions.items()}
    assert {p: final[p] for p in range(4)} == {p: before[p] + 2 for p in range(4)}
    assert {p: final[p] for p in (4, 5)} == {p: middle[p] + 1 for p in (4, 5)}
    # each new partition names the epochs of the partitions before its expansion
    maps = expanded["maps8"]
    assert maps[4].after_creation == maps[5].after_creation == before
    assert maps[6].after_creation == maps[7].after_creation == middle
    assert all(not maps[p].after_creation for p in range(4))
    assert all(not m.before_deletion for m in maps.values())
    # ZooKeeper holds the same: topic znode counts and the state znodes' maps
    znode, states = kip.znode(cluster, TOPIC), kip.state_znodes(cluster, TOPIC)
    assert (znode.initial_partition_count, znode.undeleted_partition_count) == (4, 8)
    assert {p: s.after_creation for p, s in states.items()} == {p: maps[p].after_creation for p in range(8)}
    assert {p: s.leader_epoch for p, s in states.items()} == final


def test_every_broker_reports_the_counts(cluster: LocalCluster, expanded: dict[str, Any]):
    for b in cluster.brokers.values():
        with AdminClient("%s:%d" % b.address) as one:
            info = one.topic(TOPIC)
        assert (info.initial_partition_count, info.undeleted_partition_count, len(info.partitions)) == (4, 8, 8), b.name


def test_a_stale_count_is_refused_and_the_current_one_served(cluster: LocalCluster, admin: AdminClient,
                                                              expanded: dict[str, Any], kip: Any):
    for p in (0, 5, 7):
        stale = kip.produce(cluster, admin, TOPIC, p, [b"stale"], undeleted=6)
        assert stale.error_code == ErrorCode.INVALID_PARTITION_METADATA, p
        assert "undeleted_partition_count 6 is stale" in stale.error_message and "8" in stale.error_message
        assert kip.produce(cluster, admin, TOPIC, p, [b"current-%d" % p], undeleted=8).error_code == ErrorCode.NONE
        assert kip.produce(cluster, admin, TOPIC, p, [b"untagged-%d" % p]).error_code == ErrorCode.NONE
        assert kip.fetch(cluster, admin, TOPIC, p, undeleted=6).error_code == ErrorCode.INVALID_PARTITION_METADATA
        fetched = kip.fetch(cluster, admin, TOPIC, p, undeleted=8)
        assert fetched.error_code == ErrorCode.NONE and b"current-%d" % p in kip.values(fetched)
    assert kip.values(kip.fetch(cluster, admin, TOPIC, 0))[:1] == [b"before-0"]  # no tag: served as before


def test_stock_kafka_python_after_expansion(cluster: LocalCluster, expanded: dict[str, Any]):
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=5)
    try:
        acked = [producer.send(TOPIC, key=b"kp-%d" % i, value=b"kp-%d" % i) for i in range(200)]
        producer.flush(60)
        offsets = [f.get(timeout=60) for f in acked]
    finally:
        producer.close()
    assert {m.partition for m in offsets} == set(range(8))  # the stock partitioner sees all 8
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=cluster.bootstrap_servers, group_id="kp-after",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        seen: set[bytes] = set()
        deadline = time.monotonic() + 60
        while not {b"kp-%d" % i for i in range(200)} <= seen and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                seen.update(r.value for r in records)
        assert {b"kp-%d" % i for i in range(200)} <= seen
        assert {tp.partition for tp in consumer.assignment()} == set(range(8))
    finally:
        consumer.close()


def test_stock_librdkafka_and_kcat_after_expansion(cluster: LocalCluster, expanded: dict[str, Any]):
    errors: list[Any] = []
    producer = CKProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(100):
        producer.produce(TOPIC, key=b"ck-%d" % i, value=b"ck-%d" % i,
                         on_delivery=lambda err, _msg: errors.append(err) if err else None)
    assert producer.flush(60) == 0 and not errors
    consumer = CKConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ck-after",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    try:
        seen: set[bytes] = set()
        deadline = time.monotonic() + 60
        while not {b"ck-%d" % i for i in range(100)} <= seen and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=500, timeout=0.5):
                assert m.error() is None, m.error()
                seen.add(m.value())
        assert {b"ck-%d" % i for i in range(100)} <= seen
    finally:
        consumer.close()
    listed = subprocess.run(["kcat", "-L", "-b", cluster.bootstrap_servers, "-t", TOPIC, "-m", "10"],
                            capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0, listed.stderr
    assert f'topic "{TOPIC}" with 8 partitions' in listed.stdout
    produced = subprocess.run(["kcat", "-P", "-b", cluster.bootstrap_servers, "-t", TOPIC, "-p", "7", "-m", "10"],
                              input="kcat-line\n", capture_output=True, text=True, timeout=30)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(["kcat", "-C", "-b", cluster.bootstrap_servers, "-t", TOPIC, "-p", "7", "-o",
                               "beginning", "-e", "-q", "-m", "10"], capture_output=True, text=True, timeout=30)
    assert consumed.returncode == 0, consumed.stderr
    assert "kcat-line" in consumed.stdout.splitlines()


def test_consumer_group_position_at_the_real_coordinator(cluster: LocalCluster, admin: AdminClient,
                                                          expanded: dict[str, Any]):
    """A member of a live group reports and asks for positions through its coordinator."""
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=cluster.bootstrap_servers, group_id="positions",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        wait_for(lambda: consumer.poll(timeout_ms=200) is not None and consumer.assignment(), 60,
                 "the consumer's first assignment")
        coordinator = consumer._coordinator  # the member id and generation a KIP-253 consumer would send
        node_id = int(str(coordinator.coordinator_id).rsplit("-", 1)[-1])  # kafka-python names it coordinator-<id>
        R = ConsumerGroupPositionRequest.ConsumerGroupPositionRequestTopic
        P = R.ConsumerGroupPositionRequestPartition

        def ask(partitions: list[Any], gen: int | None = None, member: str | None = None) -> Any:
            generation = coordinator._generation  # the member's own, now: a slow machine may see it rejoin
            request = ConsumerGroupPositionRequest(
                group_id="positions", generation_id=generation.generation_id if gen is None else gen,
                member_id=generation.member_id if member is None else member,
                topics=[R(name=TOPIC, partitions=partitions)])
            return admin.request(request, 0, broker=node_id)

        def asked_as_a_member() -> Any:
            consumer.poll(timeout_ms=100)  # keeps its membership while it is asked for
            answer = ask([P(partition_index=6, need_position=True, position=-1)])
            return answer if answer.error_code == ErrorCode.NONE else None

        first = wait_for(asked_as_a_member, 30, "a ConsumerGroupPosition answer to a member of the group")
        generation = coordinator._generation
        assert [(p.partition_index, p.position) for p in first.topics[0].partitions] == [(6, -1)]
        ask([P(partition_index=6, need_position=False, position=42)])
        later = ask([P(partition_index=6, need_position=True, position=-1)])
        assert [(p.partition_index, p.position) for p in later.topics[0].partitions] == [(6, 42)]
        assert ask([], gen=generation.generation_id + 5).error_code == ErrorCode.ILLEGAL_GENERATION
        assert ask([], member="nobody").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    finally:
        consumer.close()


def test_topic_config_enable_ordered_delivery_false_skips_the_count_check(cluster: LocalCluster, admin: AdminClient,
                                                                         kip: Any):
    admin.create_topic("unordered", 2, 3, config={"enable.ordered.delivery": "false"})
    cluster.wait_until_replicated("unordered")
    admin.expand("unordered", 4)
    kip.wait_consistent(cluster, "unordered")
    assert kip.produce(cluster, admin, "unordered", 1, [b"x"], undeleted=2).error_code == ErrorCode.NONE
    assert kip.fetch(cluster, admin, "unordered", 1, undeleted=2).error_code == ErrorCode.NONE
