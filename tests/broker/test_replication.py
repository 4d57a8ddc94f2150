"""Three real brokers replicating a partition, the controller played by hand: followers fetch from
the leader, acks=all waits for them, a new leader serves everything acknowledged."""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer import OffsetCommitRequest

from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.records import build_batch, split_batches


def consume_all(bootstrap: str, topic: str, partition: int, count: int) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=8000)
    try:
        consumer.assign([TopicPartition(topic, partition)])
        out = []
        for msg in consumer:
            out.append((msg.offset, msg.value))
            if len(out) == count:
                break
        return out
    finally:
        consumer.close()


def test_replicated_produce_survives_leader_change(start_brokers):
    controller, brokers = start_brokers(3)
    controller.create_topic("events", {0: [1, 2, 3]})
    bootstrap = ",".join("127.0.0.1:%d" % b.port for b in brokers.values())
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=2)
    try:
        metas = [producer.send("events", value=b"e%d" % i, partition=0) for i in range(200)]
        producer.flush(15)
        offsets = [m.get(15).offset for m in metas]
    finally:
        producer.close(5)
    assert offsets == list(range(200))
    # broker 1 goes away; broker 2 leads with the same ISR, as a controller would elect it
    brokers[1].stop()
    controller.elect("events", 0, leader=2, replicas=[1, 2, 3], isr=[2, 3], send_to=[2, 3])
    got = consume_all("127.0.0.1:%d" % brokers[2].port, "events", 0, 200)
    assert got == [(i, b"e%d" % i) for i in range(200)]


def segment_bytes(broker, topic: str, partition: int) -> int:
    """Bytes in the partition's log segments on that broker's disk."""
    return sum(f.stat().st_size for f in (broker.log_dir / f"{topic}-{partition}").glob("*.log"))


def test_isr_shrinks_when_a_follower_stops_and_grows_when_it_returns(start_brokers, wire):
    controller, brokers = start_brokers(3, **{"replica.lag.time.max.ms": 1000})
    controller.create_topic("isr", {0: [1, 2, 3]})
    with brokers[1].client() as c:
        assert wire.produce(c, "isr", 0, build_batch([(None, b"before")])).error_code == ErrorCode.NONE
    brokers[3].stop()
    wait_for(lambda: controller.refresh_isr("isr", 0) == [1, 2], 10, "ISR shrank to [1, 2]", brokers[1].log_path)
    assert controller.zk.get_children("/isr_change_notification")
    with brokers[1].client() as c:  # acks=all now needs only brokers 1 and 2
        assert wire.produce(c, "isr", 0, build_batch([(None, b"during")]), timeout_ms=3000).error_code == ErrorCode.NONE
    brokers[3].start(clean=False)
    controller.update_metadata(list(brokers))
    controller.leader_and_isr(3, [("isr", 0)])
    wait_for(lambda: controller.refresh_isr("isr", 0) == [1, 2, 3], 10, "broker 3 rejoined the ISR",
             brokers[1].log_path)
    assert segment_bytes(brokers[3], "isr", 0) == segment_bytes(brokers[1], "isr", 0)


@pytest.mark.parametrize("fencing,told", [(True, False), (True, True), (False, False)],
                         ids=["patched-zombie", "patched-offline", "unpatched-zombie"])
