"""Log compaction (cleanup.policy=compact) on a real 2-broker cluster (every partition on both) with stock kafka-python: a fresh
reader from the start gets each key's latest value at the offset it was written, deleted keys'
tombstones stay for delete.retention.ms and then go, every replica cleans its own log to the same
records, the log start does not move (retention.ms applies only with compact,delete), and a
keyless record is refused with INVALID_RECORD. KIP-253 §9 on a compacted topic: a moved and
deleted key stays gone, and the ordered consumer reads past §9's tombstones."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import InvalidRecordError

from chaoskit.client.admin import AdminClient
from chaoskit.client.consumer import OrderedConsumer
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.records import decode_records, iter_batches

KEYS = [b"a", b"b", b"c", b"d"]
ROUNDS = 10


@pytest.fixture(scope="module")
def cluster(make_cluster: Callable[..., LocalCluster]) -> LocalCluster:
    # small segments and a quick cleaner, so a few hundred records make cleanable segments
    return make_cluster(brokers=2, controllers=1,
                        broker_config={"log.segment.bytes": 1024, "log.cleaner.backoff.ms": 200})


def create(cluster: LocalCluster, name: str, config: dict[str, str], partitions: int = 1) -> None:
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topic(name, partitions, 2, config=config)
    cluster.wait_until_replicated(name)


def write(cluster: LocalCluster, topic: str) -> dict[bytes, tuple[bytes | None, int]]:
    """Rounds of every key (d deleted at the end), then filler on key z to roll the segments past
    them; each record its own batch. Each key's last write and its offset."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0)
    last: dict[bytes, tuple[bytes | None, int]] = {}
    writes = [(k, b"%s-%d" % (k, i)) for i in range(ROUNDS) for k in KEYS] + [(b"d", None)]
    writes += [(b"z", b"z-%d" % i) for i in range(20)]
    for key, value in writes:
        meta = producer.send(topic, key=key, value=value).get(timeout=10)
        last[key] = (value, meta.offset)
    producer.close()
    return last


