"""Done-when 3 (KIP-320 in the ordered consumer): after an unclean election truncates a partition
under a consumer's position, the consumer raises LogTruncationError at the divergence offset
(auto_offset_reset="none") or resets to it (a reset policy set) -- here through a committed
position with its leader epoch, validated after a restart -- and never skips or re-reads.

Two brokers: the follower freezes and leaves the ISR, the leader takes records 10-19 alone, the
consumers read them, the leader dies and the follower is elected uncleanly; its offsets 10-24 hold
other records. Offsets 20-24 exist on the new leader, so a consumer that did not validate its
position would silently go on there.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from chaoskit.client.admin import AdminClient
from chaoskit.client.consumer import OrderedConsumer
from chaoskit.client.producer import OrderedProducer
from chaoskit.client.truncation import LogTruncationError
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for

TOPIC = "diverge"


def send(bootstrap: str, values: list[str]) -> list[int]:
    with OrderedProducer(bootstrap, delivery_timeout_s=60) as producer:
        return [producer.send(TOPIC, None, json.dumps(v).encode()).offset for v in values]


def read(consumer: OrderedConsumer, want: int, timeout: float = 30.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got.extend(consumer.poll(200))
    return got


@pytest.fixture(scope="module")
def diverged(make_cluster: Callable[..., LocalCluster]) -> dict[str, Any]:
    cluster = make_cluster(brokers=2, controllers=1)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topic(TOPIC, 1, 2, config={"unclean.leader.election.enable": "true",
                                                "min.insync.replicas": "1"})
    cluster.wait_until_replicated(TOPIC)
    leader = cluster.partition_state(TOPIC, 0).leader
    old, new = cluster.broker(leader), cluster.broker(3 - leader)
    assert send(cluster.bootstrap_servers, [f"common-{i}" for i in range(10)]) == list(range(10))
    cluster.wait_until_replicated(TOPIC)
    new.pause()
    wait_for(lambda: cluster.partition_state(TOPIC, 0).isr == [old.broker_id], 30, "the follower out of the ISR",
             old.log_path)
    wait_for(lambda: new.broker_id not in cluster.view.brokers(), 30, "the follower's session expiring")
    only_old = "%s:%d" % old.address
    assert send(only_old, [f"divergent-{i}" for i in range(10)]) == list(range(10, 20))

    # an assigned consumer without a reset policy and a group member that commits, both at offset 20
    strict = OrderedConsumer(only_old, auto_offset_reset="none")
    strict.assign([(TOPIC, 0)])
    strict.seek((TOPIC, 0), 0)
    strict_events: list[dict[str, Any]] = []
    strict.events.subscribe(strict_events.append)
    first = read(strict, 20)
    member = OrderedConsumer(only_old, group_id="truncation", heartbeat_interval_ms=200)
    member.subscribe([TOPIC])
    assert len(read(member, 20)) == 20
    member.close()  # commits offset 20 with the leader epoch of record 19

    old.kill()
    new.resume()
    wait_for(lambda: (s := cluster.partition_state(TOPIC, 0)) and s.leader == new.broker_id, 30, "the unclean election",
             cluster.active_controller().log_path)
    cluster.wait_for_metadata(new, 30)
    only_new = "%s:%d" % new.address
    assert send(only_new, [f"after-{i}" for i in range(15)]) == list(range(10, 25))
    strict.view.admin.bootstrap = [new.address]  # its bootstrap broker is dead; the cluster lives on in broker 2
    return {"cluster": cluster, "strict": strict, "strict_events": strict_events, "first": first, "old": old}


def test_no_reset_policy_raises_at_the_divergence_offset(diverged: dict[str, Any]):
    strict, events = diverged["strict"], diverged["strict_events"]
    assert [json.loads(r.value) for r in diverged["first"]][10:] == [f"divergent-{i}" for i in range(10)]
    delivered: list[Any] = []
    with pytest.raises(LogTruncationError) as raised:
        for _ in range(50):
            delivered.extend(strict.poll(200))
    assert delivered == [], "nothing past the divergent records may be delivered before the error"
    assert (raised.value.partition, raised.value.divergence_offset, raised.value.fetch_offset) == (0, 10, 20)
    detected = [e for e in events if e["f"] == "truncation-detected"]
    assert detected[0] == {"f": "truncation-detected", "type": "info", "topic": TOPIC, "partition": 0,
                           "offset": 10, "value": {"fetch_offset": 20, "divergence_offset": 10}}
    with pytest.raises(LogTruncationError):  # raised again until the application moves
        strict.poll(200)
    strict.seek((TOPIC, 0), raised.value.divergence_offset)
    after = read(strict, 15)
    assert [(r.offset, json.loads(r.value)) for r in after] == [(10 + i, f"after-{i}") for i in range(15)]
    strict.close()


def test_reset_policy_resets_a_committed_position_to_the_divergence_offset(diverged: dict[str, Any]):
    # the old leader returns (it holds the group's __consumer_offsets partition, which has no unclean
    # election) and truncates its own copy as a follower
    cluster, old = diverged["cluster"], diverged["old"]
    old.start(clean=False)
    wait_for(lambda: old.broker_id in cluster.partition_state(TOPIC, 0).isr, 30, "the old leader back in the ISR",
             old.log_path)
    member = OrderedConsumer(cluster.bootstrap_servers, group_id="truncation", heartbeat_interval_ms=200)
    events: list[dict[str, Any]] = []
    member.events.subscribe(events.append)
    member.subscribe([TOPIC])
    try:
        got = read(member, 15)
        got.extend(member.poll(300))
    finally:
        member.close()
    # the committed position 20 (with its epoch) is validated: reset to 10, then exactly the new leader's records
    assert [(r.offset, json.loads(r.value)) for r in got] == [(10 + i, f"after-{i}") for i in range(15)]
    detected = [e for e in events if e["f"] == "truncation-detected"]
    assert [(e["type"], e["offset"], e["value"]) for e in detected] == \
        [("ok", 10, {"fetch_offset": 20, "divergence_offset": 10})]