def test_a_replica_the_controller_lost_does_not_rejoin_the_isr(start_brokers, wire, fencing, told):
    """KIP-320: broker 3 is cut from the controller, which moves on to leader epoch 1 without it.
    Patched, the leader fences its fetches (epoch 0) or, if it does learn the epoch, still keeps it
    out because UpdateMetadata marks it offline. Unpatched, the zombie catches up and rejoins."""
    controller, brokers = start_brokers(3, **{"replica.lag.time.max.ms": 1000,
                                              "leader.epoch.fencing.enable": fencing})
    controller.create_topic("zombie", {0: [1, 2, 3]})
    controller.offline = {3}
    controller.elect("zombie", 0, leader=1, replicas=[1, 2, 3], isr=[1, 2], send_to=[1, 2])
    if told:
        controller.leader_and_isr(3, [("zombie", 0)])
    with brokers[1].client() as c:
        for i in range(20):
            assert wire.produce(c, "zombie", 0, build_batch([(None, b"%d" % i)])).error_code == ErrorCode.NONE
    if fencing:
        if told:  # it fetches at the right epoch and has everything, yet stays out
            wait_for(lambda: segment_bytes(brokers[3], "zombie", 0) == segment_bytes(brokers[1], "zombie", 0),
                     10, "broker 3 caught up", brokers[3].log_path)
        else:
            wait_for(lambda: "FENCED_LEADER_EPOCH" in brokers[3].log_text(), 10, "broker 3 fenced",
                     brokers[3].log_path)
        with brokers[1].client() as c:  # a few more follower fetches go by
            wire.produce(c, "zombie", 0, build_batch([(None, b"more")]))
            wire.fetch(c, "zombie", 0, 21, max_wait_ms=1000)
        assert controller.refresh_isr("zombie", 0) == [1, 2]
    else:
        wait_for(lambda: controller.refresh_isr("zombie", 0) == [1, 2, 3], 10, "the zombie rejoined",
                 brokers[1].log_path)


def test_consumers_read_to_the_high_watermark_followers_to_the_log_end(start_brokers, wire):
    controller, brokers = start_brokers(2, **{"replica.lag.time.max.ms": 60000})
    controller.create_topic("hw", {0: [1, 2]})
    brokers[2].stop()  # still in the ISR, so the high watermark cannot pass what it has
    with brokers[1].client() as c:
        for i in range(3):
            assert wire.produce(c, "hw", 0, build_batch([(None, b"%d" % i)]), acks=1).error_code == ErrorCode.NONE
        consumer = wire.fetch(c, "hw", 0, 0)
        assert (consumer.high_watermark, consumer.records or b"") == (0, b"")
        assert wire.list_offset(c, "hw", 0, -1).offset == 0
        follower = wire.fetch(c, "hw", 0, 0, replica_id=2, current_leader_epoch=0)
        assert len(split_batches(follower.records)) == 3
        slow = wire.produce(c, "hw", 0, build_batch([(None, b"all")]), acks=-1, timeout_ms=300)
        assert slow.error_code == ErrorCode.REQUEST_TIMED_OUT


