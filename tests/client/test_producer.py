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

