"""One real broker process on real ZooKeeper, with the controller played by hand: stock
kafka-python clients produce and fetch through it."""
from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def test_kafka_python_produces_and_fetches(start_brokers):
    controller, brokers = start_brokers(1)
    controller.create_topic("orders", {0: [1], 1: [1]})
    bootstrap = "127.0.0.1:%d" % brokers[1].port
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        futures = [producer.send("orders", key=b"k%d" % (i % 4), value=b"v%d" % i, partition=i % 2)
                   for i in range(100)]
        producer.flush(10)
        metas = [f.get(10) for f in futures]
    finally:
        producer.close(5)
    assert sorted(m.offset for m in metas if m.partition == 0) == list(range(50))
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition("orders", 0), TopicPartition("orders", 1)])
        got = []
        for msg in consumer:
            got.append((msg.partition, msg.offset, msg.value))
            if len(got) == 100:
                break
    finally:
        consumer.close()
    assert sorted(v for _p, _o, v in got) == sorted(b"v%d" % i for i in range(100))
    assert [o for p, o, _v in got if p == 1] == list(range(50))


def test_librdkafka_produces_and_fetches(start_brokers):
    from confluent_kafka import Consumer, Producer, TopicPartition as Tp
    controller, brokers = start_brokers(1)
    controller.create_topic("rd", {0: [1]})
    bootstrap = "127.0.0.1:%d" % brokers[1].port
    delivered = []
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(50):
        producer.produce("rd", value=b"r%d" % i, partition=0,
                         on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert producer.flush(15) == 0
    assert [e for e, _ in delivered if e is not None] == []
    assert sorted(o for _, o in delivered) == list(range(50))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([Tp("rd", 0, 0)])
        got = []
        while len(got) < 50:
            msg = consumer.poll(10)
            assert msg is not None, f"only {len(got)} of 50 records arrived"
            assert msg.error() is None, msg.error()
            got.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    assert got == [(i, b"r%d" % i) for i in range(50)]
