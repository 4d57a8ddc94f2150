"""OrderedProducer against a real cluster: linear-hash routing with the undeleted count, event
hooks, idempotent sequences, refusal of a stale count after an expansion (frozen metadata), and
never writing to partitions marked for deletion."""
from __future__ import annotations

import json
from typing import Any

from chaoskit.client.linear_hash import linear_partition
from chaoskit.client.producer import OrderedProducer, ProduceError
from chaoskit.protocol.errors import ErrorCode

from .conftest import read_partition


def keyed(producer: int, key: str, seq: int) -> tuple[bytes, bytes]:
    return key.encode(), json.dumps([producer, key, seq]).encode()


def test_keys_go_where_linear_hashing_says_and_events_carry_the_outcome(cluster: Any, admin: Any, new_topic: Any):
    topic = new_topic(3)
    events: list[dict[str, Any]] = []
    with OrderedProducer(cluster.bootstrap_servers) as producer:
        producer.events.subscribe(events.append)
        acked = [producer.send(topic, *keyed(0, f"k{i}", 0)) for i in range(30)]
    assert [md.partition for md in acked] == [linear_partition(b"k%d" % i, 3, 3) for i in range(30)]
    assert [e["type"] for e in events] == ["invoke", "ok"] * 30
    first_ok = events[1]
    assert first_ok["f"] == "send" and first_ok["key"] == "k0" and first_ok["value"] == [0, "k0", 0]
    assert (first_ok["partition"], first_ok["offset"]) == (acked[0].partition, acked[0].offset)
    assert first_ok["leader_epoch"] == admin.topic(topic).partitions[acked[0].partition].leader_epoch
    for p in range(3):  # each acknowledged offset holds the record sent, once (idempotent, no duplicates)
        stored = {r.offset: r.key for r in read_partition(cluster, admin, topic, p)}
        assert stored == {md.offset: b"k%d" % i for i, md in enumerate(acked) if md.partition == p}


def test_stale_count_is_refused_then_refreshed_without_reordering(cluster: Any, admin: Any, new_topic: Any):
    """Done-when 4: frozen metadata keeps U=4 after the topic grows to 6; the broker refuses, the
    producer refreshes (even though frozen), re-routes, and no key's records go back to an old partition."""
    topic = new_topic(4)
    keys = [f"key-{i}" for i in range(40)]
    with OrderedProducer(cluster.bootstrap_servers) as producer:
        for k in keys:
            producer.send(topic, *keyed(0, k, 0))
        producer.freeze_metadata()
        admin.expand(topic, 6)
        placed = {k: [] for k in keys}
        for seq in range(1, 4):
            for k in keys:
                placed[k].append(producer.send(topic, *keyed(0, k, seq)).partition)
        assert producer.refusals.get(ErrorCode.INVALID_PARTITION_METADATA, 0) >= 1
        assert producer.view.topics[topic].undeleted_partition_count == 6
    moved = [k for k in keys if linear_partition(k.encode(), 4, 6) != linear_partition(k.encode(), 4, 4)]
    assert moved, "some keys must move to the new partitions 4 and 5"
    for k in keys:
        assert placed[k] == [linear_partition(k.encode(), 4, 6)] * 3, k
    # every acknowledged record is in the log once, and per key the sequence numbers run in order per partition
    seen: dict[str, list[int]] = {}
    for p in range(6):
        for r in read_partition(cluster, admin, topic, p):
            _, key, seq = json.loads(r.value)
            seen.setdefault(key, []).append(seq)
    assert all(sorted(v) == list(range(4)) for v in seen.values()) and len(seen) == len(keys)


def test_never_writes_to_partitions_marked_for_deletion(cluster: Any, admin: Any, new_topic: Any):
    topic = new_topic(4)
    admin.expand(topic, 6)
    admin.shrink(topic, 4)
    with OrderedProducer(cluster.bootstrap_servers) as producer:
        parts = {producer.send(topic, *keyed(0, f"k{i}", 0)).partition for i in range(60)}
        unkeyed = {producer.send(topic, None, b"x").partition for _ in range(8)}
    assert parts <= {0, 1, 2, 3} and unkeyed == {0, 1, 2, 3}


