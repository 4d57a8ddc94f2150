"""OrderedConsumer against a real cluster: a group consumes everything once with its callbacks
and events, commits carry the leader epoch and a restarted member continues where it committed,
and the assignor/gate helpers behave on their own."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kafka import TopicPartition

from chaoskit.client.assignor import assign
from chaoskit.client.consumer import OrderedConsumer
from chaoskit.client.producer import OrderedProducer


def drain(consumer: OrderedConsumer, want: int, timeout: float = 30.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got.extend(consumer.poll(200))
    return got


def test_group_member_consumes_all_and_resumes_from_its_commit(cluster: Any, admin: Any, new_topic: Any):
    topic = new_topic(3)
    with OrderedProducer(cluster.bootstrap_servers) as producer:
        acked = [producer.send(topic, b"k%d" % i, json.dumps([0, f"k{i}", 0]).encode()) for i in range(60)]
    events: list[dict[str, Any]] = []
    consumer = OrderedConsumer(cluster.bootstrap_servers, group_id=f"g-{topic}", heartbeat_interval_ms=200)
    consumer.events.subscribe(events.append)
    consumer.subscribe([topic])
    try:
        first = drain(consumer, 60)
    finally:
        consumer.close()
    assert sorted((r.partition, r.offset) for r in first) == sorted((md.partition, md.offset) for md in acked)
    fs = [e["f"] for e in events]
    assert fs[0] == "coordinator" and "on_partitions_assigned" in fs and fs[-1] == "on_partitions_revoked"
    assigned = next(e for e in events if e["f"] == "on_partitions_assigned")
    assert assigned["value"] == [[topic, 0], [topic, 1], [topic, 2]]
    delivered = [rec for e in events if e["f"] == "poll" for rec in e["value"]]
    assert len(delivered) == 60 and all(rec[4] is not None and rec[4] >= 0 for rec in delivered)
    assert {rec[2] for rec in delivered} == {f"k{i}" for i in range(60)}
    assert all(rec[3] == [0, rec[2], 0] for rec in delivered)

    with OrderedProducer(cluster.bootstrap_servers) as producer:
        producer.send(topic, b"late", b"[0, \"late\", 1]")
    again = OrderedConsumer(cluster.bootstrap_servers, group_id=f"g-{topic}", heartbeat_interval_ms=200)
    again.subscribe([topic])
    try:
        rest = drain(again, 1, timeout=20)
        rest.extend(again.poll(500))
    finally:
        again.close()
    assert [r.key for r in rest] == [b"late"]  # nothing re-read: the commit (with its epoch) held


def test_assignor_balances_undeleted_and_marked_separately():
    got = assign({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": ([0, 1, 2, 3, 4, 5], [6, 7])})
    assert got == {"a": [("t", 0), ("t", 3), ("t", 6)], "b": [("t", 1), ("t", 4), ("t", 7)],
                   "c": [("t", 2), ("t", 5)]}
    undeleted = {m: [p for _, p in tps if p < 6] for m, tps in got.items()}
    assert sorted(len(v) for v in undeleted.values()) == [2, 2, 2]
    assert assign({"a": ["other"]}, {"t": ([0], [])}) == {"a": []}


def _range(subscriptions, partitions):
    """A user's assignor: each topic's partitions in contiguous runs over the sorted members."""
    out = {m: [] for m in subscriptions}
    for topic, ps in partitions.items():
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        for i, p in enumerate(ps):
            out[members[i * len(members) // len(ps)]].append((topic, p))
    return out


def test_the_users_assignor_is_applied_to_each_list_apart():
    lists = {"t": ([0, 1, 2, 3], [4, 5])}
    # on the whole list the range would give a: 0-2, b: 3-5; apart, each member gets its share of each
    assert assign({"a": ["t"], "b": ["t"]}, lists, _range) == {"a": [("t", 0), ("t", 1), ("t", 4)],
                                                                 "b": [("t", 2), ("t", 3), ("t", 5)]}
    with pytest.raises(ValueError, match="exactly once"):
        assign({"a": ["t"]}, lists, lambda subs, parts: {"a": [("t", 0)]})
    with pytest.raises(ValueError, match="subscribed"):
        assign({"a": ["t"], "b": ["u"]}, lists, lambda subs, parts: {"b": [("t", p) for p in parts["t"]]})


def test_a_group_uses_the_users_assignor_on_a_shrunk_topic(cluster: Any, admin: Any, new_topic: Any):
    """KIP-253 6 on a real coordinator: the leader calls the user's assignor once for the undeleted
    partitions and once for those marked for deletion, and the member gets what it gave."""
    topic = new_topic(4)
    admin.expand(topic, 6)
    admin.shrink(topic, 4, 600_000)  # partitions 4 and 5 stay marked (the delay outlasts the test)
    calls = []

    def mine(subscriptions, partitions):
        calls.append({t: list(ps) for t, ps in partitions.items()})
        return {m: [(t, p) for t, ps in partitions.items() for p in ps] for m in sorted(subscriptions)[:1]}
    mine.name = "mine"
    consumer = OrderedConsumer(cluster.bootstrap_servers, group_id=f"g-{topic}", heartbeat_interval_ms=200,
                               partition_assignor=mine)
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(100)
        assert consumer.member.protocol == "kip253-mine"
        assert {(tp.topic, tp.partition) for tp in consumer.assignment()} == {(topic, p) for p in range(6)}
    finally:
        consumer.close()
    assert calls[:2] == [{topic: [0, 1, 2, 3]}, {topic: [4, 5]}]


def test_positions_are_reported_again_to_a_coordinator_found_anew():
    """KIP-253 7: the coordinator keeps reported positions in memory. After it moves (or restarts) the
    owner reports again though its position did not change; else a waiter would wait for good."""
    from chaoskit.client.consumer import _Partition

    class Member:  # the coordinator's side of the exchange, recorded
        finds = 1

        def __init__(self) -> None:
            self.reports: list[dict] = []

        def exchange_positions(self, reports, waits):
            self.reports.append(dict(reports))
            return {}, {("t", 0)}  # another member waits on t-0

    consumer = OrderedConsumer("127.0.0.1:1", group_id="g")
    consumer.member = member = Member()
    consumer.parts = {("t", 0): _Partition(position=10, hw=10)}
    for _ in range(3):
        consumer._exchange_positions()
    member.finds = 2  # FindCoordinator answered again: the board there is empty
    consumer._exchange_positions()
    consumer._exchange_positions()
    assert member.reports == [{}, {("t", 0): 10}, {}, {("t", 0): 10}, {}]


def _gated_consumer(epoch_maps: dict[int, Any], p2_epoch: int) -> tuple[OrderedConsumer, list[Any]]:
    """A member reading t-2 while its metadata shows t-6 marked (8 partitions shrunk to 6, KIP-253
    keys of 6 move to 2); the cluster's answers to the gate are canned."""
    from types import SimpleNamespace

    from chaoskit.client.admin import PartitionInfo, TopicInfo
    from chaoskit.client.consumer import _Partition
    from chaoskit.protocol.extensions import PartitionMode
    parts = {p: PartitionInfo(p, 1, p2_epoch if p == 2 else 0, (1,), (1,),
                              PartitionMode.READ_ONLY if p >= 6 else PartitionMode.READ_WRITE) for p in range(8)}
    consumer = OrderedConsumer("127.0.0.1:1", group_id="g")
    consumer.view.topics = {"t": TopicInfo("t", 0, parts, initial_partition_count=4, undeleted_partition_count=6)}
    consumer.view.refresh = lambda topics: consumer.view.topics  # type: ignore[method-assign]
    consumer.view.admin = SimpleNamespace(epoch_maps=lambda t, ps, missing_ok=False: {q: epoch_maps[q] for q in ps
                                                                                       if q in epoch_maps})
    consumer.parts = {("t", 2): _Partition(position=10, hw=10)}
    consumer.parts[("t", 2)].started = True
    events: list[Any] = []
    consumer.events.subscribe(events.append)
    return consumer, events


