"""KIP-253: per-key order holds while partitions are added, under leader isolation, broker kills,
stale metadata and controller failover (the active controller killed as the first expansion
starts and cut off, past its ZooKeeper session, as the second does: the other controller finishes
each expansion's steps while the workload runs). The patched cluster with the ordered client keeps every key's records in
producer order across partitions; stock Kafka (modulo partitioning) is caught reordering keys.
"""
from __future__ import annotations

import pytest

from chaoskit import Topic, admin_step, mix
from chaoskit.run.mixes import (BROKER_KILLS, CONTROLLER_FAULTS, LEADER_ISOLATION, SLOW_GROUP, SMALL_POLLS,
                                STALE_METADATA, TOPIC, combine, controller_failover)

GROWTH = [admin_step(0.2, "expand", 6), admin_step(0.45, "expand", 8)]
FAILOVER = [controller_failover(0.2), controller_failover(0.45, "partition")]
# what the claim needs: keys that went on in another partition, with both records delivered
MOVED = {"key-order": {"moved_pairs": 5}}


@pytest.mark.chaos(faults=mix(GROWTH + FAILOVER, LEADER_ISOLATION), workload="keyed-sequences", duration=16,
                   epic="KIP-253", feature="expansion under leader isolation and controller failover",
                   severity="critical",
                   guarantee="kip253-key-order")
def test_key_order_across_expansion(chaos):
    result = chaos.run(topics=[Topic(TOPIC, 4)],
                       workload_options=SLOW_GROUP, client_options=SMALL_POLLS)
    chaos.expect(result, unpatched={"key-order"}, evidence=MOVED)


@pytest.mark.nightly
@pytest.mark.chaos(faults=mix(GROWTH + FAILOVER + [admin_step(0.7, "expand", 12)],
                              combine(LEADER_ISOLATION, BROKER_KILLS, STALE_METADATA, CONTROLLER_FAULTS)),
                   workload="keyed-sequences", duration=120, epic="KIP-253", guarantee="kip253-key-order",
                   feature="expansion under isolation, kills, stale metadata and controller faults", severity="critical")
def test_key_order_across_expansion_long(chaos):
    result = chaos.run(topics=[Topic(TOPIC, 4)],
                       workload_options={**SLOW_GROUP, "producers": 4, "consumers": 3, "keys": 200},
                       client_options=SMALL_POLLS)
    chaos.expect(result, unpatched={"key-order"}, evidence=MOVED)


@pytest.mark.docker
@pytest.mark.chaos(faults=mix(GROWTH, LEADER_ISOLATION), workload="keyed-sequences", duration=16, epic="KIP-253",
                   guarantee="kip253-key-order", clients=("ordered",),
                   feature="expansion under leader isolation, in containers", severity="critical",
                   profiles=("patched",))
def test_key_order_across_expansion_in_containers(chaos):
    """The docker backend's case: the same claim with every node in its own container."""
    result = chaos.run(backend="docker", topics=[Topic(TOPIC, 4)],
                       workload_options=SLOW_GROUP, client_options=SMALL_POLLS)
    chaos.expect(result, evidence=MOVED)
