"""`enable.ordered.delivery` per topic on a real cluster: after both topics of a pair grow from 4
to 6 partitions, the ordered client reads the config (DescribeConfigs) and, for the topic with it
false, acts as a stock client: keys by murmur2 modulo the partition count, no count in Produce or
Fetch, the group's new partitions start at once (no gates, no key callbacks, no position exchange);
the topic with it true keeps KIP-253's steps."""
from __future__ import annotations

import time
from typing import Any

from chaoskit.client.consumer import OrderedConsumer
from chaoskit.client.linear_hash import linear_partition, modulo_partition
from chaoskit.client.producer import OrderedProducer
from chaoskit.protocol.extensions import UNKNOWN_COUNT

KEYS = [f"k{i}".encode() for i in range(40)]


def grown_pair(admin: Any, new_topic: Any, producer: OrderedProducer | None = None) -> tuple[str, str]:
    """Two topics grown from 4 to 6 partitions, enable.ordered.delivery true and false; with a
    producer, each key written once before the growth and once after."""
    ordered, stock = new_topic(4), new_topic(4, {"enable.ordered.delivery": "false"})
    for topic in (ordered, stock):
        if producer is not None:
            producer.send_many(topic, [(k, b"before") for k in KEYS])
        admin.expand(topic, 6)
        if producer is not None:
            producer.send_many(topic, [(k, b"after") for k in KEYS])
    return ordered, stock


class SentCounts:
    """The undeleted_partition_count of every Produce the producer sends, per topic (a spy on its connections)."""

    def __init__(self, producer: OrderedProducer) -> None:
        self.counts: dict[str, set[int]] = {}
        connection = producer.view.connection

        def spying(broker_id: int) -> Any:
            conn = connection(broker_id)
            request = conn.request

            def send(req: Any, version: int, **kw: Any) -> Any:
                for t in getattr(req, "topic_data", None) or []:
                    self.counts.setdefault(t.name, set()).add(t.undeleted_partition_count)
                return request(req, version, **kw)
            conn.request = send
            return conn
        producer.view.connection = spying


def test_a_false_topic_is_routed_as_stock_kafka_and_a_true_one_by_linear_hashing(admin: Any, new_topic: Any,
                                                                                   cluster: Any):
    ordered, stock = grown_pair(admin, new_topic)
    with OrderedProducer(cluster.bootstrap_servers) as producer:
        spy = SentCounts(producer)
        placed = {t: {k: producer.send(t, k, b"v").partition for k in KEYS} for t in (ordered, stock)}
        infos = {t: producer.view.topics[t] for t in (ordered, stock)}
    assert (infos[ordered].ordered_delivery, infos[stock].ordered_delivery) == (True, False)
    assert placed[ordered] == {k: linear_partition(k, 4, 6) for k in KEYS}
    assert placed[stock] == {k: modulo_partition(k, 6) for k in KEYS}
    assert placed[ordered] != placed[stock]  # the two rules part for some keys, so each assertion can fail
    assert spy.counts == {ordered: {6}, stock: {UNKNOWN_COUNT}}


def test_a_false_topic_has_no_gates_and_no_position_exchange(admin: Any, new_topic: Any, cluster: Any):
    with OrderedProducer(cluster.bootstrap_servers, metadata_max_age_s=0) as producer:
        ordered, stock = grown_pair(admin, new_topic, producer)
    started, events, exchanges, heartbeats = {}, {}, {}, {}
    for topic in (ordered, stock):
        consumer = OrderedConsumer(cluster.bootstrap_servers, group_id=f"g-{topic}", heartbeat_interval_ms=100)
        events[topic], exchanges[topic], heartbeats[topic] = [], [], []
        consumer.events.subscribe(events[topic].append)
        consumer.subscribe([topic])
        member = consumer.member
        exchange, heartbeat = member.exchange_positions, member.heartbeat
        member.exchange_positions = lambda *a, _f=exchange, _n=exchanges[topic]: _n.append(a) or _f(*a)
        member.heartbeat = lambda _f=heartbeat, _n=heartbeats[topic]: _n.append(1) or _f()
        got: list[Any] = []
        deadline = time.monotonic() + 30
        try:
            # everything read, and heartbeats (when positions are exchanged) went on for a while
            while (len(got) < 2 * len(KEYS) or len(heartbeats[topic]) < 3) and time.monotonic() < deadline:
                got.extend(consumer.poll(200))
                if consumer.parts and topic not in started:  # just joined: the partitions' starting states
                    started[topic] = {p: s.started for (_t, p), s in consumer.parts.items()}
        finally:
            consumer.close()
        assert len(got) == 2 * len(KEYS)
    assert started[stock] == {p: True for p in range(6)}
    # the new partitions wait until the group read their parents (0 and 1) up to the split
    assert [p for p, s in sorted(started[ordered].items()) if not s] == [4, 5]
    key_callbacks = {t: [e for e in es if e["f"].startswith("on_partition_key")] for t, es in events.items()}
    assert key_callbacks[ordered] and not key_callbacks[stock]
    assert exchanges[ordered] and not exchanges[stock] and len(heartbeats[stock]) >= 3