def read_from_start(cluster: LocalCluster, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out: list[tuple[int, bytes, bytes | None]] = []
        wait_for(lambda: out.extend((r.offset, r.key, r.value) for rs in consumer.poll(200).values() for r in rs)
                 or consumer.position(tp) >= end, 20, f"{topic}: read to the end offset {end}")
        return out
    finally:
        consumer.close()


def read_ordered(cluster: LocalCluster, topic: str, end: int) -> list[tuple[int, bytes, bytes | None]]:
    """Our ordered client's group consumer, from the start to `end`."""
    consumer = OrderedConsumer(cluster.bootstrap_servers, group_id=f"reader-{topic}", heartbeat_interval_ms=200)
    try:
        consumer.subscribe([topic])
        out: list[tuple[int, bytes, bytes | None]] = []
        wait_for(lambda: out.extend((r.offset, r.key, r.value) for r in consumer.poll(200))
                 or (out and out[-1][0] >= end - 1), 20, f"{topic}: our consumer read to {end}")
        return out
    finally:
        consumer.close()


def earliest(cluster: LocalCluster, topic: str) -> int:
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        return consumer.beginning_offsets([tp])[tp]
    finally:
        consumer.close()


def on_disk(broker: Any, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """The records of a replica's segment files, read directly."""
    out = []
    for path in sorted(Path(broker.data_dir / f"{topic}-0").glob("*.log")):
        for _pos, batch in iter_batches(path.read_bytes()):
            out += [(r.offset, r.key, r.value) for r in decode_records(batch)]
    return out


def compacted_view(last: dict[bytes, tuple[bytes | None, int]], read: list[tuple[int, bytes, bytes | None]],
                   tombstones: bool) -> bool:
    """Each key of the rounds once, with its last write at its offset; z (in the active segment) as it is."""
    rounds = [(o, k, v) for o, k, v in read if k != b"z"]
    want = sorted((o, k, v) for k, (v, o) in last.items() if k != b"z" and (v is not None or tombstones))
    return rounds == want


def test_a_fresh_reader_gets_each_keys_latest_value_and_tombstones_go_after_delete_retention(cluster: LocalCluster):
    topics = {"not-compacted": {"cleanup.policy": "delete"},  # written first: the cleaner's passes come after it
              "compacted-kept": {"cleanup.policy": "compact", "delete.retention.ms": "86400000"},
              "compacted-dropped": {"cleanup.policy": "compact", "delete.retention.ms": "500"}}
    for topic, config in topics.items():
        create(cluster, topic, config)
    last = {topic: write(cluster, topic) for topic in topics}
    wait_for(lambda: compacted_view(last["compacted-kept"], read_from_start(cluster, "compacted-kept"), True), 30,
             "compacted-kept: the latest value per key, d's tombstone kept")
    wait_for(lambda: compacted_view(last["compacted-dropped"], read_from_start(cluster, "compacted-dropped"), False),
             30, "compacted-dropped: the latest value per key, d and its tombstone gone")
    assert earliest(cluster, "compacted-kept") == earliest(cluster, "compacted-dropped") == 0  # never moved by it
    read = read_from_start(cluster, "compacted-kept")
    assert (b"d", None) in [(k, v) for _o, k, v in read]
    end = last["compacted-kept"][b"z"][1] + 1
    assert read_ordered(cluster, "compacted-kept", end) == read  # our client reads across the gaps
    assert len(read_from_start(cluster, "not-compacted")) == end  # cleanup.policy=delete: the cleaner passed it by
    # each replica cleaned its own log: the rounds read the same on every disk
    wait_for(lambda: all(compacted_view(last["compacted-kept"], on_disk(b, "compacted-kept"), True)
                         for b in cluster.brokers.values()), 30, "every replica compacted")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=0)
    try:
        with pytest.raises(InvalidRecordError):
            producer.send("compacted-kept", key=None, value=b"no key").get(timeout=10)
        assert producer.send("not-compacted", key=None, value=b"no key").get(timeout=10).offset == end
    finally:
        producer.close()


def test_retention_ms_applies_with_compact_delete_and_not_with_compact_alone(cluster: LocalCluster):
    create(cluster, "compact-only", {"cleanup.policy": "compact", "retention.ms": "1000"})
    create(cluster, "compact-delete", {"cleanup.policy": "compact,delete", "retention.ms": "1000"})
    write(cluster, "compact-only")  # older than compact-delete's records
    write(cluster, "compact-delete")
    wait_for(lambda: earliest(cluster, "compact-delete") > 0, 30, "compact-delete: retention moved the log start")
    assert earliest(cluster, "compact-only") == 0


def test_a_topics_segment_bytes_overrides_the_brokers(cluster: LocalCluster):
    """segment.bytes set on a topic decides when its logs roll (the brokers here roll at 1 KiB)."""
    create(cluster, "big-segments", {"segment.bytes": str(1 << 20)})
    create(cluster, "broker-segments", {})
    for topic in ("big-segments", "broker-segments"):
        write(cluster, topic)

    def segments(topic: str) -> list[int]:
        return [len(list((b.data_dir / f"{topic}-0").glob("*.log"))) for b in cluster.brokers.values()]
    assert segments("big-segments") == [1, 1] and min(segments("broker-segments")) > 1


def restore(cluster: LocalCluster, topic: str, partitions: int) -> dict[int, list[tuple[bytes, bytes | None]]]:
    """A restore read (run/restore.py, the run's own): every partition from its start, as a fresh
    reader rebuilding a table would; keys and values as bytes again."""
    from chaoskit.run.restore import restore_read

    out: dict[int, list[tuple[bytes, bytes | None]]] = {p: [] for p in range(partitions)}
    restore_read(cluster.bootstrap_servers, [topic], lambda op: out[op["partition"]].append(
        (op["key"].encode(), None if op["value"] is None else str(op["value"]).encode())))
    return out


def test_kip253_section9_tombstones_keep_a_moved_and_deleted_key_gone(cluster: LocalCluster):
    """KIP-253 §9 with chaoskit's condition (docs/conformance.md row 49, a deliberate difference),
    end to end. Key K moves from P2=0 to P1=2 as 2 partitions grow to 3, and is then deleted on P1.
    Our producer sends §9's tombstone to P2 with each write of K on P1, as P2 still holds a record
    from before P1 existed: compaction removes K's old value from P2, and once it has also removed
    K's value and delete on P1, a restore read (every partition from the start) finds K nowhere. A
    producer routing the same way without §9 (kafka-python told the partitions) leaves K's old
    value on P2, and the restore read brings the deleted key back. The producer learns compaction
    from the topic's cleanup.policy: a delete topic gets no tombstone; neither does a write once
    DeleteRecords moved P2's start past the threshold (nothing from before the expansion is left)."""
    from chaoskit.client.linear_hash import linear_partition as lp
    from chaoskit.client.producer import OrderedProducer

    keys = [b"k%d" % i for i in range(1000)]
    moved = next(k for k in keys if lp(k, 2, 2) == 0 and lp(k, 2, 3) == 2)
    filler = [k for k in keys if k != moved and lp(k, 2, 3) in (0, 2)][:60]  # rolls P2's and P1's segments
    story = [(moved, b"old"), "expand", (moved, b"new"), (moved, None)] + [(k, b"filler") for k in filler]
    sent = {}
    for topic, policy, ours in (("section9", "compact", True), ("section9-stock", "compact", False),
                                ("section9-delete", "delete", True)):
        create(cluster, topic, {"cleanup.policy": policy, "delete.retention.ms": "500"}, partitions=2)
        with OrderedProducer(cluster.bootstrap_servers) as producer, AdminClient(cluster.bootstrap_servers) as admin:
            stock = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0)
            count = 2
            for step in story:
                if step == "expand":
                    admin.expand(topic, count := 3)
                    producer.view.refresh([topic])
                    stock.close()  # a new one, which knows the new partition
                    stock = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0)
                    assert producer.view.topics[topic].compacted == (policy == "compact")
                elif ours:
                    assert producer.send(topic, *step).partition == lp(step[0], 2, count)
                else:
                    stock.send(topic, key=step[0], value=step[1], partition=lp(step[0], 2, count)).get(timeout=10)
            stock.close()
            sent[topic] = producer.tombstones_sent
    # one per key and old partition, however often the key is written on P1 (the filler's keys on P1 get
    # theirs too: a producer cannot know they never were on P2)
    assert [t for t in sent.pop("section9") if t[2] == moved] == [("section9", 0, moved)]
    assert sent == {"section9-stock": [], "section9-delete": []}

    def holds_k(topic: str) -> list[tuple[int, bytes | None]]:
        return [(p, v) for p, rs in restore(cluster, topic, 3).items() for k, v in rs if k == moved]
    wait_for(lambda: holds_k("section9") == [], 30, "compaction removed K everywhere, its §9 tombstones too")
    wait_for(lambda: holds_k("section9-stock") == [(0, b"old")], 30, "without §9 only K's old value is left")

    with OrderedProducer(cluster.bootstrap_servers) as producer, AdminClient(cluster.bootstrap_servers) as admin:
        assert admin.delete_records("section9", {0: -1})[0] > 0
        producer.send("section9", moved, b"again")
        assert producer.tombstones_sent == [], "P2 no longer holds anything from before the expansion"


