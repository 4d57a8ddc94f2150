"""Issue 3 end to end on one 3-broker, 2-controller cluster, on each backend (processes, containers): stock clients (kafka-python, librdkafka
via confluent-kafka, kcat) work unchanged; killing a partition leader mid-stream loses no
acknowledged record; killing the active controller leaves a successor that still handles the
next broker failure."""
from __future__ import annotations

import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for

RECORDS = 20_000
KEYS = 50

Record = tuple[int, int, bytes, bytes]  # partition, offset, key, value


@pytest.fixture(scope="module")
def cluster(make_cluster: Callable[..., LocalCluster], backend: str) -> Iterator[LocalCluster]:
    cluster = make_cluster(brokers=3, controllers=2, backend=backend)
    yield cluster
    cluster.stop()  # before the other backend's cluster starts


def create_topic(cluster: LocalCluster, name: str, partitions: int = 3, rf: int = 3,
                 config: dict[str, str] | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(name, partitions, rf, topic_configs=config or {})])
    finally:
        admin.close()
    cluster.wait_until_replicated(name)


def check_delivery(acked: dict[bytes, tuple[int, int]], consumed: list[Record]) -> None:
    """Every acknowledged record consumed exactly once, at the offset the producer was told, each
    partition in offset order, so each key (one partition) in send order."""
    values = [v for _, _, _, v in consumed]
    dups = len(values) - len(set(values))
    assert dups == 0, f"{dups} records consumed twice"
    seen = {v: (p, o) for p, o, _, v in consumed}
    missing = [v for v in acked if v not in seen]
    assert not missing, f"{len(missing)} acknowledged records never consumed, e.g. {missing[:5]}"
    moved = [(v, acked[v], seen[v]) for v in acked if seen[v] != acked[v]]
    assert not moved, f"records consumed at another offset than acknowledged: {moved[:5]}"
    last: dict[int, int] = {}
    by_key: dict[bytes, list[int]] = defaultdict(list)
    for p, o, k, v in consumed:
        assert o > last.get(p, -1), f"partition {p}: offset {o} after {last.get(p)}"
        last[p] = o
        by_key[k].append(int(v))
    for k, sequence in by_key.items():
        assert sequence == sorted(sequence), f"key {k!r} out of order"


def poll_kafka_python(consumer: KafkaConsumer, want: int, timeout: float = 90.0) -> list[Record]:
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            out.extend((r.partition, r.offset, r.key, r.value) for r in records)
    return out


def kafka_python_producer(cluster: LocalCluster, **extra: Any) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True,
                         linger_ms=5, **extra)


