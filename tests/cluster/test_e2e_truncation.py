"""KIP-320 end to end: after an unclean election the returning old leader truncates its divergent
records to the new leader's log (found through OffsetsForLeaderEpoch); a stock kafka-python consumer
that read the lost records goes back to the divergence and reads what replaced them (KIP-320 on) or
reads on past them (off); a fetch at a stale leader epoch is fenced with FENCED_LEADER_EPOCH when
fencing is on and served when it is off; the leader's and a follower's answers to each epoch a
Fetch or ListOffsets may name."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.consumer import FetchRequest

from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol import requests
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.records import decode_records, split_batches
from chaoskit.protocol.wire_client import WireClient


def create(cluster: LocalCluster, topic: str, assignment: dict[int, list[int]], config: dict[str, str]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(topic, -1, -1, replica_assignments=assignment, topic_configs=config)])
    finally:
        admin.close()
    cluster.wait_until_replicated(topic)


def send(cluster: LocalCluster, topic: str, values: list[bytes], bootstrap: str | None = None) -> list[int]:
    """acks=all to partition 0; the offsets acknowledged. `bootstrap` avoids a paused broker, which
    accepts connections but never answers (a client would wait its request timeout on it)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap or cluster.bootstrap_servers, acks="all", retries=100,
                             request_timeout_ms=10_000)
    try:
        futures = [producer.send(topic, value=v, partition=0) for v in values]
        producer.flush(60)
        return [f.get(timeout=60).offset for f in futures]
    finally:
        producer.close()


def read(cluster: LocalCluster, topic: str, bootstrap: str | None = None) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap or cluster.bootstrap_servers, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning()
    end = consumer.end_offsets([tp])[tp]
    out: list[bytes] = []
    deadline_polls = 200
    while len(out) < end and deadline_polls:
        deadline_polls -= 1
        for records in consumer.poll(timeout_ms=300).values():
            out.extend(r.value for r in records)
    consumer.close()
    return out


def epoch_end(broker: Any, topic: str, epoch: int) -> tuple[int, int, int]:
    """OffsetsForLeaderEpoch v3 to `broker`: (error, leader epoch, end offset) for `epoch`."""
    with WireClient(*broker.address, timeout=10) as client:
        return tuple(requests.epoch_end(client, topic, 0, epoch, version=3))


def fetch(broker: Any, topic: str, current_leader_epoch: int) -> Any:
    """Fetch v11 of partition 0 from offset 0, as a consumer that believes the leader is at that epoch."""
    part = FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=current_leader_epoch,
                                                  fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 20)
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 22, isolation_level=0,
                           session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                           topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])])
    with WireClient(*broker.address, timeout=10) as client:
        return client.request(request, 11).responses[0].partitions[0]


def values_in(records: bytes | None) -> list[bytes]:
    return [r.value for batch in split_batches(records or b"") for r in decode_records(batch)]


def cut_off(cluster: LocalCluster, topic: str, follower: Any, leader: Any) -> None:
    """The follower freezes: it drops out of the ISR and its ZooKeeper session expires, so the
    leader takes writes alone."""
    follower.pause()
    wait_for(lambda: cluster.partition_state(topic, 0).isr == [leader.broker_id], 30,
             f"broker {follower.broker_id} out of the ISR", leader.log_path)
    wait_for(lambda: follower.broker_id not in cluster.view.brokers(), 30,
             f"broker {follower.broker_id}'s session expiring")


def elect_uncleanly(cluster: LocalCluster, topic: str, follower: Any, leader: Any) -> Any:
    """The leader dies; the frozen follower comes back and is elected although out of sync; its state."""
    leader.kill()
    follower.resume()
    state = wait_for(lambda: (s := cluster.partition_state(topic, 0)) and s.leader == follower.broker_id and s, 30,
                     f"the unclean election of broker {follower.broker_id}", cluster.active_controller().log_path)
    cluster.wait_for_metadata(follower, 30)
    return state