def test_the_ordered_consumer_reads_past_a_section9_tombstone(cluster: LocalCluster):
    """A §9 tombstone on P2 is not a delete of K (it may come after K's new value on P1): our
    consumer reads past it without delivering it, where a stock consumer delivers (K, null); a
    delete the user sent is delivered to both."""
    from chaoskit.client.linear_hash import linear_partition as lp
    from chaoskit.client.producer import OrderedProducer

    topic = "section9-read"
    create(cluster, topic, {"cleanup.policy": "compact"}, partitions=2)
    keys = [b"k%d" % i for i in range(1000)]
    moved = next(k for k in keys if lp(k, 2, 2) == 0 and lp(k, 2, 3) == 2)
    deleted = next(k for k in keys if lp(k, 2, 3) == 0)
    with OrderedProducer(cluster.bootstrap_servers) as producer, AdminClient(cluster.bootstrap_servers) as admin:
        producer.send(topic, moved, b"old")
        admin.expand(topic, 3)
        producer.view.refresh([topic])
        producer.send(topic, moved, b"new")
        producer.send(topic, deleted, None)
        assert producer.tombstones_sent == [(topic, 0, moved)]
    want = {(0, moved, b"old"), (0, moved, None), (0, deleted, None), (2, moved, b"new")}
    wait_for(lambda: {(p, k, v) for p, rs in restore(cluster, topic, 3).items() for k, v in rs} == want, 10,
             "a stock reader gets the §9 tombstone (sent with acks=0) as a delete")

    consumer = OrderedConsumer(cluster.bootstrap_servers, group_id="reader-section9", heartbeat_interval_ms=200)
    try:
        consumer.subscribe([topic])
        got: list[tuple[int, bytes | None, bytes | None]] = []
        wait_for(lambda: got.extend((r.partition, r.key, r.value) for r in consumer.poll(200))
                 or [consumer.position((topic, p)) for p in (0, 2)] == [3, 1], 20, f"{topic}: our consumer read to the end")
    finally:
        consumer.close()
    assert sorted(got, key=repr) == sorted([(0, moved, b"old"), (0, deleted, None), (2, moved, b"new")], key=repr)