def test_a_marked_partition_removed_before_its_threshold_was_asked_is_announced_at_once():
    """Metadata showed t-6 marked, but it was drained and removed before the gate asked for its
    threshold (its epoch maps are gone): its keys are t-2's from now, and t-2's member must say so
    (key-assigned) before it delivers a record written after the shrink."""
    consumer, events = _gated_consumer({}, p2_epoch=1)
    consumer._open_gates()
    gate = consumer.parts[("t", 2)].deletion
    assert gate is not None and gate.announced == {6} and gate.limit() is None
    assert [e["f"] for e in events if e["f"].startswith("on_")] == ["on_partition_key_assigned"]


def test_a_marked_partition_gone_to_mode_none_counts_as_removed_for_a_member_given_its_keys():
    """t-6, seen marked, went to mode None (drained, its replicas being deleted) while t-2 changed
    hands: nothing of t-6 is left to read, so t-2's new member announces its keys (key-assigned)
    before it delivers, as for a partition already removed."""
    import dataclasses

    from chaoskit.protocol.extensions import PartitionMode
    consumer, events = _gated_consumer({}, p2_epoch=1)
    consumer._seen_marked["t"] = {6, 7}
    parts = consumer.view.topics["t"].partitions
    parts[6] = dataclasses.replace(parts[6], mode=PartitionMode.NONE)
    del parts[7]
    consumer._open_gates()
    gate = consumer.parts[("t", 2)].deletion
    assert gate is not None and gate.announced == {6} and gate.limit() is None
    assert [e["f"] for e in events if e["f"].startswith("on_")] == ["on_partition_key_assigned"]