def test_returning_old_leader_truncates_to_the_unclean_leaders_log(make_cluster: Callable[..., LocalCluster]):
    cluster = make_cluster(brokers=2, controllers=1)
    topic = "diverge"
    create(cluster, topic, {0: [1, 2]}, {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
    old, new = cluster.broker(1), cluster.broker(2)
    assert cluster.partition_state(topic, 0).leader == 1
    common = [b"common-%d" % i for i in range(10)]
    assert send(cluster, topic, common) == list(range(10))
    cluster.wait_until_replicated(topic)

    # broker 2 freezes: it drops out of the ISR (and its session expires) while broker 1 takes more writes
    cut_off(cluster, topic, new, old)
    divergent = [b"only-on-the-old-leader-%d" % i for i in range(10)]
    assert send(cluster, topic, divergent, bootstrap="%s:%d" % old.address) == list(range(10, 20))

    # broker 1 dies; broker 2 comes back and is elected although out of sync (unclean)
    before = cluster.partition_state(topic, 0)
    state = elect_uncleanly(cluster, topic, new, old)
    assert state.isr == [2] and state.leader_epoch > before.leader_epoch
    after = [b"after-unclean-%d" % i for i in range(5)]
    assert send(cluster, topic, after) == list(range(10, 15))
    # where the new leader's log leaves epoch 0: the point the old leader must truncate to
    assert epoch_end(new, topic, 0) == (ErrorCode.NONE, 0, 10)

    # the old leader returns as a follower, truncates its divergent suffix and catches up
    old.start(clean=False)
    wait_for(lambda: 1 in cluster.partition_state(topic, 0).isr, 30, "broker 1 back in the ISR", old.log_path)
    new.kill()  # now broker 1 leads again, cleanly (it is in the ISR): its log is what consumers see
    wait_for(lambda: cluster.partition_state(topic, 0).leader == 1, 30, "broker 1 leading again")
    cluster.wait_for_metadata(old, 30, expected={1})
    # bootstrap from the live broker only: kafka-python picks a bootstrap server at random and can
    # spend its whole bootstrap timeout backing off from the dead one
    assert read(cluster, topic, bootstrap="%s:%d" % old.address) == common + after


def poll_values(consumer: KafkaConsumer, want: int, polls: int = 100) -> list[tuple[int, bytes]]:
    """(offset, value) of what the consumer delivers, until `want` records or `polls` polls."""
    out: list[tuple[int, bytes]] = []
    while len(out) < want and polls:
        polls -= 1
        for records in consumer.poll(timeout_ms=300).values():
            out.extend((r.offset, r.value) for r in records)
    return out


@pytest.mark.parametrize("profile", ["patched", "unpatched"])
def test_stock_consumer_goes_back_to_the_divergence(make_cluster: Callable[..., LocalCluster], profile: str):
    cluster = make_cluster(brokers=2, controllers=1, profile=profile)
    topic = f"reread-{profile}"
    create(cluster, topic, {0: [1, 2]}, {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
    old, new = cluster.broker(1), cluster.broker(2)
    assert send(cluster, topic, [b"common-%d" % i for i in range(10)]) == list(range(10))
    cluster.wait_until_replicated(topic)
    # a plain kafka-python consumer; it learns both brokers now and keeps them (no periodic refresh)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False,
                             auto_offset_reset="earliest", request_timeout_ms=5000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    try:
        assert [o for o, _v in poll_values(consumer, 10)] == list(range(10))
        cut_off(cluster, topic, new, old)
        lost = send(cluster, topic, [b"lost-%d" % i for i in range(10)], bootstrap="%s:%d" % old.address)
        assert lost == list(range(10, 20))
        # it reads them too: position 20, after records of epoch 0
        assert [o for o, _v in poll_values(consumer, 10)] == list(range(10, 20))
        elect_uncleanly(cluster, topic, new, old)
        after = [b"after-%d" % i for i in range(15)]
        assert send(cluster, topic, after, bootstrap="%s:%d" % new.address) == list(range(10, 25))
        # a kafka-python client that refreshed its metadata while broker 2's session was expired knows
        # broker 1 alone and never goes back to its bootstrap servers: the old leader returns (as a
        # follower) so that the consumer can always learn the new leader, as it would in a real cluster
        old.start(clean=False)
        wait_for(lambda: 1 in cluster.partition_state(topic, 0).isr, 30, "broker 1 back in the ISR", old.log_path)
        got = poll_values(consumer, 15 if profile == "patched" else 5)
        got.extend(poll_values(consumer, 1, polls=3))  # and nothing more
    finally:
        consumer.close()
    if profile == "patched":
        # its position is validated against the new leader and moved back to where epoch 0 ends there
        assert got == list(zip(range(10, 25), after))
    else:
        # no leader epochs reach clients: it reads on at 20, past records that replaced what it read
        assert got == list(zip(range(20, 25), after[10:]))


@pytest.mark.parametrize("profile", ["patched", "unpatched"])
def test_fetch_at_a_stale_leader_epoch(make_cluster: Callable[..., LocalCluster], profile: str):
    cluster = make_cluster(brokers=1, controllers=1, profile=profile)
    topic = f"fence-{profile}"
    create(cluster, topic, {0: [1]}, {})
    send(cluster, topic, [b"at epoch 0"])
    broker = cluster.broker(1)
    broker.stop()  # its session closes: the partition goes offline (epoch 1), then back (epoch 2)
    wait_for(lambda: cluster.partition_state(topic, 0).leader == -1, 30, "the partition offline")
    broker.start(clean=False)
    wait_for(lambda: cluster.partition_state(topic, 0).leader == 1, 30, "the partition back", broker.log_path)
    current = cluster.partition_state(topic, 0).leader_epoch
    assert current == 2
    cluster.wait_for_metadata(broker, 30)
    send(cluster, topic, [b"at epoch 2"])

    fresh = fetch(broker, topic, current)
    assert fresh.error_code == ErrorCode.NONE and values_in(fresh.records) == [b"at epoch 0", b"at epoch 2"]
    stale = fetch(broker, topic, 0)
    if profile == "patched":
        assert stale.error_code == ErrorCode.FENCED_LEADER_EPOCH and not values_in(stale.records)
    else:
        assert stale.error_code == ErrorCode.NONE and values_in(stale.records) == [b"at epoch 0", b"at epoch 2"]


def test_epoch_checks_at_the_leader_and_at_a_follower(make_cluster: Callable[..., LocalCluster]):
    """KIP-320's checks of a request's current_leader_epoch on a real cluster, after a failover (the
    leader at epoch e >= 1): at the leader, Fetch and ListOffsets at e - 1 are FENCED_LEADER_EPOCH,
    at e + 1 UNKNOWN_LEADER_EPOCH, at e or -1 (no epoch) served, as is a Fetch in a version before
    the field (v8); ListOffsets answers the epoch of the offset it returns. At a follower the epoch
    errors come before NOT_LEADER_OR_FOLLOWER, as Kafka checks them (docs/conformance.md rows 53-55,
    68, 69)."""
    cluster = make_cluster(brokers=2, controllers=1)
    topic = "epochs"
    create(cluster, topic, {0: [1, 2]}, {})
    send(cluster, topic, [b"at epoch 0"])
    first, second = cluster.broker(1), cluster.broker(2)
    first.stop()  # broker 2 leads at a new epoch; broker 1 comes back as its follower
    wait_for(lambda: cluster.partition_state(topic, 0).leader == 2, 30, "broker 2 leading", second.log_path)
    first.start(clean=False)
    wait_for(lambda: 1 in cluster.partition_state(topic, 0).isr, 30, "broker 1 back in the ISR", first.log_path)
    e = cluster.partition_state(topic, 0).leader_epoch
    assert e >= 1
    cluster.wait_for_metadata(second, 30)
    send(cluster, topic, [b"at epoch e"])

    F, U, NONE = ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NONE
    with WireClient(*second.address, timeout=10) as leader:
        fetched = {epoch: requests.fetch(leader, topic, 0, 0, current_leader_epoch=epoch).error_code
                   for epoch in (e - 1, e, e + 1, -1)}
        listed = {epoch: requests.list_offset(leader, topic, 0, requests.EARLIEST, current_leader_epoch=epoch)
                  for epoch in (e - 1, e, e + 1, -1)}
        old_fetch = requests.fetch(leader, topic, 0, 0, version=8)  # before current_leader_epoch
    assert fetched == {e - 1: F, e: NONE, e + 1: U, -1: NONE}
    assert {epoch: a.error_code for epoch, a in listed.items()} == {e - 1: F, e: NONE, e + 1: U, -1: NONE}
    assert (listed[e].offset, listed[e].leader_epoch) == (0, 0)  # offset 0 was written at epoch 0
    assert old_fetch.error_code == NONE and values_in(old_fetch.records) == [b"at epoch 0", b"at epoch e"]

    def at_follower() -> dict[int, int]:
        with WireClient(*first.address, timeout=10) as follower:
            return {epoch: requests.fetch(follower, topic, 0, 0, current_leader_epoch=epoch).error_code
                    for epoch in (e - 1, e, e + 1, -1)}
    want = {e - 1: F, e: ErrorCode.NOT_LEADER_OR_FOLLOWER, e + 1: U, -1: ErrorCode.NOT_LEADER_OR_FOLLOWER}
    wait_for(lambda: at_follower() == want, 15, lambda: f"the follower's answers {at_follower()}, not {want}",
             first.log_path)
