"""Done-when 1 and 2: keyed sequences from 4 producers over 200 keys while the topic goes
4 -> 6 -> 8 -> 6 partitions, consumed by a group of 3 that loses and regains a member.

The ordered client delivers every key in producer order across partitions, and for every pair A
before B of one key delivered from different partitions the key-revoked callback for A's
partition ran (after A) before the key-assigned callback for B's partition (before B) -- checked
over the full event log. The same run with stock kafka-python (default partitioner, stock
consumer) shows per-key order violations, so the check is proven able to fail.

Production runs in phases (one per partition count, the producers' metadata going stale at each
change); the group consumes once everything is written, so new partitions are full when their
consumers reach them and only the gates keep them back.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer

from chaoskit.client.consumer import OrderedConsumer, PartitionKeyRebalanceListener
from chaoskit.client.producer import OrderedProducer
from chaoskit.cluster.waiting import wait_for

PRODUCERS, KEYS = 4, 200
STEPS = [None, ("expand", 6), ("expand", 8), ("shrink", 6)]


class Log:
    """The run's event log in one global order (appends are atomic under the GIL)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def add(self, consumer: int) -> Callable[[dict[str, Any]], None]:
        def record(event: dict[str, Any]) -> None:
            with self.lock:
                self.events.append({**event, "process": consumer})
        return record


def produce_phases(admin: Any, topic: str, send: Callable[[int, str, int], int | None],
                   after_change: Callable[[int], None]) -> dict[tuple[str, int], int]:
    """Each phase: every producer sends one record for each of its keys; {(key, seq): partition} acked."""
    acked: dict[tuple[str, int], int] = {}
    lock = threading.Lock()
    for seq, step in enumerate(STEPS):
        if step is not None:
            op, count = step
            admin.expand(topic, count) if op == "expand" else admin.shrink(topic, count)
            after_change(count)

        def run(producer: int) -> None:
            for i in range(KEYS):
                key = f"p{producer}-k{i}"
                partition = send(producer, key, seq)
                if partition is not None:
                    with lock:
                        acked[(key, seq)] = partition
        threads = [threading.Thread(target=run, args=(j,)) for j in range(PRODUCERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return acked


def consume_group(acked: dict[tuple[str, int], int], log: Log, make: Callable[[int], Any],
                  timeout: float = 60.0) -> None:
    """Consumers 0-2 poll in their own threads; consumer 1 leaves after a third of the records,
    consumer 3 joins after two thirds; until every acked record was delivered (or timeout)."""
    delivered: set[tuple[str, int]] = set()
    stop = threading.Event()
    errors: list[BaseException] = []

    def run(n: int, leave: threading.Event | None) -> None:
        consumer = make(n)
        try:
            while not stop.is_set() and not (leave is not None and leave.is_set()):
                for key, seq in consumer.poll_keys():
                    delivered.add((key, seq))
        except BaseException as e:  # noqa: BLE001 -- surfaced by the test
            errors.append(e)
        finally:
            consumer.close()

    leave = threading.Event()
    threads = [threading.Thread(target=run, args=(0, None)), threading.Thread(target=run, args=(1, leave)),
               threading.Thread(target=run, args=(2, None))]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: len(delivered) >= len(acked) / 3 or errors, timeout, "a third delivered")
        leave.set()
        wait_for(lambda: len(delivered) >= 2 * len(acked) / 3 or errors, timeout, "two thirds delivered")
        late = threading.Thread(target=run, args=(3, None))
        late.start()
        threads.append(late)
        wait_for(lambda: set(acked) <= delivered or errors, timeout,
                 lambda: f"all {len(acked)} acked records delivered (have {len(set(acked) & delivered)})")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors


def deliveries(log: Log) -> list[tuple[int, str, int, int]]:
    """(log index, key, seq, partition) of each record's first delivery, in log order."""
    seen, out = set(), []
    for i, e in enumerate(log.events):
        if e["f"] == "poll":
            for partition, _offset, _key, value, _epoch in e["value"]:
                _producer, key, seq = value
                if (key, seq) not in seen:
                    seen.add((key, seq))
                    out.append((i, key, seq, partition))
    return out


def order_violations(log: Log) -> list[str]:
    """Per key, a record delivered (first) after a later record of the same key."""
    newest: dict[str, int] = {}
    bad = []
    for i, key, seq, partition in deliveries(log):
        if seq < newest.get(key, -1):
            bad.append(f"{key}: seq {seq} (partition {partition}) delivered at event {i} after seq {newest[key]}")
        newest[key] = max(newest.get(key, -1), seq)
    return bad


def callback_violations(log: Log) -> tuple[list[str], int]:
    """For each pair A before B of one key from different partitions: is there a key-revoked for
    A's partition after A and a key-assigned for B's partition after it and before B?"""
    revoked: dict[int, list[int]] = {}
    assigned: dict[int, list[int]] = {}
    for i, e in enumerate(log.events):
        if e["f"] in ("on_partition_key_maybe_revoked", "on_partition_key_assigned"):
            for _topic, p in e["value"]:
                (revoked if e["f"] == "on_partition_key_maybe_revoked" else assigned).setdefault(p, []).append(i)
    by_key: dict[str, list[tuple[int, int, int]]] = {}
    for i, key, seq, partition in deliveries(log):
        by_key.setdefault(key, []).append((seq, i, partition))
    bad, pairs = [], 0
    for key, recs in by_key.items():
        recs.sort()
        for a in range(len(recs)):
            for b in range(a + 1, len(recs)):
                (sa, ia, pa), (sb, ib, pb) = recs[a], recs[b]
                if pa == pb:
                    continue
                pairs += 1
                ok = any(ia < r < s < ib for r in revoked.get(pa, []) for s in assigned.get(pb, []))
                if not ok:
                    bad.append(f"{key}: seq {sa}@{pa} (event {ia}) -> seq {sb}@{pb} (event {ib}) without "
                               f"revoked({pa}) then assigned({pb}) between them")
    return bad, pairs


# --- the ordered client --------------------------------------------------------------------------
class OrderedGroupMember:
    def __init__(self, cluster: Any, topic: str, group: str, record: Callable[[dict[str, Any]], None]) -> None:
        self.consumer = OrderedConsumer(cluster.bootstrap_servers, group_id=group, heartbeat_interval_ms=100,
                                        session_timeout_ms=6000, metadata_max_age_s=1.0,
                                        max_poll_records=20)
        self.consumer.events.subscribe(record)
        self.consumer.subscribe([topic], listener=ConsumerRebalanceListener.__new__(_NoopListener),
                                key_listener=PartitionKeyRebalanceListener())

    def poll_keys(self) -> list[tuple[str, int]]:
        return [tuple(json.loads(r.value)[1:]) for r in self.consumer.poll(200)]

    def close(self) -> None:
        self.consumer.close()


class _NoopListener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked: Any) -> None:
        pass

    def on_partitions_assigned(self, assigned: Any) -> None:
        pass