def test_a_marked_partitions_unknown_threshold_holds_back_every_record():
    """KIP-253 8.5: t-2 may deliver past the end of its epoch before the marking only once t-6 is
    drained. While that end cannot be read yet (t-2's epoch not yet bumped in our metadata), any
    offset may lie past it: nothing of t-2 is fetched or delivered, and nothing is announced."""
    from chaoskit.client.admin import EpochMaps
    consumer, events = _gated_consumer({6: EpochMaps({}, {2: 3})}, p2_epoch=3)
    consumer._open_gates()
    state = consumer.parts[("t", 2)]
    assert state.deletion is not None and state.deletion.unknown == {6} and state.deletion.limit() == 0
    assert consumer._fetchable() == {} and not events


def test_bad_settings_are_refused_with_a_hint():
    with pytest.raises(ValueError, match="auto_offset_reset"):
        OrderedConsumer("127.0.0.1:1", auto_offset_reset="smallest")
    with pytest.raises(ValueError, match="a third"):
        OrderedConsumer("127.0.0.1:1", session_timeout_ms=3000, heartbeat_interval_ms=2000)
    with pytest.raises(ValueError, match="group_id"):
        OrderedConsumer("127.0.0.1:1").subscribe(["t"])


def test_frozen_consumer_is_refused_a_stale_count_and_rejoins(cluster: Any, admin: Any, new_topic: Any):
    """KIP-253 8.6 / KIP-320: with frozen metadata the consumer fetches with the old leader epoch and
    undeleted count after an expansion; the broker refuses it (the epoch bump fences it first), the
    consumer refreshes (frozen or not), rejoins and consumes the new partitions."""
    from chaoskit.protocol.errors import ErrorCode
    topic = new_topic(2)
    consumer = OrderedConsumer(cluster.bootstrap_servers, group_id=f"g-{topic}", heartbeat_interval_ms=200)
    assigned: list[Any] = []
    consumer.events.subscribe(lambda e: e["f"] == "on_partitions_assigned" and assigned.append(e["value"]))
    consumer.subscribe([topic])
    try:
        with OrderedProducer(cluster.bootstrap_servers) as producer:
            for i in range(10):
                producer.send(topic, b"k%d" % i, b"[0, \"k%d\", 0]" % i)
            assert len(drain(consumer, 10)) == 10
            consumer.freeze_metadata()
            admin.expand(topic, 4)
            for i in range(10):
                producer.send(topic, b"k%d" % i, b"[0, \"k%d\", 1]" % i)
        later = drain(consumer, 10)
        assert sorted(r.key for r in later) == sorted(b"k%d" % i for i in range(10))
        assert {ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_PARTITION_METADATA} & set(consumer.refusals)
        assert assigned[-1] == [[topic, p] for p in range(4)]
        assert consumer.view.frozen, "the refusal refreshed the metadata without thawing it"
    finally:
        consumer.close()


