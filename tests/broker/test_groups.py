"""The group APIs through a real broker: FindCoordinator, JoinGroup/SyncGroup/Heartbeat and
OffsetCommit/OffsetFetch reach the GroupCoordinator, whose offsets live in `__consumer_offsets`
(replicated writes through this broker's partitions)."""
from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer


def read(bootstrap: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer("jobs", bootstrap_servers=bootstrap, group_id="workers", auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=15000)
    try:
        values = [m.value for _, m in zip(range(count), consumer)]
        consumer.commit()
        return values
    finally:
        consumer.close()


def test_a_group_resumes_from_its_committed_offset(start_brokers):
    controller, brokers = start_brokers(1, **{"offsets.topic.num.partitions": 3})
    controller.create_topic("jobs", {0: [1]})
    bootstrap = "127.0.0.1:%d" % brokers[1].port
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for i in range(10):
            producer.send("jobs", value=b"j%d" % i)
        producer.flush(10)
    finally:
        producer.close(5)
    with controller.following_zookeeper():  # elects __consumer_offsets once FindCoordinator creates it
        assert read(bootstrap, 4) == [b"j%d" % i for i in range(4)]
        assert read(bootstrap, 6) == [b"j%d" % i for i in range(4, 10)]
    assert sorted(p for t, p in controller.states if t == "__consumer_offsets") == [0, 1, 2]