def test_kafka_python_producer_and_group_consumer(cluster: LocalCluster):
    create_topic(cluster, "kp")
    producer = kafka_python_producer(cluster)
    futures = [(b"%d" % i, producer.send("kp", key=b"k%d" % (i % KEYS), value=b"%d" % i)) for i in range(RECORDS)]
    producer.flush(60)
    acked = {v: (f.value.partition, f.value.offset) for v, f in futures}
    assert len(acked) == RECORDS and {p for p, _ in acked.values()} == {0, 1, 2}

    consumer = KafkaConsumer("kp", group_id="kp-group", bootstrap_servers=cluster.bootstrap_servers,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    consumed = poll_kafka_python(consumer, RECORDS)
    check_delivery(acked, consumed)
    consumer.commit()
    consumer.close()

    # a new member of the group resumes from the committed offsets: only what came after
    later = [producer.send("kp", key=b"k%d" % i, value=b"%d" % (RECORDS + i)) for i in range(100)]
    producer.flush(60)
    producer.close()
    resumed = KafkaConsumer("kp", group_id="kp-group", bootstrap_servers=cluster.bootstrap_servers,
                            auto_offset_reset="earliest", enable_auto_commit=False)
    again = poll_kafka_python(resumed, 100, timeout=60)
    resumed.close()
    assert sorted(int(v) for _, _, _, v in again) == list(range(RECORDS, RECORDS + 100))
    assert {(f.value.partition, f.value.offset) for f in later} == {(p, o) for p, o, _, _ in again}


def test_confluent_kafka_producer_and_group_consumer_and_kcat(cluster: LocalCluster):
    create_topic(cluster, "ck")
    acked: dict[bytes, tuple[int, int]] = {}
    errors: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.value()] = (msg.partition(), msg.offset())

    producer = CKProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                           "enable.idempotence": True, "linger.ms": 5})
    for i in range(RECORDS):
        while True:
            try:
                producer.produce("ck", key=b"k%d" % (i % KEYS), value=b"%d" % i, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not errors and len(acked) == RECORDS

    def consumer() -> CKConsumer:
        c = CKConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ck-group",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe(["ck"])
        return c

    def consume(c: CKConsumer, want: int) -> list[Record]:
        out: list[Record] = []
        deadline = time.monotonic() + 90
        while len(out) < want and time.monotonic() < deadline:
            for m in c.consume(num_messages=1000, timeout=0.5):
                assert m.error() is None, m.error()
                out.append((m.partition(), m.offset(), m.key(), m.value()))
        return out

    first = consumer()
    check_delivery(acked, consume(first, RECORDS))
    first.commit(asynchronous=False)
    first.close()
    for i in range(100):
        producer.produce("ck", key=b"k%d" % i, value=b"%d" % (RECORDS + i))
    assert producer.flush(60) == 0
    second = consumer()
    again = consume(second, 100)
    second.close()
    assert sorted(int(v) for _, _, _, v in again) == list(range(RECORDS, RECORDS + 100))

    listed = subprocess.run(["kcat", "-L", "-b", cluster.bootstrap_servers, "-m", "10"],
                            capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0, listed.stderr
    assert "3 brokers:" in listed.stdout and 'topic "ck" with 3 partitions' in listed.stdout
    for b in cluster.brokers.values():
        assert "%s:%d" % b.address in listed.stdout


class Stream:
    """A producer thread (acks=all) and a group consumer thread running until stopped."""

    def __init__(self, cluster: LocalCluster, topic: str) -> None:
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.acked_at: dict[bytes, float] = {}
        self.errors: list[Exception] = []
        self.consumed: list[Record] = []
        self.consumed_at: list[float] = []
        self._stop = threading.Event()
        self._producer = kafka_python_producer(cluster, retries=1_000_000, request_timeout_ms=10_000)
        # A group leader that assigns before its first metadata answer names the topic's partitions
        # assigns nothing ("No partition metadata") and rejoins only when its metadata changes; a
        # short max age bounds that wait (the default is 5 minutes).
        self._consumer = KafkaConsumer(topic, group_id=f"{topic}-group", bootstrap_servers=cluster.bootstrap_servers,
                                       auto_offset_reset="earliest", enable_auto_commit=True,
                                       metadata_max_age_ms=5000)
        self.topic = topic
        self._threads = [threading.Thread(target=self._produce, daemon=True),
                         threading.Thread(target=self._consume, daemon=True)]
        for t in self._threads:
            t.start()

    def _produce(self) -> None:
        i = 0
        while not self._stop.is_set():
            value = b"%d" % i
            future = self._producer.send(self.topic, key=b"k%d" % (i % KEYS), value=value)
            future.add_callback(self._on_ack, value)
            future.add_errback(self.errors.append)
            i += 1
            if i % 100 == 0:
                self._producer.flush(60)  # bounds what is in flight; acks keep coming during failover

    def _on_ack(self, value: bytes, md: Any) -> None:
        self.acked[value] = (md.partition, md.offset)
        self.acked_at[value] = time.monotonic()

    def _consume(self) -> None:
        while not self._stop.is_set():
            for records in self._consumer.poll(timeout_ms=200).values():
                now = time.monotonic()
                for r in records:
                    self.consumed.append((r.partition, r.offset, r.key, r.value))
                    self.consumed_at.append(now)

    def describe(self) -> str:
        """What the stream has done so far, for a timeout's message."""
        return (f"the stream flowing: {len(self.acked)} acknowledged, {len(self.consumed)} consumed, "
                f"group assignment {sorted(self._consumer.assignment())}, producer errors {self.errors[:3]}")

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(90)
        self._producer.flush(60)
        self._producer.close()
        self._consumer.close()


def read_all(cluster: LocalCluster, topic: str, partitions: int = 3) -> list[Record]:
    """Everything in the topic, read with a fresh consumer of no group."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    ends = consumer.end_offsets(tps)
    out = poll_kafka_python(consumer, sum(ends.values()))
    consumer.close()
    return out


def test_killing_a_leader_mid_stream_loses_no_acknowledged_record(cluster: LocalCluster, restore):
    restore(cluster)
    create_topic(cluster, "failover", config={"min.insync.replicas": "2"})
    stream = Stream(cluster, "failover")
    try:
        wait_for(lambda: len(stream.acked) >= 3000 and len(stream.consumed) >= 1000, 60, stream.describe)
        before = cluster.partition_state("failover", 0)
        leader = cluster.leader_of("failover", 0)
        assert before is not None and leader is not None
        leader.kill()
        killed_at = time.monotonic()
        after = wait_for(lambda: (s := cluster.partition_state("failover", 0)) and s.leader != before.leader and s,
                         30, "a new leader for failover-0", cluster.active_controller().log_path)
        assert after.leader in before.isr and after.leader_epoch > before.leader_epoch
        assert leader.broker_id not in after.isr
        # producers and consumers carry on: acks and deliveries after the kill, partition 0 included
        wait_for(lambda: sum(1 for v, t in stream.acked_at.items() if t > killed_at and stream.acked[v][0] == 0)
                 >= 500, 60, "acknowledged writes to failover-0 after the kill")
        wait_for(lambda: sum(1 for t in stream.consumed_at if t > killed_at + 1) >= 1000, 60,
                 "the group consumer receiving records after the kill")
    finally:
        stream.stop()
    assert not stream.errors, f"the producer gave up on records: {stream.errors[:3]}"
    check_delivery(stream.acked, read_all(cluster, "failover"))


def test_killing_the_active_controller_hands_over_and_the_next_failure_is_handled(cluster: LocalCluster, restore):
    restore(cluster)
    create_topic(cluster, "handover")
    view = cluster.view
    assert view is not None
    old = cluster.active_controller()
    old_epoch = view.controller_epoch()
    assert old is not None
    old.kill()
    new_id = wait_for(lambda: (c := view.controller()) not in (None, old.controller_id) and c, 30,
                      "another controller taking over", next(c.log_path for c in cluster.controllers.values()
                                                             if c is not old))
    new_epoch = view.controller_epoch()
    assert new_epoch > old_epoch

    before = cluster.partition_state("handover", 1)
    leader = cluster.leader_of("handover", 1)
    assert before is not None and leader is not None
    leader.kill()
    after = wait_for(lambda: (s := cluster.partition_state("handover", 1)) and s.leader != before.leader and s,
                     30, "the new controller electing a leader", cluster.controllers[new_id].log_path)
    assert after.leader_epoch == before.leader_epoch + 1 and after.controller_epoch == new_epoch
    producer = kafka_python_producer(cluster)
    md = producer.send("handover", value=b"after the handover", partition=1).get(timeout=60)
    producer.close()
    assert md.partition == 1