def test_ordered_client_keeps_per_key_order_through_4_6_8_6(cluster: Any, admin: Any, new_topic: Any):
    topic = new_topic(4)
    producers = [OrderedProducer(cluster.bootstrap_servers, client_id=f"ordered-{j}") for j in range(PRODUCERS)]
    log = Log()
    try:
        def send(j: int, key: str, seq: int) -> int:
            return producers[j].send(topic, key.encode(), json.dumps([j, key, seq]).encode()).partition
        acked = produce_phases(admin, topic, send, after_change=lambda count: None)
    finally:
        for p in producers:
            p.close()
    assert len(acked) == PRODUCERS * KEYS * len(STEPS)
    assert {p for p in acked.values()} == set(range(8))
    refused = sum(p.refusals.get(10000, 0) for p in producers)
    assert refused >= PRODUCERS, "each producer's count went stale at least once and was refused"

    consume_group(acked, log, lambda n: OrderedGroupMember(cluster, topic, f"g-{topic}", log.add(n)))
    assert order_violations(log) == []
    bad, pairs = callback_violations(log)
    assert pairs > 100, f"the run must move keys between partitions (only {pairs} cross-partition pairs)"
    assert bad == [], bad[:5]
    fs = {e["f"] for e in log.events}
    assert {"on_partitions_revoked", "on_partitions_assigned", "coordinator"} <= fs
    late = [e["value"] for e in log.events if e["f"] == "on_partitions_assigned" and e["process"] == 3]
    assert late and late[-1], "the member that joined late must be given partitions"


# --- stock kafka-python, the same run --------------------------------------------------------------
class StockGroupMember:
    def __init__(self, cluster: Any, topic: str, group: str, record: Callable[[dict[str, Any]], None]) -> None:
        self.record = record

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                record({"f": "on_partitions_revoked", "type": "ok",
                        "value": sorted([tp.topic, tp.partition] for tp in revoked)})

            def on_partitions_assigned(self, assigned: Any) -> None:
                record({"f": "on_partitions_assigned", "type": "ok",
                        "value": sorted([tp.topic, tp.partition] for tp in assigned)})

        self.consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                      auto_offset_reset="earliest", enable_auto_commit=True,
                                      auto_commit_interval_ms=200, session_timeout_ms=6000,
                                      heartbeat_interval_ms=500, max_poll_records=20)
        self.consumer.subscribe([topic], listener=Listener())

    def poll_keys(self) -> list[tuple[str, int]]:
        batches = self.consumer.poll(timeout_ms=200)
        records = [r for tp in sorted(batches, key=lambda tp: tp.partition) for r in batches[tp]]
        if records:
            self.record({"f": "poll", "type": "ok", "value": [
                [r.partition, r.offset, r.key.decode(), json.loads(r.value), r.leader_epoch] for r in records]})
        return [tuple(json.loads(r.value)[1:]) for r in records]

    def close(self) -> None:
        self.consumer.close()


def test_stock_kafka_python_breaks_per_key_order_and_the_check_finds_it(cluster: Any, admin: Any,
                                                                         new_topic: Any):
    topic = new_topic(4)
    producers = [KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0,
                               metadata_max_age_ms=500, retries=0, request_timeout_ms=5000) for _ in range(PRODUCERS)]
    log = Log()
    try:
        def send(j: int, key: str, seq: int) -> int | None:
            try:
                return producers[j].send(topic, key=key.encode(),
                                         value=json.dumps([j, key, seq]).encode()).get(10).partition
            except Exception:  # noqa: BLE001 -- e.g. a partition marked for deletion refuses it: not acked
                return None

        def see(count: int) -> None:  # the stock producers pick up the new partition count
            wait_for(lambda: all(len(p.partitions_for(topic)) >= count for p in producers), 15,
                     f"stock producers seeing {count} partitions")
        acked = produce_phases(admin, topic, send, after_change=see)
    finally:
        for p in producers:
            p.close()
    consume_group(acked, log, lambda n: StockGroupMember(cluster, topic, f"g-{topic}", log.add(n)))
    violations = order_violations(log)
    assert violations, "stock kafka-python was expected to deliver some key out of order"
    print(f"stock kafka-python: {len(violations)} per-key order violations, e.g. {violations[0]}")
