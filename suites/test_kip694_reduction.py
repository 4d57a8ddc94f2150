"""KIP-694: reducing a topic's partitions. The removed partitions turn ReadOnly (no produce, reads
go on) and only after the delay None (gone): nothing acknowledged is lost, nothing is written to a
ReadOnly partition. Removing partitions at once, without the ReadOnly phase (the unpatched side:
a delay of 0 while consumers are still behind), loses acknowledged writes: caught as `unseen`.
"""
from __future__ import annotations

import pytest

from chaoskit.runner import Topic
from suites.faultmixes import LEADER_ISOLATION, TOPIC, admin_step, mix

REMOVAL = {"delete.topic.partition.enable": True}


def _reduction(delay_ms: int) -> list:
    return [admin_step(0.3, "shrink", 4, delay_ms=delay_ms)]


def _run(chaos, rate: float):
    return chaos.run(topics=[Topic(TOPIC, 6)], client=chaos.pick(patched="ordered", unpatched="kafka-python"),
                     broker_config=REMOVAL, controller_config=REMOVAL,
                     faults={**chaos.test().faults,
                             "scripted": _reduction(chaos.pick(patched=4000, unpatched=0))},
                     workload_options={"producers": 2, "consumers": 1, "keys": 40, "rate": rate})


@pytest.mark.chaos(faults=mix([], LEADER_ISOLATION, mean_interval_s=5), workload="keyed-sequences", duration=16,
                   epic="KIP-694", feature="partition reduction under leader isolation", severity="critical")
def test_reduction_loses_nothing(chaos):
    chaos.expect(_run(chaos, 40), unpatched={"unseen"})


@pytest.mark.nightly
@pytest.mark.chaos(faults=mix([], LEADER_ISOLATION), workload="keyed-sequences", duration=120,
                   epic="KIP-694", feature="partition reduction under leader isolation", severity="normal")
def test_reduction_loses_nothing_long(chaos):
    chaos.expect(_run(chaos, 60), unpatched={"unseen"})