def test_the_debugging_replica_id_reads_a_followers_own_log_end(start_brokers, wire):
    """Kafka's debugging id (-2) may ask any replica: how a fault sees what a zombie follower holds.
    Naming a leader epoch (as the controller does), or asking as a consumer, still needs the leader."""
    controller, brokers = start_brokers(2, **{"replica.lag.time.max.ms": 60000})
    controller.create_topic("dbg", {0: [1, 2]})
    with brokers[1].client() as c:
        for i in range(3):
            assert wire.produce(c, "dbg", 0, build_batch([(None, b"%d" % i)]), acks=-1).error_code == ErrorCode.NONE
    with brokers[2].client() as c:
        wait_for(lambda: wire.list_offset(c, "dbg", 0, -1, replica_id=-2).offset == 3, 10,
                 "the follower's log end reaching 3", brokers[2].log_path)
        assert wire.list_offset(c, "dbg", 0, -1, replica_id=-2, current_leader_epoch=0).error_code == \
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert wire.list_offset(c, "dbg", 0, -1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_new_follower_truncates_what_the_leader_never_had(start_brokers, wire):
    controller, brokers = start_brokers(2, **{"replica.lag.time.max.ms": 60000})
    controller.create_topic("diverge", {0: [1, 2]})
    brokers[2].stop()
    with brokers[1].client() as c:
        for i in range(10):
            wire.produce(c, "diverge", 0, build_batch([(None, b"old%d" % i)]), acks=1)
    brokers[1].stop()
    brokers[2].start(clean=False)
    controller.update_metadata([2])
    controller.elect("diverge", 0, leader=2, replicas=[1, 2], isr=[2], send_to=[2])  # unclean
    with brokers[2].client() as c:
        for i in range(5):
            assert wire.produce(c, "diverge", 0, build_batch([(None, b"new%d" % i)])).error_code == ErrorCode.NONE
    brokers[1].start(clean=False)
    controller.update_metadata(list(brokers))
    controller.leader_and_isr(1, [("diverge", 0)])
    wait_for(lambda: controller.refresh_isr("diverge", 0) == [1, 2], 10, "broker 1 caught up", brokers[2].log_path)
    assert "truncating from 10 to 0" in brokers[1].log_text()
    controller.elect("diverge", 0, leader=1, replicas=[1, 2], isr=[1, 2])
    got = consume_all("127.0.0.1:%d" % brokers[1].port, "diverge", 0, 5)
    assert got == [(i, b"new%d" % i) for i in range(5)]


def test_a_deposed_leader_stops_leading_when_its_isr_change_is_refused(start_brokers, wire):
    """Broker 1 never hears that broker 2 took over (epoch 1). When it tries to drop broker 2 (which
    stopped fetching from it) from the ISR, ZooKeeper shows the newer epoch: it steps down instead."""
    controller, brokers = start_brokers(2, **{"replica.lag.time.max.ms": 500})
    controller.create_topic("deposed", {0: [1, 2]})
    controller.elect("deposed", 0, leader=2, replicas=[1, 2], isr=[1, 2], send_to=[2])
    wait_for(lambda: "no longer leading at epoch 0" in brokers[1].log_text(), 10, "broker 1 stepped down",
             brokers[1].log_path)
    with brokers[1].client() as c:
        refused = wire.produce(c, "deposed", 0, build_batch([(None, b"split brain")]), acks=1)
    assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # its ISR of [1] never landed (broker 2, the real leader, may have dropped broker 1 by now)
    assert controller.refresh_isr("deposed", 0) in ([1, 2], [2])


def test_a_leader_zookeeper_shows_at_a_newer_epoch_keeps_leading_and_serving_its_groups(start_brokers):
    """The controller rewrote broker 1's leadership at epoch 1 (as when it drops a dead follower) and
    its LeaderAndIsr is still on the way when broker 1's own ISR change is refused. Broker 1 still
    leads: it waits for epoch 1 instead of stepping down, and its group coordinator keeps serving the
    groups of that `__consumer_offsets` partition once epoch 1 arrives."""
    controller, brokers = start_brokers(2, **{"replica.lag.time.max.ms": 500})
    controller.create_topic("__consumer_offsets", {0: [1, 2]})
    controller.create_topic("t", {0: [1]})  # offsets are taken for existing partitions only
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        T(name="t", partitions=[T.OffsetCommitRequestPartition(partition_index=0, committed_offset=7,
                                                               committed_metadata="")])])

    def committed() -> bool:
        with brokers[1].client() as c:
            return c.request(commit, 2).topics[0].partitions[0].error_code == ErrorCode.NONE

    wait_for(committed, 10, "broker 1 coordinating group g", brokers[1].log_path)
    controller.elect("__consumer_offsets", 0, leader=1, replicas=[1, 2], isr=[1, 2], send_to=[])
    brokers[2].stop()  # broker 1 tries to drop it at epoch 0; ZooKeeper has epoch 1
    refused = ("waiting for the controller", "no longer leading")  # what a broker logs, either way
    wait_for(lambda: any(m in brokers[1].log_text() for m in refused), 10, "broker 1's ISR change refused",
             brokers[1].log_path)
    controller.leader_and_isr(1, [("__consumer_offsets", 0)])
    wait_for(lambda: controller.refresh_isr("__consumer_offsets", 0) == [1], 10, "broker 1 dropping 2 at epoch 1",
             brokers[1].log_path)
    wait_for(committed, 15, "broker 1 still coordinating group g at epoch 1", brokers[1].log_path)