def test_the_leader_rebalances_when_a_topic_only_another_member_reads_grows():
    """As Kafka's leader watches the group's subscription: the leader assigned topic y (read only by
    another member) from its own metadata, so y growing makes the leader rejoin, whatever the
    member reading y noticed (its metadata may lag). The cluster's answers are canned."""
    from chaoskit.client.admin import PartitionInfo, TopicInfo

    def info(name: str, partitions: int) -> TopicInfo:
        return TopicInfo(name, 0, {p: PartitionInfo(p, 1, 0, (1,), (1,)) for p in range(partitions)})

    consumer = OrderedConsumer("127.0.0.1:1", group_id="g")
    consumer.topics = ["x"]
    cluster = {"x": info("x", 2), "y": info("y", 2)}
    asked: list[set[str]] = []

    def refresh(topics: Any) -> Any:
        asked.append(set(topics))
        consumer.view.topics.update({t: cluster[t] for t in topics})
        return consumer.view.topics
    consumer.view.refresh = refresh  # type: ignore[method-assign]
    assignment = consumer._assign({"leader": ["x"], "other": ["y"]})
    assert assignment == {"leader": [("x", 0), ("x", 1)], "other": [("y", 0), ("y", 1)]}
    consumer._refresh_metadata(force=False)
    assert asked[-1] == {"x", "y"} and not consumer._need_rejoin  # nothing changed yet
    cluster["y"] = info("y", 4)
    consumer._refresh_metadata(force=False)
    assert consumer._need_rejoin


def test_a_partition_missing_from_metadata_is_a_retriable_wire_error(cluster: Any, admin: Any, new_topic: Any):
    """A group leader with older (or newer) metadata can assign a partition this member's metadata
    lacks (one just removed, say): the round fails as a wire error, so the member joins again,
    never a crash of its poll."""
    from chaoskit.protocol.wire_client import WireError

    topic = new_topic(2)
    consumer = OrderedConsumer(cluster.bootstrap_servers)
    try:
        with pytest.raises(WireError, match=f"{topic}-7: not in this consumer's metadata"):
            consumer.assign([(topic, 7)])
    finally:
        consumer.close()


def test_a_fenced_leader_epoch_is_retried_and_raised_typed_only_when_it_persists(cluster: Any, admin: Any,
                                                                                 new_topic: Any, monkeypatch):
    """KIP-320's public errors: with frozen metadata the consumer asks with the epoch from before an
    expansion bumped it; the leader answers FENCED_LEADER_EPOCH, which the consumer retries itself
    after a refresh (the answer comes, the refusal recorded). Were the refresh to bring nothing new,
    the caller gets FencedLeaderEpochError: retriable, an InvalidMetadataError, with the code."""
    from chaoskit.client import consumer as consumer_module
    from chaoskit.client.truncation import FencedLeaderEpochError, InvalidMetadataError
    from chaoskit.protocol.errors import ErrorCode
    topic = new_topic(2)
    tp = TopicPartition(topic, 0)
    with OrderedProducer(cluster.bootstrap_servers) as producer:
        for i in range(4):
            producer.send(topic, b"k%d" % i, b"[0, \"k%d\", 0]" % i)
    with OrderedConsumer(cluster.bootstrap_servers) as consumer:
        events: list[dict[str, Any]] = []
        consumer.events.subscribe(events.append)
        first = consumer.offsets_for_times({tp: 0})[tp]
        consumer.freeze_metadata()
        admin.expand(topic, 4)  # KIP-253 bumps the existing partitions' epochs
        again = consumer.offsets_for_times({tp: 0})[tp]
        assert again == first  # the same record, whose epoch is the one it was written in
        assert [(e["value"]["request"], e["value"]["error"]) for e in events if e["f"] == "epoch-refused"] == \
            [("ListOffsets", "FENCED_LEADER_EPOCH")]
        admin.expand(topic, 6)
        monkeypatch.setattr(consumer_module, "LIST_OFFSETS_RETRY_S", 0.5)
        monkeypatch.setattr(consumer, "_refresh_metadata", lambda *a, **k: None)  # the refresh brings nothing
        with pytest.raises(FencedLeaderEpochError) as fenced:
            consumer.offsets_for_times({tp: 0})
        assert isinstance(fenced.value, InvalidMetadataError) and fenced.value.retriable
        assert fenced.value.code == ErrorCode.FENCED_LEADER_EPOCH
