"""KIP-253: per-key order holds while partitions are deleted (the undeleted count lowered; marked
partitions drain, then go), under leader isolation and broker kills. Without KIP-253's ordering
(deletion on, ordered delivery off, a stock client placing keys modulo the count) keys move to
other partitions while their old records are still unread: caught as key-order violations.
"""
from __future__ import annotations

import pytest

from chaoskit.runner import Topic
from suites.faultmixes import BROKER_KILLS, LEADER_ISOLATION, SLOW_GROUP, SMALL_POLLS, TOPIC, admin_step, mix

SHRINK = [admin_step(0.3, "shrink", 6)]
# the unpatched side of deletion: KIP-694's removal without KIP-253's ordering
DELETION_WITHOUT_ORDER = {"delete.topic.partition.enable": True}


def _run(chaos, keys: int, producers: int):
    unordered = chaos.pick(patched={}, unpatched=DELETION_WITHOUT_ORDER)
    return chaos.run(topics=[Topic(TOPIC, 8)], client=chaos.pick(patched="ordered", unpatched="kafka-python"),
                     broker_config=unordered, controller_config=unordered,
                     workload_options={**SLOW_GROUP, "keys": keys, "producers": producers}, client_options=SMALL_POLLS)


@pytest.mark.chaos(faults=mix(SHRINK, LEADER_ISOLATION), workload="keyed-sequences", duration=16,
                   epic="KIP-253", feature="deletion under leader isolation", severity="critical")
def test_key_order_across_deletion(chaos):
    chaos.expect(_run(chaos, 60, 3), unpatched={"key-order"})


@pytest.mark.nightly
@pytest.mark.chaos(faults=mix(SHRINK + [admin_step(0.6, "shrink", 4)], {**LEADER_ISOLATION, **BROKER_KILLS}),
                   workload="keyed-sequences", duration=120, epic="KIP-253",
                   feature="deletion under isolation and kills", severity="critical")
def test_key_order_across_deletion_long(chaos):
    chaos.expect(_run(chaos, 200, 4), unpatched={"key-order"})
