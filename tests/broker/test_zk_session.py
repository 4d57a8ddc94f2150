"""The broker's ZooKeeper session: it registers itself again after its session expires, and a broker
cut off from ZooKeeper (a zombie) keeps serving and replicating as before."""
from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.records import build_batch


def test_broker_registers_again_after_its_session_expires(start_brokers, wire):
    controller, brokers = start_brokers(1, **{"zookeeper.session.timeout.ms": 1500})
    controller.create_topic("expiry", {0: [1]})
    zk, broker = controller.zk, brokers[1]
    _, before = zk.get("/brokers/ids/1")
    broker.pause()  # a long GC pause: the session expires and the ephemeral node goes
    try:
        wait_for(lambda: zk.exists("/brokers/ids/1") is None, 15, "session expiry removed the registration",
                 broker.log_path)
    finally:
        broker.resume()
    stat = wait_for(lambda: zk.exists("/brokers/ids/1"), 15, "broker registered again", broker.log_path)
    assert stat.ephemeralOwner != before.ephemeralOwner
    with broker.client() as c:
        assert wire.produce(c, "expiry", 0, build_batch([(None, b"still here")])).error_code == ErrorCode.NONE


def test_a_broker_cut_from_zookeeper_keeps_serving_and_replicating(start_brokers, private_zookeeper, wire):
    ensemble, client = private_zookeeper
    controller, brokers = start_brokers(2, zk=(ensemble.connect_string, client), **{"replica.lag.time.max.ms": 500})
    controller.create_topic("cut", {0: [1, 2]})
    ensemble.nodes[0].kill()  # neither broker can reach ZooKeeper now
    bootstrap = "127.0.0.1:%d" % brokers[1].port
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:  # acks=all completes: the follower keeps fetching, the high watermark moves
        offsets = [producer.send("cut", value=b"z%d" % i, partition=0).get(15).offset for i in range(10)]
    finally:
        producer.close(5)
    assert offsets == list(range(10))
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=8000)
    try:
        consumer.assign([TopicPartition("cut", 0)])
        values = [m.value for _, m in zip(range(10), consumer)]
    finally:
        consumer.close()
    assert values == [b"z%d" % i for i in range(10)]
    brokers[2].stop()  # the leader cannot drop it from the ISR without ZooKeeper, so acks=all waits
    with brokers[1].client() as c:
        late = wire.produce(c, "cut", 0, build_batch([(None, b"unreplicated")]), timeout_ms=2000)
    assert late.error_code == ErrorCode.REQUEST_TIMED_OUT  # with an ISR of [1] it would have succeeded
    brokers[2].start(clean=False, wait=False)  # it becomes ready once it can register
    ensemble.nodes[0].start(clean=False)
    wait_for(lambda: sorted(client.get_children("/brokers/ids")) == ["1", "2"], 20,
             "both brokers registered once ZooKeeper is back", brokers[1].log_path)


def test_a_killed_broker_restarts_once_its_old_registration_expires(start_brokers, wire):
    controller, brokers = start_brokers(1, **{"zookeeper.session.timeout.ms": 1500})
    controller.create_topic("restart", {0: [1]})
    with brokers[1].client() as c:
        wire.produce(c, "restart", 0, build_batch([(None, b"before")]))
    _, old = controller.zk.get("/brokers/ids/1")
    brokers[1].kill()  # kill -9: its ephemeral node lives until the session times out
    brokers[1].start(clean=False)  # READY only once it holds /brokers/ids/1 again
    _, new = controller.zk.get("/brokers/ids/1")
    assert new.ephemeralOwner != old.ephemeralOwner
    controller.leader_and_isr(1, [("restart", 0)])
    with brokers[1].client() as c:
        assert wire.list_offset(c, "restart", 0, -1).offset == 1