def test_unkeyed_records_are_placed_by_linear_hashing(cluster: Any, admin: Any, new_topic: Any):
    """KIP-253 places unkeyed records by linear hashing too: after 2 -> 3 partitions bucket 0 is split
    (0 and 2 take a quarter each) while 1, not yet split, takes half; round-robin would give thirds."""
    from collections import Counter

    topic = new_topic(2)
    admin.expand(topic, 3)
    with OrderedProducer(cluster.bootstrap_servers) as producer:
        placed = Counter(producer.send(topic, None, b"x").partition for _ in range(40))
    assert placed == {0: 10, 1: 20, 2: 10}


def test_bad_settings_are_refused_with_a_hint():
    import pytest
    with pytest.raises(ValueError, match="acks"):
        OrderedProducer("127.0.0.1:1", acks=2)
    with pytest.raises(ValueError, match="idempotent"):
        OrderedProducer("127.0.0.1:1", acks=1)
    with pytest.raises(ValueError, match="host:port"):
        OrderedProducer("nonsense")


def test_unknown_topic_is_a_clear_error(cluster: Any):
    import pytest

    from chaoskit.client.metadata import MetadataError
    with OrderedProducer(cluster.bootstrap_servers, request_timeout_ms=1000, delivery_timeout_s=3) as producer:
        with pytest.raises(ProduceError, match="no-such-topic") as refused:
            producer.send("no-such-topic", b"k", b"v")
    assert refused.value.definite and not isinstance(refused.value, MetadataError)


def test_compacted_topic_tombstone_for_a_moved_key(cluster: Any, admin: Any, new_topic: Any):
    """KIP-253 §9: in a topic created with cleanup.policy=compact (the producer reads it from the
    topic's config, unprompted), a key that moved to a new partition gets (key, null) on its old
    partition once the old partition's earliest offset is past the end of its epoch before the
    split; in a topic with cleanup.policy=delete it never does."""
    from chaoskit.client.linear_hash import linear_partition as lp
    from chaoskit.cluster.waiting import wait_for
    from chaoskit.protocol.records import decode_records, split_batches
    from chaoskit.protocol.requests import fetch
    from chaoskit.protocol.wire_client import WireClient

    key = next(k for k in (b"c%d" % i for i in range(1000)) if lp(k, 2, 2) == 0 and lp(k, 2, 3) == 2)
    sent = {}
    for policy in ("compact", "delete"):
        topic = new_topic(2, config={"cleanup.policy": policy})
        with OrderedProducer(cluster.bootstrap_servers) as producer:
            assert producer.send(topic, key, b"v0").partition == 0
            admin.expand(topic, 3)
            producer.view.refresh([topic])
            assert producer.view.topics[topic].compacted == (policy == "compact")
            assert producer.send(topic, key, b"v1").partition == 2
            assert producer.tombstones_sent == [], "partition 0 still holds records from before the split"
            start = admin.delete_records(topic, {0: -1})[0]
            assert producer.send(topic, key, b"v2").partition == 2
            sent[policy] = (topic, start, producer.tombstones_sent)
    topic, start, tombstones = sent["compact"]
    assert tombstones == [(topic, 0, key)] and sent["delete"][2] == []

    def tombstone() -> bool:
        leader = admin.topic(topic).partitions[0].leader
        with WireClient(*cluster.broker(leader).address, timeout=10) as c:
            got = fetch(c, topic, 0, start)
        return [(r.key, r.value) for b in split_batches(bytes(got.records or b"")) for r in decode_records(b)] == \
            [(key, None)]
    wait_for(tombstone, 15, "the tombstone on partition 0")
