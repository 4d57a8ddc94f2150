"""Done-when 3 (KIP-320 in the ordered consumer): after an unclean election truncates partitions
under a consumer's positions, the consumer raises LogTruncationError with every truncated
partition and its divergence offset (auto_offset_reset="none") or resets to it (a reset policy
set) -- here through a committed position with its leader epoch, validated after a restart --
and never skips or re-reads. A `seek` with a leader epoch is validated before the next fetch.

Two brokers lead-and-follow three partitions (broker 1 leads all): the follower freezes and
leaves the ISRs, the leader takes records alone on partitions 0 (offsets 10-19) and 1 (6-15) but
none on 2, the consumers read them, the leader dies and the follower is elected uncleanly for
all three; its logs hold other records from 10 and from 6 on, and partition 2 lost nothing.
Offsets past the divergence exist on the new leader, so a consumer that did not validate its
positions would silently go on there.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka import TopicPartition
from kafka.protocol.admin import CreateTopicsRequest

from chaoskit.client.admin import CREATE_TOPICS_VERSION, AdminClient
from chaoskit.client.consumer import OrderedConsumer
from chaoskit.client.truncation import LogTruncationError, OffsetAndMetadata, OffsetOutOfRangeError
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.protocol.errors import ErrorCode, error_name
from chaoskit.protocol.records import build_batch
from chaoskit.protocol.requests import produce
from chaoskit.protocol.wire_client import WireClient

TOPIC = "diverge"
OLD, NEW = 1, 2
COMMON = {0: 10, 1: 6, 2: 5}   # records both replicas have, per partition
SOLO = {0: 10, 1: 10, 2: 0}    # records the old leader alone takes
AFTER = {0: 15, 1: 15, 2: 3}   # records the new leader takes after the election
TP = {p: TopicPartition(TOPIC, p) for p in COMMON}


def send(node: Any, partition: int, values: list[str], topic: str = TOPIC) -> int:
    """The records to `partition` on `node` (its leader) in one batch; the base offset."""
    batch = build_batch([(None, json.dumps(v).encode()) for v in values])

    def sent() -> list[int]:
        with WireClient(*node.address, timeout=15) as c:
            answer = produce(c, topic, partition, batch)
        if answer.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE):
            raise NotReady(error_name(answer.error_code))  # not appended: asked again
        assert answer.error_code == ErrorCode.NONE, error_name(answer.error_code)
        return [answer.base_offset]
    return wait_for(sent, 30, f"{node.name} taking records of {topic}/{partition}", node.log_path)[0]


def read(consumer: OrderedConsumer, want: int, timeout: float = 30.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got.extend(consumer.poll(200))
    return got


def by_partition(records: list[Any]) -> dict[int, list[tuple[int, str]]]:
    out: dict[int, list[tuple[int, str]]] = {}
    for r in records:
        out.setdefault(r.partition, []).append((r.offset, json.loads(r.value)))
    return out


def after(p: int) -> list[tuple[int, str]]:
    return [(COMMON[p] + i, f"after-{p}-{i}") for i in range(AFTER[p])]


@pytest.fixture(scope="module")
def diverged(make_cluster: Callable[..., LocalCluster]) -> dict[str, Any]:
    cluster = make_cluster(brokers=2, controllers=1)
    T = CreateTopicsRequest.CreatableTopic
    with AdminClient(cluster.bootstrap_servers) as admin:  # broker 1 leads every partition
        created = admin.request(CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[T(
            name=TOPIC, num_partitions=-1, replication_factor=-1,
            assignments=[T.CreatableReplicaAssignment(partition_index=p, broker_ids=[OLD, NEW]) for p in COMMON],
            configs=[T.CreatableTopicConfig(name="unclean.leader.election.enable", value="true"),
                     T.CreatableTopicConfig(name="min.insync.replicas", value="1")])]), CREATE_TOPICS_VERSION)
        assert created.topics[0].error_code == ErrorCode.NONE, created.topics[0].error_message
    cluster.wait_until_replicated(TOPIC)
    old, new = cluster.broker(OLD), cluster.broker(NEW)
    for p, n in COMMON.items():
        assert send(old, p, [f"common-{p}-{i}" for i in range(n)]) == 0
    cluster.wait_until_replicated(TOPIC)
    new.pause()
    wait_for(lambda: all(cluster.partition_state(TOPIC, p).isr == [OLD] for p in COMMON), 30,
             "the follower out of the ISRs", old.log_path)
    wait_for(lambda: NEW not in cluster.view.brokers(), 30, "the follower's session expiring")
    # partition 0's in two batches, the second stamped later (offsets_for_times finds it by time)
    half = SOLO[0] // 2
    assert send(old, 0, [f"divergent-0-{i}" for i in range(half)]) == COMMON[0]
    later_ms = int(time.time() * 1000) + 2
    wait_for(lambda: time.time() * 1000 >= later_ms, 5, "the clock past the first batch's timestamp")
    assert send(old, 0, [f"divergent-0-{i}" for i in range(half, SOLO[0])]) == COMMON[0] + half
    for p, n in SOLO.items():
        if n and p != 0:
            assert send(old, p, [f"divergent-{p}-{i}" for i in range(n)]) == COMMON[p]
    only_old = "%s:%d" % old.address
    with OrderedConsumer(only_old) as looker:  # KIP-320: each offset with its record's leader epoch
        looked_up = looker.offsets_for_times({TP[0]: later_ms, TP[2]: later_ms})

    # an assigned consumer without a reset policy and a group member that commits, both at the ends
    strict = OrderedConsumer(only_old, auto_offset_reset="none")
    strict.assign(TP.values())
    for tp in TP.values():
        strict.seek(tp, 0)
    strict_events: list[dict[str, Any]] = []
    strict.events.subscribe(strict_events.append)
    total = sum(COMMON.values()) + sum(SOLO.values())
    first = read(strict, total)
    stored = strict.next_offsets()  # as an application keeping its offsets elsewhere would
    member = OrderedConsumer(only_old, group_id="truncation", heartbeat_interval_ms=200)
    member.subscribe([TOPIC])
    assert len(read(member, total)) == total
    member.close()  # commits every position with the leader epoch of its last record

    old.kill()
    new.resume()
    wait_for(lambda: all((s := cluster.partition_state(TOPIC, p)) and s.leader == NEW for p in COMMON), 30,
             "the unclean elections", cluster.active_controller().log_path)
    cluster.wait_for_metadata(new, 30)
    for p, n in AFTER.items():
        assert send(new, p, [f"after-{p}-{i}" for i in range(n)]) == COMMON[p]
    strict.view.admin.bootstrap = [new.address]  # its bootstrap broker is dead; the cluster lives on in broker 2
    return {"cluster": cluster, "strict": strict, "strict_events": strict_events, "first": first, "old": old,
            "stored": stored, "later_ms": later_ms, "looked_up": looked_up}


def raised_by(consumer: OrderedConsumer) -> tuple[LogTruncationError, list[Any]]:
    delivered: list[Any] = []
    with pytest.raises(LogTruncationError) as raised:
        for _ in range(50):
            delivered.extend(consumer.poll(200))
    return raised.value, delivered


def test_no_reset_policy_raises_every_truncated_partition_with_its_divergence(diverged: dict[str, Any]):
    strict, events = diverged["strict"], diverged["strict_events"]
    first = by_partition(diverged["first"])
    assert [v for _o, v in first[0][10:]] == [f"divergent-0-{i}" for i in range(10)]
    solo_epoch = next(r.leader_epoch for r in diverged["first"] if r.partition == 0 and r.offset == 19)
    assert diverged["stored"][TP[0]] == OffsetAndMetadata(20, "", solo_epoch)
    error, delivered = raised_by(strict)
    assert delivered == [], "nothing may be delivered before the error, not even from the intact partition"
    assert isinstance(error, OffsetOutOfRangeError)
    # the truncated partitions, each with the first offset that diverges and the leader's epoch
    # there (the epoch both replicas wrote the common records in); partition 2 lost nothing
    assert error.truncation_offsets == {TP[0]: OffsetAndMetadata(10, "", 0), TP[1]: OffsetAndMetadata(6, "", 0)}
    assert error.offset_out_of_range_partitions == {TP[0]: 20, TP[1]: 16}
    detected = sorted((e["partition"], e["type"], e["offset"], e["value"]["fetch_offset"])
                      for e in events if e["f"] == "truncation-detected")
    assert detected[:2] == [(0, "info", 10, 20), (1, "info", 6, 16)]
    again, _ = raised_by(strict)  # raised again until the application moves
    assert again.truncation_offsets == error.truncation_offsets

    # seeking to the divergence with its epoch: validated, not truncated, the new records follow
    for tp, divergence in error.truncation_offsets.items():
        strict.seek(tp, divergence)
    got = by_partition(read(strict, sum(AFTER.values())))
    assert got == {p: after(p) for p in COMMON}

    # a seek to a stored position whose records the election replaced is validated too, and caught
    strict.seek(TP[0], diverged["stored"][TP[0]])
    strict.seek(TP[1], 12)  # no epoch: not validated, read from there
    caught, delivered = raised_by(strict)
    assert (caught.truncation_offsets, delivered) == ({TP[0]: OffsetAndMetadata(10, "", 0)}, [])
    strict.seek(TP[0], caught.truncation_offsets[TP[0]])
    assert by_partition(read(strict, AFTER[0] + AFTER[1] - 6)) == {0: after(0), 1: after(1)[6:]}
    strict.close()


def test_seek_with_the_current_epoch_is_validated_and_goes_on(diverged: dict[str, Any]):
    new = diverged["cluster"].broker(NEW)
    with OrderedConsumer("%s:%d" % new.address, auto_offset_reset="none") as consumer:
        consumer.assign([TP[0]])
        consumer.seek(TP[0], 0)
        records = read(consumer, COMMON[0] + AFTER[0])
        epoch = records[-1].leader_epoch
        events: list[dict[str, Any]] = []
        consumer.events.subscribe(events.append)
        consumer.seek(TP[0], OffsetAndMetadata(12, "", epoch))
        assert [(r.offset, json.loads(r.value)) for r in read(consumer, AFTER[0] - 2)] == after(0)[2:]
        assert consumer.next_offsets() == {TP[0]: OffsetAndMetadata(COMMON[0] + AFTER[0], "", epoch)}
        assert [e for e in events if e["f"] == "truncation-detected"] == []


def test_offsets_for_times_answers_each_records_epoch_and_a_seek_with_it_is_validated(diverged: dict[str, Any]):
    """KIP-320's offsetsForTimes: the first offset at or after a time, with that record's timestamp and
    leader epoch. Looked up before the unclean election and sought to with its epoch, the position
    is validated first: the record there was replaced, so the consumer raises with the divergence."""
    before = diverged["looked_up"]
    found = before[TP[0]]
    solo_epoch = next(r.leader_epoch for r in diverged["first"] if r.partition == 0 and r.offset == found.offset)
    assert found.offset == COMMON[0] + SOLO[0] // 2 and found.leader_epoch == solo_epoch
    assert found.timestamp >= diverged["later_ms"]
    assert before[TP[2]] is None  # no record that late
    new = diverged["cluster"].broker(NEW)
    with OrderedConsumer("%s:%d" % new.address, auto_offset_reset="none") as consumer:
        now = consumer.offsets_for_times({TP[0]: diverged["later_ms"]})[TP[0]]
        assert now.offset == COMMON[0] and now.leader_epoch > solo_epoch  # the new leader's first record after it
        consumer.assign([TP[0]])
        consumer.seek(TP[0], found.offset, found.leader_epoch)
        error, delivered = raised_by(consumer)
        assert delivered == [] and error.truncation_offsets == {TP[0]: OffsetAndMetadata(COMMON[0], "", 0)}


def test_reset_policy_resets_committed_positions_to_the_divergence_offsets(diverged: dict[str, Any]):
    # the old leader returns (it holds the group's __consumer_offsets partition, which has no unclean
    # election) and truncates its own copies as a follower
    cluster, old = diverged["cluster"], diverged["old"]
    old.start(clean=False)
    wait_for(lambda: all(OLD in cluster.partition_state(TOPIC, p).isr for p in COMMON), 30,
             "the old leader back in the ISRs", old.log_path)
    member = OrderedConsumer(cluster.bootstrap_servers, group_id="truncation", heartbeat_interval_ms=200)
    events: list[dict[str, Any]] = []
    member.events.subscribe(events.append)
    member.subscribe([TOPIC])
    try:
        got = read(member, sum(AFTER.values()))
        got.extend(member.poll(300))
    finally:
        member.close()
    # the committed positions (with their epochs) are validated: 20 reset to 10, 16 to 6, 5 kept;
    # then exactly the new leader's records
    assert by_partition(got) == {p: after(p) for p in COMMON}
    detected = sorted((e["partition"], e["type"], e["offset"], e["value"]["fetch_offset"])
                      for e in events if e["f"] == "truncation-detected")
    assert detected == [(0, "ok", 10, 20), (1, "ok", 6, 16)]


def test_a_consumer_asleep_through_two_unclean_elections_goes_back_to_what_the_last_leader_kept(
        make_cluster: Callable[..., LocalCluster]):
    """KIP-320 with consecutive unclean elections: a consumer read what leader A alone had, then slept
    while B was elected uncleanly (and took records of its own) and then C (which had neither A's nor
    B's). C never led in the consumer's last epoch: it answers the end of the largest epoch it has
    below it, so the consumer learns its records are gone and goes back to where C's log diverges."""
    cluster = make_cluster(brokers=3, controllers=1)
    topic, tp = "twice", TopicPartition("twice", 0)
    a, b, c = (cluster.broker(i) for i in (1, 2, 3))
    T = CreateTopicsRequest.CreatableTopic
    with AdminClient(cluster.bootstrap_servers) as admin:
        created = admin.request(CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[T(
            name=topic, num_partitions=-1, replication_factor=-1,
            assignments=[T.CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2, 3])],
            configs=[T.CreatableTopicConfig(name="unclean.leader.election.enable", value="true")])]),
            CREATE_TOPICS_VERSION)
        assert created.topics[0].error_code == ErrorCode.NONE, created.topics[0].error_message
    cluster.wait_until_replicated(topic)
    assert send(a, 0, [f"common-{i}" for i in range(4)], topic) == 0
    cluster.wait_until_replicated(topic)

    def alone(node: Any, others: tuple[Any, ...]) -> None:
        """`others` paused until they are out of the ISR and their sessions expired."""
        for o in others:
            o.pause()
        wait_for(lambda: cluster.partition_state(topic, 0).isr == [node.broker_id], 30,
                 f"{node.name} alone in the ISR", node.log_path)
        wait_for(lambda: not {o.broker_id for o in others} & set(cluster.view.brokers()), 30, "sessions expiring")

    def elected(node: Any) -> None:
        wait_for(lambda: cluster.partition_state(topic, 0).leader == node.broker_id, 30,
                 f"{node.name} elected uncleanly", cluster.active_controller().log_path)

    alone(a, (b, c))
    assert send(a, 0, [f"a-{i}" for i in range(3)], topic) == 4
    with OrderedConsumer("%s:%d" % a.address, auto_offset_reset="none") as sleeper:
        sleeper.assign([tp])
        sleeper.seek(tp, 0)
        read_a = read(sleeper, 7)
        assert [json.loads(r.value) for r in read_a][4:] == ["a-0", "a-1", "a-2"]
        a.kill()
        b.resume()
        elected(b)
        assert send(b, 0, [f"b-{i}" for i in range(5)], topic) == 4
        b.kill()
        c.resume()
        elected(c)
        assert send(c, 0, [f"c-{i}" for i in range(6)], topic) == 4
        epochs = (read_a[-1].leader_epoch, cluster.partition_state(topic, 0).leader_epoch)
        assert epochs[1] >= epochs[0] + 2, epochs  # two elections (at least) since the records it read
        sleeper.view.admin.bootstrap = [c.address]
        error, delivered = raised_by(sleeper)
        assert delivered == [] and error.truncation_offsets[tp].offset == 4
        sleeper.seek(tp, error.truncation_offsets[tp])
        assert [json.loads(r.value) for r in read(sleeper, 6)] == [f"c-{i}" for i in range(6)]

